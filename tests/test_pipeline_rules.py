"""`textsieve run --dry-run` (and the start of a real run) checks every recipe rule against the
columns the planned stages will write (issue 10, item 7), and unknown columns get "did you mean".
Real text: the bundled sample corpus (Python/Debian docs) and, for DSIR, Wikipedia paragraphs."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from _files import read_text

from textsieve.cli import main
from textsieve.pipeline.columns import planned_sets
from textsieve.pipeline.config import load
from textsieve.recipes.language import Recipe, RecipeError
from textsieve.recipes.sql import compile_recipe, schema_from_arrow
from textsieve.stages.annotate.annotate import AnnotateConfig, planned_schema

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pipeline.yaml"
SIGNALS = ["rps_doc_word_count", "rps_doc_mean_word_length", "rps_lines_num_words", "minhash"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """120 documents of the bundled sample corpus in two shards."""
    from textsieve.sample import build_sample

    d = tmp_path_factory.mktemp("rules")
    build_sample(str(d / "all.jsonl.gz"), max_docs=120)
    lines = read_text(d / "all.jsonl.gz").splitlines()
    (d / "docs").mkdir()
    for k in range(2):
        with gzip.open(d / "docs" / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines[k::2]) + "\n")
    return d / "docs"


def _pipeline(tmp_path: Path, corpus: Path, select_rules: dict | None = None, **extra) -> Path:
    doc = {"inputs": [str(corpus)], "output": str(tmp_path / "out"), "workers": 1,
           "annotate": {"signals": SIGNALS}, "dedup": {"fuzzy": {"thresholds": [0.8]}},
           "select": {"recipe": {"name": "r", "rules": select_rules or {"words": "rps_doc_word_count >= 30"}}}}
    doc.update(extra)
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def _fails(p: Path, capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["run", str(p), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("textsieve: error: ") and "Traceback" not in err
    return err


def test_dry_run_of_the_example_with_a_typo_fails_with_did_you_mean(corpus, tmp_path, capsys):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["inputs"] = [str(corpus)]
    doc["select"]["recipe"]["rules"]["word_count"] = "rps_doc_word_cont between 50 and 100000"
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc))
    err = _fails(p, capsys, "-o", str(tmp_path / "out"), "--dry-run")
    assert "select.recipe: rule 'word_count'" in err
    assert "unknown column 'rps_doc_word_cont'; did you mean 'rps_doc_word_count'?" in err
    assert not (tmp_path / "out").exists()


def test_a_real_run_fails_before_annotate_runs(corpus, tmp_path, capsys):
    p = _pipeline(tmp_path, corpus, {"near_unique": "dup_fuzzy_t70_keep"})
    err = _fails(p, capsys)
    assert "did you mean 'dup_fuzzy_t80_keep'?" in err  # only the 0.8 threshold is planned
    assert not (tmp_path / "out" / "attrs").exists()  # nothing was annotated


def test_rules_may_use_every_column_a_planned_stage_will_write(corpus, tmp_path, capsys):
    target = tmp_path / "t.jsonl"
    target.write_text("")  # only its path is planned; the dry-run reads no target
    rules = {"words": "rps_doc_word_count between 30 and 100000", "near_unique": "dup_fuzzy_t80_keep",
             "unique": "dup_exact_keep", "wiki_like": "ts_dsir_wiki_norm > -3",
             "bullets": "frac(rps_lines_num_words >= 3) > 0.1", "short": "line: rps_lines_num_words >= 2"}
    p = _pipeline(tmp_path, corpus, rules, dedup={"exact": {}, "fuzzy": {"thresholds": [0.8]}},
                  dsir=[{"name": "wiki", "targets": [str(target)]}])
    capsys.readouterr()
    assert main(["run", str(p), "--dry-run"]) == 0
    assert "select" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("rule, fragment", [
    ("rps_doc_stop_word_fraction > 0.3", "unknown column 'rps_doc_stop_word_fraction'"),  # not in `signals`
    ("ts_dsir_wiki_norm > -3", "unknown column 'ts_dsir_wiki_norm'"),  # no DSIR fit planned
    ("line: rps_lines_num_wrds >= 5", "did you mean 'rps_lines_num_words'?"),
    ("frac(rps_lines_num_wrds >= 5) > 0.5", "did you mean 'rps_lines_num_words'?"),
    ("dup_fuzzy_t80_kep", "did you mean 'dup_fuzzy_t80_keep'?"),
])
def test_rules_on_columns_no_stage_will_write_fail_in_the_dry_run(corpus, tmp_path, capsys, rule, fragment):
    p = _pipeline(tmp_path, corpus, {"bad": rule})
    err = _fails(p, capsys, "--dry-run")
    assert "select.recipe: rule 'bad'" in err and fragment in err
    assert "(checked against the columns the planned stages will write)" in err


def test_dsir_fit_recipes_see_only_the_stages_before_them(corpus, tmp_path, capsys):
    target = tmp_path / "t.jsonl"
    target.write_text("")
    fits = [{"name": "wiki", "targets": [str(target)], "recipe": {"rules": {"w": "ts_dsir_books_norm > 0"}}},
            {"name": "books", "targets": [str(target)], "recipe": {"rules": {"w": "ts_dsir_wiki_norm > 0"}}}]
    p = _pipeline(tmp_path, corpus, dsir=fits)
    err = _fails(p, capsys, "--dry-run")
    assert "dsir[0].recipe: rule 'w'" in err and "unknown column 'ts_dsir_books_norm'" in err
    fits[0]["recipe"]["rules"]["w"] = "dup_fuzzy_t80_keep"  # dedup runs before every fit
    p = _pipeline(tmp_path, corpus, dsir=fits)
    capsys.readouterr()
    assert main(["run", str(p), "--dry-run"]) == 0  # and books may use wiki's weights: wiki is fit first
    assert "raw side on recipe" in capsys.readouterr().out


def test_existing_attribute_sets_count(corpus, tmp_path, capsys):
    p = _pipeline(tmp_path, corpus, {"mine": "my_quality > 0.5"})
    assert "unknown column 'my_quality'" in _fails(p, capsys, "--dry-run")
    own = tmp_path / "out" / "attrs" / "sets" / "mine"
    own.mkdir(parents=True)
    pq.write_table(pa.table({"id": ["a"], "shard": ["part-0.jsonl.gz"], "row": [0], "my_quality": [0.9]}),
                   own / "part-0.parquet")
    assert main(["run", str(p), "--dry-run"]) == 0


def test_compiler_suggests_the_nearest_column():
    schema = schema_from_arrow("DIR", [("", planned_schema(AnnotateConfig(
        inputs=[], output="x", signals="rps_doc_word_count,rps_lines_num_words")), [])])
    with pytest.raises(RecipeError, match="unknown column 'rps_doc_wordcount'; did you mean 'rps_doc_word_count'?"):
        compile_recipe(Recipe.from_rules({"w": "rps_doc_wordcount > 5"}), schema, models={})
    with pytest.raises(RecipeError) as err:  # nothing close: no suggestion, the valid names
        compile_recipe(Recipe.from_rules({"w": "zzz > 5"}), schema, models={})
    assert "did you mean" not in str(err.value) and "valid names: rps_doc_word_count" in str(err.value)


def test_planned_columns_are_the_columns_a_real_run_writes(corpus, tmp_path, shared_dir):
    """The planned schema is only useful if it is exact: run a pipeline with every stage (DSIR
    fit on a recipe's survivors, select with recipe + DSIR) and compare, set by set."""
    with gzip.open(shared_dir / "corpora" / "dev" / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        (tmp_path / "t.jsonl").write_text("".join(itertools.islice(fh, 100)), encoding="utf-8")
    survivors = {"words": "rps_doc_word_count >= 30", "unique": "dup_exact_rpv2_keep"}
    p = _pipeline(tmp_path, corpus, {**survivors, "near_unique": "dup_fuzzy_t70_keep"},
                  dedup={"exact": {"normalize": "rpv2"}, "fuzzy": {"thresholds": [0.8, 0.7]}},
                  dsir=[{"name": "wiki", "targets": [str(tmp_path / "t.jsonl")], "recipe": {"rules": survivors}}])
    p.write_text(p.read_text().replace("select:\n", "select:\n  dsir: wiki\n  k: 15\n  temperature: 1.0\n"))
    assert main(["run", str(p), "-q"]) == 0
    attrs = tmp_path / "out" / "attrs"
    for stage, planned in planned_sets(load(p)):
        name, want = planned.name, planned.schema
        got = pq.read_schema(sorted((attrs / "sets" / name if name else attrs / "docs").glob("*.parquet"))[0])
        assert [(f.name, f.type) for f in got] == [(f.name, f.type) for f in want], stage
    selected = []
    for f in sorted((tmp_path / "out" / "selected").glob("*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            selected += fh.readlines()
    assert len(selected) == 15
