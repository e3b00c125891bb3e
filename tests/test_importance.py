"""RPv2 DSIR importance weights: exact features (golden + CPython), formulas, model file, annotate."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _shared import SHARED
from scipy.stats import poisson

from textsieve.cli import main as cli
from textsieve.models.importance import (
    ImportanceModel,
    batch_features,
    histogram,
    load_importance_model,
    read_golden_features,
)

needs_311 = pytest.mark.skipif(sys.version_info[:2] != (3, 11) or sys.hash_info.algorithm != "siphash13",
                               reason="the truth is a CPython 3.11 (siphash13) subprocess")


def read_texts(path: Path, n: int, field: str = "text") -> list[str]:
    out = []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line)[field])
            if len(out) >= n:
                break
    return out


def test_features_equal_the_rpv2_golden_vectors(shared_dir):
    gold = list(read_golden_features(str(shared_dir / "golden" / "rpv2_dsir_features_dev.jsonl.gz")))
    assert len(gold) == 500
    recs = []
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            recs.append(json.loads(line))
            if len(recs) == 500:
                break
    assert [r["id"] for r in recs] == [g[0] for g in gold]
    f = batch_features([r["text"] for r in recs])
    mismatched = []
    for d, (doc_id, want) in enumerate(gold):
        c = f.counts(d, 10000)
        got = {int(b): int(c[b]) for b in np.flatnonzero(c)}
        if got != want:
            mismatched.append(doc_id)
    assert mismatched == []


_RPV2_FEATURES = r"""
import json, re, sys
import numpy as np
W = re.compile(r"\w+|[^\w\s]+")
out = []
for text in json.load(sys.stdin):
    words = W.findall(text)
    counts = {}
    for x in words + list(zip(words, words[1:])):   # RPv2: str unigrams, then tuple bigrams
        b = abs(hash(x)) % 10000
        counts[b] = counts.get(b, 0) + 1
    out.append(sorted(counts.items()))
print(json.dumps(out))
"""


@needs_311
def test_features_equal_cpython_hash_on_multilingual_edge_cases(shared_dir):
    """The RPv2 formula run by CPython itself under PYTHONHASHSEED=42, on the golden edge cases
    (Devanagari, CJK, emoji, mojibake, NFD, empty, whitespace-only) and multilingual real docs."""
    texts = read_texts(shared_dir / "golden" / "rpv2_signals_edgecases.jsonl.gz", 447)
    texts += ["😀 𝔸𝔹ℂ a😀b", "\u00e9\u0301 ä ā 日本", "", "   \n\t "]
    out = subprocess.run([sys.executable, "-c", _RPV2_FEATURES], input=json.dumps(texts), capture_output=True,
                         text=True, env={"PYTHONHASHSEED": "42"}, check=True)
    want = json.loads(out.stdout)
    f = batch_features(texts)
    kinds = set()
    for d, text in enumerate(texts):
        c = f.counts(d, 10000)
        assert [[int(b), int(c[b])] for b in np.flatnonzero(c)] == want[d], repr(text[:80])
        kinds.add(max((1 if ord(ch) < 256 else 2 if ord(ch) < 65536 else 4 for ch in text), default=0))
    assert {1, 2, 4} <= kinds


@pytest.fixture(scope="module")
def samples(shared_dir_module):
    corp = shared_dir_module / "corpora" / "dev"
    return read_texts(corp / "target_wiki.jsonl.gz", 300), read_texts(corp / "web_sample.jsonl.gz", 1500)


@pytest.fixture(scope="module")
def shared_dir_module():
    if not (SHARED / "golden").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    return SHARED


def test_scores_follow_the_reference_formulas_and_show_the_length_bug(samples):
    target, source = samples
    t = histogram([target])
    s = histogram([source[:1000]])
    assert t.mean_raw_words == pytest.approx(np.mean(batch_features(target).raw_words))
    model = ImportanceModel.from_counts(t.counts, s.counts, t.mean_raw_words, s.mean_raw_words)
    docs = source[1000:1300] + ["", "word"]
    sc = model.scores(docs)
    feats = batch_features(docs)
    # the reference, written out (importance_weights.py): dense counts . log-ratio, round 8
    log_diff = np.log(t.counts / t.counts.sum() + 1e-8) - np.log(s.counts / s.counts.sum() + 1e-8)
    for d, text in enumerate(docs):
        if not text:
            continue
        score = float(np.inner(feats.counts(d, 10000), log_diff))
        assert sc.importance()[d] == round(score, 8)
        L = len(text)
        corr = np.log(poisson.pmf(L, t.mean_raw_words) + 1e-8) - np.log(poisson.pmf(L, s.mean_raw_words) + 1e-8)
        assert sc.length_correction_rpv2()[d] == round(score + float(corr), 8)
        n = feats.raw_words[d]
        fixed = poisson.logpmf(n, t.mean_raw_words) - poisson.logpmf(n, s.mean_raw_words)
        assert sc.length_corrected()[d] == pytest.approx(score + fixed, abs=2e-8)
    assert list(sc.valid) == [True] * 300 + [False, True]
    # §11.13: with L in characters and lambda in words, both pmfs underflow to 0 for a typical
    # document, the +1e-8 floor wins and the "correction" is exactly 0 ...
    long_docs = [d for d, text in enumerate(docs[:300]) if len(text) > 4 * max(t.mean_raw_words, s.mean_raw_words)]
    assert len(long_docs) > 50
    assert all(sc.length_correction_rpv2()[d] == sc.importance()[d] for d in long_docs)
    # ... while the corrected variant really depends on the length
    assert sum(sc.length_corrected()[d] != sc.importance()[d] for d in long_docs) == len(long_docs)


def test_target_like_documents_score_higher(samples):
    target, source = samples
    t = histogram([target[:250]])
    s = histogram([source[:1000]])
    model = ImportanceModel.from_counts(t.counts, s.counts, t.mean_raw_words, s.mean_raw_words)
    held_wiki = model.scores(target[250:300]).importance()
    held_web = model.scores(source[1000:1050]).importance()
    assert np.median(held_wiki) > np.median(held_web) + 10


def test_train_importance_cli_and_annotate(shared_dir, resources_dir, tmp_path):
    corp = shared_dir / "corpora" / "dev"
    web = tmp_path / "web.jsonl"
    with gzip.open(corp / "web_sample.jsonl.gz", "rt", encoding="utf-8") as src, open(web, "w") as dst:
        for i, line in enumerate(src):
            if i >= 400:
                break
            dst.write(line)
    out = tmp_path / "wiki_imp.tsm"
    assert cli(["train", "importance", "--target", str(corp / "target_wiki.jsonl.gz"), "--source", str(web),
                "--name", "wikipedia", "-o", str(out), "--quiet"]) == 0
    model = load_importance_model(str(out))
    assert model.n_buckets == 10000 and model.seed == 42
    assert model.source_lambda == pytest.approx(np.mean(batch_features(read_texts(web, 400, "text")).raw_words))
    ann = tmp_path / "ann"
    assert cli(["annotate", str(web), "-o", str(ann), "--resources", str(resources_dir), "--workers", "1",
                "--models", f"wikipedia={out}", "--quiet"]) == 0
    table = pq.read_table(next(ann.rglob("*.parquet")))
    texts = read_texts(web, 400)
    want = model.scores(texts)
    for col, values in (("rps_doc_wikipedia_importance", want.importance()),
                        ("rps_doc_wikipedia_importance_length_correction", want.length_correction_rpv2()),
                        ("ts_doc_wikipedia_importance_length_corrected", want.length_corrected())):
        spans = table.column(col).to_pylist()
        assert [s[0]["score"] for s in spans] == list(values)
        assert [s[0]["end"] for s in spans] == [len(t) for t in texts]


def test_bad_model_file_is_named(tmp_path):
    bad = tmp_path / "x.tsm"
    bad.write_bytes(b"not a zip")
    with pytest.raises(Exception, match="x.tsm"):
        load_importance_model(str(bad))
