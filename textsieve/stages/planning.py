"""What a stage tells `textsieve run --dry-run` before anything runs: its rough cost (`StagePlan`)
and the attribute sets it will write (`PlannedSet`), each from the stage's own config.

Why here and not in `pipeline/`: the constants behind an estimate (bytes per document, worker
RSS) and the columns a stage writes are facts about that stage, measured or defined beside its
code; the pipeline only loops over the registered stages and adds them up. Per-document
constants were measured on the dev corpus (15,263 web documents, 20 MB gzipped).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from textsieve.stages.descriptor import Layout

#: Bytes per document of a per-document attribute set (id, shard, row + a few scalar columns).
SET_BYTES_PER_DOC = 60
#: Memory a per-document set's worker holds: one batch of texts, the set is small.
DOC_SET_WORKER_BYTES = 200_000_000
#: The key columns every attribute set starts with: they join it to the annotate shards.
KEYS = (pa.field("id", pa.string()), pa.field("shard", pa.string()), pa.field("row", pa.int64()))


class PlanError(ValueError):
    """A stage's config cannot work, found while planning (the message names its YAML key)."""


@dataclass
class StagePlan:
    """One row of the dry-run plan: what the stage does, its peak memory and disk written."""

    name: str
    does: str
    memory: int
    disk: int
    note: str = ""


@dataclass(frozen=True)
class Corpus:
    """What every estimate starts from: the pipeline's layout and the estimated corpus size."""

    layout: Layout
    docs: int
    mean_chars: int


@dataclass(frozen=True)
class PlannedSet:
    """An attribute set a stage will write: its name ("" for annotate's own shards), its
    columns, and the fingerprint of the model that makes it, when one does (a recipe may then
    name the set although it is not on disk yet)."""

    name: str
    schema: pa.Schema
    fingerprint: str | None = None


def set_schema(columns: list[tuple[str, pa.DataType]]) -> pa.Schema:
    """An attribute set's schema: the key columns, then `columns`."""
    return pa.schema(list(KEYS) + [pa.field(n, t) for n, t in columns])


def doc_set_plan(name: str, does: str, docs: int, per_char: float = 0.0, mean_chars: int = 0) -> StagePlan:
    """A per-document set's estimate: a worker holds one batch of texts; the set is small."""
    return StagePlan(name, does, DOC_SET_WORKER_BYTES, int(docs * (SET_BYTES_PER_DOC + per_char * mean_chars)))


def human(n: float) -> str:
    """Bytes for a person: `1.5 GB`."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} B"  # pragma: no cover
