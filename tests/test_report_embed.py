"""The report's embedding sections (`report.embeddings`) on real text: 200 web documents of the
dev sample as two input files, annotated and embedded with the default model; the map has one
point per sampled document in one colour per source, the recipe's kept/dropped colouring
matches the recipe's own rule, the page is the same on every run, and the semantic duplicates
section shows a `_dedup_semantic/.textsieve/summary.json` of the stage's shape."""

from __future__ import annotations

import gzip
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.embedding.store import read_embeddings
from textsieve.report.collect import collect
from textsieve.report.embeddings import (
    DROPPED,
    KEPT,
    embedding_views,
    embeddings_section,
    project,
    scatter_svg,
    semantic_section,
)
from textsieve.report.html import render
from textsieve.stages.annotate.embed import EmbedConfig, run_embed

CHROMIUM = "/usr/bin/chromium"
N_DOCS = 200
RECIPE = "name: wc\nrules:\n  word_count: \"rps_doc_word_count >= 80\"\n"


@pytest.fixture(scope="module")
def embedded(dev_dir: Path, tmp_path_factory) -> Path:
    """attrs/: annotate (word count only) + `_embed_wordllama` of two input files, a.jsonl and
    b.jsonl, 100 documents each."""
    root = tmp_path_factory.mktemp("report-embed")
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = list(itertools.islice(fh, N_DOCS))
    (root / "in").mkdir()
    (root / "in" / "a.jsonl").write_text("".join(lines[:N_DOCS // 2]), "utf-8")
    (root / "in" / "b.jsonl").write_text("".join(lines[N_DOCS // 2:]), "utf-8")
    attrs = root / "attrs"
    assert main(["annotate", str(root / "in"), "-o", str(attrs), "--signals", "rps_doc_word_count",
                 "--workers", "1", "-q"]) == 0
    run_embed(EmbedConfig(directory=str(attrs), workers=1))
    (root / "wc.yaml").write_text(RECIPE, "utf-8")
    return attrs


def _circles(svg: str) -> list[str]:
    return re.findall(r'<circle class="pt"[^>]* fill="(#[0-9a-f]+)"', svg)


def _charts(page: str, by: str) -> list[str]:
    return re.findall(rf'<svg class="chart" data-kind="scatter" data-chart="embed-wordllama-{by}".*?</svg>', page)


def test_report_has_the_map_one_point_per_doc_two_sources_deterministic(embedded: Path, tmp_path: Path) -> None:
    out1, out2 = tmp_path / "r1.html", tmp_path / "r2.html"
    assert main(["report", str(embedded), "-o", str(out1), "-q"]) == 0
    assert main(["report", str(embedded), "-o", str(out2), "-q"]) == 0
    page = out1.read_text("utf-8")
    assert page == out2.read_text("utf-8"), "the page must be the same on every run"
    assert '<section id="embeddings">' in page and 'href="#embeddings"' in page
    info = json.loads((embedded / "sets" / "embed_wordllama" / ".textsieve" / "summary.json").read_text("utf-8"))
    for value in ("wordllama", "256", info["model_fingerprint"]):
        assert f"<td>{value}</td>" in page
    (svg,) = _charts(page, "source")
    fills = _circles(svg)
    assert len(fills) == N_DOCS and 'data-points="200"' in svg  # fewer docs than SAMPLE: every one drawn
    assert sorted(set(fills)) == sorted({"#4c78a8", "#f58518"})  # one colour per input file
    assert fills.count("#4c78a8") == fills.count("#f58518") == N_DOCS // 2
    assert "a.jsonl (100)" in svg and "b.jsonl (100)" in svg
    assert not _charts(page, "kept"), "no recipe: no kept/dropped map"
    assert '<section id="semantic">' not in page and 'href="#semantic"' not in page, "no semantic set"
    if not Path(CHROMIUM).exists():
        pytest.skip(f"headless check skipped: {CHROMIUM} not installed")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          out1.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    assert re.search(r'data-errors="([^"]*)"', body).group(1) == "", body
    n = page.count('<svg class="chart"')
    assert re.search(r'data-charts="(\d+)/(\d+)"', body).groups() == (str(n), str(n))  # the map drew too


def test_points_are_the_sampled_documents_projected(embedded: Path) -> None:
    (v,) = embedding_views(str(embedded), sample=60, seed=3)
    assert len(v.ids) == 60 == len(set(v.ids)) and v.n_docs == N_DOCS and sorted(v.order) == list(range(60))
    ids, matrix = read_embeddings(str(embedded))
    pos = {d: i for i, d in enumerate(ids)}
    assert [pos[d] for d in v.ids] == sorted(pos[d] for d in v.ids)  # corpus order
    xy, share = project(matrix[[pos[d] for d in v.ids]])
    assert np.array_equal(xy, v.xy) and share == v.explained and 0 < share[1] <= share[0] < 1
    again = embedding_views(str(embedded), sample=60, seed=3)[0]
    assert again.ids == v.ids and np.array_equal(again.xy, v.xy)
    assert embedding_views(str(embedded), sample=60, seed=4)[0].ids != v.ids
    by_file = {str(p.relative_to(embedded / "sets" / "embed_wordllama")): pq.read_table(p, columns=["id", "shard"])
               for p in (embedded / "sets" / "embed_wordllama").glob("*.parquet")}
    shard_of = {i: s for t in by_file.values() for i, s in zip(t["id"].to_pylist(), t["shard"].to_pylist())}
    assert v.source == [shard_of[d] for d in v.ids]


def test_projection_is_pca() -> None:
    """The axes are the sample's principal axes (the top eigenvectors of its covariance), each
    sign fixed: the same numbers whatever the sign the SVD returns."""
    rng = np.random.default_rng(0)
    m = rng.normal(size=(300, 16)) * np.linspace(3, 0.1, 16)
    xy, share = project(m)
    c = m - m.mean(axis=0)
    val, vec = np.linalg.eigh(c.T @ c)
    assert np.allclose(np.abs(xy), np.abs(c @ vec[:, [-1, -2]]), atol=1e-9)
    assert np.allclose(share, val[[-1, -2]] / val.sum())
    assert np.allclose(project(m[:, ::-1])[0], xy, atol=1e-9)  # a permuted basis: the same map
    assert project(np.zeros((0, 4)))[0].shape == (0, 2) and not project(np.ones((5, 4)))[0].any()


def test_kept_and_dropped_by_the_recipe(embedded: Path) -> None:
    recipe = str(embedded.parent / "wc.yaml")
    d = collect(str(embedded), recipe)
    (v,) = d.embeddings
    wc = {}
    for p in (embedded / "docs").glob("*.parquet"):
        t = pq.read_table(p, columns=["id", "rps_doc_word_count"])
        wc.update(zip(t["id"].to_pylist(), (x[0]["score"] for x in t["rps_doc_word_count"].to_pylist())))
    want = [wc[i] >= 80 for i in v.ids]
    assert v.kept == want and 0 < sum(want) < len(want) and v.recipe == "wc"
    page = render(d)
    (svg,) = _charts(page, "kept")
    fills = _circles(svg)
    assert fills.count(KEPT) == sum(want) and fills.count(DROPPED) == len(want) - sum(want)
    assert f"kept ({sum(want):,})" in svg and d.funnel is not None and d.funnel.kept == sum(want)


def test_semantic_section_from_the_summary(embedded: Path, tmp_path: Path) -> None:
    """A `sets/dedup_semantic/.textsieve/summary.json` of the stage's shape (per eps: counts and the largest
    clusters with members' first lines and cosine similarity) becomes the section."""
    ann = tmp_path / "attrs"
    shutil.copytree(embedded, ann)
    t = pq.read_table(sorted((ann / "docs").glob("*.parquet"))[0], columns=["id", "shard", "row"])
    ids, shards, rows = t["id"].to_pylist(), t["shard"].to_pylist(), t["row"].to_pylist()
    member = [{"id": ids[i], "shard": shards[i], "row": rows[i], "first_line": f"line <{i}> of text",
               "similarity": 1.0 - 0.01 * i} for i in range(3)]
    summary = {"stage": "dedup_semantic", "n_docs": N_DOCS, "model": "wordllama", "keep": "first",
               "eps": {"0.1": {"n_clusters": 4, "n_docs_in_clusters": 9, "n_removed": 5, "duplicate_fraction": 0.025,
                               "top_clusters": [{"cluster_id": 7, "size": 3, "members": member}]},
                       "0.05": {"n_clusters": 1, "n_docs_in_clusters": 2, "n_removed": 1,
                                "top_clusters": [{"cluster_id": 7, "size": 2, "members": member[:2]}]}}}
    (ann / "sets" / "dedup_semantic" / ".textsieve").mkdir(parents=True)
    (ann / "sets" / "dedup_semantic" / ".textsieve" / "summary.json").write_text(json.dumps(summary), "utf-8")
    d = collect(str(ann))
    assert d.dedup_semantic == summary
    page = render(d)
    sec = re.search(r'<section id="semantic">.*?</section>', page).group(0)
    assert 'href="#semantic"' in page
    rows_ = re.findall(r"<tr><td>(0\.\d+)</td><td class='n'>≥ ([\d.]+)</td>((?:<td class='n'>[^<]*</td>)+)</tr>", sec)
    assert [(e, s) for e, s, _ in rows_] == [("0.05", "0.95"), ("0.1", "0.9")]  # strictest first
    assert re.findall(r"<td class='n'>([^<]*)</td>", rows_[1][2]) == ["–", "4", "9", "5", "2.50%"]
    assert re.findall(r"<td class='n'>([^<]*)</td>", rows_[0][2])[-1] == "0.50%"  # from n_removed / n_docs
    assert sec.count("line &lt;0&gt; of text") == 2 and "cos 0.980" in sec and ids[2] in sec
    assert semantic_section(None) == "" and semantic_section({"n_docs": 3}).count("<tr>") == 1  # tolerant


def test_semantic_section_from_the_stage(embedded: Path, tmp_path: Path) -> None:
    """`dedup semantic` run for real: the section's table is its summary's numbers, the largest
    clusters list their members' first lines, the kept member first."""
    from textsieve.stages.dedup.semantic import SemanticConfig, run_semantic

    ann = tmp_path / "attrs"
    shutil.copytree(embedded, ann)
    summary = run_semantic(SemanticConfig(directory=str(ann), eps=[0.1])).summary
    per = summary["eps"]["0.1"]
    assert per["n_clusters"] > 0, "200 web documents hold a few boilerplate pages alike at cosine >= 0.9"
    sec = re.search(r'<section id="semantic">.*?</section>', render(collect(str(ann)))).group(0)
    (row,) = re.findall(r"<tr><td>0\.1</td><td class='n'>≥ 0.9</td>((?:<td class='n'>[^<]*</td>)+)</tr>", sec)
    assert re.findall(r"<td class='n'>([^<]*)</td>", row)[:4] == [
        f"{per[k]:,}" for k in ("pairs", "n_clusters", "n_docs_in_clusters", "n_removed")]
    top = per["top_clusters"][0]
    kept = next(m for m in top["members"] if m["keep"])
    assert f"<code>{kept['id']}</code> <b>kept</b>" in sec
    assert f"k-means clusters {summary['kmeans']['clusters']}" in sec


def test_no_embeddings_no_map(embedded: Path, tmp_path: Path) -> None:
    assert "run <code>textsieve embed DIR</code>" in embeddings_section([])
    ann = tmp_path / "attrs"
    shutil.copytree(embedded, ann, ignore=shutil.ignore_patterns("embed_*"))
    d = collect(str(ann))
    assert d.embeddings == [] and 'data-kind="scatter"' not in render(d)
    (v,) = embedding_views(str(embedded), sample=0)
    assert v.ids == [] and 'data-points="0"' in scatter_svg(v)
