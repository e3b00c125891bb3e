"""Parquet reader: pyarrow, in record batches, reading only the columns a Document needs.

Row = the row index in the file. A row group that cannot be read (damaged pages: a failed
decompression or page checksum) is one bad record in skip mode: the rows of the other row groups
are kept, and the skip names the row group and how many of its rows are left out.
`Document.meta` stays empty: the other columns are not read at all, which is what makes Parquet
input cheap; stages that need more columns read them directly. With `ReadOptions.read_meta` (a
signal reads the documents' meta) every column but the text's is read into it, as JSON Lines
records give it.
Dotted field names select a top-level column (a struct) and walk into it, unless a column with the
literal dotted name exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from ..document import Document
from .fields import MISSING, FieldPath, bad_id_reason, bad_text_reason, optional_str, resolve_id
from .limits import text_size_ok
from .parquet_pages import oversized_page

if TYPE_CHECKING:
    from .readers import ShardReader

BATCH_ROWS = 512  # small enough that batches of multi-megabyte documents stay modest in memory


def read_parquet(ctx: ShardReader) -> Iterator[Document]:
    shard = ctx.shard
    f = ctx.fields
    with fsspec.open(shard.path, "rb") as raw:
        try:
            pf = pq.ParquetFile(raw, page_checksum_verification=True)  # pages that carry a CRC are checked
        except (pa.ArrowException, OSError, ValueError) as exc:
            ctx.bad(shard.path, f"not a readable Parquet file ({exc})")
            return
        names = pf.schema_arrow.names
        text_col = _column(f.text, names)
        if text_col is None:
            if b"textsieve" in (pf.metadata.metadata or {}):  # the footer key of every attribute shard
                ctx.bad(shard.path, "a textsieve attribute shard (the output of annotate or a later stage), not "
                                    "documents: pass its folder where an attribute folder is expected, or the "
                                    "documents it was made from")
                return
            ctx.bad(shard.path, f"no text column {f.text.name!r} (columns present: {', '.join(names) or 'none'})")
            return
        wanted = wanted_columns(f, text_col, names)
        columns = sorted({col[0] for _, col in wanted.values()})
        meta_cols = [n for n in names if n != text_col[0]] if ctx.options.read_meta else []
        columns = sorted({*columns, *meta_cols})
        total = max(pf.metadata.num_rows, 1)
        row = 0  # first row of the current row group
        limit = ctx.options.max_doc_bytes
        leaves = [i for i in range(pf.metadata.num_columns)
                  if pf.metadata.schema.column(i).path.split(".")[0] in columns]
        for group in range(pf.num_row_groups):
            size = pf.metadata.row_group(group).num_rows
            big = _oversized(raw, pf.metadata.row_group(group), leaves, limit) if limit is not None else None
            if big is not None:  # io.parquet_pages: left out unread, never inflated
                ctx.bad(f"{shard.path}:row {row}",
                        f"row group {group} (rows {row}-{row + size - 1}): its column {big[0]!r} holds a page of "
                        f"{big[1]:,} bytes uncompressed, more than any document under --max-doc-bytes ({limit:,}) "
                        f"needs; its {size} row(s) are left out unread (reading one would inflate the whole page)")
                row += size
                continue
            done = 0  # rows of this group read so far
            batches = pf.iter_batches(batch_size=BATCH_ROWS, columns=columns, row_groups=[group])
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except (pa.ArrowException, OSError, ValueError) as exc:
                    ctx.bad(f"{shard.path}:row {row + done}",
                            f"row group {group} (rows {row}-{row + size - 1}) cannot be read from row {row + done} on "
                            f"({exc}); its {size - done} row(s) from there are left out")
                    break
                values = {key: _values(batch, col) for key, (_, col) in wanted.items()}
                metas = {n: _to_pylist(batch.column(n), n) for n in meta_cols}
                for i in range(batch.num_rows):
                    doc = _document(ctx, wanted, values, i, row + done + i)
                    if doc is not None:
                        if metas:
                            doc.meta = {n: v[i] for n, v in metas.items()}
                        yield doc
                done += batch.num_rows
                ctx.bytes_read = shard.size * (row + done) // total
            row += size


def _oversized(raw: Any, group: Any, leaves: list[int], limit: int) -> tuple[str, int] | None:
    """(column path, page size) of the first column read whose page no document under `limit` needs."""
    for i in leaves:
        column = group.column(i)
        size = oversized_page(raw, column, limit)
        if size is not None:
            return column.path_in_schema, size
    return None


def wanted_columns(f: Any, text_col: tuple[str, tuple[str, ...]], names: list[str]) -> dict[str, Any]:
    """{document field: (its FieldPath, (column, path inside it))} for the text and whichever of
    id, lang and url the file has; shared by the columnar readers (Parquet, Arrow IPC)."""
    wanted: dict[str, Any] = {"text": (f.text, text_col)}
    for key, field in (("id", f.id), ("lang", f.lang), ("url", f.url)):
        if field is not None:
            col = _column(field, names)
            if col is not None:
                wanted[key] = (field, col)
    return wanted


def _column(field: FieldPath, names: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """(top-level column, path inside it) for a field, or None when the file lacks it."""
    if field.name in names:
        return field.name, ()
    if field.dotted and field.parts[0] in names:
        return field.parts[0], field.parts[1:]
    return None


class _Undecodable:
    """Stands in for a string value that is not valid UTF-8 (writers other than Arrow can make them)."""

    def __init__(self, reason: str):
        self.reason = reason


def _to_pylist(array: pa.Array, name: str) -> list[Any]:
    try:
        return array.to_pylist()
    except UnicodeDecodeError:  # rare: find the bad values one by one, keep the good ones
        out: list[Any] = []
        for scalar in array:
            try:
                out.append(scalar.as_py())
            except UnicodeDecodeError as exc:
                out.append(_Undecodable(f"column {name!r} has invalid UTF-8 at byte {exc.start}"))
        return out


def _values(batch: pa.RecordBatch, col: tuple[str, tuple[str, ...]]) -> list[Any]:
    name, inner = col
    values = _to_pylist(batch.column(name), name)
    if not inner:
        return values
    out = []
    for value in values:
        for part in inner:
            value = value.get(part, MISSING) if type(value) is dict else MISSING
        out.append(value)
    return out


def _document(ctx: ShardReader, wanted: dict, values: dict[str, list[Any]], i: int, row: int) -> Document | None:
    """The row's document, or None after reporting the first problem found (columns in order)."""
    for column in values.values():
        if type(column[i]) is _Undecodable:
            _bad_row(ctx, row, column[i].reason)
            return None
    text = values["text"][i]
    if type(text) is not str:
        _bad_row(ctx, row, bad_text_reason(wanted["text"][0], text))
        return None
    if not text_size_ok(ctx, f"{ctx.shard.path}:row {row}", text):  # io.limits: --max-doc-bytes
        return None
    raw_id = values["id"][i] if "id" in values else MISSING
    doc_id = resolve_id(raw_id, ctx.shard.rel, row)
    if doc_id is None:
        _bad_row(ctx, row, bad_id_reason(ctx.fields.id, raw_id))
        return None
    optional: dict[str, str | None] = {}
    for key in ("lang", "url"):
        if key in values:
            optional[key], reason = optional_str(values[key][i], wanted[key][0])
            if reason is not None:
                _bad_row(ctx, row, reason)
                return None
    return Document(doc_id, text, row, optional.get("lang"), optional.get("url"))


def _bad_row(ctx: ShardReader, row: int, reason: str) -> None:
    ctx.bad(f"{ctx.shard.path}:row {row}", reason)
