"""`io.arrow_combine` gives the same arrays as ``combine_chunks`` (nested lists and structs,
nulls, sliced chunks), and copies a piece that several columns share once: annotate's six line
columns share their line bounds, and the Parquet writer's row group must not hold six copies."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io.arrow_combine import combine_columns


def _line_columns(rng: np.random.Generator, n: int, nulls: bool) -> list[pa.Array]:
    """Three list<struct<start, end, score>> columns over one set of bounds (as `signals.spans`
    builds them), and a string column."""
    lens = rng.integers(0, 5, n)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    m = int(lens.sum())
    start, end = pa.array(rng.integers(0, 99, m), pa.int64()), pa.array(rng.integers(0, 99, m), pa.int64())
    cols = []
    for _ in range(3):
        score = pa.array(rng.random(m), mask=rng.random(m) < 0.1)
        spans = pa.StructArray.from_arrays([start, end, score], ["start", "end", "score"])
        cols.append(pa.ListArray.from_arrays(offsets, spans, mask=pa.array(rng.random(n) < 0.2) if nulls else None))
    cols.append(pa.array([str(i) if i % 3 else None for i in range(n)], pa.string()))
    return cols


def test_same_values_as_combine_chunks():
    rng = np.random.default_rng(3)
    for trial in range(60):
        batches = [_line_columns(rng, int(rng.integers(0, 30)), trial % 2 == 0) for _ in range(int(rng.integers(1, 5)))]
        if trial % 3 == 0:  # chunks that are slices (the writer cuts its pending batches)
            batches = [[c.slice(1, max(len(c) - 2, 0)) for c in b] for b in batches]
        columns = [pa.chunked_array([b[i] for b in batches]) for i in range(4)]
        want = [c.combine_chunks() for c in columns]
        got = list(combine_columns(list(columns)))
        for w, g in zip(want, got):
            g.validate(full=True)
            assert g.equals(w)


def test_shared_pieces_are_copied_once_and_parquet_bytes_are_unchanged():
    rng = np.random.default_rng(5)
    batches = [_line_columns(rng, 40, True) for _ in range(3)]
    columns = [pa.chunked_array([b[i] for b in batches]) for i in range(4)]
    got = list(combine_columns(list(columns)))
    starts = {g.values.field(0).buffers()[1].address for g in got[:3]}
    scores = {g.values.field(2).buffers()[1].address for g in got[:3]}
    assert len(starts) == 1 and len(scores) == 3  # the bounds once, each column's scores its own

    def parquet(arrays: list[pa.Array]) -> bytes:
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_arrays(arrays, names=["a", "b", "c", "d"]), sink)
        return sink.getvalue()

    assert parquet(got) == parquet([c.combine_chunks() for c in columns])


def test_slots_are_released_and_empty_columns_combine():
    columns: list[pa.ChunkedArray | None] = [pa.chunked_array([], pa.int64()),
                                             pa.chunked_array([pa.array([1, 2]), pa.array([3])])]
    out = combine_columns(columns)
    assert len(next(out)) == 0 and columns[0] is None
    assert next(out).to_pylist() == [1, 2, 3] and columns[1] is None
