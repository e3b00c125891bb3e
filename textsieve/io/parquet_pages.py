"""The uncompressed size of every page of a Parquet column chunk, read from the page headers alone.

Why: one huge string cell is one page (a value never spans pages), and a zstd or gzip page of
3 GiB of one repeated byte takes a few kilobytes on disk. Arrow inflates a whole page to read
any value of it, so `--max-doc-bytes` cannot be applied after reading: the footer's
`total_uncompressed_size` of the column chunk says that something is large, and the page
headers (Thrift compact protocol, a few dozen bytes each, read without touching the pages)
say which page. The Parquet reader leaves out a row group whose text column holds a page that
no document under the limit can need (`oversized_page`), instead of inflating it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_MAX_HEADER = 1 << 16  # a page header is a few dozen bytes; this much is read at most


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise ValueError("a varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int) -> None:
        if kind in (_TRUE, _FALSE):
            return
        if kind == _BYTE:
            self.pos += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.pos += 8
        elif kind == _BINARY:
            self.pos += self.varint()
        elif kind in (_LIST, _SET):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(size):
                self.skip(head & 0x0F)
        elif kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4)
                    self.skip(types & 0x0F)
        elif kind == _STRUCT:
            self.struct()
        else:
            raise ValueError(f"unknown Thrift compact type {kind}")
        if self.pos > len(self.data):
            raise ValueError("a page header that runs past the bytes read")

    def struct(self, want: dict[int, str] | None = None) -> dict[str, Any]:
        """The i32 and struct fields named in `want` ({field id: name}); the rest skipped."""
        out: dict[str, Any] = {}
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == _STOP:
                return out
            delta = head >> 4
            field = last + delta if delta else self.zigzag()
            last = field
            name = (want or {}).get(field)
            if name is not None and kind == _I32:
                out[name] = self.zigzag()
            elif name is not None and kind == _STRUCT:
                out[name] = self.struct({1: "num_values"})
            else:
                self.skip(kind)


_PAGE_FIELDS = {2: "uncompressed", 3: "compressed", 5: "data", 7: "dictionary", 8: "data_v2"}


def page_sizes(raw: Any, column: Any) -> Iterator[int]:
    """The uncompressed size of each page of column chunk `column` (pyarrow's
    ColumnChunkMetaData) of the open Parquet file `raw`, in file order."""
    start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    end = start + column.total_compressed_size
    pos = start
    while pos < end:
        raw.seek(pos)
        reader = _Reader(raw.read(min(_MAX_HEADER, end - pos)))
        header = reader.struct(_PAGE_FIELDS)
        if "compressed" not in header or "uncompressed" not in header or header["compressed"] < 0:
            raise ValueError(f"a page header at byte {pos} without its sizes")
        yield header["uncompressed"]
        pos += reader.pos + header["compressed"]


def oversized_page(raw: Any, column: Any, limit: int) -> int | None:
    """The uncompressed size of the largest page of `column` when it is over what any document
    under `limit` bytes can need (twice the limit plus a megabyte: a page of normal values is
    ~1 MB); None when there is none, or when the headers cannot be read (Arrow then reports
    the damage as it reads)."""
    bound = 2 * limit + (1 << 20)
    if column.total_uncompressed_size <= bound:
        return None
    try:
        largest = max(page_sizes(raw, column), default=0)
    except (ValueError, IndexError, OSError):
        return None
    return largest if largest > bound else None
