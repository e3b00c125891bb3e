"""The per-batch unit of `annotate`: documents in, one Arrow record batch of attributes out.

It runs in worker processes (or in-process with one worker). Process-wide state (selected
signals, word-list tables) is set once by `init_worker`, so a task carries only documents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from textsieve.dedup import minhash
from textsieve.signals import REGISTRY
from textsieve.signals.spans import span_type, to_arrow
from textsieve.text.views import BatchViews, WordListTables

MINHASH_GROUP = "minhash"


@dataclass
class BatchTask:
    """A slice of one shard: parallel lists of document fields."""

    shard: str  # the shard's rel name
    ids: list[str]
    rows: list[int]
    texts: list[str]
    langs: list[str | None]
    bytes_mark: int = 0  # reader position after this batch, for progress
    last: bool = False  # the shard's final task: its output can be closed


@dataclass(frozen=True)
class WorkerSetup:
    signals: tuple[str, ...]
    minhash: bool
    stop_words: dict[str, frozenset[str]]
    bad_words: dict[str, frozenset[str]]


_STATE: dict = {}


def init_worker(setup: WorkerSetup) -> None:
    _STATE["setup"] = setup
    _STATE["tables"] = WordListTables(setup.stop_words, setup.bad_words)


def minhash_columns() -> list[str]:
    return [minhash.signature_key(t) for t in minhash.THRESHOLDS]


def output_schema(signals: tuple[str, ...], with_minhash: bool) -> pa.Schema:
    """The attribute shard schema: id, shard, row, one span column per signal, MinHash bands."""
    fields = [pa.field("id", pa.string(), nullable=False), pa.field("shard", pa.string()),
              pa.field("row", pa.int64())]
    fields += [pa.field(name, span_type(REGISTRY[name].dtype)) for name in signals]
    if with_minhash:
        fields += [pa.field(col, pa.list_(pa.binary())) for col in minhash_columns()]
    return pa.schema(fields)


def annotate_batch(task: BatchTask) -> pa.RecordBatch:
    """Compute every selected signal for the documents of `task`."""
    setup: WorkerSetup = _STATE["setup"]
    views = BatchViews(task.texts, task.langs, _STATE["tables"])
    n = views.n_docs
    columns: list[pa.Array] = [
        pa.array(task.ids, pa.string()),
        pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([task.shard]))
        .cast(pa.string()),
        pa.array(task.rows, pa.int64()),
    ]
    for name in setup.signals:
        sig = REGISTRY[name]
        columns.append(to_arrow(sig, sig.fn(views), views))
    if setup.minhash:
        buf, off = views.normalized_utf8
        sig, valid = minhash.signatures(buf, off)
        columns += [minhash.bands_arrow(sig, valid, t) for t in minhash.THRESHOLDS]
    return pa.RecordBatch.from_arrays(columns, schema=output_schema(setup.signals, setup.minhash))


def warm_up(setup: WorkerSetup) -> None:
    """Compile (or load from numba's cache) every kernel in this process, before workers start,
    so parallel workers do not all compile the same code at once on a first run."""
    init_worker(setup)
    annotate_batch(BatchTask("warm-up", ["a"], [0], ["Warm up the kernels: fourteen words are needed "
                                                     "for MinHash, so here they are, one two three."], ["en"]))
