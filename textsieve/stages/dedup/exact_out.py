"""Writing `dedup exact`'s output shards from the hashed files (`dedup.hashed`), one batch at a
time: the Bloom-mode flags as the filter sees each batch, and the exact-mode groups once known.

Why apart from `dedup_exact`: these are the streaming pieces that keep the stage's memory at one
batch whatever the shard size (issue 16, `--memory` covering the whole process tree); the stage
module keeps the flow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve.dedup.hashed import SCHEMA as HASHED_SCHEMA
from textsieve.dedup.hashed import HashedShard
from textsieve.io.arrow_arrays import bool_array, to_numpy
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import META_KEY


@dataclass
class BloomTables:
    """A shard's Bloom-mode output tables, one batch at a time; `removed` counts as they are read."""

    bloom: Any
    hashed: HashedShard
    columns: list[str]  # the set's (group, size, keep) column names
    removed: int = 0

    def __iter__(self) -> Iterator[pa.Table]:
        for b in with_empty(self.hashed.batches()):
            keep = ~self.bloom.test_add(to_numpy(b.column("h1")), to_numpy(b.column("h2")))
            self.removed += int((~keep).sum())
            n = b.num_rows
            yield out_table(b, self.columns, pa.nulls(n, pa.uint64()), pa.nulls(n, pa.int64()), keep)


def bloom_tables(bloom: Any, hashed: HashedShard, columns: list[str]) -> BloomTables:
    return BloomTables(bloom, hashed, columns)


def with_empty(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches, or one empty batch for a shard without documents (its output is still written)."""
    empty = True
    for b in batches:
        empty = False
        yield b
    if empty:
        yield pa.RecordBatch.from_pylist([], schema=HASHED_SCHEMA)


def out_table(b: pa.RecordBatch, columns: list[str], group: pa.Array, size: pa.Array, keep: np.ndarray) -> pa.Table:
    """An output slice: the batch's id, shard, row and the set's three columns."""
    return pa.Table.from_arrays([b.column("id"), b.column("shard"), b.column("row"), group, size, bool_array(keep)],
                                names=["id", "shard", "row", *columns])


def write_tables(set_root: str, fs: fsspec.AbstractFileSystem, rel: str, tables: Iterable[pa.Table],
                 info: dict) -> None:
    """Write one output shard from its tables in order (one in memory at a time), atomically."""
    writer: AtomicParquetWriter | None = None
    try:
        for table in tables:
            if writer is None:
                writer = AtomicParquetWriter(fs, f"{set_root}/{rel}", table.schema)
            writer.write(table)
        if writer is None:
            raise AssertionError(f"{rel}: no table to write")  # callers yield at least one (maybe empty)
        writer.add_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    except BaseException as exc:
        if writer is not None:
            writer.abort(exc)
        raise
    writer.close()


def member_records(hashed: list[HashedShard], starts: np.ndarray, ordinals: np.ndarray) -> dict[int, dict]:
    """{ordinal: {id, shard, row}} for sorted `ordinals`, read shard by shard from the hashed files."""
    out: dict[int, dict] = {}
    for i, h in enumerate(hashed):
        lo, hi = np.searchsorted(ordinals, [starts[i], starts[i + 1]])
        if hi > lo:
            rows = h.rows(ordinals[lo:hi] - starts[i], ["id", "shard", "row"]).to_pylist()
            out.update(zip((int(o) for o in ordinals[lo:hi]), rows))
    return out
