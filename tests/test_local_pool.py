"""The local process pool (`exec.local`): Arrow results come back through `exec.batch_transport`
(the same batch, schema metadata included, with buffers several columns shared sent and held
once; layouts the walker does not take go pyarrow's own way), and `settle` lets running tasks end
before an error reaches the caller."""

from __future__ import annotations

import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pyarrow as pa
import pytest

from textsieve.exec import batch_transport
from textsieve.exec.local import ordered_map


def _batch(n: int = 50, seed: int = 1) -> pa.RecordBatch:
    """Three line columns over one set of bounds (as annotate builds them), a string column with
    nulls, and a binary-list column; schema metadata like annotate's counts."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 6, n)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    m = int(lens.sum())
    start, end = pa.array(np.arange(m), pa.int64()), pa.array(np.arange(m) + 3, pa.int64())
    cols = [pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays(
        [start, end, pa.array(rng.random(m), mask=rng.random(m) < 0.2)], ["start", "end", "score"]),
        mask=pa.array(rng.random(n) < 0.1)) for _ in range(3)]
    cols.append(pa.array([f"doc-{i}" if i % 4 else None for i in range(n)], pa.string()))
    cols.append(pa.array([[b"ab", b"cd"] if i % 3 else None for i in range(n)], pa.list_(pa.binary())))
    schema = pa.schema([pa.field(f"c{i}", c.type) for i, c in enumerate(cols)], metadata={b"counts": b"{}"})
    return pa.RecordBatch.from_arrays(cols, schema=schema)


@pytest.fixture
def transport():
    saved = dict(ForkingPickler._extra_reducers)
    batch_transport.register()
    yield
    ForkingPickler._extra_reducers.clear()
    ForkingPickler._extra_reducers.update(saved)


def test_round_trip_is_equal_and_shares_what_was_shared(transport):
    batch = _batch()
    plain = pickle.dumps(batch, protocol=4)
    sent = bytes(ForkingPickler.dumps(batch))
    back = pickle.loads(sent)
    back.validate(full=True)
    assert back.equals(batch) and back.schema.equals(batch.schema, check_metadata=True)
    assert len(sent) < 0.75 * len(plain)  # the bounds went once, not three times
    starts = {back.column(i).values.field(0).buffers()[1].address for i in range(3)}
    scores = {back.column(i).values.field(2).buffers()[1].address for i in range(3)}
    assert len(starts) == 1 and len(scores) == 3


@pytest.mark.parametrize("shape", ["sliced", "dictionary", "empty"])
def test_other_layouts_go_the_pyarrow_way_unchanged(transport, shape):
    if shape == "sliced":
        batch = _batch().slice(7, 20)
    elif shape == "dictionary":
        batch = pa.RecordBatch.from_arrays([pa.array(["a", "b", "a"]).dictionary_encode()], names=["d"])
    else:
        batch = _batch().slice(0, 0)
    back = pickle.loads(bytes(ForkingPickler.dumps(batch)))
    assert back.equals(batch) and back.schema.equals(batch.schema, check_metadata=True)


def _make(seed: int) -> pa.RecordBatch:
    return _batch(40, seed)


def test_pool_workers_send_batches_through_it():
    got = [b for _, b in ordered_map(_make, [1, 2, 3], workers=2)]
    assert all(b.equals(_batch(40, s)) for b, s in zip(got, [1, 2, 3]))
    starts = {got[0].column(i).values.field(0).buffers()[1].address for i in range(3)}
    assert len(starts) == 1  # rebuilt over one shared buffer: it came through the transport


def _fail_or_write(task: tuple[int, str]) -> int:
    import time
    from pathlib import Path

    index, path = task
    if index == 0:
        time.sleep(0.3)  # the other task is running by then
        raise ValueError("task 0 failed")
    time.sleep(1.0)
    Path(path).write_text("written")
    return index


@pytest.mark.parametrize("settle", [True, False])
def test_settle_lets_running_tasks_end_before_the_error_goes_on(tmp_path, settle):
    """Tasks that write files themselves (annotate's whole shards): with `settle`, a running task
    ends before the error reaches the caller, so nothing writes after it; without, the caller
    gets the error at once."""
    mark = tmp_path / "written"
    with pytest.raises(ValueError, match="task 0 failed"):
        for _ in ordered_map(_fail_or_write, [(0, str(mark)), (1, str(mark))], workers=2, settle=settle):
            pass
    assert mark.exists() is settle


def _thread_env(_task: int) -> tuple[str | None, str | None, str | None]:
    import os

    return os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS")


def test_workers_start_with_one_math_thread_unless_the_caller_says_otherwise(monkeypatch):
    """Pool workers get one OpenBLAS/OpenMP/MKL thread each (their threads spun on the other
    workers' cores); a value the caller's environment sets is kept, and the caller's environment
    is left as it was."""
    import os

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    seen = {env for _, env in ordered_map(_thread_env, range(4), workers=2)}
    assert seen == {("1", "3", "1")}
    assert "OPENBLAS_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "3"
