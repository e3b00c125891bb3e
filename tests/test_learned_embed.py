"""Learned filters over embeddings / n-grams / boosted trees on the 218 DCLM-labelled dev
documents: cross-validated quality, the model applied end to end by a recipe (`learn apply` +
select), a deterministic pickle-free model file, and clear errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.learned.model import LabelledSource, LearnConfig, LearnedModel, load_model, train

LABEL = "meta.human_quality_label"


@pytest.fixture(scope="module")
def dclm_embedded(tmp_path_factory) -> Path:
    """The 218 `dclm-majority/` documents in one file, annotated and embedded once per module."""
    from _shared import SHARED as shared_dir
    from _shared import missing_reason

    from textsieve.stages.annotate.embed import EmbedConfig, run_embed

    if not (shared_dir / "golden").is_dir():
        pytest.skip(missing_reason(shared_dir))
    src = shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not src.is_file():
        pytest.skip(f"dev corpus not found at {src}")
    root = tmp_path_factory.mktemp("dclm-emb")
    (root / "in").mkdir()
    with open(root / "in" / "dclm.jsonl", "w", encoding="utf-8") as out, gzip.open(src, "rt", encoding="utf-8") as fh:
        for line in fh:
            if json.loads(line)["id"].startswith("dclm-majority/"):
                out.write(line)
    ann = root / "ann"
    assert main(["annotate", str(root / "in"), "-o", str(ann), "--resources",
                 str(shared_dir / "golden" / "rpv2_resources"), "--lang-field", "meta.lang", "--workers", "1",
                 "-q"]) == 0
    run_embed(EmbedConfig(str(ann), workers=1))
    return ann


def _train(ann: Path, out: Path | None, sets: list[str], model: str = "logistic", name: str | None = "quality"):
    return train(LearnConfig([LabelledSource(str(ann), label_field=LABEL)], output=str(out) if out else None,
                             feature_sets=sets, model=model, name=name))


def test_cv_accuracy_of_signals_plus_embeddings(dclm_embedded):
    res = _train(dclm_embedded, None, ["signals", "embed"])
    cv = res.model.header["cv"]
    assert (res.n_positive, res.n_negative) == (120, 98) and cv["folds"] == 5
    # Measured: accuracy 0.697, AUC 0.715 (signals alone: 0.679, 0.696; benchmarks/learned.py).
    assert cv["accuracy"] >= 0.68 and cv["auc"] >= 0.70
    assert res.model.header["parameters"]["feature_sets"] == ["signals", "embed"]
    assert res.model.embed["model"] == "wordllama" and res.model.embed["fingerprint"]


def test_default_is_still_the_sql_model(dclm_embedded):
    res = train(LearnConfig([LabelledSource(str(dclm_embedded), label_field=LABEL)]))
    assert isinstance(res.model, LearnedModel) and res.model.predict_sql().startswith("(1.0 / (1.0 + exp(")


def test_boosted_model_file_is_deterministic_and_pickle_free(dclm_embedded, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    ra = _train(dclm_embedded, a, ["signals"], "boosted")
    _train(dclm_embedded, b, ["signals"], "boosted")
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())  # plain JSON: trees as arrays
    assert doc["version"] == 2 and doc["parameters"]["model"] == "boosted" and doc["training"]["fingerprint"]
    (member,) = doc["members"]
    assert member["kind"] == "boosted" and len(member["trees"]) == 100
    loaded = load_model(a)
    assert loaded.fingerprint == ra.model.fingerprint and loaded.header["cv"] == ra.model.header["cv"]


def test_tree_arrays_reproduce_scikit_learn(dclm_embedded):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from textsieve.learned import trees
    from textsieve.learned.features import compute_features, default_features

    table = pq.read_table(dclm_embedded / "docs" / "dclm.parquet")
    names = default_features(table.schema)
    feats = compute_features(table, names)
    X = np.column_stack([feats[n] for n in names])  # NaN where missing: the missing-value branches
    y = np.array([int(json.loads(json.dumps(i)).startswith("dclm")) for i in table.column("id").to_pylist()])
    y[::2] = 0
    clf = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    np.testing.assert_allclose(trees.predict_proba(trees.export_hgb(clf), X), clf.predict_proba(X)[:, 1],
                               rtol=0, atol=1e-12)


def test_boosted_embedding_model_end_to_end_in_select(dclm_embedded, tmp_path, capsys):
    model = tmp_path / "quality.json"
    assert main(["learn", "--input", str(dclm_embedded), "--label-field", LABEL, "--features-from", "signals,embed",
                 "--model", "boosted", "-o", str(model), "-q"]) == 0
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: learned\nmodels: {{quality: {model}}}\nrules:\n  good: quality.predict > 0.5\n")
    capsys.readouterr()
    # before `learn apply`: select says what to run
    assert main(["select", str(dclm_embedded), "--recipe", str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "does not compile to SQL" in err and "textsieve learn apply" in err and "sets/learned_quality" in err
    assert main(["learn", "apply", str(model), str(dclm_embedded), "--workers", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["documents"] == 218 and summary["column"] == "ts_learned_quality"
    stored = pq.read_table(dclm_embedded / "sets" / "learned_quality" / "dclm.parquet")
    p = stored.column("ts_learned_quality").to_numpy()
    # the stage's per-shard prediction equals the trained model on the training matrices
    res = _train(dclm_embedded, None, ["signals", "embed"], "boosted")
    from textsieve.learned.views import embed_rows

    m = res.model
    E, _ = embed_rows(str(dclm_embedded), "wordllama", [("dclm.parquet", i) for i in range(218)])
    signals = m.signal_matrix(pq.read_table(dclm_embedded / "docs" / "dclm.parquet"))
    views = {"signals": signals, "embed": E.astype(float)}
    np.testing.assert_allclose(p, m.predict(views), rtol=0, atol=1e-12)
    out = tmp_path / "kept"
    assert main(["select", str(dclm_embedded), "--recipe", str(recipe), "-o", str(out), "-q"]) == 0
    with gzip.open(out / "dclm.jsonl.gz", "rt", encoding="utf-8") as fh:
        kept = {json.loads(line)["id"] for line in fh}
    want = {i for i, q in zip(stored.column("id").to_pylist(), p) if q > 0.5}
    assert kept == want and 0 < len(kept) < 218


def test_stale_prediction_set_is_refused(dclm_embedded, tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _train(dclm_embedded, a, ["embed"], name="stale")
    _train(dclm_embedded, b, ["signals", "embed"], name="stale")
    assert main(["learn", "apply", str(a), str(dclm_embedded), "--workers", "1", "-q"]) == 0
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: learned\nmodels: {{q: {b}}}\nrules:\n  good: q.predict > 0.5\n")
    capsys.readouterr()
    assert main(["select", str(dclm_embedded), "--recipe", str(recipe), "--dry-run"]) == 2
    assert "made by another model" in capsys.readouterr().err
    # applying the other model under the same name is refused without --overwrite
    assert main(["learn", "apply", str(b), str(dclm_embedded), "--workers", "1", "-q"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    # the same model file moved is that model: applied again without a refusal
    moved = tmp_path / "moved" / "a.json"
    moved.parent.mkdir()
    a.rename(moved)
    assert main(["learn", "apply", str(moved), str(dclm_embedded), "--workers", "1", "--json"]) == 0
    done = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert done["computed"] == 0, done  # the same model: every shard kept, not recomputed


def test_clear_errors(dclm_embedded, tmp_path, capsys):
    out = str(tmp_path / "m.json")
    assert main(["learn", "--input", str(dclm_embedded), "--label-field", LABEL, "--features-from",
                 "signals,embeds", "-o", out]) == 2
    err = capsys.readouterr().err
    assert "unknown feature set(s) 'embeds'" in err and "signals, embed, ngrams" in err
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("docs/dclm.parquet", ".textsieve/annotate.json", ".textsieve/manifest.json"):
        (bare / f).parent.mkdir(exist_ok=True)
        (bare / f).write_bytes((dclm_embedded / f).read_bytes())
    assert main(["learn", "--input", str(bare), "--label-field", LABEL, "--features-from", "embed", "-o", out]) == 2
    err = capsys.readouterr().err
    assert "no embeddings" in err and "textsieve embed" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="unknown model 'forest'; choose from logistic, boosted"):
        train(LearnConfig([LabelledSource(str(bare), label_field=LABEL)], model="forest"))
    assert main(["learn", "--input", str(bare), "--label-field", LABEL]) == 2
    assert "-o MODEL.json" in capsys.readouterr().err


@pytest.fixture(scope="module")
def dclm_reference(tmp_path_factory) -> Path:
    """The 218 labelled documents annotated with two reference scores learned without labels:
    a wiki-vs-web classifier (negatives: web_sample minus the labelled documents, so none of
    them is seen) and a Wikipedia n-gram LM (`--folds 0`: the bucket cutoffs, not used here,
    are in-sample; the perplexities are the same)."""
    from _shared import SHARED as shared_dir
    from _shared import missing_reason

    src = shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz"
    wiki = shared_dir / "corpora" / "dev" / "target_wiki.jsonl.gz"
    if not src.is_file() or not wiki.is_file():
        pytest.skip(missing_reason(shared_dir))
    root = tmp_path_factory.mktemp("dclm-ref")
    (root / "in").mkdir()
    with open(root / "in" / "dclm.jsonl", "w", encoding="utf-8") as out, \
            open(root / "pool.jsonl", "w", encoding="utf-8") as pool, gzip.open(src, "rt", encoding="utf-8") as fh:
        for line in fh:
            (out if json.loads(line)["id"].startswith("dclm-majority/") else pool).write(line)
    assert main(["train", "classifier", "--positive", str(wiki), "--negative", str(root / "pool.jsonl"), "--label",
                 "wiki", "--lang", "en", "-o", str(root / "wikiref.tsm"), "-q"]) == 0
    assert main(["train", "lm", "--corpus", str(wiki), "-o", str(root / "wikilm.tsm"), "--folds", "0", "-q"]) == 0
    ann = root / "ann"
    assert main(["annotate", str(root / "in"), "-o", str(ann), "--resources",
                 str(shared_dir / "golden" / "rpv2_resources"), "--lang-field", "meta.lang", "--workers", "1", "-q",
                 "--models", f"wikiref={root / 'wikiref.tsm'}", "--models", f"wiki={root / 'wikilm.tsm'}"]) == 0
    return ann


def test_reference_scores_with_nested_C_lift_the_sql_model(dclm_reference):
    """Issue 15 item 5: the best honest configuration (benchmarks/learned.py): the default
    features, which now take the reference scores, with C chosen by nested CV."""
    res = train(LearnConfig([LabelledSource(str(dclm_reference), label_field=LABEL)], C="auto"))
    m = res.model
    assert isinstance(m, LearnedModel) and m.predict_sql().startswith("(1.0 / (1.0 + exp(")  # still one SQL rule
    assert {"rps_doc_ml_wikiref_score", "log1p(ts_perplexity_wiki)"} <= set(m.features)
    assert "ts_perplexity_wiki_bucket" not in m.columns
    params = m.header["parameters"]
    assert params["C_search"]["grid"] and params["C"] in params["C_search"]["grid"]
    cv = m.header["cv"]
    # Measured: accuracy 0.702, AUC 0.738 (before: signals at C = 0.1, 0.679 / 0.696; the 0.75 target is
    # not reached, see benchmarks/learned.py).
    assert cv["accuracy"] >= 0.69 and cv["auc"] >= 0.725


def test_bad_C_is_one_clear_line(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["learn", "--input", str(tmp_path), "--label-field", LABEL, "--C", "lots", "-o", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert "C must be a positive number or 'auto', got 'lots'" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="C must be a positive number or 'auto', got -1"):
        train(LearnConfig([LabelledSource(str(tmp_path), label_field=LABEL)], C=-1))


def test_pipeline_learn_section_applies_the_model_for_select_and_reruns_when_it_changes(dclm_embedded, tmp_path):
    """`learn: [{model}]` runs `learn apply` inside `textsieve run`, so select's recipe can use a
    model over embeddings; a re-run does nothing; a retrained model at the same path re-applies
    and re-selects (never the old scores); a model that compiles to SQL is refused, naming the key."""
    import yaml

    from textsieve.pipeline.config import PipelineConfigError, load
    from textsieve.pipeline.run import run_pipeline

    model = tmp_path / "quality.json"
    _train(dclm_embedded, model, ["signals", "embed"], name="quality")
    doc = {"inputs": [str(dclm_embedded.parent / "in" / "dclm.jsonl")], "output": "out", "workers": 1,
           "read": {"lang_field": "meta.lang"}, "annotate": {"resources": str(_resources())},
           "embed": {}, "learn": [{"model": "quality.json"}],
           "select": {"recipe": {"name": "learned", "models": {"quality": "quality.json"},
                                 "rules": {"good": "quality.predict > 0.5"}}}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    cfg = load(str(tmp_path / "p.yaml"))
    assert cfg.stages() == ["annotate", "embed", "learn:quality", "select"]
    first = run_pipeline(cfg, quiet=True)
    assert [s.status for s in first.stages] == ["ran"] * 4
    attrs = tmp_path / "out" / "attrs"
    p = pq.read_table(attrs / "sets" / "learned_quality" / "dclm.parquet").column("ts_learned_quality").to_numpy()
    ids = pq.read_table(attrs / "docs" / "dclm.parquet", columns=["id"]).column("id").to_pylist()

    def kept() -> set[str]:
        with gzip.open(tmp_path / "out" / "selected" / "dclm.jsonl.gz", "rt", encoding="utf-8") as fh:
            return {json.loads(line)["id"] for line in fh}

    assert kept() == {i for i, q in zip(ids, p) if q > 0.5} and 0 < len(kept()) < 218
    again = run_pipeline(load(str(tmp_path / "p.yaml")), quiet=True)
    assert [s.status for s in again.stages][1:] == ["skipped"] * 3
    _train(dclm_embedded, model, ["embed"], name="quality")  # retrained in place: other scores
    third = run_pipeline(load(str(tmp_path / "p.yaml")), quiet=True)
    assert {s.name: s.status for s in third.stages} == {"annotate": "skipped", "embed": "skipped",
                                                      "learn:quality": "ran", "select": "ran"}
    p2 = pq.read_table(attrs / "sets" / "learned_quality" / "dclm.parquet").column("ts_learned_quality").to_numpy()
    assert not np.allclose(p, p2) and kept() == {i for i, q in zip(ids, p2) if q > 0.5}
    sql_model = tmp_path / "sql.json"
    train(LearnConfig([LabelledSource(str(dclm_embedded), label_field=LABEL)], output=str(sql_model)))
    doc["learn"] = [{"model": "sql.json"}]
    (tmp_path / "p2.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(PipelineConfigError, match=r"learn\[0\]\.model: .* compiles|learn\[0\]\.model: .*SQL"):
        run_pipeline(load(str(tmp_path / "p2.yaml")), quiet=True)


def _resources() -> Path:
    from _shared import SHARED

    return SHARED / "golden" / "rpv2_resources"


def test_pipeline_learn_items_are_checked_before_anything_runs(dclm_embedded, tmp_path):
    """Mistakes in `learn:` fail at the start, naming the key: the recipe names another model
    of the same name, two items write the same set, a model over embeddings without `embed:`,
    semantic dedup keeping on a learned column; `run --dry-run`'s plan names the stage."""
    import yaml

    from textsieve.pipeline.config import PipelineConfigError, load
    from textsieve.pipeline.plan import make_plan
    from textsieve.pipeline.run import run_pipeline

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _train(dclm_embedded, tmp_path / "a" / "quality.json", ["signals", "embed"], name="quality")
    _train(dclm_embedded, tmp_path / "b" / "quality.json", ["embed"], name="quality")
    _train(dclm_embedded, tmp_path / "b" / "other.json", ["embed"], name="quality")
    base = {"inputs": [str(dclm_embedded.parent / "in" / "dclm.jsonl")], "output": "out", "workers": 1,
            "read": {"lang_field": "meta.lang"}, "annotate": {"resources": str(_resources())}, "embed": {},
            "learn": [{"model": "a/quality.json"}],
            "select": {"recipe": {"name": "learned", "models": {"quality": "a/quality.json"},
                                  "rules": {"good": "quality.predict > 0.5"}}}}
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(base))
    plan = make_plan(load(str(tmp_path / "ok.yaml")))
    assert [s.name for s in plan.stages][2] == "learn:quality" and "sets/learned_quality" in plan.stages[2].does

    def refused(name: str, change: dict, match: str) -> None:
        doc = json.loads(json.dumps(base))
        for key, value in change.items():
            if value is None:
                del doc[key]
            else:
                doc[key] = value
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
        with pytest.raises(PipelineConfigError, match=match):
            run_pipeline(load(str(tmp_path / f"{name}.yaml")), quiet=True)
        assert not (tmp_path / "out" / "attrs").exists()  # nothing ran

    refused("mismatch", {"select": {"recipe": {"name": "learned", "models": {"quality": "b/quality.json"},
                                               "rules": {"good": "quality.predict > 0.5"}}}},
            r"select.recipe: .*learn: item writes sets/learned_quality with another model")
    refused("twice", {"learn": [{"model": "a/quality.json"}, {"model": "b/other.json"}]},
            r"learn\[1\]: writes _learned_quality, as learn\[0\] does")
    refused("noembed", {"embed": None}, r"learn\[0\]\.model: .* reads embeddings \(wordllama\); add an `embed:`")
    refused("semkeep", {"dedup": {"semantic": {"keep": "ts_learned_quality"}}},
            r"dedup.semantic.keep: ts_learned_quality is written by a stage that runs after dedup")


def test_the_pipeline_learn_example_in_the_docs_plans(dclm_embedded, tmp_path):
    """docs/embeddings.md's `learn:` YAML, with a model trained under its name, loads and plans
    the learn stage before select (the block is read from the page, so the docs cannot drift)."""
    import re

    import yaml

    from textsieve.pipeline.config import load
    from textsieve.pipeline.plan import make_plan

    page = (Path(__file__).resolve().parents[1] / "docs" / "embeddings.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", page, re.S)]
    example = next(b for b in blocks if isinstance(b, dict) and "learn" in b)
    assert set(example) == {"embed", "learn", "select"}
    _train(dclm_embedded, tmp_path / "wiki-like.json", ["signals", "embed"], name="wiki_like")
    doc = {"inputs": [str(dclm_embedded.parent / "in" / "dclm.jsonl")], "output": "out", "workers": 1,
           "read": {"lang_field": "meta.lang"}, "annotate": {"resources": str(_resources())}, **example}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    plan = make_plan(load(str(tmp_path / "p.yaml")))
    names = [s.name for s in plan.stages]
    assert names == ["annotate", "embed", "learn:wiki-like", "select"]  # a stage is named by its model's file
    assert "sets/learned_wiki_like" in plan.stages[2].does  # its set by the model's name
