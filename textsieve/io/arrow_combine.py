"""Combine the chunks of several columns into contiguous arrays, copying shared pieces once.

An attribute batch's six RPv2 line-signal columns are ``list<struct<start, end, score>>`` arrays
that share their list offsets and their ``start``/``end`` children (`signals.spans`): one copy of
the line bounds serves all six. ``ChunkedArray.combine_chunks`` copies each column on its own, so a
row group combined column by column held six copies of the bounds: 144 bytes per line instead of
64, about half of an annotate worker's Arrow memory. `combine_columns` copies a piece that several
columns share (the same buffers, offset and length, chunk for chunk) once and gives every column
the same result; the values are the same as ``combine_chunks``'s, so a Parquet file written from
them has the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

_Key = tuple[object, ...]


def combine_columns(columns: list[pa.ChunkedArray | None]) -> Iterator[pa.Array]:
    """Each column as one contiguous array, in order; pieces shared by several columns are
    combined once. Each column's slot in `columns` is released (set to None) once it is combined,
    so a column whose pieces nothing else shares is freed before the next is copied."""
    memo: dict[_Key, tuple[Sequence[pa.Array], pa.Array]] = {}
    for i, column in enumerate(columns):
        assert column is not None
        columns[i] = None
        if not column.num_chunks:
            yield column.combine_chunks()
            continue
        chunks = column.chunks
        del column
        yield _combine(chunks, memo)


def _key(chunks: Sequence[pa.Array]) -> _Key:
    """Identifies the logical content of `chunks` by the buffers they view: equal keys, equal
    arrays (the memo pins the chunks, so no address is reused while it is in use)."""
    return tuple((str(c.type), c.offset, len(c), tuple(b.address if b is not None else 0 for b in c.buffers()))
                 for c in chunks)


def _combine(chunks: Sequence[pa.Array], memo: dict[_Key, tuple[Sequence[pa.Array], pa.Array]]) -> pa.Array:
    if len(chunks) == 1 and chunks[0].offset == 0:
        return chunks[0]
    key = _key(chunks)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    kind = chunks[0].type
    if pa.types.is_list(kind):
        out = _combine_list(chunks, memo)
    elif pa.types.is_struct(kind):
        out = _combine_struct(chunks, memo)
    else:
        out = pa.concat_arrays(list(chunks))
    memo[key] = (chunks, out)
    return out


def _validity(chunks: Sequence[pa.Array]) -> tuple[pa.Buffer | None, int]:
    """The combined validity bitmap and null count (None, 0 when nothing is null)."""
    nulls = sum(c.null_count for c in chunks)
    if not nulls:
        return None, 0
    bits = []
    for c in chunks:
        bitmap = c.buffers()[0]
        if bitmap is None:
            bits.append(np.ones(len(c), dtype=bool))
        else:
            raw = np.frombuffer(bitmap, dtype=np.uint8)
            bits.append(np.unpackbits(raw, bitorder="little")[c.offset: c.offset + len(c)].astype(bool))
    return pa.py_buffer(np.packbits(np.concatenate(bits), bitorder="little")), nulls


def _combine_list(chunks: Sequence[pa.Array], memo: dict[_Key, tuple[Sequence[pa.Array], pa.Array]]) -> pa.Array:
    """A ``list<...>`` column: offsets rebased chunk after chunk, the values each chunk covers
    combined (through the memo: columns sharing offsets and values share the result)."""
    pieces, values, total = [], [], 0
    for c in chunks:
        offsets = np.frombuffer(c.buffers()[1], dtype=np.int32, count=len(c) + 1, offset=4 * c.offset)
        first, last = int(offsets[0]), int(offsets[-1])
        pieces.append(offsets[:-1] - first + total)
        values.append(c.values.slice(first, last - first))
        total += last - first
    pieces.append(np.array([total], dtype=np.int32))
    child = _combine(values, memo)
    bitmap, nulls = _validity(chunks)
    n = sum(len(c) for c in chunks)
    return pa.Array.from_buffers(chunks[0].type, n, [bitmap, pa.py_buffer(np.concatenate(pieces).astype(np.int32))],
                                 null_count=nulls, children=[child])


def _combine_struct(chunks: Sequence[pa.Array], memo: dict[_Key, tuple[Sequence[pa.Array], pa.Array]]) -> pa.Array:
    """A ``struct<...>`` column: each field combined on its own (``field`` views the child over the
    chunk's own rows)."""
    kind = chunks[0].type
    children = [_combine([c.field(i) for c in chunks], memo) for i in range(kind.num_fields)]
    bitmap, nulls = _validity(chunks)
    n = sum(len(c) for c in chunks)
    return pa.Array.from_buffers(kind, n, [bitmap], null_count=nulls, children=children)
