"""The buffer-built Arrow arrays (`textsieve.io.arrow_arrays`) equal what `pa.array` builds, nulls
included, so annotate's columns are the same without pyarrow importing pandas; `to_numpy` gives
what pyarrow's `to_numpy` gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _shared import SHARED, missing_reason

from textsieve.io.arrow_arrays import (
    bool_array,
    int64_lists,
    numeric_array,
    repeated_string,
    string_array,
    string_lists,
    to_numpy,
)
from textsieve.signals.spans import span_type, spans_array


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


def _to_numpy_cases() -> list[pa.Array | pa.ChunkedArray]:
    ints = numeric_array(np.arange(-5, 20), pa.int64())
    floats = numeric_array(np.linspace(-1, 1, 9), pa.float64())
    bools = pa.Array.from_buffers(pa.bool_(), 11, [None, pa.py_buffer(np.packbits(np.arange(11) % 3 == 0,
                                                                                      bitorder="little"))])
    small = [pa.Array.from_buffers(t, 4, [None, pa.py_buffer(np.arange(4, dtype=d))])
             for t, d in [(pa.int8(), np.int8), (pa.uint16(), np.uint16), (pa.uint32(), np.uint32),
                          (pa.uint64(), np.uint64), (pa.float32(), np.float32), (pa.float16(), np.float16)]]
    with_nulls = numeric_array(np.arange(5), pa.int64(), valid=np.array([1, 0, 1, 1, 0], bool))
    return [ints, ints.slice(3, 7), floats, bools, bools.slice(2, 7), *small, with_nulls,
            string_array(["a", None, "b"]), pa.chunked_array([ints]),
            pa.chunked_array([ints.slice(1, 2), ints, ints.slice(20)]),
            pa.chunked_array([bools.slice(1, 3), bools]), pa.chunked_array([], pa.int32()),
            pa.chunked_array([with_nulls, ints])]


@pytest.mark.parametrize("values", _to_numpy_cases(), ids=lambda v: f"{type(v).__name__}-{v.type}-{len(v)}")
def test_to_numpy_gives_what_pyarrow_gives(values):
    got = to_numpy(values)
    want = values.to_numpy() if isinstance(values, pa.ChunkedArray) else values.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f") if got.dtype != object else \
        got.tolist() == want.tolist()
    if len(want):
        assert got.flags.writeable == want.flags.writeable


def test_a_source_stage_runs_without_pandas(tmp_path):
    """`to_numpy` and the buffer-built work tables keep pandas out of `textsieve source` (~0.25 s and
    ~45 MB a process where `datasets` installed it): pyarrow's `to_numpy` and `pa.array` load it."""
    import subprocess
    import sys

    tars = sorted((SHARED / "corpora" / "sources" / "arxiv").glob("*.tar"))
    if not tars:
        pytest.skip(missing_reason(SHARED / "corpora" / "sources" / "arxiv", "the shared arXiv tars"))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "textsieve.cli", "source", "arxiv", str(tars[0]),
                           "-o", str(tmp_path / "out"), "--workers", "1", "-q", "--reference", "rp_v1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "pyarrow" in loaded and "pandas" not in loaded


def test_annotate_dedup_and_pii_run_without_pandas(tmp_path):
    """The same for annotate's main process, five dedup stages, `pii` and `decontaminate` (their
    workers run the same code): buffer-built columns and `to_numpy`, so no `pa.array` or pyarrow
    `to_numpy`."""
    import json
    import subprocess
    import sys

    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "seven", "wizards",
             "quietly", "judge", "boxing"]
    docs = [" ".join(words[(i * 7 + k) % len(words)] for k in range(40 + i % 9)) for i in range(60)]
    docs += docs[:10]  # exact repeats: a group for each dedup to find
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs)))
    attrs = tmp_path / "attrs"
    bench = tmp_path / "bench.jsonl"  # a benchmark question that one of the documents contains
    bench.write_text(json.dumps({"question": docs[3][:120]}) + "\n")

    def loaded(*args: str) -> set[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "textsieve.cli", *args, "-q"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}

    for args in (["annotate", str(src), "-o", str(attrs), "--workers", "1"], ["dedup", "exact", str(attrs)],
                 ["dedup", "fuzzy", str(attrs)], ["dedup", "lines", str(attrs)], ["dedup", "simhash", str(attrs)],
                 ["dedup", "substring", str(attrs)], ["pii", str(attrs)],
                 ["decontaminate", str(attrs), "--against", str(bench), "--fields", "question"]):
        assert "pandas" not in loaded(*args), args
    assert (attrs / "sets").is_dir()


def test_bool_lists_and_spans_equal_pa_array():
    """The nested builders the dedup and PII stages use give what `pa.array` gives."""
    flags = np.array([True, False, True, True, False, False, True, False, True])
    valid = np.array([1, 1, 0, 1, 1, 1, 1, 0, 1], bool)
    assert bool_array(flags).equals(pa.array(flags, pa.bool_()))
    assert bool_array(flags, valid).equals(pa.array(flags, pa.bool_(), mask=~valid))
    assert bool_array(flags[3:]).equals(pa.array(flags[3:], pa.bool_()))
    assert numeric_array(np.array([2**64 - 1, 0, 7], np.uint64), pa.uint64()).equals(
        pa.array([2**64 - 1, 0, 7], pa.uint64()))
    ends = [np.array([3, 9, 10]), np.array([], np.int64), np.array([5])]
    assert int64_lists(ends).equals(pa.array([e.tolist() for e in ends], pa.list_(pa.int64())))
    assert int64_lists([]).equals(pa.array([], pa.list_(pa.int64())))
    names = [["arc", "mmlu"], [], ["gsm8k"]]
    assert string_lists(names).equals(pa.array(names, pa.list_(pa.string())))
    spans = [[(0, 5, 1), (9, 20, 4)], [], [(3, 4, 49)]]
    want = pa.array([[{"start": a, "end": b, "score": c} for a, b, c in doc] for doc in spans], span_type("int"))
    assert spans_array(spans).equals(want)
    assert spans_array([]).equals(pa.array([], span_type("int")))
