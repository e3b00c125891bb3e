"""Quality classifiers: train on the dev corpora (target_wiki positive, web_sample negative),
report held-out accuracy, and score through `annotate --model` with RPv2's conventions."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from _shared import SHARED

from textsieve.io.attributes import without_conveniences
from textsieve.models.classifier import ClassifierConfig, FastTextClassifier, prepare, train_classifier
from textsieve.models.format import load_model_file, save_model
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate


def test_prepare_is_rpv2():
    assert prepare("  a\nb\r\nc\x0bd\u2028e \n") == "a b c d e"
    assert prepare("\n\n") == ""


@pytest.fixture(scope="module")
def linear_model(tmp_path_factory, dev_dir) -> tuple[str, dict]:
    out = str(tmp_path_factory.mktemp("clf") / "wiki.tsm")
    dev = SHARED / "corpora" / "dev"
    res = train_classifier(ClassifierConfig(positive=[str(dev / "target_wiki.jsonl.gz")],
                                            negative=[str(dev / "web_sample.jsonl.gz")], output=out, label="wiki",
                                            backend="linear", progress=False))
    return out, res.metrics


def test_linear_classifier_trains_and_separates(linear_model, shared_dir):
    path, metrics = linear_model
    print("linear classifier held-out metrics:", metrics)
    assert metrics["holdout_documents"] > 100 and metrics["holdout_accuracy"] >= 0.85
    assert metrics["holdout_auc"] >= 0.9
    mf = load_model_file(path)
    assert mf.kind == "classifier" and mf.params["backend"] == "linear" and mf.params["label"] == "wiki"
    assert len(mf.header["training_data"]["fingerprint"]) == 64 and mf.header["training_data"]["documents"] == 1214


def test_annotate_scores_wiki_higher(linear_model, shared_dir, tmp_path):
    path, _ = linear_model
    dev = shared_dir / "corpora" / "dev"
    out = tmp_path / "out"
    run_annotate(AnnotateConfig(inputs=[str(dev / "target_wiki.jsonl.gz")], output=str(out / "wiki"),
                                signals="rps_doc_word_count", workers=1, progress=False, models={"wikiref": path}))
    table = pq.read_table(out / "wiki" / "docs" / "target_wiki.parquet")
    assert without_conveniences(table.column_names)[-1] == "rps_doc_ml_wikiref_score"
    wiki = np.array([r[0]["score"] for r in table.column("rps_doc_ml_wikiref_score").to_pylist()])
    # web documents of the kinds least like Wikipedia (chat, usenet), read from a small slice
    src = tmp_path / "web.jsonl"
    kept = 0
    with gzip.open(dev / "web_sample.jsonl.gz", "rt") as fh, open(src, "w") as dst:
        for line in fh:
            rec = json.loads(line)
            if rec["id"].startswith(("nltk-npschat/", "20ng/")) and kept < 300:
                dst.write(line)
                kept += 1
            elif kept >= 300:
                break
    run_annotate(AnnotateConfig(inputs=[str(src)], output=str(out / "web"), signals="rps_doc_word_count",
                                workers=1, progress=False, models={"wikiref": path}))
    web_rows = pq.read_table(out / "web" / "docs" / "web.parquet").column("rps_doc_ml_wikiref_score").to_pylist()
    web = np.array([r[0]["score"] for r in web_rows if r and r[0]["score"] is not None])
    assert np.median(wiki) > 0.9 > 0.1 > np.median(web)
    assert all(round(x, 8) == x for x in wiki[:50])


def test_null_for_empty_and_other_languages(tmp_path, linear_model):
    path, _ = linear_model
    mf = load_model_file(path)
    en_only = str(tmp_path / "en.tsm")
    save_model(en_only, "classifier", {**mf.params, "langs": ["en"]}, mf.arrays, mf.header["training_data"])
    src = tmp_path / "d.jsonl"
    docs = [("x0", "The history of the city began in the 12th century.", "en"), ("x1", "\n\n", "en"),
            ("x2", "Die Geschichte der Stadt begann im 12. Jahrhundert.", "de")]
    src.write_text("".join(json.dumps({"id": i, "text": t, "lang": g}) + "\n" for i, t, g in docs))
    run_annotate(AnnotateConfig(inputs=[str(src)], output=str(tmp_path / "o"), signals="rps_doc_word_count",
                                lang_field="lang", workers=1, progress=False, models={"wikiref": en_only}))
    rows = pq.read_table(tmp_path / "o" / "docs" / "d.parquet").column("rps_doc_ml_wikiref_score").to_pylist()
    assert rows[0][0]["score"] is not None and rows[1][0]["score"] is None and rows[2][0]["score"] is None


def test_fasttext_backend_and_user_bin(shared_dir, tmp_path):
    """fastText backend (RPv2's training) and a user's fastText .bin with __label__cc."""
    pytest.importorskip("fasttext")
    dev = shared_dir / "corpora" / "dev"
    out = tmp_path / "ft.tsm"
    # a fresh process: fastText 0.9.2 wheels can hit "Encountered NaN" in a busy process
    cmd = [sys.executable, "-m", "textsieve.cli", "train", "classifier", "--positive",
           str(dev / "target_wiki.jsonl.gz"), "--negative", str(dev / "web_sample.jsonl.gz"), "-o", str(out),
           "--backend", "fasttext", "--label", "wiki", "--max-docs", "400", "-q"]
    subprocess.run(cmd, check=True)
    mf = load_model_file(str(out))
    assert mf.params["backend"] == "fasttext" and "model.bin" in mf.extra
    assert mf.header["metrics"]["holdout_auc"] > 0.8
    user_bin = tmp_path / "user.bin"
    user_bin.write_bytes(mf.extra["model.bin"])  # what a user's RPv2-style fastText file looks like
    clf = FastTextClassifier(str(user_bin))
    p = clf.scores([prepare("The battle of the river was fought in 1346 between two armies."), ""])
    labels, probs = clf.model.predict(prepare("The battle of the river was fought in 1346 between two armies."))
    expect = 1 - probs[0] if labels[0] == "__label__cc" else probs[0]
    assert p[0] == pytest.approx(expect) and np.isnan(p[1])
    src = tmp_path / "d.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "Some text\nover two lines."}) + "\n")
    run_annotate(AnnotateConfig(inputs=[str(src)], output=str(tmp_path / "o"), signals="rps_doc_word_count",
                                workers=1, progress=False, models={"palm": str(user_bin)}))
    table = pq.read_table(tmp_path / "o" / "docs" / "d.parquet")
    assert without_conveniences(table.column_names)[-1] == "rps_doc_ml_palm_score"
    meta = json.loads(pq.read_metadata(tmp_path / "o" / "docs" / "d.parquet").metadata[b"textsieve"])
    assert meta["models"]["palm"]["kind"] == "classifier" and meta["models"]["palm"]["header"]["foreign"]
