"""The signal registry: every signal is a small function registered by name.

A signal function takes the `BatchViews` of a batch of documents and returns its scores for the
whole batch: `DocScores` (one `[0, len(text), score]` span per document) or `LineScores` (one
span per raw line). The span representation itself (spec §2.1) is built by the writer, so a
signal states only its formula. Registration records the level, the JSON type of the score
(`float` or `int`, spec §2.2), a group for `--signals`, the word lists it needs, and a one-line
definition that `textsieve signals` prints.

Signals from outside the package use the same call, `register_signal(name, fn, level=...,
group=..., definition=...)`, or an entry point in the `textsieve.signals` group naming a module
that makes it at import (see `textsieve.extensions` and docs/architecture.md). Such signals are
computed only when `--signals` names them or their group (which cannot be a built-in group):
`all` (the default) stays the built-in set, so installing a plugin never changes what an
existing `annotate` command writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from textsieve import extensions
from textsieve.errors import TextsieveError
from textsieve.text.views import BatchViews


@dataclass
class DocScores:
    """One score per document; `valid[i]` False means a null score."""

    values: np.ndarray
    valid: np.ndarray | None = None


@dataclass
class LineScores:
    """One score per raw line, flat over the batch in `BatchViews.line_off` order.

    `null_span_when_no_lines`: a document without lines gets the single span [0, 0, null]
    instead of an empty list (RPv2's bullet-point signal does this, spec §2.1, §11.4).
    """

    values: np.ndarray
    valid: np.ndarray | None = None
    null_span_when_no_lines: bool = False


Scores = DocScores | LineScores


@dataclass(frozen=True)
class Signal:
    """A registered signal: what `annotate` computes for `name` and how its column is typed."""

    name: str
    level: Literal["doc", "line"]
    dtype: Literal["float", "int", "str"]  # "str": a plain string column (doc level only), not spans
    group: str  # selectable as a whole with `--signals GROUP`
    definition: str  # one line, printed by `textsieve signals`
    needs: tuple[str, ...]  # "stop_words" and/or "bad_words" (word lists), "meta" (the documents' meta)
    fn: Callable[[BatchViews], Scores]

    @property
    def word_lists(self) -> tuple[str, ...]:
        """The word lists among `needs` (a language without one gets a null score)."""
        return tuple(n for n in self.needs if n in WORD_LISTS)

    @property
    def needs_meta(self) -> bool:
        """Whether it reads `BatchViews.metas`: then annotate ships each document's meta to the
        workers (only then: most runs need none of it)."""
        return META in self.needs

    @property
    def builtin(self) -> bool:
        """Defined by textsieve itself (not by an extension)."""
        return str(getattr(self.fn, "__module__", None) or "").startswith("textsieve.")


class UnknownSignalError(TextsieveError, KeyError):
    """A signal name no registration made in this process: a `KeyError`, as for a dict, and an
    error the CLI prints without a traceback."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class SignalRegistry(Mapping[str, Signal]):
    """Every registered signal by name, in registration order: the built-ins first, then the
    extensions. Read-only; add with `register_signal`. The first read loads the signals of the
    installed `textsieve.signals` entry points, so every process, workers included, sees them."""

    def __init__(self) -> None:
        self._signals: dict[str, Signal] = {}

    def _ready(self) -> dict[str, Signal]:
        extensions.load_entry_points(extensions.SIGNALS)
        return self._signals

    def __getitem__(self, name: str) -> Signal:
        try:
            return self._ready()[name]
        except KeyError:
            raise UnknownSignalError(f"signal {name!r} is not registered in this process."
                                     + extensions.missing_reason(_label(name))) from None

    def __contains__(self, name: object) -> bool:
        return name in self._ready()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())


REGISTRY = SignalRegistry()
LEVELS = ("doc", "line")
DTYPES = ("float", "int", "str")
WORD_LISTS = ("stop_words", "bad_words")
META = "meta"
NEEDS = (*WORD_LISTS, META)
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
#: words `--signals` reads as something else (`textsieve.signals.selection`)
_RESERVED = frozenset({"all", "none", "minhash", "minhash_fast", "rpv2", "id", "shard", "row"})


def register_signal(name: str, fn: Callable[[BatchViews], Scores], *, level: Literal["doc", "line"], group: str,
                    definition: str, dtype: Literal["float", "int", "str"] = "float",
                    needs: tuple[str, ...] = ()) -> Signal:
    """Register `fn` as signal `name` and return its `Signal`.

    `fn(views) -> DocScores | LineScores` scores a whole batch; `level` is "doc" (one score per
    document) or "line" (one per raw line); `dtype` the score's JSON type ("float", "int"; "str"
    makes a plain string column instead of spans); `group` a name `--signals` selects it by;
    `definition` the one line `textsieve signals` prints; `needs` the word lists it reads
    ("stop_words", "bad_words") and "meta" when it reads the documents' meta (`BatchViews.metas`,
    shipped to the workers only for such a signal). Repeating an identical registration is a no-op (worker
    processes repeat the parent's, `textsieve.extensions`); anything else under a taken name is
    a `ValueError`.
    """
    sig = Signal(name, level, dtype, group, definition, tuple(needs), fn)
    if not sig.builtin:
        _check(sig)
        extensions.load_entry_points(extensions.SIGNALS)  # installed plugins first: a stable order
    existing = REGISTRY._signals.get(name)
    if existing is not None:
        if existing == sig:
            return existing
        raise ValueError(f"signal {name!r} registered twice")
    REGISTRY._signals[name] = sig
    extensions.remember(_label(name), register_signal, name, fn, level=level, group=group, definition=definition,
                        dtype=dtype, needs=tuple(needs))
    return sig


def signal(name: str, *, level: Literal["doc", "line"], group: str, definition: str,
           dtype: Literal["float", "int", "str"] = "float",
           needs: tuple[str, ...] = ()) -> Callable[[Callable[[BatchViews], Scores]], Callable[[BatchViews], Scores]]:
    """Decorator form of `register_signal`: register the decorated function as signal `name`."""

    def register(fn: Callable[[BatchViews], Scores]) -> Callable[[BatchViews], Scores]:
        register_signal(name, fn, level=level, group=group, definition=definition, dtype=dtype, needs=needs)
        return fn

    return register


def unregister_signal(name: str) -> None:
    """Remove the extension signal `name` (for tests and notebooks; built-ins stay)."""
    sig = REGISTRY._signals.get(name)
    if sig is None:
        raise UnknownSignalError(f"signal {name!r} is not registered")
    if sig.builtin:
        raise ValueError(f"signal {name!r} is built in and cannot be removed")
    del REGISTRY._signals[name]
    extensions.forget(_label(name))


#: built-in groups named `rpv1_<source>` measure RedPajama-1T's source dumps (`textsieve source`),
#: not web text: computed only when `--signals` names them or their group, never by `all`
SOURCE_GROUP_PREFIX = "rpv1_"


def builtin_signals() -> list[str]:
    """The names of textsieve's own signals, in registry order (what `--signals all` selects;
    the source-dump groups, `SOURCE_GROUP_PREFIX`, are left out)."""
    return [name for name, sig in REGISTRY.items() if sig.builtin and not sig.group.startswith(SOURCE_GROUP_PREFIX)]


def _label(name: str) -> str:
    return f"signal {name!r}"


def _check(sig: Signal) -> None:
    """Reject what would break the attribute shard or the `--signals` syntax, before any run."""
    from textsieve.io.attributes import LENGTH_COLUMN, SCORE_SUFFIX

    where = f"register_signal({sig.name!r})"
    if not _NAME.match(sig.name) or sig.name in _RESERVED or sig.name == LENGTH_COLUMN \
            or sig.name.endswith(SCORE_SUFFIX) or sig.name.startswith(("signature_sim", "ts_fastsig_")):
        raise ValueError(f"{where}: a signal name is lower-case letters, digits and '_', starts with a "
                         f"letter, does not end in {SCORE_SUFFIX!r} and is not one of the reserved names "
                         f"({', '.join(sorted(_RESERVED | {LENGTH_COLUMN}))}, signature_sim*, ts_fastsig_*)")
    if sig.level not in LEVELS:
        raise ValueError(f"{where}: level must be one of {LEVELS}, not {sig.level!r}")
    if sig.dtype not in DTYPES or (sig.dtype == "str" and sig.level != "doc"):
        raise ValueError(f"{where}: dtype must be one of {DTYPES} ('str' only at doc level), not {sig.dtype!r}")
    if not set(sig.needs) <= set(NEEDS):
        raise ValueError(f"{where}: needs must name word lists or the meta among {NEEDS}, not {sig.needs!r}")
    if not sig.definition.strip() or "\n" in sig.definition:
        raise ValueError(f"{where}: the definition is one non-empty line (`textsieve signals` prints it)")
    if not sig.group or not _NAME.match(sig.group) or sig.group in _RESERVED:
        raise ValueError(f"{where}: group {sig.group!r} must be a lower-case name, not a reserved word")
    builtin_groups = {s.group for s in REGISTRY._signals.values() if s.builtin}
    if sig.group in builtin_groups:  # `--signals lines` must keep meaning what it meant
        raise ValueError(f"{where}: group {sig.group!r} is a built-in group ({', '.join(sorted(builtin_groups))}); "
                         "give extension signals a group of their own")
    if not callable(sig.fn):
        raise ValueError(f"{where}: fn must be callable")


#: `round8`'s vectorised path takes values below this magnitude (x * 1e8 < 2**30, so its rounding
#: error stays under 6e-8) whose scaled fraction is further than `_HALF_MARGIN` from one half
_FAST_LIMIT = 8.0
_HALF_MARGIN = 1e-6


def round8(values: np.ndarray) -> np.ndarray:
    """Python's `round(x, 8)` for every element, exactly.

    Python rounds the exact binary value to 8 decimals (half to even) and reads the decimal back
    as the nearest double. For |x| < 8, p = fl(x * 1e8) is within 6e-8 of the exact product, so
    where p's fraction is not within 1e-6 of one half, rint(p) is the integer Python picks, and
    rint(p) / 1e8 (two exact doubles, one correctly rounded division) is the double it reads back:
    the same bits. The other values (near a half, large, not finite) go through `round` itself,
    each distinct one once (`np.round` rounds the inexact product everywhere, and so can differ)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    with np.errstate(over="ignore", invalid="ignore"):  # huge or infinite values take the slow path
        scaled = values * 1e8
        nearest = np.rint(scaled)
        out = nearest / 1e8
        slow = ~(np.abs(values) < _FAST_LIMIT) | (np.abs(np.abs(scaled - nearest) - 0.5) < _HALF_MARGIN)
    if slow.any():
        uniq, inverse = np.unique(values[slow], return_inverse=True)
        out[slow] = np.array([round(v, 8) for v in uniq.tolist()], dtype=np.float64)[inverse]
    return out


def ratio(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """num / den where den > 0, with the mask of where it is defined (0.0 elsewhere)."""
    ok = den > 0
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=ok)
    return out, ok
