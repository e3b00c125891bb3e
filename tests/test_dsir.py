"""DSIR on real text: fit on target_wiki vs a slice of web_sample, weights, resampling, ESS, CLI."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _shared import SHARED

from textsieve.cli import main
from textsieve.dsir.model import DsirModel
from textsieve.dsir.resample import effective_sample_size, resample
from textsieve.stages.select.dsir_fit import DsirFitConfig, run_fit, score_texts
from textsieve.text.hashed_ngrams import HashedNgramParams, featurize

DEV = SHARED / "corpora" / "dev"
POOL_DOCS = 4000


def _need_dev() -> None:
    if not (DEV / "web_sample.jsonl.gz").exists():
        pytest.skip(f"dev corpora not found under {DEV} (set TEXTSIEVE_SHARED)")


def _read(path: Path, n: int | None = None) -> list[dict]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if n is not None and len(out) >= n:
                break
    return out


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A slice of the pool annotated (one cheap signal), wiki fit on half of target_wiki's
    articles; the other half is held out."""
    _need_dev()
    tmp = tmp_path_factory.mktemp("dsir")
    pool = _read(DEV / "web_sample.jsonl.gz", POOL_DOCS)
    pool_path = tmp / "pool.jsonl.gz"
    with gzip.open(pool_path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in pool)
    wiki = _read(DEV / "target_wiki.jsonl.gz")
    articles = list(dict.fromkeys(d["id"].rsplit("/", 1)[0] for d in wiki))
    held = set(articles[1::2])
    fit_docs = [d for d in wiki if d["id"].rsplit("/", 1)[0] not in held]
    target = tmp / "target_fit.jsonl"
    target.write_text("".join(json.dumps(d) + "\n" for d in fit_docs), encoding="utf-8")
    ann = tmp / "ann"
    assert main(["annotate", str(pool_path), "-o", str(ann), "--signals", "rps_doc_word_count", "-q"]) == 0
    res = run_fit(DsirFitConfig(targets=[str(target)], raw=str(ann), name="wiki", progress=False))
    return {"ann": ann, "pool": pool, "pool_path": pool_path, "target": target, "res": res,
            "heldout": [d for d in wiki if d["id"].rsplit("/", 1)[0] in held], "tmp": tmp}


def test_features_follow_wordpunct_rule_and_hash_order():
    p = HashedNgramParams()
    texts = ["It's 3.5 km—far… naïve Café_x ĞÜ!!", "", "  \n ", "a b", "b a"]
    fb = featurize(texts, p)
    rx = re.compile(r"\w+|[^\w\s]+")
    assert fb.tokens.tolist() == [len(rx.findall(t.lower())) for t in texts]
    assert fb.ngram_counts.tolist() == [max(0, 2 * n - 1) for n in fb.tokens.tolist()]
    ab, ba = (fb.buckets[fb.offsets[i]:fb.offsets[i + 1]] for i in (3, 4))
    assert sorted(ab[:2].tolist()) == sorted(ba[:2].tolist())  # the same unigrams
    assert ab[2] != ba[2]  # but "a b" and "b a" are different bigrams
    other = featurize(texts, HashedNgramParams(seed=1))
    assert not np.array_equal(other.buckets, fb.buckets)
    assert featurize(["Hello World"], p).buckets.tolist() == featurize(["hello world"], p).buckets.tolist()


def test_fit_writes_attribute_set_and_model(fitted):
    res, ann = fitted["res"], fitted["ann"]
    assert res.columns == ("ts_dsir_wiki", "ts_dsir_wiki_norm", "ts_dsir_wiki_tokens")
    t = pq.read_table(ann / "sets" / "dsir_wiki" / "pool.parquet")
    assert t.column_names == ["id", "shard", "row", *res.columns]
    assert t.num_rows == POOL_DOCS
    assert t.column("id").to_pylist() == [d["id"] for d in fitted["pool"]]
    raw = t.column("ts_dsir_wiki").to_numpy()
    norm = t.column("ts_dsir_wiki_norm").to_numpy(zero_copy_only=False)
    tok = t.column("ts_dsir_wiki_tokens").to_numpy()
    ok = tok > 0
    np.testing.assert_allclose(raw[ok] / (2 * tok[ok] - 1), norm[ok], rtol=1e-9)
    assert raw.min() < -10_000 and raw.max() > 100  # the reference's weight scales with length
    model = DsirModel.load(res.model_path)
    assert model.params == HashedNgramParams() and model.raw_docs == POOL_DOCS
    assert model.target_counts.sum() > 100_000


def test_wiki_like_documents_weigh_more(fitted):
    model = DsirModel.load(fitted["res"].model_path)
    _, held_norm, _ = score_texts(model, [d["text"] for d in fitted["heldout"]])
    t = pq.read_table(fitted["ann"] / "sets" / "dsir_wiki" / "pool.parquet")
    norm = t.column("ts_dsir_wiki_norm").to_numpy(zero_copy_only=False)
    ids = t.column("id").to_pylist()
    pool_norm = norm[np.isfinite(norm)]
    # held-out encyclopedic articles score above 90% of the web pool
    assert np.median(held_norm) > np.quantile(pool_norm, 0.9)
    by_src = {}
    for i, v in zip(ids, norm):
        if np.isfinite(v):
            by_src.setdefault(i.split("/", 1)[0], []).append(v)
    means = {k: float(np.mean(v)) for k, v in by_src.items() if len(v) >= 10}
    # news prose is closer to Wikipedia than chat logs, Python source or the UDHR in 150 languages
    for other in ("nltk-npschat", "cpython-stdlib", "udhr"):
        if other in means:
            assert means["nltk-abc"] > means[other], (other, means)


def test_refit_reuses_model_and_skips_shards(fitted):
    res = run_fit(DsirFitConfig(targets=[str(fitted["target"])], raw=str(fitted["ann"]), name="wiki", progress=False))
    assert res.model_reused and res.shards_skipped == ["pool.parquet"] and not res.shards_written
    with pytest.raises(ValueError, match="other settings"):
        run_fit(DsirFitConfig(targets=[str(fitted["target"])], raw=str(fitted["ann"]), name="wiki",
                              buckets=5000, progress=False))


def test_resample_deterministic_k_and_replacement(fitted):
    ann = str(fitted["ann"])
    a = resample(ann, [("wiki", 1.0)], k=300, seed=3)
    b = resample(ann, [("wiki", 1.0)], k=300, seed=3)
    c = resample(ann, [("wiki", 1.0)], k=300, seed=4)
    assert np.array_equal(a.row, b.row) and np.array_equal(a.count, b.count)
    assert not np.array_equal(a.row, c.row)
    assert len(a.row) == 300 and a.documents == 300 and set(a.count.tolist()) == {1}
    assert list(a.shard) == ["pool.jsonl.gz"] * 300 and len(set(a.row.tolist())) == 300
    w = resample(ann, [("wiki", 1.0)], k=300, seed=3, replace=True, temperature=0.02)
    assert w.documents == 300 and w.count.max() > 1 and len(w.row) < 300
    assert np.all(np.diff(w.row) > 0)  # document order, one entry per distinct document
    assert resample(ann, [("wiki", 1.0)], k=10**6).shortfall == 10**6 - resample(ann, [("wiki", 1.0)], k=1).eligible


def test_resample_token_budget(fitted):
    ann = str(fitted["ann"])
    t = pq.read_table(fitted["ann"] / "sets" / "dsir_wiki" / "pool.parquet")
    tok = dict(zip(t.column("row").to_pylist(), t.column("ts_dsir_wiki_tokens").to_pylist()))
    for replace in (False, True):
        r = resample(ann, [("wiki", 1.0)], tokens=50_000, seed=1, replace=replace)
        total = sum(tok[int(row)] * int(c) for row, c in zip(r.row, r.count))
        assert total == r.tokens >= 50_000
        assert total - max(tok[int(row)] for row in r.row) < 50_000  # stops at the first draw past the budget


def test_ess_raw_tiny_normalised_larger(fitted):
    ann = str(fitted["ann"])
    raw = resample(ann, [("wiki", 1.0)], k=200, weight="raw", min_tokens=1)
    norm = resample(ann, [("wiki", 1.0)], k=200)
    plain = resample(ann, [("wiki", 1.0)], k=200, prior_ngrams=0)  # mean without the length prior
    hot = resample(ann, [("wiki", 1.0)], k=200, temperature=1.0)
    assert raw.ess < 2
    assert 2 < plain.ess < norm.ess < hot.ess <= hot.eligible
    assert effective_sample_size(np.zeros(50)) == pytest.approx(50)
    assert effective_sample_size(np.array([0.0, -np.inf, 0.0])) == pytest.approx(2)


def test_multiple_targets_get_quotas(fitted, tmp_path):
    import pydoc_data.topics as topics

    code = tmp_path / "pydocs.jsonl"
    code.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in topics.topics.items()),
                    encoding="utf-8")
    run_fit(DsirFitConfig(targets=[str(code)], raw=str(fitted["ann"]), name="pydoc", progress=False))
    r = resample(str(fitted["ann"]), [("wiki", 3), ("pydoc", 1)], k=400, seed=0)
    assert r.documents == 400 and set(r.count.tolist()) == {1}
    by_target = Counter(r.target.tolist())
    assert by_target == {"wiki": 300, "pydoc": 100}
    code_ids = [i for i, t in zip(r.id, r.target) if t == "pydoc"]
    wiki_ids = [i for i, t in zip(r.id, r.target) if t == "wiki"]
    frac = lambda ids: sum(i.startswith("cpython-stdlib/") for i in ids) / len(ids)  # noqa: E731
    assert frac(code_ids) > 0.2 > 0.05 > frac(wiki_ids)
    assert set(r.ess_per_target) == {"wiki", "pydoc"}
    with pytest.raises(FileNotFoundError, match="dsir fit"):
        resample(str(fitted["ann"]), [("nope", 1)], k=5)


def test_cli_fit_resample_and_errors(fitted, capsys):
    ann = str(fitted["ann"])
    assert main(["dsir", "fit", "--targets", str(fitted["target"]), "--raw", ann, "--name", "wiki", "--json",
                 "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["columns"] == ["ts_dsir_wiki", "ts_dsir_wiki_norm", "ts_dsir_wiki_tokens"] and out["model_reused"]
    assert main(["dsir", "resample", ann, "--dsir", "wiki", "--k", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["documents"] == 100 and out["ess"] > 1 and out["sources"] >= 2
    assert main(["dsir", "fit", "--targets", str(fitted["target"]), "--raw", ann, "--name", "bad-name", "-q"]) == 2
    assert "bad-name" in capsys.readouterr().err
    assert main(["dsir", "resample", ann, "--dsir", "wiki:x", "--k", "5"]) == 2
    assert "weight 'x'" in capsys.readouterr().err


def test_dsir_selection_beats_random_on_kl(fitted, capsys, tmp_path):
    """Measured by `eval kl` on held-out articles in another hash space than the fit's."""
    r = resample(str(fitted["ann"]), [("wiki", 1.0)], k=400, seed=0)
    pool = fitted["pool"]
    sel = tmp_path / "selected"
    sel.mkdir()
    (sel / "part-0.jsonl").write_text("".join(json.dumps(pool[int(i)]) + "\n" for i in r.row), encoding="utf-8")
    # an older textsieve's bookkeeping name beside the documents: never read as one
    (sel / "selection.json").write_text(json.dumps({"k": 400}, indent=2), encoding="utf-8")
    held = tmp_path / "heldout.jsonl"
    held.write_text("".join(json.dumps(d) + "\n" for d in fitted["heldout"]), encoding="utf-8")
    assert main(["eval", "kl", "--selection", str(sel), "--target", str(held), "--pool", str(fitted["ann"]),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"kl_reduction", "kl_reduction_random", "kl_target_pool", "kl_target_selection",
            "kl_target_random", "selection_docs", "pool_docs"} <= set(out)
    assert out["selection_docs"] == out["random_docs"] == 400 and out["pool_docs"] == POOL_DOCS
    assert out["hash_seed"] == 1
    assert out["kl_reduction"] > 0.05 > abs(out["kl_reduction_random"])
