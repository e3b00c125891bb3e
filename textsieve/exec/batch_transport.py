"""Record batches sent back from pool workers with each shared buffer once.

pyarrow pickles a RecordBatch column by column, each array's buffers copied on their own, so a
buffer that several columns view is sent once per column and arrives as that many separate
copies. Annotate's six line-signal columns share their list offsets and their ``start``/``end``
children (`signals.spans`), so with workers about half of the result bytes were the same line
bounds again: pickled, piped, unpickled and then held by the main process's writer five times
more than needed (dev corpus: 168 MB of pickles for 15,263 documents).

`register` (run in each worker) makes multiprocessing's pickler send a batch as its array trees
plus a table of distinct buffers; the main process rebuilds the same arrays over shared buffers.
A batch with a sliced array, a dictionary, a union or another layout this does not walk goes the
pyarrow way, unchanged.
"""

from __future__ import annotations

from multiprocessing.reduction import ForkingPickler
from typing import Any

import pyarrow as pa

#: (length, null count, own buffer indexes (-1: none), child nodes)
Node = tuple[int, int, list[int], list[Any]]


class _Unsupported(Exception):
    """A layout this module does not walk: the batch is pickled the pyarrow way."""


def register() -> None:
    """Send this process's RecordBatches through multiprocessing with shared buffers once."""
    ForkingPickler.register(pa.RecordBatch, reduce_batch)


def reduce_batch(batch: pa.RecordBatch) -> tuple[Any, tuple[Any, ...]]:
    """The pickle reduction of `batch`: its array trees and distinct buffers, or pyarrow's own."""
    buffers: list[bytes] = []
    seen: dict[tuple[int, int], int] = {}

    def buffer_index(buf: pa.Buffer | None) -> int:
        if buf is None:
            return -1
        key = (buf.address, buf.size)
        at = seen.get(key)
        if at is None:
            at = seen[key] = len(buffers)
            buffers.append(buf.to_pybytes())
        return at

    def node(arr: pa.Array) -> Node:
        kind = arr.type
        if arr.offset:
            raise _Unsupported
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            children = [arr.values]
        elif pa.types.is_struct(kind):
            children = [arr.field(i) for i in range(kind.num_fields)]
        elif kind.num_fields or pa.types.is_dictionary(kind) or pa.types.is_union(kind):
            raise _Unsupported
        else:
            children = []
        own = arr.buffers()[: kind.num_buffers]
        return len(arr), arr.null_count, [buffer_index(b) for b in own], [node(c) for c in children]

    try:
        nodes = [node(column) for column in batch.columns]
    except _Unsupported:
        return batch.__reduce__()
    return rebuild_batch, (batch.schema, nodes, buffers)


def rebuild_batch(schema: pa.Schema, nodes: list[Node], buffers: list[bytes]) -> pa.RecordBatch:
    """The batch `reduce_batch` described, its arrays viewing the shared buffers."""
    views = [pa.py_buffer(b) for b in buffers]

    def build(kind: pa.DataType, node: Node) -> pa.Array:
        length, nulls, own, kids = node
        if pa.types.is_struct(kind):
            child_types = [kind.field(i).type for i in range(kind.num_fields)]
        elif kids:
            child_types = [kind.value_type]
        else:
            child_types = []
        children = [build(t, k) for t, k in zip(child_types, kids)]
        return pa.Array.from_buffers(kind, length, [views[i] if i >= 0 else None for i in own],
                                     null_count=nulls, children=children or None)

    return pa.RecordBatch.from_arrays([build(f.type, n) for f, n in zip(schema, nodes)], schema=schema)
