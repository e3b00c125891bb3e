"""Asking for a model means computing it (issue 10, item 8): `--signals ts_lang --models wikiref=M`
writes wikiref's column too (CLI, API and YAML plan alike), and a recipe's relative `models:`
path is looked up beside the recipe file, then in the working directory, with an error that
names both places. Real text: slices of the dev corpora."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.models.classifier import ClassifierConfig, train_classifier
from textsieve.stages.annotate.annotate import AnnotateConfig, planned_schema, run_annotate


@pytest.fixture(scope="module")
def data(tmp_path_factory, dev_dir):
    """A small wiki-vs-web classifier and 80 web documents."""
    dev = dev_dir
    tmp = tmp_path_factory.mktemp("models")
    model = str(tmp / "wiki.tsm")
    train_classifier(ClassifierConfig(positive=[str(dev / "target_wiki.jsonl.gz")],
                                      negative=[str(dev / "web_sample.jsonl.gz")], output=model, label="wiki",
                                      backend="linear", max_docs=150, progress=False))
    with gzip.open(dev / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        (tmp / "web.jsonl").write_text("".join(itertools.islice(fh, 80)), encoding="utf-8")
    return tmp, model


def test_naming_one_model_signal_keeps_the_other_models_columns(data):
    tmp, model = data
    out = tmp / "cli"
    assert main(["annotate", str(tmp / "web.jsonl"), "-o", str(out), "--signals", "ts_lang",
                 "--models", f"wikiref={model}", "--workers", "1", "-q"]) == 0
    names = pq.read_schema(out / "docs" / "web.parquet").names
    assert "ts_lang" in names and "rps_doc_ml_wikiref_score" in names
    scores = pq.read_table(out / "docs" / "web.parquet").column("rps_doc_ml_wikiref_score").to_pylist()
    assert sum(s[0]["score"] is not None for s in scores) > 60


def test_api_and_plan_agree(data):
    tmp, model = data
    cfg = AnnotateConfig(inputs=[str(tmp / "web.jsonl")], output=str(tmp / "api"), workers=1, progress=False,
                         signals=["rps_doc_word_count", "ts_lang"], models={"wikiref": model})
    planned = planned_schema(cfg)
    run_annotate(cfg)
    got = pq.read_schema(tmp / "api" / "docs" / "web.parquet")
    assert {"rps_doc_word_count", "ts_lang", "rps_doc_ml_wikiref_score"} <= set(got.names)
    assert "ts_lang_score" not in got.names  # of the language model, only the named signal
    assert [(f.name, f.type) for f in got] == [(f.name, f.type) for f in planned]


@pytest.fixture(scope="module")
def annotated(data):
    """The web slice annotated with two cheap signals, and a learned filter trained on it."""
    tmp, _ = data
    ann = str(tmp / "ann")
    assert main(["annotate", str(tmp / "web.jsonl"), "-o", ann, "--signals",
                 "rps_doc_word_count,rps_doc_mean_word_length", "--workers", "1", "-q"]) == 0
    assert main(["learn", "--positive", ann, "--positive-where", "rps_doc_mean_word_length[1].score > 4.6",
                 "--negative", ann, "--negative-where", "rps_doc_mean_word_length[1].score <= 4.6",
                 "--features", "rps_doc_word_count,rps_doc_mean_word_length", "-o", str(tmp / "q.json"), "-q"]) == 0
    return ann, (tmp / "q.json").read_bytes()


def _recipe(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "recipe.yaml"
    p.write_text("models: {quality: q.json}\nrules:\n  good: 'quality.predict > 0.5'\n")
    return p


def test_model_beside_the_recipe_file(annotated, tmp_path, monkeypatch, capsys):
    ann, model = annotated
    recipe = _recipe(tmp_path / "recipes")
    (tmp_path / "recipes" / "q.json").write_bytes(model)
    monkeypatch.chdir(tmp_path)  # the working directory has no q.json
    assert main(["select", ann, "-r", str(recipe), "--dry-run", "--json"]) == 0
    assert '"good"' in capsys.readouterr().out


def test_model_in_the_working_directory(annotated, tmp_path, monkeypatch, capsys):
    ann, model = annotated
    recipe = _recipe(tmp_path / "recipes")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "q.json").write_bytes(model)
    monkeypatch.chdir(tmp_path / "work")
    assert main(["select", ann, "-r", str(recipe), "--dry-run", "--json"]) == 0
    assert '"good"' in capsys.readouterr().out


def test_missing_model_names_both_places_tried(annotated, tmp_path, monkeypatch, capsys):
    ann, _ = annotated
    recipe = _recipe(tmp_path / "recipes")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["select", ann, "-r", str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("textsieve: error: ")
    assert "model 'quality': 'q.json' not found" in err
    assert f"{tmp_path / 'recipes' / 'q.json'} (the recipe's folder)" in err
    assert f"{tmp_path / 'work' / 'q.json'} (the working directory)" in err
