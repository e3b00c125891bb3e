"""The Ray executor: annotate and dedup fuzzy on a local 2-CPU Ray give byte-identical outputs to
the local executor, also when a worker process dies mid-run (killed by `hooks.ray_kill`)."""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest
from _shared import SHARED
from hooks.ray_kill import dying_ordered_map, kill_ordered_map_task, kill_shuffle_map_task, kill_star_step

from textsieve.cli import main
from textsieve.exec.ray_exec import RayUnavailable, ray_ordered_map, require_ray  # importing it imports no Ray
from textsieve.stages.dedup.fuzzy import FuzzyConfig, run_fuzzy

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'textsieve[ray]'); Ray executor untested")

THRESHOLDS = [0.9, 0.8, 0.7]


@pytest.fixture(scope="module")
def shared() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    return SHARED


@pytest.fixture(scope="module")
def resources(shared) -> Path:
    return shared / "golden" / "rpv2_resources"


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    if ray.is_initialized():
        ray.shutdown()
    # workers import this test module by name for the small functions below
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                                                      os.environ.get("PYTHONPATH", "")])}})
    yield
    ray.shutdown()


def _dev_lines(shared: Path) -> list[str]:
    with gzip.open(shared / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [ln for ln in fh if ln.strip()]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _same_parquet(a: Path, b: Path) -> int:
    fa = {k: v for k, v in _files(a).items() if k.endswith(".parquet")}
    fb = {k: v for k, v in _files(b).items() if k.endswith(".parquet")}
    assert sorted(fa) == sorted(fb) and fa
    for name in fa:
        assert fa[name] == fb[name], f"{name} differs between executors"
    return len(fa)


@pytest.fixture(scope="module")
def slice_shards(shared, tmp_path_factory) -> Path:
    """1,200 dev-corpus documents in 3 JSONL shards."""
    lines = _dev_lines(shared)[:1200]
    src = tmp_path_factory.mktemp("ray-slice")
    for k in range(3):
        (src / f"s{k}.jsonl").write_text("".join(lines[k * 400:(k + 1) * 400]), encoding="utf-8")
    return src


def _annotate(src: Path, out: Path, resources: Path, *extra: str) -> None:
    assert main(["annotate", str(src), "-o", str(out), "--resources", str(resources), "--lang-field", "meta.lang",
                 "--batch-size", "100", "-q", *extra]) == 0


@pytest.fixture(scope="module")
def local_annotated(slice_shards, resources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ray-local") / "a"
    _annotate(slice_shards, out, resources, "--workers", "2")
    return out


def test_annotate_on_ray_matches_local(slice_shards, resources, local_annotated, tmp_path):
    _annotate(slice_shards, tmp_path / "r", resources, "--executor", "ray", "--workers", "2")
    assert _same_parquet(local_annotated, tmp_path / "r") == 3


def test_annotate_on_ray_survives_a_killed_worker(slice_shards, resources, local_annotated, tmp_path,
                                                  monkeypatch, caplog):
    # the process running task 4 (of 12 batches) exits hard
    markers = kill_ordered_map_task(monkeypatch, 4, tmp_path)
    with caplog.at_level(logging.WARNING, logger="textsieve.ray"):
        _annotate(slice_shards, tmp_path / "r", resources, "--executor", "ray", "--workers", "2")
    assert len(markers) == 1 and markers[0].exists(), "the test hook did not kill a worker"
    assert any("worker died" in r.getMessage() for r in caplog.records), "the death went unnoticed"
    assert _same_parquet(local_annotated, tmp_path / "r") == 3  # same rows, in order: none lost or repeated


def _square(x: int) -> int:
    return x * x


_INIT: dict = {}


def _init(value: int) -> None:
    _INIT["value"] = value


def _with_init(x: int) -> int:
    return x + _INIT["value"]


def test_ray_ordered_map_contract(tmp_path):
    """Order, initializer state per worker, bounded pending, retry after a killed worker, errors."""
    dying, markers = dying_ordered_map(ray_ordered_map, 7, tmp_path)
    out = list(dying(_with_init, range(40), workers=2, initializer=_init, initargs=(1000,), max_pending=3))
    assert out == [(x, x + 1000) for x in range(40)]
    assert markers[0].exists(), "the worker running task 7 should have died"
    with pytest.raises(ZeroDivisionError):
        list(ray_ordered_map(_inverse, [1, 2, 0, 3], workers=2))
    # a task marked inline (annotate: a document over a batch's budget) runs in the driver, in order
    _INIT.clear()
    out = list(dying(_with_pid, range(10), workers=2, initializer=_init, initargs=(7,), inline=lambda x: x in (3, 9)))
    assert [t for t, _ in out] == list(range(10)) and all(r[1] == x + 7 for x, r in out)
    assert sorted(x for x, r in out if r[0] == os.getpid()) == [3, 9]


def _with_pid(x: int) -> tuple[int, int]:
    return os.getpid(), x + _INIT["value"]


def _inverse(x: int) -> float:
    return 1 / x


@pytest.fixture(scope="module")
def dedup_annotated(shared, tmp_path_factory) -> Path:
    """Half the dev corpus in 4 shards plus 300 copies of one short document per shard (a skewed
    key: its partitions overflow the memory budget and take the recursive path), annotated with
    MinHash bands only."""
    lines = _dev_lines(shared)[::2]
    src = tmp_path_factory.mktemp("ray-dedup-src")
    import json

    doc = next(d for d in map(json.loads, lines) if 40 < len(d["text"].split()) < 80)
    for k in range(4):
        copies = [json.dumps({**doc, "id": f"copy-{k}-{j}"}) + "\n" for j in range(300)]
        (src / f"s{k}.jsonl").write_text("".join(lines[k::4]) + "".join(copies), encoding="utf-8")
    out = tmp_path_factory.mktemp("ray-dedup") / "a"
    assert main(["annotate", str(src), "-o", str(out), "--signals", "minhash", "-q", "--workers", "2"]) == 0
    return out


def _fuzzy(src: Path, dst: Path, executor: str):
    shutil.copytree(src, dst)
    # --memory has a floor (exec.budget.MIN_SHARE): sort passes as small as a 100KB budget's come
    # from making each row count for more (read in this process: the sort size is passed to Ray)
    from textsieve.dedup import partitions

    real, partitions.WORK_BYTES_PER_ROW = partitions.WORK_BYTES_PER_ROW, 72 * 240  # 3/4 of 32MB: 100KB's rows
    try:
        res = run_fuzzy(FuzzyConfig(directory=str(dst), thresholds=THRESHOLDS, memory="32MB", executor=executor,
                                    progress=False))
    finally:
        partitions.WORK_BYTES_PER_ROW = real
    return res, dst / "sets" / "dedup_fuzzy"


@pytest.fixture(scope="module")
def local_fuzzy(dedup_annotated, tmp_path_factory):
    return _fuzzy(dedup_annotated, tmp_path_factory.mktemp("ray-fz-local") / "a", "local")


def test_dedup_fuzzy_on_ray_matches_local(dedup_annotated, local_fuzzy, tmp_path, monkeypatch):
    """The shuffle, `--verify exact` and the components as Ray tasks (issue 29 items 1 and 2) and
    the driver's edge store spilling past its share (here: past 8 edges): the same bytes as local."""
    from textsieve.dedup import partitions
    from textsieve.stages.dedup import fuzzy

    verified, spills, starred = [], [], []
    original = fuzzy.ray_exact_edges
    monkeypatch.setattr(fuzzy, "ray_exact_edges", lambda *a, **k: (verified.append(1), original(*a, **k))[1])
    stars = fuzzy.ray_components
    monkeypatch.setattr(fuzzy, "ray_components", lambda *a, **k: (starred.append(1), stars(*a, **k))[1])
    spill = partitions.EdgeStore._start_spill
    monkeypatch.setattr(partitions.EdgeStore, "_start_spill", lambda self: (spills.append(1), spill(self)))
    monkeypatch.setattr(partitions.EdgeStore, "min_edges", 8)
    monkeypatch.setattr(fuzzy, "EDGE_SHARE", 10**9)
    res_local, out_local = local_fuzzy
    res, out = _fuzzy(dedup_annotated, tmp_path / "a", "ray")
    assert len(starred) == len(THRESHOLDS)  # the components as Ray tasks (issue 29 item 1)
    assert verified and res.stats[0.8]["edges_rejected"] == res_local.stats[0.8]["edges_rejected"] > 0
    assert len(spills) >= 2 * len(THRESHOLDS)  # the grouped edges and the verified ones
    stats = res.stats[0.8]
    assert stats["edges"] > 1000 and stats["partitions"] > 16 and stats["max_level"] >= 1  # a real shuffle
    assert res.stats == res_local.stats
    assert _files(out) == _files(out_local)  # shards, summary.json, resume state: byte for byte


def test_dedup_fuzzy_on_ray_survives_a_killed_worker(dedup_annotated, local_fuzzy, tmp_path, monkeypatch):
    marker, star = tmp_path / "died", tmp_path / "died-in-components"
    kill_shuffle_map_task(monkeypatch, 2, marker)  # the process running map task 2 exits hard; Ray retries it
    kill_star_step(monkeypatch, star)  # and one running a components step
    _, out = _fuzzy(dedup_annotated, tmp_path / "a", "ray")
    assert marker.exists() and star.exists(), "the test hook did not kill a worker"
    assert _files(out) == _files(local_fuzzy[1])


def test_dedup_exact_on_ray_matches_local(slice_shards, local_annotated, tmp_path, monkeypatch):
    """Shards hashed as Ray tasks and the keys grouped as a Ray shuffle (issue 29 item 2):
    byte-identical sets, from raw shards (one reduce group) and from an annotate folder with
    small sort passes (several reduce groups)."""
    for executor in ("local", "ray"):
        assert main(["dedup", "exact", str(slice_shards), "-o", str(tmp_path / executor), "-q", "--normalize", "rpv2",
                     "--executor", executor, "--workers", "2"]) == 0
    assert _files(tmp_path / "local") == _files(tmp_path / "ray") and len(_files(tmp_path / "ray")) == 5  # + manifest
    from textsieve.dedup import partitions, ray_shuffle
    from textsieve.stages.dedup import exact

    starred = []
    stars = exact.ray_components
    monkeypatch.setattr(exact, "ray_components", lambda *a, **k: (starred.append(1), stars(*a, **k))[1])

    groups = []
    original = ray_shuffle.RayKeyShuffle.finish
    monkeypatch.setattr(ray_shuffle.RayKeyShuffle, "finish",
                        lambda self, store: (groups.append(len(self.bounds) - 1), original(self, store))[1])
    monkeypatch.setattr(partitions, "MIN_ROWS", 16)
    monkeypatch.setattr(partitions, "WORK_BYTES_PER_ROW", 72 * 2400)  # 3/4 of a 32MB share: 138 rows a sort
    for executor in ("local", "ray"):
        assert main(["dedup", "exact", str(local_annotated), "-o", str(tmp_path / f"a-{executor}"), "-q",
                     "--executor", executor, "--workers", "2", "--memory", "96MB"]) == 0
    assert groups and groups[-1] > 1 and starred  # the groups' components as Ray tasks too
    assert _files(tmp_path / "a-local") == _files(tmp_path / "a-ray")


def test_clear_errors(monkeypatch, tmp_path):
    with pytest.raises(SystemExit):
        main(["annotate", str(tmp_path), "-o", str(tmp_path / "o"), "--executor", "spark"])
    with pytest.raises(ValueError, match="--executor"):
        run_fuzzy(FuzzyConfig(directory=str(tmp_path), thresholds=[0.8], executor="spark"))
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(RayUnavailable, match=r"pip install 'textsieve\[ray\]'"):
        require_ray()


def test_select_on_ray_matches_local(local_annotated, tmp_path):
    outs = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        assert main(["select", str(local_annotated), "--recipe", "c4", "-o", str(out), "--workers", "2",
                     "--executor", executor, "-q"]) == 0
        outs[executor] = out
    local, ray_files = _files(outs["local"]), _files(outs["ray"])
    shards = [k for k in local if k.endswith(".jsonl.gz")]
    assert len(shards) == 3
    for name in shards:
        assert ray_files[name] == local[name], f"{name} differs between executors"


def test_sample_pipeline_on_ray_matches_local(tmp_path):
    """Issue 6: the bundled example pipeline on the sample corpus, local vs Ray, same outputs."""
    import shutil

    from textsieve.sample import build_sample

    examples = Path(__file__).resolve().parents[1] / "examples"
    work = tmp_path / "ex"
    work.mkdir()
    shutil.copy(examples / "pipeline.yaml", work / "pipeline.yaml")
    build_sample(work / "sample.jsonl.gz", max_docs=150)
    outs = {}
    for executor in ("local", "ray"):
        out = tmp_path / f"run-{executor}"
        assert main(["run", str(work / "pipeline.yaml"), "-o", str(out), "--executor", executor, "-q"]) == 0
        outs[executor] = _files(out)
    compared = [k for k in outs["local"] if k.endswith((".parquet", ".jsonl.gz"))]
    assert any(k.startswith("attrs/sets/dedup_fuzzy/") for k in compared)
    assert any(k.startswith("selected/") for k in compared)
    for name in compared:
        assert outs["ray"].get(name) == outs["local"][name], f"{name} differs between executors"


def test_extract_on_ray_matches_local(tmp_path):
    """Issue 12 item 4: extract runs one Ray task per WARC, with the local executor's bytes."""
    from textsieve.sample_crawl import build_sample_crawl
    from textsieve.stages.sources.extract import ExtractConfig, run_extract

    build_sample_crawl(tmp_path / "crawl")
    local = run_extract(ExtractConfig([str(tmp_path / "crawl")], str(tmp_path / "local"), workers=1, progress=False))
    on_ray = run_extract(ExtractConfig([str(tmp_path / "crawl")], str(tmp_path / "ray"), workers=2, executor="ray",
                                       progress=False))
    assert on_ray.documents == local.documents == 120
    a, b = _files(tmp_path / "local"), _files(tmp_path / "ray")
    shards = [k for k in a if k.endswith(".jsonl.gz")]
    assert len(shards) == 3 and all(a[k] == b[k] for k in shards)


def test_embed_on_ray_matches_local(local_annotated, tmp_path):
    """`embed --executor ray`: one Ray task per annotate shard, the same embedding shards."""
    ray_dir = tmp_path / "ray-embed"
    shutil.copytree(local_annotated, ray_dir, ignore=shutil.ignore_patterns("sets"))
    local_dir = tmp_path / "local-embed"
    shutil.copytree(local_annotated, local_dir, ignore=shutil.ignore_patterns("sets"))
    assert main(["embed", str(local_dir), "--workers", "1", "-q"]) == 0
    assert main(["embed", str(ray_dir), "--executor", "ray", "--workers", "2", "-q"]) == 0
    assert _same_parquet(local_dir / "sets" / "embed_wordllama", ray_dir / "sets" / "embed_wordllama") == 3


@ray.remote(num_cpus=1)
class _Hog:
    """An actor that holds a CPU (standing in for the CPU of a node that has just died)."""

    def ping(self) -> int:
        return 1


def test_an_actor_made_while_a_dead_node_still_counts_is_dropped(tmp_path, monkeypatch, caplog):
    """A worker dies, and when its replacement is made the cluster still counts a CPU it no
    longer has (on a real cluster: the GCS has not yet marked a removed node dead). Simulated:
    `live_cpus` first answers 2 while another actor takes the freed CPU, then 1. The replacement
    can never start; the driver must drop it and finish on the other worker, every result in
    order (this hung forever before `drop_unplaceable`)."""
    from textsieve.exec import ray_exec

    hogs: list = []

    def stale_then_true(_ray) -> int:
        if not hogs:
            hog = _Hog.remote()
            ray.get(hog.__ray_ready__.remote())  # it holds the CPU the dead worker freed
            hogs.append(hog)
            return 2
        return 1

    monkeypatch.setattr(ray_exec, "live_cpus", stale_then_true)
    dying, markers = dying_ordered_map(ray_ordered_map, 3, tmp_path)
    try:
        with caplog.at_level(logging.WARNING):
            out = list(dying(_with_init, range(12), workers=2, initializer=_init, initargs=(5,)))
    finally:
        for hog in hogs:
            ray.kill(hog)
    assert out == [(x, x + 5) for x in range(12)]
    assert markers[0].exists() and hogs, "a worker should have died and its replacement been made"
    assert any("lost CPUs" in r.getMessage() for r in caplog.records)
