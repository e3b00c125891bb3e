"""dedup fuzzy: RPv2-exact clusters on the whole dev corpus, memory-bounded passes, determinism
(shard names/order, workers), keep/verify policies, `dedup show` and `export rpv2-clusters`."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _shared import SHARED

from textsieve.cli import main
from textsieve.dedup.components import components
from textsieve.dedup.partitions import ROW, Grouper, PartitionWriter

THRESHOLDS = ("1.0", "0.9", "0.8", "0.7")


def _shared() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    return SHARED


def _annotate(inputs: list[str], out: Path) -> Path:
    assert main(["annotate", *inputs, "-o", str(out), "--signals", "minhash", "-q", "--workers", "1"]) == 0
    return out


@pytest.fixture(scope="session")
def annotated(tmp_path_factory) -> Path:
    """The whole dev corpus, annotated once with MinHash bands only (~5 s)."""
    shared = _shared()
    return _annotate([str(shared / "corpora/dev/web_sample.jsonl.gz")], tmp_path_factory.mktemp("ann") / "a")


def _dev_lines() -> list[str]:
    """The dev corpus's JSON lines, split on newlines (the last one empty)."""
    with gzip.open(_shared() / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return fh.read().split("\n")


@pytest.fixture(scope="session")
def golden() -> dict:
    return json.loads((_shared() / "golden/rpv2_lsh_clusters_dev.json").read_text())


@pytest.fixture(scope="session")
def split_annotated(tmp_path_factory) -> Path:
    """The dev corpus cut into 3 JSONL shards (round robin) and annotated."""
    src = tmp_path_factory.mktemp("split")
    lines = [ln for ln in _dev_lines() if ln.strip()]
    for k, name in enumerate(("a", "b", "c")):
        (src / f"{name}.jsonl").write_text("\n".join(lines[k::3]) + "\n", encoding="utf-8")
    return _annotate([str(src)], tmp_path_factory.mktemp("split-ann") / "a")


def _fuzzy(directory: Path, *extra: str) -> dict:
    """dedup fuzzy at all four thresholds; `--verify none` (RPv2's clusters) unless `extra` says."""
    args = ["dedup", "fuzzy", str(directory), "-q", "--overwrite"]
    if "--verify" not in extra:
        args += ["--verify", "none"]
    for t in THRESHOLDS:
        args += ["--thresholds", t]
    assert main(args + list(extra)) == 0
    return json.loads((directory / "sets" / "dedup_fuzzy" / ".textsieve" / "summary.json").read_text())


def _clusters(directory: Path, t: str) -> set[tuple[str, int]]:
    col = f"dup_fuzzy_t{int(round(float(t) * 100))}_cluster"
    out = set()
    for p in sorted((directory / "sets" / "dedup_fuzzy").rglob("*.parquet")):
        tab = pq.read_table(p, columns=["id", col])
        out |= {(i, c) for i, c in zip(tab.column("id").to_pylist(), tab.column(col).to_pylist()) if c is not None}
    return out


def _golden_set(golden: dict, t: str) -> set[tuple[str, int]]:
    return {(m["id"], m["cluster_id"]) for m in golden["thresholds"][t]["members"]}


def _set_bytes(directory: Path) -> dict[str, bytes]:
    set_dir = directory / "sets" / "dedup_fuzzy"
    return {p.relative_to(set_dir).as_posix(): p.read_bytes()
            for p in sorted(set_dir.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def test_clusters_equal_rpv2_golden_and_export(annotated, golden, tmp_path):
    summary = _fuzzy(annotated)
    for t in THRESHOLDS:
        assert _clusters(annotated, t) == _golden_set(golden, t), t
        g = golden["thresholds"][t]
        s = summary["thresholds"][t]
        assert (s["n_docs_in_clusters"], s["n_clusters"]) == (g["n_docs_in_clusters"], g["n_clusters"])
        out = tmp_path / f"c{t}.parquet"
        assert main(["export", "rpv2-clusters", str(annotated), "--threshold", t, "-o", str(out)]) == 0
        tab = pq.read_table(out)
        assert tab.column_names == ["id", "id_int", "cluster_id"]
        assert {(m["id"], m["id_int"], m["cluster_id"]) for m in g["members"]} == set(
            zip(*(tab.column(c).to_pylist() for c in tab.column_names)))
    # summary: duplicate fraction and the largest clusters with sample texts
    s = summary["thresholds"]["0.7"]
    assert s["n_removed"] == s["n_docs_in_clusters"] - s["n_clusters"]
    assert s["duplicate_fraction"] == pytest.approx(s["n_removed"] / summary["n_docs"])
    top = s["largest_clusters"]
    assert len(top) == 20 and top[0]["size"] >= top[-1]["size"]
    assert all(c["samples"] and all(c["samples"]) for c in top)


def test_tiny_memory_forces_passes_same_output(annotated, monkeypatch):
    _fuzzy(annotated)
    reference = _set_bytes(annotated)
    # --memory has a floor (exec.budget.MIN_SHARE): sort passes as small as a 300KB budget's come
    # from making each row count for more
    from textsieve.dedup import partitions

    monkeypatch.setattr(partitions, "WORK_BYTES_PER_ROW", 72 * 80)  # 3/4 of 32MB / (72 * 80) = 300KB / 72
    summary = _fuzzy(annotated, "--memory", "32MB")
    lsh = summary["thresholds"]["0.7"]["lsh"]
    assert lsh["partitions"] > 50 and lsh["passes"] > 50
    # the LSH stats, and the manifest hashing them
    run_specific = (".textsieve/summary.json", ".textsieve/manifest.json")
    assert {k: v for k, v in _set_bytes(annotated).items() if k not in run_specific} == {
        k: v for k, v in reference.items() if k not in run_specific}


@pytest.mark.slow
@pytest.mark.parametrize("verify", ["exact", "estimated"])  # both write new stores of kept edges
def test_edges_spilled_to_disk_give_the_same_bytes(annotated, monkeypatch, verify):
    """Issue 29 item 1: candidate edges beyond their share of the budget go to partition files,
    are verified and put into components a chunk at a time; the published set, summary and
    manifest included, is byte-identical to the in-memory run's at the same --memory."""
    before = _fuzzy(annotated, "--verify", verify, "--memory", "32MB")
    reference = _set_bytes(annotated)
    from textsieve.dedup import partitions
    from textsieve.stages.dedup import fuzzy

    spills = []
    original = partitions.EdgeStore._start_spill

    def counted(self):
        spills.append(self.work)
        return original(self)

    monkeypatch.setattr(partitions.EdgeStore, "_start_spill", counted)
    monkeypatch.setattr(partitions.EdgeStore, "min_edges", 8)
    monkeypatch.setattr(fuzzy, "EDGE_SHARE", 10**9)  # every threshold's edges spill past 8
    monkeypatch.setattr(partitions, "COMPACT_EDGES", 64)  # compact (and so check the share) every 64 edges
    after = _fuzzy(annotated, "--verify", verify, "--memory", "32MB")
    assert len(spills) >= len(THRESHOLDS) * (2 if verify != "none" else 1)
    assert _set_bytes(annotated) == reference
    assert before == after
    assert not list((annotated / ".textsieve-work").glob("**/edges-*")) if (annotated / ".textsieve-work").exists() \
        else True


def test_edge_store_spill_equals_memory(tmp_path):
    rng = np.random.default_rng(5)
    from textsieve.dedup.partitions import EdgeStore

    edges = rng.integers(1, 400, (30000, 2)).astype(np.uint64)  # many repeats of each pair
    mem = EdgeStore.of(edges)
    disk = EdgeStore(str(tmp_path / "e"), 1024, max_edges=100)
    for s in range(0, edges.shape[0], 777):
        disk.add(edges[s:s + 777])
    disk.close()
    assert disk.spilled and not mem.spilled and disk.n == mem.n
    got = np.concatenate(list(disk.chunks()))
    assert all(c.shape[0] <= 1024 for c in disk.chunks())
    assert np.array_equal(np.unique(got, axis=0), mem.array()) and got.shape[0] == mem.n
    disk.remove()
    assert not list((tmp_path / "e").iterdir())


def test_grouper_recursive_passes_on_skewed_keys(tmp_path):
    """Keys shared by thousands of rows overflow a partition; the chunk-reduce-rescatter passes
    must link exactly the rows that share a key."""
    rng = np.random.default_rng(0)
    n = 20000
    key = np.where(rng.random(n) < 0.5, 7, rng.integers(0, 3000, n)).astype(np.uint64)  # one giant group
    rows = np.empty(n, dtype=ROW)
    rows["h1"] = key * np.uint64(0x9E3779B97F4A7C15)
    rows["h2"] = key
    rows["doc"] = rng.permutation(n).astype(np.uint64)
    w = PartitionWriter(str(tmp_path / "p"), 1, 1024)
    w.add(rows)
    g = Grouper(str(tmp_path / "p"), 1024)
    g.group_partitions(w.close())
    assert g.stats.max_level >= 1
    edges = g.all_edges()  # distinct and sorted, whatever the buffering
    assert np.array_equal(edges, np.unique(edges, axis=0))
    nodes, label = components(edges)
    got = {}
    for node, lab in zip(nodes, nodes[label]):
        got.setdefault(int(lab), set()).add(int(node))
    expect = {}
    for k, d in zip(key, rows["doc"]):
        expect.setdefault(int(k), set()).add(int(d))
    assert sorted(map(sorted, got.values())) == sorted(sorted(v) for v in expect.values() if len(v) > 1)


def test_deterministic_across_shard_names_order_and_workers(split_annotated, golden, tmp_path):
    _fuzzy(split_annotated)
    for t in THRESHOLDS:  # splitting the corpus changes nothing
        assert _clusters(split_annotated, t) == _golden_set(golden, t)
    base = _set_bytes(split_annotated)
    renamed = tmp_path / "r"
    shutil.copytree(split_annotated, renamed, ignore=shutil.ignore_patterns("dedup_fuzzy"))
    perm = {"a.parquet": "z.parquet", "b.parquet": "m.parquet", "c.parquet": "0.parquet"}
    for old, new in perm.items():
        (renamed / "docs" / old).rename(renamed / "docs" / (new + ".tmp"))
    for new in perm.values():
        (renamed / "docs" / (new + ".tmp")).rename(renamed / "docs" / new)
    manifest = json.loads((renamed / ".textsieve" / "manifest.json").read_text())  # published under the new names
    manifest["files"] = {f"docs/{perm[k[5:]]}" if k[5:] in perm else k: v for k, v in manifest["files"].items()}
    (renamed / ".textsieve" / "manifest.json").write_text(json.dumps(manifest))
    _fuzzy(renamed, "--workers", "2")
    other = _set_bytes(renamed)
    base.pop(".textsieve/manifest.json")  # lists the shard names
    other.pop(".textsieve/manifest.json")
    assert {perm.get(k, k): v for k, v in base.items()} == other
    # the default exact verification re-reads texts with --workers processes: same bytes too
    _fuzzy(split_annotated, "--verify", "exact")
    _fuzzy(renamed, "--verify", "exact", "--workers", "2")
    assert {perm.get(k, k): v for k, v in _set_bytes(split_annotated).items() if k != ".textsieve/manifest.json"} == {
        k: v for k, v in _set_bytes(renamed).items() if k != ".textsieve/manifest.json"}


def test_keep_and_verify_policies(annotated, golden):
    s = _fuzzy(annotated, "--keep", "none", "--verify", "estimated")
    for t in THRESHOLDS:
        assert _clusters(annotated, t) <= {(i, c) for i, c in _golden_set(golden, t)} | _clusters(annotated, t)
        assert s["thresholds"][t]["n_removed"] == s["thresholds"][t]["n_docs_in_clusters"]
    tab = pq.read_table(annotated / "sets" / "dedup_fuzzy" / "web_sample.parquet")
    in_cluster = tab.column("dup_fuzzy_t70_cluster").is_valid().to_pylist()
    assert not any(k for k, c in zip(tab.column("dup_fuzzy_t70_keep").to_pylist(), in_cluster) if c)
    # estimated verification keeps pairs with MinHash Jaccard >= T: clusters only shrink
    assert s["thresholds"]["0.7"]["lsh"]["edges_rejected"] >= 0
    assert s["thresholds"]["0.7"]["n_docs_in_clusters"] <= golden["thresholds"]["0.7"]["n_docs_in_clusters"]

    s = _fuzzy(annotated, "--keep", "longest", "--verify", "exact")
    assert 0 < s["thresholds"]["0.7"]["n_docs_in_clusters"] <= golden["thresholds"]["0.7"]["n_docs_in_clusters"]
    tab = pq.read_table(annotated / "sets" / "dedup_fuzzy" / "web_sample.parquet")
    cl, keep = tab.column("dup_fuzzy_t70_cluster").to_pylist(), tab.column("dup_fuzzy_t70_keep").to_pylist()
    kept = {}
    for c, k in zip(cl, keep):
        if c is not None:
            kept[c] = kept.get(c, 0) + int(k)
    assert kept and set(kept.values()) == {1}  # exactly one survivor per cluster


def test_show_prints_members_and_jaccard(annotated, golden, capsys):
    _fuzzy(annotated)
    members = golden["thresholds"]["0.8"]["members"]
    cid = members[0]["cluster_id"]
    ids = {m["id"] for m in members if m["cluster_id"] == cid}
    assert main(["dedup", "show", str(annotated), "--cluster", str(cid), "--threshold", "0.8"]) == 0
    out = capsys.readouterr().out
    assert f"{len(ids)} documents" in out and all(i in out for i in ids)
    assert "pairwise estimated Jaccard" in out
    assert main(["dedup", "show", str(annotated), "--cluster", "12345"]) == 2


def _golden_top(golden: dict, t: str, n: int) -> list[tuple[int, int, str]]:
    """(size, cluster id, representative id) of RPv2's `n` largest clusters at `t`."""
    sizes: dict[int, int] = {}
    rep: dict[int, str] = {}
    for m in golden["thresholds"][t]["members"]:
        sizes[m["cluster_id"]] = sizes.get(m["cluster_id"], 0) + 1
        rep[m["cluster_id"]] = m["cluster_rep_id"]
    return [(s, c, rep[c]) for c, s in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def test_show_without_cluster_lists_the_largest(annotated, golden, capsys):
    """Issue 10 item 11: `dedup show DIR` (no --cluster) lists the largest clusters at the lowest
    stored threshold, `--threshold` picks another, `--top` caps the list; ids are usable."""
    _fuzzy(annotated)
    texts = {}
    with gzip.open(_shared() / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            texts[r["id"]] = r["text"]
    for argv, t, n in (([], "0.7", 20), (["--threshold", "0.9", "--top", "3"], "0.9", 3)):
        assert main(["dedup", "show", str(annotated), *argv]) == 0
        out = capsys.readouterr().out.splitlines()
        want = _golden_top(golden, t, n)
        assert out[0].startswith(f"{golden['thresholds'][t]['n_clusters']:,} clusters at threshold {t}"), out[0]
        rows = out[2:2 + n]
        assert [tuple(r.split()[:2]) for r in rows] == [(f"{s:,}", str(c)) for s, c, _ in want]
        for r, (_, _, rep_id) in zip(rows, want):  # the first line of the representative's text
            first = next(ln.strip() for ln in texts[rep_id].splitlines() if ln.strip())
            assert first[:40] in r
        assert "--cluster ID" in out[2 + n] and out[-1].startswith("thresholds stored: 0.7, 0.8, 0.9, 1")
    _, cid, _ = _golden_top(golden, "0.7", 1)[0]  # an id from the list works with --cluster
    assert main(["dedup", "show", str(annotated), "--cluster", str(cid)]) == 0
    assert f"cluster {cid} (dup_fuzzy_t70)" in capsys.readouterr().out
    assert main(["dedup", "show", str(annotated), "--top", "0"]) == 2
    assert main(["dedup", "show", str(annotated), "--threshold", "0.5"]) == 2
    assert "stored: 0.7, 0.8, 0.9, 1" in capsys.readouterr().err


def test_missing_band_columns_error(tmp_path, capsys):
    d = tmp_path / "ann"
    (tmp_path / "x.jsonl").write_text(json.dumps({"id": "a", "text": "hello world"}) + "\n")
    assert main(["annotate", str(tmp_path / "x.jsonl"), "-o", str(d), "--signals", "minhash", "-q",
                 "--workers", "1"]) == 0
    assert main(["dedup", "fuzzy", str(d), "--thresholds", "0.8", "--bands", "fast", "-q"]) == 2
    assert "ts_fastsig_sim0.8" in capsys.readouterr().err


def _set_jaccard(x: str, y: str) -> float:
    from textsieve.text.normalize import normalize

    def sh(t: str) -> set[str]:
        w = normalize(t).split()
        return {" ".join(w[i:i + 13]) for i in range(len(w) - 12)}

    a, b = sh(x), sh(y)
    return len(a & b) / len(a | b) if a or b else 0.0


def test_exact_verification_hashes_equal_set_jaccard():
    from textsieve.dedup.verify import jaccard_sorted, shingle_hashes

    texts = [json.loads(ln)["text"] for ln in _dev_lines()[:60] if ln.strip()]
    rng = np.random.default_rng(5)
    for text in texts:
        words = text.split()
        edited = words.copy()
        for _ in range(int(rng.integers(0, 30))):  # substitutions, deletions, insertions
            k = int(rng.integers(0, max(1, len(edited))))
            op = rng.integers(0, 3)
            if op == 0 and edited:
                edited[k] = "zzz"
            elif op == 1 and edited:
                del edited[k]
            else:
                edited.insert(k, "Qux,")
        other = " ".join(edited)
        assert jaccard_sorted(shingle_hashes(text), shingle_hashes(other)) == pytest.approx(
            _set_jaccard(text, other), abs=1e-12)
    assert jaccard_sorted(shingle_hashes("too short"), shingle_hashes("")) == 0.0


def test_default_verifies_exactly(annotated, golden):
    """The default (`--verify exact`): clusters are LSH clusters cut down to pairs whose true
    shingle Jaccard reaches T; every two-member cluster is such a pair."""
    assert main(["dedup", "fuzzy", str(annotated), "-q", "--overwrite", "--thresholds", "0.8"]) == 0
    summary = json.loads((annotated / "sets" / "dedup_fuzzy" / ".textsieve" / "summary.json").read_text())
    assert summary["verify"] == "exact"
    got = _clusters(annotated, "0.8")
    rpv2 = _golden_set(golden, "0.8")
    assert got and {i for i, _ in got} <= {i for i, _ in rpv2}
    texts = {}
    for ln in _dev_lines():
        if ln.strip():
            rec = json.loads(ln)
            texts[rec["id"]] = rec["text"]
    members: dict[int, list[str]] = {}
    for i, c in got:
        members.setdefault(c, []).append(i)
    pairs = [m for m in members.values() if len(m) == 2]
    assert pairs
    for a, b in pairs:
        assert _set_jaccard(texts[a], texts[b]) >= 0.8
