"""Arrow arrays built from NumPy buffers, without ``pa.array``.

``pa.array`` (and ``pa.scalar``) ask pyarrow's pandas shim whether the value is a pandas object,
and the shim imports pandas to answer, when pandas is installed (``datasets`` installs it): ~0.3-0.6
s and ~45 MB in every annotate worker that never touches a DataFrame. These builders hand Arrow
the buffers directly (`pa.Array.from_buffers`), which also skips a conversion pass: the hot
columns of an attribute batch are NumPy arrays already. Values are the same as ``pa.array``'s
(a test compares them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

#: every Arrow integer and float type's NumPy dtype (`numeric_array`, `to_numpy`)
_NUMPY_OF = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
             pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
             pa.float16(): np.float16, pa.float32(): np.float32, pa.float64(): np.float64}


def _validity(valid: np.ndarray | None, n: int) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (LSB first) and null count, or (None, 0) when all are valid."""
    if valid is None:
        return None, 0
    valid = np.asarray(valid, dtype=bool)
    nulls = n - int(np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def numeric_array(values: np.ndarray | Sequence[float] | Sequence[int], type: pa.DataType,
                  valid: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, type, mask=~valid)`` for an integer or float ``type``."""
    data = np.ascontiguousarray(values, dtype=_NUMPY_OF[type])
    bitmap, nulls = _validity(valid, len(data))
    return pa.Array.from_buffers(type, len(data), [bitmap, pa.py_buffer(data)], null_count=nulls)


def bool_array(values: np.ndarray | Sequence[bool], valid: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, pa.bool_(), mask=~valid)``, from a bit-packed buffer."""
    data = np.asarray(values, dtype=bool)
    bitmap, nulls = _validity(valid, len(data))
    return pa.Array.from_buffers(pa.bool_(), len(data), [bitmap, pa.py_buffer(np.packbits(data, bitorder="little"))],
                                 null_count=nulls)


def list_offsets(lengths: Iterable[int], n: int) -> pa.Array:
    """The int32 offsets of a list array whose `n` lists have `lengths` items."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=n), out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"{offsets[-1]:,} list items in one batch: more than a list array's int32 offsets hold")
    return numeric_array(offsets, pa.int32())


def int64_lists(values: Sequence[np.ndarray]) -> pa.ListArray:
    """``pa.array(values, pa.list_(pa.int64()))`` for a sequence of 1-d integer arrays."""
    flat = np.concatenate([np.asarray(v, dtype=np.int64) for v in values]) if len(values) else np.zeros(0, np.int64)
    return pa.ListArray.from_arrays(list_offsets((len(v) for v in values), len(values)),
                                    numeric_array(flat, pa.int64()), type=pa.list_(pa.int64()))


def string_lists(values: Sequence[Sequence[str]]) -> pa.ListArray:
    """``pa.array(values, pa.list_(pa.string()))`` for lists of strings (no nulls)."""
    items = string_array([s for v in values for s in v])
    return pa.ListArray.from_arrays(list_offsets((len(v) for v in values), len(values)), items,
                                    type=pa.list_(pa.string()))


def string_array(values: Sequence[str | None], valid: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, pa.string(), mask=~valid)``: None (or an invalid row) is null; a lone
    surrogate raises UnicodeEncodeError, as it does there."""
    n = len(values)
    keep = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    if valid is not None:
        keep &= np.asarray(valid, dtype=bool)
    parts = [v.encode("utf-8") if k and v is not None else b"" for v, k in zip(values, keep)]
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum([len(p) for p in parts], out=offsets[1:])
    if offsets[-1] >= 2**31:  # beyond int32 offsets: let pyarrow split it (rare: a > 2 GB batch)
        return pa.array(list(values), pa.string(), mask=~keep)
    bitmap, nulls = _validity(keep, n)
    return pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(offsets.astype(np.int32)),
                                                  pa.py_buffer(b"".join(parts))], null_count=nulls)


def repeated_string(value: str, n: int) -> pa.Array:
    """A string column holding ``value`` n times (built once as a one-entry dictionary)."""
    indices = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(np.zeros(n, dtype=np.int32))])
    return pa.DictionaryArray.from_arrays(indices, string_array([value])).cast(pa.string())


def to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``values.to_numpy(zero_copy_only=False)`` without pyarrow's pandas shim: ``to_numpy`` on any
    Arrow array asks it about pandas, which imports pandas where it is installed (~0.25 s and ~45
    MB in a process that never touches a DataFrame). Integers, floats and booleans without nulls
    are read from the Arrow buffers: one array's as a read-only view, several chunks' as one new
    array, booleans unpacked, as ``to_numpy`` gives them. Anything else (nulls, strings, nested
    types) goes through ``to_numpy`` itself."""
    t = values.type
    numeric = t in _NUMPY_OF or pa.types.is_boolean(t)
    if not numeric or values.null_count:
        return values.to_numpy(zero_copy_only=False)
    if isinstance(values, pa.ChunkedArray):
        chunks = values.chunks
        if not chunks:
            return np.zeros(0, dtype=_NUMPY_OF.get(t, np.bool_))
        if len(chunks) > 1:
            return np.concatenate([_buffer_values(c) for c in chunks])
        values = chunks[0]
    return _buffer_values(values)


def _buffer_values(values: pa.Array) -> np.ndarray:
    """A null-free integer, float or boolean array's values, from its data buffer."""
    n, offset, data = len(values), values.offset, values.buffers()[1]
    if pa.types.is_boolean(values.type):
        if n == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(data, dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little")[offset:offset + n].astype(bool)
    dtype = np.dtype(_NUMPY_OF[values.type])
    if n == 0:
        return np.zeros(0, dtype=dtype)
    view = np.frombuffer(data, dtype=dtype, count=n, offset=offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow's memory, read-only as `to_numpy` gives it
    return view
