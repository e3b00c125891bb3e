"""The signal registry: every signal is a small function registered by name.

A signal function takes the `BatchViews` of a batch of documents and returns its scores for the
whole batch: `DocScores` (one `[0, len(text), score]` span per document) or `LineScores` (one
span per raw line). The span representation itself (spec §2.1) is built by the writer, so a
signal states only its formula. Registration records the level, the JSON type of the score
(`float` or `int`, spec §2.2), a group for `--signals`, the word lists it needs, and a one-line
definition that `textsieve signals` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

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
    name: str
    level: Literal["doc", "line"]
    dtype: Literal["float", "int"]
    group: str
    definition: str
    needs: tuple[str, ...]  # "stop_words" and/or "bad_words"
    fn: Callable[[BatchViews], Scores]


REGISTRY: dict[str, Signal] = {}


def signal(name: str, *, level: Literal["doc", "line"], group: str, definition: str,
           dtype: Literal["float", "int"] = "float", needs: tuple[str, ...] = ()):
    """Register the decorated function as signal `name`."""

    def register(fn: Callable[[BatchViews], Scores]) -> Callable[[BatchViews], Scores]:
        if name in REGISTRY:
            raise ValueError(f"signal {name!r} registered twice")
        REGISTRY[name] = Signal(name, level, dtype, group, definition, needs, fn)
        return fn

    return register


def round8(values: np.ndarray) -> np.ndarray:
    """Python's `round(x, 8)` for every element, exactly.

    `np.round` scales by 1e8 and so differs from Python's correctly rounded `round` in rare
    cases; ratios repeat a lot, so rounding each distinct value in Python is cheap.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values
    uniq, inverse = np.unique(values, return_inverse=True)
    rounded = np.array([round(v, 8) for v in uniq.tolist()], dtype=np.float64)
    return rounded[inverse.reshape(values.shape)]


def ratio(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """num / den where den > 0, with the mask of where it is defined (0.0 elsewhere)."""
    ok = den > 0
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=ok)
    return out, ok
