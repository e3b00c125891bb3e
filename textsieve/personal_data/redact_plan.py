"""What `select --redact NAME...` replaces: span columns found in an annotate folder, read per shard.

Why names and not only `pii`: redaction is the same operation for any span column (personal
data from `textsieve pii`, benchmark passages from `textsieve decontaminate`, a Dolma tagger's
spans), so a NAME is either

- `pii`: every `ts_pii_<type>` column of the `sets/pii` set, each span replaced by its type's
  placeholder (`pii.redact.PLACEHOLDERS`) and counted under the type (`email`, `ip`, ...), or
- a span column of any attribute set or of annotate's shards (`ts_contam_spans`,
  `ts_pii_email`): its spans are removed (empty replacement), counted under the column name.

A span column is `list<struct<start, end, ...>>` with character offsets into the text. The
plan is resolved once in the main process (one clear error for an unknown or non-span name);
each writing worker then reads only its shard's columns (`load_regions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.errors import TextsieveError
from textsieve.io.arrow_arrays import to_numpy
from textsieve.personal_data.redact import PLACEHOLDERS, Region

PII_SET = "pii"
PII_PREFIX = "ts_pii_"
#: the record field `select --redact` adds: replaced spans per label, e.g. {"email": 2, "ip": 0}
REDACTED_FIELD = "ts_redacted"

#: rows of an attribute shard read at a time by `load_regions`
REGION_BATCH = 65_536

#: one column to redact in one shard: (Parquet path, column, replacement, label)
RedactSource = tuple[str, str, str, str]


class RedactError(TextsieveError, ValueError):
    """A `--redact` name that does not denote span columns of the folder."""


@dataclass(frozen=True)
class _Column:
    set_name: str  # "" for annotate's shards
    column: str
    replacement: str
    label: str


@dataclass
class RedactPlan:
    """The columns to redact and, per attribute shard rel, the file holding each of them."""

    names: list[str]
    columns: list[_Column] = field(default_factory=list)
    files: dict[str, dict[str, str]] = field(default_factory=dict)  # set name -> {shard rel: path}

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.label for c in self.columns))

    def sources(self, rel: str) -> list[RedactSource]:
        """What a writing worker reads for attribute shard `rel`."""
        out = []
        for c in self.columns:
            path = self.files[c.set_name].get(rel)
            if path is None:
                where = f"attribute set _{c.set_name}" if c.set_name else "annotate's shards"
                raise RedactError(f"select --redact: {where} has no shard {rel!r} (column {c.column}); re-run the "
                                  "stage that made it")
            out.append((path, c.column, c.replacement, c.label))
        return out


def _is_span(t: pa.DataType) -> bool:
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return False
    v = t.value_type
    return {v.field(i).name for i in range(v.num_fields)} >= {"start", "end"}


def _url(fs: fsspec.AbstractFileSystem, path: str) -> str:
    proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if proto in ("file", "local") else f"{proto}://{path}"


def resolve_redact(directory: str, names: Sequence[str]) -> RedactPlan:
    """The plan of `names` over the annotate folder `directory` (see the module doc)."""
    from textsieve.io.attributes import attribute_set_dir, attribute_sets, attribute_shards, stale_attribute_sets
    from textsieve.recipes.schema import read_schema

    plan = RedactPlan(list(dict.fromkeys(str(n).strip() for n in names if str(n).strip())))
    if not plan.names:
        return plan
    schema = read_schema(directory)
    for name in plan.names:
        if name == PII_SET:
            cols = sorted((c for c in schema.columns.values() if c.source == PII_SET
                           and c.name.startswith(PII_PREFIX) and _is_span(c.type)), key=lambda c: c.name)
            if not cols:
                why = (" (it was made before the documents were annotated again: re-run `textsieve pii`)"
                       if PII_SET in stale_attribute_sets(directory) else "")
                raise RedactError(f"select --redact pii: {directory} has no attribute set sets/pii with span columns"
                                  f"{why}; run `textsieve pii {directory}` first")
            for c in cols:
                kind = c.name[len(PII_PREFIX):]
                plan.columns.append(_Column(PII_SET, c.name, PLACEHOLDERS.get(kind, f"|||{kind.upper()}|||"), kind))
            continue
        col = schema.columns.get(name)
        if col is None:
            spans = sorted(c.name for c in schema.columns.values() if _is_span(c.type) and c.source)
            raise RedactError(f"select --redact {name}: no such column in {directory}; give `pii` or a span column "
                              f"of an attribute set ({', '.join(spans[:12]) or 'none found'})")
        if not _is_span(col.type):
            raise RedactError(f"select --redact {name}: {name} is a {col.type} column, not a span list "
                              "(list<struct<start, end, ...>>)")
        if name in schema.ambiguous:
            raise RedactError(f"select --redact {name}: the column is in several sets "
                              f"({', '.join(schema.ambiguous[name])})")
        plan.columns.append(_Column(col.source, name, "", name))
    sets = dict.fromkeys(c.set_name for c in plan.columns)
    for s in sets:
        if s and s not in attribute_sets(directory):
            raise RedactError(f"select --redact: attribute set _{s} is not usable in {directory}")
        fs, paths = attribute_shards(directory, s or None)
        base = fsspec.core.url_to_fs(attribute_set_dir(directory, s) if s else directory)[1].rstrip("/")
        plan.files[s] = {p[len(base) + 1:]: _url(fs, p) for p in paths}
    return plan


def load_regions(sources: Sequence[RedactSource], rows: np.ndarray) -> list[list[Region]]:
    """The regions to replace in each of `rows` (source record indices, as the shard's `row`
    column), from every source column; rows a set lacks have none.

    Why batch by batch, and only the wanted rows converted: a selection often keeps a few rows
    of a large shard, and turning every row's spans into Python objects would cost memory and
    time proportional to the shard, not to the selection. Each Arrow batch is matched against
    the sorted `rows` in numpy, and only its matching rows are taken and converted."""
    want = np.asarray(rows, np.int64)
    out: list[list[Region]] = [[] for _ in range(len(want))]
    if not len(want):
        return out
    order = np.argsort(want, kind="stable")
    ordered = want[order]
    for path, column, replacement, label in sources:
        with fsspec.open(path, "rb") as fh:
            pf = pq.ParquetFile(fh)
            for batch in pf.iter_batches(batch_size=REGION_BATCH, columns=["row", column], use_threads=False):
                got = to_numpy(batch.column(0)).astype(np.int64, copy=False)
                pos = np.searchsorted(ordered, got)
                hit = pos < len(ordered)
                hit[hit] = ordered[pos[hit]] == got[hit]
                if not hit.any():
                    continue
                take = np.flatnonzero(hit)
                spans_of = batch.column(1).take(pa.array(take, pa.int64())).to_pylist()
                for i, spans in zip(order[pos[take]].tolist(), spans_of):
                    if spans:
                        out[i].extend((int(sp["start"]), int(sp["end"]), replacement, label) for sp in spans
                                      if sp is not None and sp.get("start") is not None
                                      and sp.get("end") is not None)
    return out


__all__ = ["PII_SET", "REDACTED_FIELD", "RedactError", "RedactPlan", "RedactSource", "load_regions",
           "resolve_redact"]
