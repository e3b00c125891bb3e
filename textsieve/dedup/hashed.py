"""The hashed documents of one shard for `dedup exact`: (id, shard, row, h1, h2), batch by batch.

Why on disk: the hashing worker used to return a whole shard's ids and keys as Python lists,
which the main process then held (and pickled, and unpickled) at once, so memory grew with the
largest shard whatever `--memory` said (a 136k-document shard cost ~40 MB per worker and again in
the main process, per shard in flight). Now a local worker appends each hashed batch to an
Arrow IPC file in the stage's work folder and returns only its name and count; the main
process reads it back one batch at a time, to scatter the keys, and again to write the output,
so both sides hold one batch. The file is also the "base" (id, shard, row) the output is
written from. A Ray task cannot write to the main process's disk: it returns the same batches
in memory (`HashedShard.held`), which the main process spills to the same kind of file.

Written through a Python file object, so a full disk is a `DiskFullError` (`io.diskfull`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from textsieve.io.arrow_arrays import numeric_array, string_array
from textsieve.io.diskfull import disk_full_as_error

SCHEMA = pa.schema([("id", pa.string()), ("shard", pa.string()), ("row", pa.int64()),
                    ("h1", pa.uint64()), ("h2", pa.uint64())])


def hashed_batch(ids: list[str], shards: list[str], rows: list[int], h1: Any, h2: Any) -> pa.RecordBatch:
    """One batch of hashed documents (parallel columns)."""
    # built from buffers: `pa.array` loads pandas through pyarrow's shim (~0.25 s, ~45 MB a worker)
    return pa.record_batch([string_array(ids), string_array(shards), numeric_array(rows, pa.int64()),
                            numeric_array(h1, pa.uint64()), numeric_array(h2, pa.uint64())], schema=SCHEMA)


class HashedWriter:
    """Append hashed batches to the IPC file `path` (in a worker, or in the main process)."""

    def __init__(self, path: str):
        self.path = path
        self.n = 0
        self._fh = open(path, "wb")  # noqa: SIM115 - closed in `close`
        self._writer = pa.ipc.new_file(self._fh, SCHEMA)

    def add(self, batch: pa.RecordBatch) -> None:
        with disk_full_as_error(self.path, written=self._fh.tell, what="spilling hashed documents to"):
            self._writer.write_batch(batch)
        self.n += batch.num_rows

    def close(self) -> HashedShard:
        with disk_full_as_error(self.path, written=self._fh.tell, what="spilling hashed documents to"):
            self._writer.close()
            self._fh.close()
        return HashedShard(self.n, self.path)


@dataclass
class HashedShard:
    """A shard's hashed documents: in the IPC file `path`, or (from Ray) `held` in memory."""

    n: int
    path: str | None = None
    held: list[pa.RecordBatch] = field(default_factory=list)

    def spilled(self, path: str) -> HashedShard:
        """This shard with its batches in a file (written to `path` when they are held in memory)."""
        if self.path is not None:
            return self
        writer = HashedWriter(path)
        for b in self.held:
            writer.add(b)
        return writer.close()

    def batches(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """The batches in order (only `columns`, when given), one in memory at a time."""
        if self.path is None:
            yield from (b.select(columns) if columns else b for b in self.held)
            return
        with pa.OSFile(self.path, "rb") as fh:
            reader = pa.ipc.open_file(fh)
            for i in range(reader.num_record_batches):
                b = reader.get_batch(i)
                yield b.select(columns) if columns else b

    def rows(self, positions: np.ndarray, columns: list[str]) -> pa.Table:
        """The rows at sorted `positions` (0-based in the shard), reading only the batches that hold them."""
        out, at = [], 0
        positions = np.asarray(positions, dtype=np.int64)
        for b in self.batches(columns):
            lo, hi = np.searchsorted(positions, [at, at + b.num_rows])
            if hi > lo:
                out.append(pa.Table.from_batches([b]).take(numeric_array(positions[lo:hi] - at, pa.int64())))
            at += b.num_rows
            if hi == positions.shape[0]:
                break
        return pa.concat_tables(out) if out else pa.schema([SCHEMA.field(c) for c in columns]).empty_table()
