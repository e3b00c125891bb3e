"""Arrow IPC reader (`.arrow`): the files Hugging Face `datasets` keeps its tables in.

Why: a Hugging Face dataset lives on disk as Arrow IPC *stream* files (`save_to_disk` folders,
`load_dataset`'s cache, Arrow shards pushed to the Hub). Reading them in place, memory-mapped,
is what lets `annotate` work on a dataset without copying its text. Both IPC flavours (stream and
random-access file) are read. Like the Parquet reader, a document is built from the text, id,
lang and url columns only (the rest is never decoded), rows are the record index in the file,
and `ArrowFile` gives `select` the subset of `pyarrow.parquet.ParquetFile` it uses to copy every
column of the selected rows (record batches play the part of row groups).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa

from ..document import Document
from .parquet import _column, _document, _values, wanted_columns

if TYPE_CHECKING:
    from .readers import ShardReader


def read_table(path: str) -> pa.Table:
    """The whole table of an Arrow IPC file (stream or file format); local files are
    memory-mapped, so the columns are views of the file, not copies."""
    fs, local = fsspec.core.url_to_fs(path)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    source: Any = pa.memory_map(local, "r") if protocol in ("file", "local") else pa.BufferReader(
        fs.cat_file(local))
    try:
        return pa.ipc.open_stream(source).read_all()
    except pa.ArrowInvalid:
        source.seek(0)
        return pa.ipc.open_file(source).read_all()


class _RowGroup:
    def __init__(self, num_rows: int):
        self.num_rows = num_rows


class _Meta:
    def __init__(self, table: pa.Table, sizes: list[int]):
        self.num_rows = table.num_rows
        self.num_row_groups = len(sizes)
        self.metadata = table.schema.metadata
        self._sizes = sizes

    def row_group(self, i: int) -> _RowGroup:
        return _RowGroup(self._sizes[i])


class ArrowFile:
    """An Arrow IPC file behind the part of `pyarrow.parquet.ParquetFile`'s interface that
    textsieve's readers and `select`'s row copier use; each record batch is one "row group"."""

    def __init__(self, path: str):
        self.table = read_table(path)
        self.batches = self.table.to_batches()
        self.schema_arrow = self.table.schema
        self.metadata = _Meta(self.table, [b.num_rows for b in self.batches])
        self.num_row_groups = len(self.batches)

    def read_row_group(self, i: int, columns: list[str] | None = None, use_threads: bool = True) -> pa.Table:
        """Row group `i` (record batch `i`) with `columns` (default all)."""
        table = pa.Table.from_batches([self.batches[i]], schema=self.schema_arrow)
        return table.select(columns) if columns is not None else table

    def iter_batches(self, batch_size: int = 512, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """The table in batches of at most `batch_size` rows."""
        table = self.table.select(columns) if columns is not None else self.table
        yield from table.to_batches(max_chunksize=batch_size)


def read_arrow(ctx: ShardReader) -> Iterator[Document]:
    """Documents of an Arrow IPC shard (see the module doc)."""
    shard = ctx.shard
    f = ctx.fields
    try:
        af = ArrowFile(shard.path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        ctx.bad(shard.path, f"not a readable Arrow IPC file ({exc})")
        return
    names = af.schema_arrow.names
    text_col = _column(f.text, names)
    if text_col is None:
        ctx.bad(shard.path, f"no text column {f.text.name!r} (columns present: {', '.join(names) or 'none'})")
        return
    wanted = wanted_columns(f, text_col, names)
    columns = sorted({col[0] for _, col in wanted.values()})
    total = max(af.metadata.num_rows, 1)
    row = 0
    for batch in af.iter_batches(batch_size=512, columns=columns):
        values = {key: _values(batch, col) for key, (_, col) in wanted.items()}
        for i in range(batch.num_rows):
            doc = _document(ctx, wanted, values, i, row + i)
            if doc is not None:
                yield doc
        row += batch.num_rows
        ctx.bytes_read = shard.size * row // total
