"""The buffer-built Arrow arrays (`textsieve.io.arrow_arrays`) equal what `pa.array` builds, nulls
included, so annotate's columns are the same without pyarrow importing pandas."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from textsieve.io.arrow_arrays import numeric_array, repeated_string, string_array


@pytest.mark.parametrize("type_", [pa.int64(), pa.int32(), pa.float64(), pa.uint8()])
def test_numeric_arrays_equal_pa_array_with_and_without_nulls(type_):
    rng = np.random.default_rng(7)
    values = rng.integers(0, 200, size=37)
    valid = rng.random(37) > 0.3
    for v in (None, valid, np.ones(37, bool), np.zeros(37, bool)):
        ours = numeric_array(values, type_, v)
        ref = pa.array(values.astype(type_.to_pandas_dtype()), type_, mask=None if v is None else ~v)
        assert ours.equals(ref) and ours.null_count == ref.null_count
    assert numeric_array([], pa.int64()).equals(pa.array([], pa.int64()))


def test_string_arrays_equal_pa_array():
    values = ["", "a", None, "naïve ☃ 日本", "x" * 1000, None]
    valid = np.array([True, True, True, False, True, True])
    assert string_array(values).equals(pa.array(values, pa.string()))
    ref = pa.array([v if ok else None for v, ok in zip(values, valid)], pa.string())
    assert string_array(values, valid).equals(ref)
    assert string_array([]).equals(pa.array([], pa.string()))
    with pytest.raises(UnicodeEncodeError):
        string_array(["lone \ud800 surrogate"])


def test_repeated_string():
    assert repeated_string("shard-0001.jsonl.gz", 4).equals(pa.array(["shard-0001.jsonl.gz"] * 4, pa.string()))
    assert repeated_string("x", 0).equals(pa.array([], pa.string()))
