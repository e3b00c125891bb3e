"""Embedding DSIR (`dsir fit --features embed|combined`) on real text: 300 web_sample documents
plus 30 held-out Wikipedia documents mixed in, a target of the other Wikipedia articles."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import fsspec
import numpy as np
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.dsir.resample import resample
from textsieve.embedding.store import EmbeddingsMissing
from textsieve.io.attributes import read_shard_meta
from textsieve.models.format import read_header
from textsieve.stages.select.dsir_fit import DsirFitConfig, run_fit

WEB_DOCS = 300
WIKI_IN_POOL = 30


def _read(path: Path, n: int | None = None) -> list[dict]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if n is not None and len(out) >= n:
                break
    return out


def _write(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def pool(dev_dir, tmp_path_factory):
    """Annotated + embedded pool (web docs, then held-out wiki docs) and a target file."""
    tmp = tmp_path_factory.mktemp("dsir_embed")
    web = _read(dev_dir / "web_sample.jsonl.gz", WEB_DOCS)
    wiki = _read(dev_dir / "target_wiki.jsonl.gz")
    articles = list(dict.fromkeys(d["id"].rsplit("/", 1)[0] for d in wiki))
    held = set(articles[1::2])
    target = [d for d in wiki if d["id"].rsplit("/", 1)[0] not in held]
    inpool = [{"id": "wikiheld/" + d["id"], "text": d["text"]} for d in wiki
              if d["id"].rsplit("/", 1)[0] in held][:WIKI_IN_POOL]
    docs = _write(tmp / "pool.jsonl", web + inpool)
    ann = tmp / "ann"
    assert main(["annotate", str(docs), "-o", str(ann), "--signals", "rps_doc_word_count", "-q"]) == 0
    plain = tmp / "plain"  # the same annotate output without embeddings
    shutil.copytree(ann, plain)
    assert main(["embed", str(ann), "--workers", "1", "-q"]) == 0
    return {"ann": ann, "plain": plain, "target": _write(tmp / "target.jsonl", target), "tmp": tmp,
            "wiki_ids": {d["id"] for d in inpool}}


def _fit(pool: dict, name: str, features: str = "embed", **kw) -> object:
    return run_fit(DsirFitConfig(targets=[str(pool["target"])], raw=str(pool["ann"]), name=name, features=features,
                                 progress=False, **kw))


def _weights(ann: Path, name: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    t = pq.read_table(ann / "sets" / f"dsir_{name}" / "pool.parquet")
    return (t.column("id").to_pylist(), t.column(f"ts_dsir_{name}").to_numpy(),
            t.column(f"ts_dsir_{name}_norm").to_numpy(zero_copy_only=False))


def _auc(ids: list[str], w: np.ndarray, wiki: set[str]) -> float:
    pos = np.array([i in wiki for i in ids])
    ranks = np.argsort(np.argsort(w)) + 1
    n1, n0 = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


@pytest.fixture(scope="module")
def embed_fit(pool):
    return _fit(pool, "wiki_e")


def test_wiki_docs_in_the_pool_get_higher_weights(pool, embed_fit):
    ids, w, norm = _weights(pool["ann"], "wiki_e")
    assert len(ids) == WEB_DOCS + WIKI_IN_POOL and embed_fit.documents == len(ids)
    assert _auc(ids, w, pool["wiki_ids"]) > 0.9  # held-out wiki articles rank above web docs
    assert np.allclose(norm, w / 8)  # the normalised column: the log weight per DOC_NGRAMS pseudo-n-grams
    meta = read_shard_meta(fsspec.filesystem("file"), str(pool["ann"] / "sets" / "dsir_wiki_e" / "pool.parquet"))
    assert meta["features"] == "embed" and meta["embed_model"] == "wordllama"
    head = read_header(str(pool["ann"] / "sets" / "dsir_wiki_e" / ".textsieve" / "model.tsm"))
    assert head["kind"] == "textsieve.dsir.embed-logistic" and head["params"]["features"] == "embed"
    assert head["params"]["embed_fingerprint"] == meta["embed_fingerprint"] and head["metrics"]["cv_auc"] > 0.9


def test_combined_fits_the_ngram_scale(pool):
    res = _fit(pool, "wiki_c", "combined")
    ids, w, _ = _weights(pool["ann"], "wiki_c")
    assert _auc(ids, w, pool["wiki_ids"]) > 0.9
    head = read_header(res.model_path)
    assert head["params"]["features"] == "combined" and head["metrics"]["ngram_beta"] > 0
    assert head["params"]["ngram_params"]["buckets"] == 10_000


def test_select_dsir_draws_from_embed_weights_and_mixes_with_ngram(pool, embed_fit, tmp_path):
    ann = str(pool["ann"])
    out = tmp_path / "sel"
    assert main(["select", ann, "--dsir", "wiki_e", "--k", "20", "--output", str(out), "-q"]) == 0
    with gzip.open(out / "pool.jsonl.gz", "rt", encoding="utf-8") as fh:
        picked = [json.loads(line)["id"] for line in fh]
    assert len(picked) == 20 and sum(i in pool["wiki_ids"] for i in picked) >= 8  # random: ~2
    run_fit(DsirFitConfig(targets=[str(pool["target"])], raw=ann, name="wiki_n", progress=False))
    r = resample(ann, [("wiki_e", 0.5), ("wiki_n", 0.5)], k=20, seed=0)
    assert r.documents == 20 and set(r.target) == {"wiki_e", "wiki_n"} and r.ess > 1
    assert set(r.ess_per_target) == {"wiki_e", "wiki_n"}


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_deterministic_and_resumed(pool, embed_fit):
    again = _fit(pool, "wiki_e")  # same inputs: the model and the shard are kept
    assert again.model_reused and again.shards_skipped == ["pool.parquet"] and not again.shards_written
    _fit(pool, "wiki_e2")
    assert np.array_equal(_weights(pool["ann"], "wiki_e")[1], _weights(pool["ann"], "wiki_e2")[1])
    fewer = pool["tmp"] / "target_fewer.jsonl"
    _write(fewer, [json.loads(x) for x in pool["target"].read_text("utf-8").splitlines()[:-10]])
    refit = run_fit(DsirFitConfig(targets=[str(fewer)], raw=str(pool["ann"]), name="wiki_e2", features="embed",
                                  progress=False))
    assert not refit.model_reused and refit.shards_written == ["pool.parquet"]
    assert not np.array_equal(_weights(pool["ann"], "wiki_e")[1], _weights(pool["ann"], "wiki_e2")[1])


def test_error_without_embeddings(pool, capsys):
    with pytest.raises(EmbeddingsMissing, match="run `textsieve embed"):
        run_fit(DsirFitConfig(targets=[str(pool["target"])], raw=str(pool["plain"]), name="x", features="embed"))
    assert main(["dsir", "fit", "--targets", str(pool["target"]), "--raw", str(pool["plain"]), "--name", "x",
                 "--features", "combined", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"textsieve: error: {pool['plain']}: no embeddings; run `textsieve embed {pool['plain']}` first"]


def test_changed_embedding_model_is_refused(pool, tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(pool["ann"], ann)
    summary = ann / "sets" / "embed_wordllama" / ".textsieve" / "summary.json"
    info = json.loads(summary.read_text())
    summary.write_text(json.dumps({**info, "model_fingerprint": "0" * 16}))
    with pytest.raises(ValueError, match="embedded with model fingerprint 0000000000000000"):
        run_fit(DsirFitConfig(targets=[str(pool["target"])], raw=str(ann), name="x", features="embed"))
