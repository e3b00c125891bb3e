"""Atomic output files: write under a temporary name, rename when complete.

A crash, kill or full disk can leave a temporary file behind but never a final-named file
that looks complete, so "the final file exists" is a sound test for "this shard is done".
Works for any fsspec filesystem; on local disks the rename is atomic.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io.leftovers import TMP_MARK, writer_tag


def temp_name(final: str) -> str:
    """A unique sibling name of `final` that no reader mistakes for a finished file. It names
    its writer (`PID@HOST`) so a later run can tell a dead run's leftover from a live run's file
    (`io.leftovers.remove_stale_temps`)."""
    head, _, tail = final.rpartition("/")
    name = f".{tail}{TMP_MARK}{writer_tag()}-{uuid.uuid4().hex[:8]}"
    return f"{head}/{name}" if head else name


@contextmanager
def atomic_open(fs: fsspec.AbstractFileSystem, final: str, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary sibling of `final` for writing; rename it to `final` on success only."""
    parent = final.rpartition("/")[0]
    if parent:
        fs.makedirs(parent, exist_ok=True)
    tmp = temp_name(final)
    try:
        with fs.open(tmp, mode) as fh:
            yield fh
        fs.mv(tmp, final)
    except BaseException:
        try:
            fs.rm(tmp)
        except (FileNotFoundError, OSError):
            pass
        raise


class AtomicParquetWriter:
    """A Parquet writer that only publishes the file under its final name when closed normally.

    Rows are re-cut into row groups of exactly `row_group_rows` (the last one shorter), so the
    file's layout does not depend on how the producer batched its work, and readers get row
    groups large enough to decode efficiently (small row groups make nested columns slow).
    `close(final=...)` may publish under another name than the one given at opening (annotate
    decides only at the end of a part whether it holds a whole shard or one part of it).
    """

    def __init__(self, fs: fsspec.AbstractFileSystem, final: str, schema: pa.Schema,
                 compression: str = "zstd", row_group_rows: int = 8192):
        self._fs, self.final = fs, final
        parent = final.rpartition("/")[0]
        if parent:
            fs.makedirs(parent, exist_ok=True)
        self._tmp = temp_name(final)
        self._fh = fs.open(self._tmp, "wb")
        self._writer = pq.ParquetWriter(self._fh, schema, compression=compression)
        self._rows = row_group_rows
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        batches = [batch] if isinstance(batch, pa.RecordBatch) else batch.to_batches()
        for b in batches:
            if b.num_rows:
                self._pending.append(b)
                self._pending_rows += b.num_rows
        while self._pending_rows >= self._rows:
            table = pa.Table.from_batches(self._pending)
            self._writer.write_table(table.slice(0, self._rows), row_group_size=self._rows)
            rest = table.slice(self._rows)
            self._pending = rest.to_batches()
            self._pending_rows = rest.num_rows

    def _flush(self) -> None:
        if self._pending_rows:
            self._writer.write_table(pa.Table.from_batches(self._pending), row_group_size=self._rows)
        self._pending, self._pending_rows = [], 0

    def add_metadata(self, metadata: dict[bytes, bytes]) -> None:
        """Key-value metadata for the file footer (known only once all rows are written)."""
        self._writer.add_key_value_metadata(metadata)

    def close(self, final: str | None = None) -> None:
        """Finish the file and publish it as `final` (default: the name given at opening)."""
        try:
            self._flush()
            self._writer.close()
            self._fh.close()
            target = final or self.final
            parent = target.rpartition("/")[0]
            if parent:
                self._fs.makedirs(parent, exist_ok=True)
            self._fs.mv(self._tmp, target)
        except BaseException as exc:
            self.abort(exc)
            raise

    def abort(self, exc: BaseException | None = None) -> None:
        """Drop the temporary file (called when the work producing the shard failed)."""
        for step in (self._writer.close, self._fh.close, lambda: self._fs.rm(self._tmp)):
            try:
                step()
            except BaseException:
                pass
