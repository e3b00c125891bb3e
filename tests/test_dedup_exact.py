"""dedup exact: first occurrence kept, --normalize none|rpv2, annotate-folder vs raw inputs,
memory-bounded grouping, and the Bloom mode's measured false-positive rate."""

from __future__ import annotations

import json
import pydoc_data.topics

import numpy as np
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.dedup.bloom import BloomFilter

TEXTS = list(dict.fromkeys(p for t in pydoc_data.topics.topics.values() for p in t.split("\n\n")
                           if len(p) > 200 and not p.startswith(" ")))[:300]  # unique prose paragraphs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two shards of real Python-docs texts with exact and case/punctuation-variant copies."""
    d = tmp_path_factory.mktemp("exact")
    a = [{"id": f"a/{i}", "text": t} for i, t in enumerate(TEXTS[:200])]
    b = [{"id": f"b/{i}", "text": t} for i, t in enumerate(TEXTS[150:300])]  # 50 exact copies of a's tail
    b.append({"id": "b/upper", "text": TEXTS[0].upper()})  # same after rpv2 normalization
    b.append({"id": "b/punct", "text": TEXTS[1].replace(".", " . ").replace(",", "")})
    a.insert(0, {"id": "a/self-dup", "text": TEXTS[5]})  # a copy before the original, same shard
    for name, recs in (("a", a), ("b", b)):
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def _read(out, set_name="dedup_exact"):
    rows = []
    for p in sorted((out / "sets" / set_name).glob("*.parquet")):
        rows += pq.read_table(p).to_pylist()
    return {r["id"]: r for r in rows}


def test_exact_first_occurrence_kept(corpus, tmp_path, monkeypatch):
    out = tmp_path / "o"
    # --memory has a floor (exec.budget.MIN_SHARE): sort passes as small as a 50KB budget's
    # (~700 rows) come from making each row count for more
    from textsieve.dedup import partitions

    monkeypatch.setattr(partitions, "WORK_BYTES_PER_ROW", 72 * 480)  # 3/4 of 32MB / (72 * 480) = 50KB / 72
    assert main(["dedup", "exact", str(corpus), "-o", str(out), "-q", "--memory", "32MB"]) == 0
    monkeypatch.undo()
    r = _read(out)
    assert len(r) == 200 + 1 + 152
    assert r["a/self-dup"]["dup_exact_keep"] and not r["a/5"]["dup_exact_keep"]  # corpus order: a/self-dup first
    assert r["a/5"]["dup_exact_group"] == r["a/self-dup"]["dup_exact_group"] is not None
    for i in range(150, 200):
        assert r[f"a/{i}"]["dup_exact_keep"] and not r[f"b/{i - 150}"]["dup_exact_keep"]
        assert r[f"a/{i}"]["dup_exact_size"] == 2
    assert r["b/upper"]["dup_exact_keep"] and r["b/upper"]["dup_exact_group"] is None
    summary = json.loads((out / "sets" / "dedup_exact" / ".textsieve" / "summary.json").read_text())
    assert summary["n_removed"] == 51 and summary["n_groups"] == 51
    assert summary["largest_groups"][0]["sample"]

    out2 = tmp_path / "o2"
    assert main(["dedup", "exact", str(corpus), "-o", str(out2), "-q", "--normalize", "rpv2"]) == 0
    r2 = _read(out2, "dedup_exact_rpv2")  # the settings name the set and its columns
    assert not r2["b/upper"]["dup_exact_rpv2_keep"] and not r2["b/punct"]["dup_exact_rpv2_keep"]
    assert r2["b/upper"]["dup_exact_rpv2_group"] == r2["a/0"]["dup_exact_rpv2_group"]

    # Bloom mode agrees here (300 docs, fp 1e-6) and has no group ids
    out3 = tmp_path / "o3"
    assert main(["dedup", "exact", str(corpus), "-o", str(out3), "-q", "--bloom-fp", "1e-6",
                 "--bloom-capacity", "1000"]) == 0
    r3 = _read(out3, "dedup_exact_bloom")
    assert {k: v["dup_exact_bloom_keep"] for k, v in r3.items()} == {k: v["dup_exact_keep"] for k, v in r.items()}
    assert main(["dedup", "exact", str(corpus), "-o", str(out3), "-q", "--bloom-fp", "0.01"]) == 2  # needs capacity


def test_annotate_folder_equals_raw_inputs(corpus, tmp_path):
    ann = tmp_path / "ann"
    assert main(["annotate", str(corpus), "-o", str(ann), "--signals", "minhash", "-q", "--workers", "1"]) == 0
    assert main(["dedup", "exact", str(ann), "-q"]) == 0
    raw = tmp_path / "raw"
    assert main(["dedup", "exact", str(corpus), "-o", str(raw), "-q"]) == 0
    for name in ("a.parquet", "b.parquet"):
        a, b = ann / "sets" / "dedup_exact" / name, raw / "sets" / "dedup_exact" / name
        assert pq.read_table(a).equals(pq.read_table(b))


@pytest.mark.parametrize("rate", [0.01, 0.001])
def test_bloom_false_positive_rate_within_setting(rate):
    rng = np.random.default_rng(1)
    n = 200_000
    keys = rng.integers(0, 2**63, size=(2 * n, 2), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    bloom = BloomFilter(n, rate)
    assert not bloom.test_add(keys[:n, 0], keys[:n, 1]).sum() > n * rate  # inserting n distinct keys
    assert bloom.contains(keys[:n, 0], keys[:n, 1]).all()  # no false negatives
    measured = bloom.contains(keys[n:, 0], keys[n:, 1]).mean()  # n unseen keys against a full filter
    assert measured <= rate * 1.1, (measured, rate)


def _set_files(out, name: str | None = None) -> dict[str, bytes]:
    """Every file of the folder's exact set (the only one, or `name`), bookkeeping included."""
    (set_dir,) = [out / "sets" / name] if name else (out / "sets").glob("dedup_exact*")
    return {p.relative_to(set_dir).as_posix(): p.read_bytes() for p in sorted(set_dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("mode", [[], ["--bloom-fp", "1e-6", "--bloom-capacity", "1000"]])
def test_same_bytes_for_any_worker_count(corpus, tmp_path, mode):
    """Shards are hashed by --workers processes; results are consumed in corpus order, so the
    groups, the kept copies and every output byte are the same as with one process."""
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert main(["dedup", "exact", str(corpus), "-o", str(out), "-q", "--workers", workers, *mode]) == 0
        outs.append(_set_files(out))
    assert outs[0] == outs[1] and len(outs[0]) == 4  # a, b, .textsieve/summary.json, .textsieve/manifest.json


def test_other_settings_get_their_own_set(corpus, tmp_path, capsys):
    """Issue 10 item 11: re-running with another --normalize (or in Bloom mode) keeps the earlier
    result beside the new one (nothing thrown away), recipes read each set's columns, and a set
    made with other Bloom settings is never replaced silently."""
    from textsieve.recipes.funnel import compute_funnel
    from textsieve.recipes.language import Recipe
    from textsieve.stages.dedup.exact import ExactConfig, exact_names, run_exact

    ann = tmp_path / "ann"
    assert main(["annotate", str(corpus), "-o", str(ann), "--signals", "minhash", "-q", "--workers", "1"]) == 0
    assert main(["dedup", "exact", str(ann), "-q"]) == 0
    plain = _set_files(ann)
    assert main(["dedup", "exact", str(ann), "-q", "--normalize", "rpv2"]) == 0
    assert main(["dedup", "exact", str(ann), "-q", "--bloom-fp", "1e-6"]) == 0
    assert sorted(p.name for p in (ann / "sets").glob("dedup_exact*")) == ["dedup_exact", "dedup_exact_bloom",
                                                                          "dedup_exact_rpv2"]
    assert _set_files(ann, "dedup_exact") == plain  # the first run is kept
    assert exact_names("rpv2") == ("dedup_exact_rpv2", "dup_exact_rpv2")
    assert exact_names("rpv2", bloom=True) == ("dedup_exact_rpv2_bloom", "dup_exact_rpv2_bloom")
    r2 = _read(ann, "dedup_exact_rpv2")
    assert not r2["b/upper"]["dup_exact_rpv2_keep"] and r2["a/0"]["dup_exact_rpv2_size"] == 2
    summary = json.loads((ann / "sets" / "dedup_exact_rpv2" / ".textsieve" / "summary.json").read_text())
    assert summary["columns"] == ["dup_exact_rpv2_group", "dup_exact_rpv2_size", "dup_exact_rpv2_keep"]

    recipe = Recipe.from_rules({"raw": "dup_exact_keep", "norm": "dup_exact_rpv2_keep",
                                "bloom": "dup_exact_bloom_keep"})
    alone = {r.name: r.removed_alone for r in compute_funnel(str(ann), recipe).rules}
    assert alone["raw"] == alone["bloom"] == 51
    assert alone["norm"] >= 51 + 2  # rpv2 also catches the case/punctuation variants

    bloom = _read(ann, "dedup_exact_bloom")
    before = _set_files(ann, "dedup_exact_bloom")
    assert main(["dedup", "exact", str(ann), "-q", "--bloom-fp", "0.01"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("textsieve: error: dedup exact:") and "bloom_fp=1e-06 (now 0.01)" in err
    assert "--overwrite" in err and err.count("\n") == 1
    assert _set_files(ann, "dedup_exact_bloom") == before
    run_exact(ExactConfig(inputs=[str(ann)], bloom_fp=0.01, overwrite=True, progress=False))
    summary = json.loads((ann / "sets" / "dedup_exact_bloom" / ".textsieve" / "summary.json").read_text())
    assert summary["bloom_fp"] == 0.01
    assert set(_read(ann, "dedup_exact_bloom")) == set(bloom)

    # a plain-named set that an older textsieve made with --normalize rpv2 is not silently replaced
    s = ann / "sets" / "dedup_exact" / ".textsieve" / "summary.json"
    s.write_text(json.dumps(dict(json.loads(s.read_text()), normalize="rpv2")))
    assert main(["dedup", "exact", str(ann), "-q"]) == 2
    assert "normalize='rpv2' (now 'none')" in capsys.readouterr().err


@pytest.mark.slow
def test_group_edges_spilled_to_disk_same_bytes(corpus, tmp_path, monkeypatch):
    """Issue 29 item 1: a duplicate group's edges beyond their share of the budget go to files
    and the components read them a chunk at a time: the same published set."""
    ref = tmp_path / "ref"
    assert main(["dedup", "exact", str(corpus), "-o", str(ref), "-q"]) == 0
    from textsieve.dedup import partitions
    from textsieve.stages.dedup import exact

    spills = []
    original = partitions.EdgeStore._start_spill
    monkeypatch.setattr(partitions.EdgeStore, "_start_spill", lambda self: (spills.append(1), original(self)))
    monkeypatch.setattr(partitions.EdgeStore, "min_edges", 4)
    monkeypatch.setattr(partitions, "COMPACT_EDGES", 8)
    monkeypatch.setattr(exact, "EDGE_SHARE", 10**9)
    out = tmp_path / "spilled"
    assert main(["dedup", "exact", str(corpus), "-o", str(out), "-q"]) == 0
    assert spills
    for p in sorted((ref / "sets" / "dedup_exact").rglob("*")):
        if p.is_file():
            q = out / "sets" / "dedup_exact" / p.relative_to(ref / "sets" / "dedup_exact")
            if p.name.endswith(".parquet") or p.name == "summary.json":
                assert q.read_bytes() == p.read_bytes(), p.name
