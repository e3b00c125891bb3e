"""Whole Parquet tables read from an open (Python) file object, single-threaded and without
pre-buffering.

Why: pyarrow's default `read_table` scans with its thread pools and pre-buffers reads. On a
Python file object (what fsspec's `fs.open` returns) those reads hold references that Arrow's
worker threads release later, and releasing one needs the GIL. When that happens while the
interpreter shuts down, the worker thread is forced to exit inside a C++ destructor and the
process aborts with "terminate called without an active exception" (exit 134) after its work
is done: seen in 1 of ~10 fresh processes that read a small set right before exiting
(`textsieve decontaminate`). Reading without threads and pre-buffering finishes every read
inside the call. The tables stages read this way are attribute columns of one
shard, small enough that the threads bought nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def read_table(source: Any, columns: list[str] | None = None) -> pa.Table:
    """`pq.read_table(source, columns)` finished within the call (see the module doc): the
    file reader's own synchronous read, not the dataset scan behind `pq.read_table`, which
    schedules row groups on Arrow's I/O executor even with `use_threads=False`."""
    return pq.ParquetFile(source, pre_buffer=False).read(columns=columns, use_threads=False)


def row_group_batches(source: Any, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
    """A file's rows as record batches, one row group read at a time in the calling thread
    (`ParquetFile.iter_batches` runs a generator on Arrow's executor, see the module doc)."""
    pf = pq.ParquetFile(source, pre_buffer=False)
    for i in range(pf.metadata.num_row_groups):
        yield from pf.read_row_group(i, columns=columns, use_threads=False).to_batches(max_chunksize=batch_size)
