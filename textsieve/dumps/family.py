"""What a family of source dumps provides to the `source` stage, and the registry of families.

A family turns one kind of native dump into records `{id, text, meta}`. The stage runs it in
two phases so that per-file work runs on every core while decisions that span the whole input
(RedPajama-1T's GitHub dedup across all files, the books' SimHash near-duplicates) stay exact:

1. `read(unit)`, in a worker per input unit (a file, an archive): every record of the unit in
   order, or a `Skip` saying why one was left out while reading (a redirect page, an
   undecodable project, a damaged row under `--on-error skip`). Each record may carry a small
   `key` (a content hash, a fingerprint) for phase 2.
2. `decide(keys)`, once, over the keys of all units in input order: which records the whole
   input drops (duplicates), as {(unit index, record index): reason}.
3. `keep(record)`, in a worker per unit again: a per-record filter (a reference recipe's
   thresholds), with the state `prepare()` built once per worker (a tokenizer).

In default mode a family reads and cleans (fixing the reference's documented bugs); with
`--reference rp_v1` it reproduces the reference scripts' whole recipe, filters and quirks
included, so the output records are the reference's. Families register by name
(`register_family`); the built-in ones are imported on first use, so the CLI does not load a
Wikipedia parser to print its help.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from textsieve import extensions
from textsieve.errors import TextsieveError

#: the reference recipes a family can reproduce exactly (`--reference`)
REFERENCES = ("rp_v1",)
#: the built-in families and the module that registers each
BUILTIN = {"github": "textsieve.dumps.github", "arxiv": "textsieve.dumps.arxiv",
           "wikipedia": "textsieve.dumps.wikipedia", "stackexchange": "textsieve.dumps.stackexchange",
           "books": "textsieve.dumps.books"}


class SourceError(TextsieveError, ValueError):
    """A source dump that cannot be read as its family (the wrong kind of file, a bad setting)."""


@dataclass(frozen=True)
class SourceOptions:
    """The settings a family reads (the stage's config, less its own plumbing)."""

    reference: str | None = None  # "rp_v1": the reference recipe, exactly
    lang: str | None = None  # Wikipedia: the dump's language (default: its <siteinfo>)
    tokenizer: str | None = None  # GitHub, rp_v1 mode: the alpha-per-token filter's tokenizer file
    on_error: str = "fail"  # a damaged record: fail naming it, or skip and count it
    max_doc_bytes: int | None = None  # a record larger than this is skipped as too_large

    @property
    def rp_v1(self) -> bool:
        return self.reference == "rp_v1"


@dataclass(frozen=True)
class Unit:
    """One piece of input a worker reads on its own; the output shard is named after `rel`."""

    path: str  # what fsspec opens (local path or URL)
    rel: str  # relative name, e.g. "github_000.jsonl.gz" (suffix replaced by the output format's)
    size: int  # bytes on storage, for progress
    info: dict[str, Any] = field(default_factory=dict)  # family-specific, JSON-able (e.g. a site's name)


@dataclass
class SourceRecord:
    """One document of a dump: what the stage writes, plus what phase 2 decides on."""

    id: str  # unique within the family's output (e.g. repo/ref/path, an arXiv id)
    text: str
    meta: dict[str, Any]  # the reference's meta fields, in its order
    key: Any = None  # JSON-able value `decide` gets for this record (None: none)


@dataclass(frozen=True)
class Skip:
    """A record left out while reading, counted under `reason` and located."""

    reason: str
    location: str  # file, line, member: where a person finds it
    detail: str = ""


class SourceFamily:
    """One family of source dumps (subclass, then `register_family(Family())`)."""

    name: str = ""
    help: str = ""  # one line: what it reads
    #: every reason a record can be left out, reading and deciding: the summary counts each
    reasons: tuple[str, ...] = ()
    #: what `rp_v1` mode adds (the filters' reasons), for the docs and the summary
    reference_reasons: tuple[str, ...] = ()
    #: the meta struct's Parquet type for `--format parquet` (None: meta as a JSON string column)
    meta_schema: Any = None
    #: bump when what the family writes for the same input changes (it is part of every fingerprint)
    version: str = "1"

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        """The input units in the order the reference reads them (SourceError for inputs that
        are not this family's dumps)."""
        raise NotImplementedError

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        """Phase 1: the unit's records in order (runs in a worker)."""
        raise NotImplementedError

    def decide(self, keys: list[list[Any]], units: list[Unit], opts: SourceOptions) -> dict[tuple[int, int], str]:
        """Phase 2, once: {(unit index, record index): reason} for records the whole input drops.
        `keys[u][r]` is record r of unit u's key. Default: none."""
        return {}

    def prepare(self, opts: SourceOptions) -> Any:
        """Per-worker state for `keep` (built once per process: a tokenizer)."""
        return None

    def keep(self, record: SourceRecord, opts: SourceOptions, state: Any) -> str | None:
        """Phase 2, per record: the reason to drop it, or None to keep it. Default: keep."""
        return None

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        """What besides the options and `version` changes the output (a tokenizer's fingerprint),
        JSON-able: part of the run's fingerprint."""
        return {}

    @property
    def global_decisions(self) -> bool:
        """Whether `decide` is overridden: then one unit's output depends on every unit's input."""
        return type(self).decide is not SourceFamily.decide


_FAMILIES: dict[str, SourceFamily] = {}


def register_family(family: SourceFamily) -> SourceFamily:
    """Make `family` available as `textsieve source NAME` (and `ts.source(NAME, ...)`)."""
    if not family.name:
        raise ValueError("a source family needs a name")
    _FAMILIES[family.name] = family
    if not type(family).__module__.startswith("textsieve."):  # worker processes repeat the call
        extensions.remember(f"source family {family.name}", register_family, family)
    return family


def family_names() -> tuple[str, ...]:
    """Every family's name: the built-in ones and those registered since (without importing them)."""
    return tuple(sorted(set(BUILTIN) | set(_FAMILIES)))


def get_family(name: str) -> SourceFamily:
    """The family registered as `name` (a built-in one is imported on first use)."""
    if name not in _FAMILIES and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
    try:
        return _FAMILIES[name]
    except KeyError:
        raise SourceError(f"no source family {name!r}; choose from {', '.join(family_names())}") from None


def iter_records(family: SourceFamily, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
    """`family.read(unit)`, with records over `max_doc_bytes` turned into `too_large` skips."""
    limit = opts.max_doc_bytes
    for i, item in enumerate(family.read(unit, opts)):
        if limit and isinstance(item, SourceRecord) and len(item.text) > limit // 4 \
                and len(item.text.encode("utf-8", "surrogatepass")) > limit:
            yield Skip("too_large", f"{unit.rel} record {i}", f"{len(item.text):,} characters")
            continue
        yield item
