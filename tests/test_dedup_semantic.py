"""`dedup semantic` (SemDeDup on the CPU) on real text: the first 300 documents of the dev corpus
plus planted near-copies and paraphrases, annotated and embedded once per module."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.stages.dedup.semantic import SemanticConfig, SemanticError, ekey, output_schema, run_semantic

N_REAL = 300


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _write(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, dev_dir) -> dict:
    """Two shards: a.jsonl = a shortened copy of doc B (so it comes first in corpus order) + 150
    real documents; b.jsonl = 150 real documents + an exact copy of A, a sentence-reordered
    copy of C and a copy of D without its last sentence. Annotated and embedded once."""
    docs = []
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            docs.append({"id": rec["id"], "text": rec["text"]})
            if len(docs) >= N_REAL:
                break
    fit = [d for d in docs if len(d["text"].split()) >= 120 and len(_sentences(d["text"])) >= 6
           and d["text"].isascii()]
    a, b, c, d = fit[0], fit[1], fit[2], fit[3]
    rng = random.Random(7)
    shorter = " ".join(w for w in b["text"].split() if rng.random() > 0.05)
    order = _sentences(c["text"])
    random.Random(3).shuffle(order)
    plants = {"copy_a": {"id": "plant/copy-a", "text": a["text"]},
              "short_b": {"id": "plant/short-b", "text": shorter},
              "reorder_c": {"id": "plant/reorder-c", "text": " ".join(order)},
              "cut_d": {"id": "plant/cut-d", "text": " ".join(_sentences(d["text"])[:-1])}}
    root = tmp_path_factory.mktemp("semantic")
    (root / "in").mkdir()
    _write(root / "in" / "a.jsonl", [plants["short_b"], *docs[:150]])
    _write(root / "in" / "b.jsonl", [*docs[150:], plants["copy_a"], plants["reorder_c"], plants["cut_d"]])
    attrs = root / "attrs"
    assert main(["annotate", str(root / "in"), "-o", str(attrs), "--signals", "rps_doc_word_count", "-q",
                 "--workers", "1"]) == 0
    assert main(["embed", str(attrs), "-q", "--workers", "1"]) == 0
    families = {a["id"]: "copy_a", b["id"]: "short_b", c["id"]: "reorder_c", d["id"]: "cut_d"}
    return {"attrs": attrs, "plants": plants, "families": families, "originals": [a, b, c, d]}


def _copy(corpus: dict, tmp_path: Path) -> Path:
    """A private copy of the annotated + embedded folder (tests write their own `_dedup_semantic`)."""
    dst = tmp_path / "attrs"
    shutil.copytree(corpus["attrs"], dst, ignore=shutil.ignore_patterns("dedup_semantic"))
    return dst


def _rows(attrs: Path, stem: str = "dup_semantic_e05") -> dict[str, dict]:
    out = {}
    for f in sorted((attrs / "sets" / "dedup_semantic").rglob("*.parquet")):
        t = pq.read_table(f).to_pylist()
        for r in t:
            out[r["id"]] = {"cluster": r[f"{stem}_cluster"], "size": r[f"{stem}_size"], "keep": r[f"{stem}_keep"]}
    return out


def _tables(attrs: Path) -> list:
    return [pq.read_table(f) for f in sorted((attrs / "sets" / "dedup_semantic").rglob("*.parquet"))]


def test_planted_duplicates_found_and_unrelated_documents_not_merged(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    res = run_semantic(SemanticConfig(str(attrs), clusters=4, progress=False))
    rows = _rows(attrs)
    assert len(rows) == N_REAL + 4
    for original, plant in corpus["families"].items():
        pid = corpus["plants"][plant]["id"]
        assert rows[pid]["cluster"] is not None and rows[pid]["cluster"] == rows[original]["cluster"], plant
        members = [i for i, r in rows.items() if r["cluster"] == rows[pid]["cluster"]]
        assert sorted(members) == sorted([original, pid]), f"{plant}: unrelated documents merged: {members}"
        assert rows[pid]["size"] == 2
        # keep=first: the earliest in corpus order; the shortened copy of B sits first in a.jsonl
        assert rows[pid]["keep"] is (plant == "short_b") and rows[original]["keep"] is (plant != "short_b")
    # the 300 real documents are unrelated web pages: at cosine >= 0.95 almost none are merged
    in_clusters = [i for i, r in rows.items() if r["cluster"] is not None]
    assert len(in_clusters) <= 8 + 6, in_clusters
    alone = next(i for i, r in rows.items() if r["cluster"] is None)
    assert rows[alone]["size"] == 1 and rows[alone]["keep"] is True
    s = res.summary["eps"]["0.05"]
    assert s["columns"] == ["dup_semantic_e05_cluster", "dup_semantic_e05_size", "dup_semantic_e05_keep"]
    assert s["n_docs_in_clusters"] == len(in_clusters) and s["n_removed"] >= 4
    top = s["top_clusters"][0]
    assert {"cluster_id", "size", "members"} <= set(top) and top["members"][0]["cosine"] == pytest.approx(1.0, abs=2e-3)
    assert {"id", "shard", "row", "keep", "cosine", "text"} <= set(top["members"][0])
    assert all(len(m["text"]) <= 200 and m["cosine"] >= 0.95 - 1e-3 for c in s["top_clusters"] for m in c["members"])
    schema = pq.read_schema(next((attrs / "sets" / "dedup_semantic").rglob("*.parquet")))
    assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in output_schema([0.05])]


def test_deterministic_across_runs_and_a_tiny_memory_budget_gives_the_same_result(corpus, tmp_path, monkeypatch):
    import textsieve.dedup.semantic_pairs as sp
    import textsieve.stages.dedup.semantic as ds

    attrs = _copy(corpus, tmp_path)
    cfg = SemanticConfig(str(attrs), eps=[0.05, 0.15], clusters=6, progress=False)
    run_semantic(cfg)
    first = _tables(attrs)
    cfg.overwrite = True
    run_semantic(cfg)
    assert all(a.equals(b) for a, b in zip(first, _tables(attrs)))
    # the smallest --memory, with 5 partitions, 16-row tiles and every cluster re-read tile by
    # tile from a memory-mapped partition: the same columns
    monkeypatch.setattr(ds, "partition_count", lambda *a: 5)
    monkeypatch.setattr(sp, "BLOCK", 16)
    monkeypatch.setattr(sp, "FIT_SHARE", 10**12)
    monkeypatch.setattr(sp, "LOAD_SHARE", 10**12)
    cfg.memory = "32MB"
    res = run_semantic(cfg)
    assert res.stats["partitions"] == 5 and res.stats["tiled_clusters"] > 0
    assert all(a.equals(b) for a, b in zip(first, _tables(attrs)))
    assert sum(t.num_rows for t in first) == N_REAL + 4


def test_rerun_with_the_same_settings_is_a_no_op_and_other_settings_recompute(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    cfg = SemanticConfig(str(attrs), clusters=4, progress=False)
    run_semantic(cfg)
    files = sorted(f for f in (attrs / "sets" / "dedup_semantic").rglob("*") if f.is_file())
    stamp = {f.name: f.stat().st_mtime_ns for f in files}
    again = run_semantic(SemanticConfig(str(attrs), clusters=4, progress=False, memory="64MB"))
    assert again.skipped and again.summary["eps"]["0.05"]["n_removed"] >= 4
    set_dir = attrs / "sets" / "dedup_semantic"
    assert {f.name: f.stat().st_mtime_ns for f in sorted(set_dir.rglob("*")) if f.is_file()} == stamp
    other = run_semantic(SemanticConfig(str(attrs), eps=[0.1], clusters=4, progress=False))
    assert not other.skipped and "dup_semantic_e1_cluster" in _tables(attrs)[0].column_names
    assert not (attrs / ".textsieve-work").exists()  # the work folder is removed


def test_keep_policies_longest_none_and_a_column(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    short_b, original_b = "plant/short-b", next(k for k, v in corpus["families"].items() if v == "short_b")
    copy_a, original_a = "plant/copy-a", next(k for k, v in corpus["families"].items() if v == "copy_a")
    for keep, kept_b in (("longest", original_b), ("ts_length", original_b), ("rps_doc_word_count__score", original_b),
                         ("first", short_b)):
        run_semantic(SemanticConfig(str(attrs), clusters=4, keep=keep, progress=False, overwrite=True))
        rows = _rows(attrs)
        assert rows[kept_b]["keep"] and not rows[short_b if kept_b == original_b else original_b]["keep"], keep
        # the exact copy of A is as long as A: the tie goes to the earliest, A itself
        assert rows[original_a]["keep"] and not rows[copy_a]["keep"], keep
    res = run_semantic(SemanticConfig(str(attrs), clusters=4, keep="none", progress=False, overwrite=True))
    rows = _rows(attrs)
    assert not any(r["keep"] for r in rows.values() if r["cluster"] is not None)
    assert res.summary["eps"]["0.05"]["n_removed"] == res.summary["eps"]["0.05"]["n_docs_in_clusters"]


def test_clear_errors(corpus, tmp_path, capsys, monkeypatch):
    import textsieve.dedup.semantic_kmeans as km

    attrs = _copy(corpus, tmp_path)
    for eps in (0.0, 1.0, 1.5):
        with pytest.raises(SemanticError, match="must be in"):
            run_semantic(SemanticConfig(str(attrs), eps=[eps], progress=False))
    with pytest.raises(ValueError, match="no numeric column 'quality'"):
        run_semantic(SemanticConfig(str(attrs), keep="quality", progress=False))
    with pytest.raises(ValueError, match="scalar twin --keep rps_doc_word_count__score"):
        run_semantic(SemanticConfig(str(attrs), keep="rps_doc_word_count", progress=False))
    with pytest.raises(ValueError, match="below the 32 MB"):
        run_semantic(SemanticConfig(str(attrs), memory="1MB", progress=False))
    with monkeypatch.context() as m:  # as if 304 centroids were 50,000: more than the budget holds
        m.setattr(km, "centroid_bytes", lambda k, dim: 2 * 50_000 * dim * 4)
        with pytest.raises(ValueError, match="raise --memory or give fewer --clusters"):
            run_semantic(SemanticConfig(str(attrs), clusters=100_000, memory="32MB", progress=False))
    shutil.rmtree(attrs / "sets" / "embed_wordllama")
    assert main(["dedup", "semantic", str(attrs), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("textsieve: error: ") and "run `textsieve embed" in err[0], err


def test_eps_column_names():
    assert [ekey(e) for e in (0.05, 0.1, 0.005, 0.25)] == ["dup_semantic_e05", "dup_semantic_e1", "dup_semantic_e005",
                                                            "dup_semantic_e25"]


def test_cli_and_dedup_show_semantic(corpus, tmp_path, capsys):
    attrs = _copy(corpus, tmp_path)
    assert main(["dedup", "semantic", str(attrs), "--eps", "0.05", "--eps", "0.1", "--clusters", "4", "-q"]) == 0
    assert main(["dedup", "show", str(attrs), "--semantic", "--eps", "0.05", "--top", "3"]) == 0
    listing = capsys.readouterr().out
    assert "semantic clusters at eps 0.05" in listing and "eps stored: 0.1, 0.05" in listing
    cid = _rows(attrs)["plant/reorder-c"]["cluster"]
    assert main(["dedup", "show", str(attrs), "--semantic", "--cluster", str(cid), "--eps", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "plant/reorder-c" in out and "pairwise cosine similarity" in out and "1.000" in out
    assert main(["dedup", "show", str(attrs), "--semantic", "--eps", "0.3"]) == 2
    assert "stored: 0.1, 0.05" in capsys.readouterr().err
    ids = np.asarray([r["cluster"] for r in _rows(attrs).values() if r["cluster"] is not None])
    assert ids.dtype.kind == "i"


def test_a_rescored_keep_column_in_another_set_reruns_and_follows_the_new_scores(corpus, tmp_path):
    """--keep COLUMN read from another attribute set: the set's contents are part of the result's
    identity, so new scores re-run the stage (before: 'already done', the old keep marks served)."""
    attrs = _copy(corpus, tmp_path)

    def score_set(prefer_plants: bool) -> None:
        out = attrs / "sets" / "score"
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted((attrs / "docs").glob("*.parquet")):
            base = pq.read_table(f, columns=["id", "shard", "row"])
            ids = base.column("id").to_pylist()
            score = [float(i.startswith("plant/")) if prefer_plants else float(not i.startswith("plant/"))
                     for i in ids]
            pq.write_table(base.append_column("my_score", pa.array(score, pa.float64())), out / f.name)

    score_set(prefer_plants=True)
    cfg = SemanticConfig(directory=str(attrs), eps=[0.05], clusters=4, keep="my_score", progress=False)
    run_semantic(cfg)
    rows = _rows(attrs)
    assert rows["plant/copy-a"]["keep"] and not rows[corpus["originals"][0]["id"]]["keep"]
    score_set(prefer_plants=False)
    again = run_semantic(cfg)
    assert not again.skipped
    rows = _rows(attrs)
    assert not rows["plant/copy-a"]["keep"] and rows[corpus["originals"][0]["id"]]["keep"]
