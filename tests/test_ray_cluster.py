"""Many nodes, simulated on this machine (issue 29 item 5): a Ray cluster of three nodes (a head
and two workers, one CPU each, each its own raylet and object store, `ray.cluster_utils.Cluster`),
reached by `--address` as a user reaches a real one. The Ray paths (annotate, dedup fuzzy with
exact verification, dedup exact, select) give the local executor's bytes, with the annotate
folder read through a `file://` URL; and a worker node removed mid-run (its raylet, workers and
objects gone) does not change a byte of annotate's or dedup fuzzy's output."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from _shared import SHARED

from textsieve.cli import main

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'textsieve[ray]'); Ray executor untested")
cluster_utils = pytest.importorskip("ray.cluster_utils")

pytestmark = pytest.mark.slow  # three raylets on a 2-core machine: the full suite only

# a removed node is seen dead within ~2 s, not Ray's default ~30 s
FAST_HEALTH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "_system_config": FAST_HEALTH})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    # connect as the CLI's --address would, with the tests folder importable on every node: the
    # workers unpickle extensions that other test modules of this process registered
    ray.init(address=c.address, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                                                      os.environ.get("PYTHONPATH", "")])}})
    yield c, workers
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """1,200 dev documents in 3 shards, plus each shard's first 20 documents again in the next
    shard under new ids (exact and fuzzy duplicates across shards, so across nodes)."""
    if not (SHARED / "corpora").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    with gzip.open(SHARED / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(ln) for _, ln in zip(range(1200), fh)]
    src = tmp_path_factory.mktemp("cluster-src")
    for k in range(3):
        own = docs[k * 400:(k + 1) * 400]
        prev = docs[((k - 1) % 3) * 400:][:20]
        copies = [{**d, "id": f"copy-{k}-{d['id']}"} for d in prev]
        (src / f"s{k}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in own + copies), encoding="utf-8")
    return src


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _outputs(root: Path) -> dict[str, bytes]:
    """The data a stage publishes and the sets' summaries; not run records (`.textsieve/`: they
    name the executor and the time taken)."""
    return {k: v for k, v in _files(root).items()
            if k.endswith((".parquet", ".jsonl.gz", ".json")) and not k.startswith(".textsieve/")
            and "/.textsieve/" not in k}


def _annotate(src: Path, out: Path, *extra: str) -> None:
    assert main(["annotate", str(src), "-o", str(out), "--batch-size", "100", "-q", *extra]) == 0


@pytest.fixture(scope="module")
def local(source, tmp_path_factory) -> dict[str, Path]:
    """Every stage of this module once on the local executor."""
    root = tmp_path_factory.mktemp("cluster-local")
    _annotate(source, root / "attrs", "--workers", "2")
    assert main(["dedup", "fuzzy", str(root / "attrs"), "--thresholds", "0.8", "-q"]) == 0
    assert main(["dedup", "exact", str(source), "-o", str(root / "exact"), "--workers", "2", "-q"]) == 0
    assert main(["select", str(root / "attrs"), "--recipe", "c4", "-o", str(root / "selected"), "--workers", "2",
                 "-q"]) == 0
    return {"attrs": root / "attrs", "exact": root / "exact", "selected": root / "selected"}


def _nodes_alive(want: int | None = None) -> int:
    """Alive nodes (waiting up to 20 s for `want`: the GCS marks a removed node dead a moment
    after it is gone, which a short run may not wait for)."""
    import time

    deadline = time.monotonic() + 20
    while True:
        n = sum(1 for node in ray.nodes() if node["Alive"])
        if want is None or n == want or time.monotonic() > deadline:
            return n
        time.sleep(0.2)


def test_stages_on_three_nodes_match_local(cluster, source, local, tmp_path):
    c, _ = cluster
    on = ["--executor", "ray", "--address", c.address]
    _annotate(source, tmp_path / "attrs", *on, "--workers", "3")
    assert _nodes_alive() == 3 and int(ray.cluster_resources()["CPU"]) == 3
    url = (tmp_path / "attrs").as_uri()  # the folder as every node would name it on shared storage
    assert url.startswith("file://")
    assert main(["dedup", "fuzzy", url, "--thresholds", "0.8", "-q", *on]) == 0
    assert main(["dedup", "exact", str(source), "-o", str(tmp_path / "exact"), "--workers", "3", "-q", *on]) == 0
    assert main(["select", url, "--recipe", "c4", "-o", str(tmp_path / "selected"), "--workers", "3", "-q", *on]) == 0

    attrs = _outputs(tmp_path / "attrs")
    assert sum(k.startswith("sets/dedup_fuzzy/") and k.endswith(".parquet") for k in attrs) == 3
    assert attrs == _outputs(local["attrs"])  # annotate shards, fuzzy clusters and summaries
    assert _outputs(tmp_path / "exact") == _outputs(local["exact"])
    assert _outputs(tmp_path / "selected") == _outputs(local["selected"])
    # the planted copies were found on both paths (a real result, not two empty ones)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    fuzzy = pq.read_table(tmp_path / "attrs" / "sets" / "dedup_fuzzy")
    assert pc.sum(pc.invert(fuzzy["dup_fuzzy_t80_keep"])).as_py() >= 55  # 59: one copy is too short to sign


def _remove_after(monkeypatch, cluster, where: str, after: int) -> list[str]:
    """Remove one worker node (ungracefully: its raylet, workers and object store die) once the
    driver has seen `after` results (`where`: 'ordered' = results of `ray_ordered_map`,
    'wait' = `ray.wait` returns, i.e. finished shuffle map tasks)."""
    c, workers = cluster
    removed: list[str] = []
    seen = [0]

    def tick() -> None:
        seen[0] += 1
        if seen[0] == after and not removed:
            node = next(w for w in workers if w in c.worker_nodes)
            c.remove_node(node, allow_graceful=False)
            removed.append(node.node_id)

    if where == "ordered":
        from textsieve.exec import ray_exec

        real = ray_exec.ray_ordered_map

        def ordered(*a, **k):
            for item in real(*a, **k):
                yield item
                tick()

        monkeypatch.setattr(ray_exec, "ray_ordered_map", ordered)
    else:
        real_wait = ray.wait

        def wait(*a, **k):
            out = real_wait(*a, **k)
            tick()
            return out

        monkeypatch.setattr(ray, "wait", wait)
    return removed


def _restore(cluster) -> None:
    c, workers = cluster
    for k, w in enumerate(workers):
        if w not in c.worker_nodes:
            workers[k] = c.add_node(num_cpus=1)
    c.wait_for_nodes()


def test_a_node_removed_mid_annotate_changes_nothing(cluster, source, local, tmp_path, monkeypatch, caplog):
    c, _ = cluster
    removed = _remove_after(monkeypatch, cluster, "ordered", 2)  # of 15 batches, 3 running at a time
    try:
        with caplog.at_level("WARNING", logger="textsieve.ray"):
            _annotate(source, tmp_path / "attrs", "--executor", "ray", "--address", c.address, "--workers", "3")
        assert removed and _nodes_alive(2) == 2
        assert any("lost CPUs" in r.getMessage() for r in caplog.records), "the pool did not shrink"
        want = {k: v for k, v in _outputs(local["attrs"]).items() if not k.startswith("sets/")}
        assert _outputs(tmp_path / "attrs") == want
    finally:
        _restore(cluster)


def test_a_node_removed_mid_fuzzy_dedup_changes_nothing(cluster, local, tmp_path, monkeypatch):
    c, _ = cluster
    attrs = tmp_path / "attrs"
    shutil.copytree(local["attrs"], attrs, ignore=shutil.ignore_patterns("dedup_fuzzy"))
    removed = _remove_after(monkeypatch, cluster, "wait", 1)  # after the first map task's blocks exist
    try:
        assert main(["dedup", "fuzzy", str(attrs), "--thresholds", "0.8", "-q", "--executor", "ray",
                     "--address", c.address]) == 0
        assert removed and _nodes_alive(2) == 2
        assert _outputs(attrs) == _outputs(local["attrs"])
    finally:
        _restore(cluster)
