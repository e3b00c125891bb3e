"""Recipe + DSIR in one step (issue 10, item 6): `select --recipe R --dsir NAME` draws from the
recipe's survivors and `dsir fit --recipe R` fits the raw side on them, so the result equals the
two-step route (materialize the survivors, annotate them, fit and resample there), on real text:
600 web documents of the dev pool in two shards, 300 Wikipedia paragraphs as the target."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.dsir.resample import resample
from textsieve.recipes.survivors import survivors

RECIPE = 'rules:\n  words: "rps_doc_word_count between 50 and 5000"\n  unique: dup_exact_keep\n'
LINE_RECIPE = RECIPE + '  long_lines: "line: rps_lines_num_words >= 8"\n'


def _ids(folder: Path) -> list[str]:
    return sorted(json.loads(line)["id"] for f in sorted(folder.glob("*.jsonl.gz")) for line in gzip.open(f, "rt"))


def _texts(folder: Path) -> dict[str, str]:
    return {(r := json.loads(line))["id"]: r["text"] for f in sorted(folder.glob("*.jsonl.gz"))
            for line in gzip.open(f, "rt")}


@pytest.fixture(scope="module")
def routes(tmp_path_factory, dev_dir):
    """Both routes on the same pool: `one` (recipe + DSIR in one step) and `two` (materialized)."""
    dev = dev_dir
    tmp = tmp_path_factory.mktemp("combined")
    with gzip.open(dev / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = list(itertools.islice(fh, 600))
    (tmp / "pool").mkdir()
    for k, part in enumerate((docs[:300], docs[300:])):
        with gzip.open(tmp / "pool" / f"p{k}.jsonl.gz", "wt", encoding="utf-8") as out:
            out.writelines(part)
    with gzip.open(dev / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        (tmp / "t.jsonl").write_text("".join(itertools.islice(fh, 300)), encoding="utf-8")
    (tmp / "r.yaml").write_text(RECIPE)
    (tmp / "rl.yaml").write_text(LINE_RECIPE)
    ann, r = str(tmp / "ann"), str(tmp / "r.yaml")
    assert main(["annotate", str(tmp / "pool"), "-o", ann, "--signals",
                 "rps_doc_word_count,rps_doc_mean_word_length,rps_lines_num_words", "--workers", "1", "-q"]) == 0
    assert main(["dedup", "exact", ann, "-q"]) == 0
    # one step: fit on the survivors, draw from them
    assert main(["dsir", "fit", "--targets", str(tmp / "t.jsonl"), "--raw", ann, "--name", "wiki", "--recipe", r,
                 "-q"]) == 0
    # two steps: materialize the survivors, annotate them on their own, fit there
    assert main(["select", ann, "-r", r, "-o", str(tmp / "mat"), "-q"]) == 0
    assert main(["annotate", str(tmp / "mat" / "*.jsonl.gz"), "-o", str(tmp / "mat_ann"), "--signals",
                 "rps_doc_word_count", "--workers", "1", "-q"]) == 0
    assert main(["dsir", "fit", "--targets", str(tmp / "t.jsonl"), "--raw", str(tmp / "mat_ann"), "--name", "wiki",
                 "-q"]) == 0
    return tmp


@pytest.mark.parametrize("extra", [["--k", "60", "--seed", "3"],
                                   ["--k", "150", "--seed", "5", "--temperature", "1.0"],
                                   ["--tokens", "40000", "--seed", "1", "--temperature", "0.5", "--replace"]],
                         ids=["k-default-temperature", "k-temperature-1", "tokens-with-replacement"])
def test_one_step_selects_the_same_documents_as_the_two_step_route(routes, extra):
    tmp = routes
    one, two = tmp / f"one{len(extra)}{extra[1]}", tmp / f"two{len(extra)}{extra[1]}"
    assert main(["select", str(tmp / "ann"), "-r", str(tmp / "r.yaml"), "--dsir", "wiki", *extra,
                 "-o", str(one), "-q"]) == 0
    assert main(["select", str(tmp / "mat_ann"), "--dsir", "wiki", *extra, "-o", str(two), "-q"]) == 0
    got, want = _ids(one), _ids(two)
    assert got == want and len(got) > 10
    assert _texts(one) == _texts(two)
    summary = json.loads((one / ".textsieve" / "selection.json").read_text())
    assert summary["dsir"]["recipe_survivors"] == len(_ids(tmp / "mat")) < summary["dsir"]["annotated"] == 600
    assert summary["attribute_sets"] == ["dedup_exact", "dsir_wiki"]


def test_fit_on_survivors_gives_the_weights_of_a_fit_on_the_materialized_pool(routes):
    tmp = routes
    def weights(folder: Path) -> dict[str, float]:
        t = pa.concat_tables([pq.read_table(p) for p in sorted((folder / "sets" / "dsir_wiki").glob("*.parquet"))])
        return dict(zip(t.column("id").to_pylist(), t.column("ts_dsir_wiki").to_pylist()))

    one, two = weights(tmp / "ann"), weights(tmp / "mat_ann")
    assert len(one) == 600 and len(two) == len(_ids(tmp / "mat"))  # every document is still weighed
    # the same raw model (counts bit-equal), so the same weights up to float summation order
    assert [one[i] for i in two] == pytest.approx(list(two.values()), rel=1e-9, abs=1e-9)
    def header(folder: Path) -> dict:
        with open(folder / "sets" / "dsir_wiki" / ".textsieve" / "model.dsir", "rb") as fh:
            return json.loads(fh.readline())

    head_one, head_two = header(tmp / "ann"), header(tmp / "mat_ann")
    assert head_one["raw"] == head_two["raw"] and head_one["raw"]["docs"] == len(two)
    assert head_one["info"]["survivor_documents"] == len(two)


def test_dry_run_prints_the_draw_summary_over_the_survivors(routes, capsys):
    tmp = routes
    capsys.readouterr()
    args = ["--dsir", "wiki", "--k", "100", "--temperature", "1.0", "--dry-run", "--json"]
    assert main(["select", str(tmp / "ann"), "-r", str(tmp / "r.yaml"), *args]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["select", str(tmp / "mat_ann"), *args]) == 0
    two = json.loads(capsys.readouterr().out)
    n = len(_ids(tmp / "mat"))
    assert one["pool"] == one["recipe_survivors"] == two["pool"] == n and one["annotated"] == 600
    for key in ("documents", "distinct", "tokens", "eligible", "shortfall"):
        assert one[key] == two[key], key
    assert one["ess"] == pytest.approx(two["ess"], rel=1e-12)
    assert not (tmp / "ann" / ".textsieve" / "selection.json").exists()


def test_line_rules_still_cut_the_drawn_documents(routes):
    tmp = routes
    assert main(["select", str(tmp / "ann"), "-r", str(tmp / "rl.yaml"), "-o", str(tmp / "lines_only"), "-q"]) == 0
    assert main(["select", str(tmp / "ann"), "-r", str(tmp / "rl.yaml"), "--dsir", "wiki", "--k", "40",
                 "--temperature", "1.0", "-o", str(tmp / "lines_dsir"), "-q"]) == 0
    cut, drawn = _texts(tmp / "lines_only"), _texts(tmp / "lines_dsir")
    full = _texts(tmp / "mat")
    assert len(drawn) == 40 and set(drawn) <= set(cut)
    assert all(drawn[i] == cut[i] for i in drawn)
    assert any(drawn[i] != full.get(i) for i in drawn)  # some lines really were cut
    # the pool was the line recipe's survivors: documents with no line left are never drawn
    within = survivors(str(tmp / "ann"), str(tmp / "rl.yaml"))
    res = resample(str(tmp / "ann"), [("wiki", 1.0)], k=10_000, temperature=1.0, within=within)
    assert res.pool == sum(len(v) for v in within.values()) == len(cut)


def test_fit_recipe_errors_are_one_clear_line(routes, capsys):
    tmp = routes
    own = tmp / "own.yaml"
    own.write_text('rules:\n  w: "ts_dsir_wiki_norm > -5"\n')
    none = tmp / "none.yaml"
    none.write_text('rules:\n  w: "rps_doc_word_count > 100000000"\n')
    fit = ["dsir", "fit", "--targets", str(tmp / "t.jsonl"), "--raw", str(tmp / "ann"), "--name", "wiki", "-q"]
    assert main(fit + ["--recipe", str(own)]) == 2
    assert "uses the columns of sets/dsir_wiki, the weights this fit replaces" in capsys.readouterr().err
    assert main(fit + ["--recipe", str(none)]) == 2
    assert "keeps none of the documents" in capsys.readouterr().err
    typo = tmp / "typo.yaml"
    typo.write_text('rules:\n  w: "rps_doc_wordcount > 50"\n')
    assert main(fit + ["--recipe", str(typo)]) == 2
    assert "did you mean 'rps_doc_word_count'?" in capsys.readouterr().err
