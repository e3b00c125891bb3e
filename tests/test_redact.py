"""`select --redact` (issue 14 item 2): spans replaced when selected documents are written, with
every output format, with line rules, byte-deterministic, and for any span column. Real web
text with planted PII (`benchmarks/_pii_labelled.py`)."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.personal_data.redact import PLACEHOLDERS, merge_regions, redact
from textsieve.recipes.language import Recipe, RecipeError
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.select.select import SelectConfig, run_select
from textsieve.stages.training.pii import PiiConfig, run_pii

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _pii_labelled as labelled  # noqa: E402

N = 40


def test_redact_merges_overlaps_and_follows_the_line_cut():
    text = "ab 0123456789 cd\nkeep me@x.io\ncut 555\nlast"
    regions = [(3, 13, "<P>", "phone"), (5, 9, "<C>", "card"), (22, 29, "<E>", "email"), (34, 37, "", "col")]
    assert merge_regions(regions, len(text))[0] == (3, 13, "<P>", "phone")
    assert redact(text, regions, labels=("phone", "email", "col")) == (
        "ab <P> cd\nkeep <E>\ncut \nlast", {"phone": 1, "email": 1, "col": 1})
    # lines 0, 1 and 3 kept; the cut line's span is not counted; a span across a cut is written once
    keep = [(0, 17), (17, 30), (38, 42)]
    assert redact(text, regions, keep, ("phone", "email", "col")) == (
        "ab <P> cd\nkeep <E>\nlast", {"phone": 1, "email": 1, "col": 0})
    assert redact(text, [(10, 20, "<X>", "x")], [(0, 12), (18, 42)]) == ("ab 0123456<X>" + text[20:], {"x": 1})


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory) -> dict:
    """Planted documents as a JSONL shard and as a Parquet shard (with a nested column), each
    annotated and with its `_pii` set."""
    tmp = tmp_path_factory.mktemp("redact")
    docs = labelled.build(web_docs(dev_dir, N), seed=3, per_doc=3)
    recs = [{"id": d.id, "text": d.text, "source": "web", "meta": {"n": i}} for i, d in enumerate(docs)]
    (tmp / "jsonl").mkdir()
    with gzip.open(tmp / "jsonl" / "web.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    (tmp / "parquet").mkdir()
    pq.write_table(pa.Table.from_pylist(recs), tmp / "parquet" / "web.parquet")
    out = {"docs": docs, "tmp": tmp}
    for kind in ("jsonl", "parquet"):
        ann = tmp / f"attrs_{kind}"
        run_annotate(AnnotateConfig([str(tmp / kind)], str(ann), signals=["rps_doc_word_count", "rps_lines_num_words"],
                                    workers=1, progress=False))
        run_pii(PiiConfig(str(ann), workers=1, progress=False))
        out[kind] = ann
    return out


def _read(folder: Path) -> list[dict]:
    files = sorted(folder.glob("*.jsonl.gz")) or sorted(folder.glob("*.parquet"))
    rows: list[dict] = []
    for f in files:
        rows += read_jsonl(f) if f.name.endswith(".jsonl.gz") else pq.read_table(f).to_pylist()
    return rows


RECIPE = {"words": "rps_doc_word_count >= 1"}


@pytest.mark.parametrize("source", ["jsonl", "parquet"])
@pytest.mark.parametrize("fmt", ["jsonl.gz", "parquet"])
def test_every_planted_value_is_replaced_in_every_format(corpus, source, fmt, tmp_path):
    res = run_select(SelectConfig(str(corpus[source]), str(tmp_path / "out"), recipe=Recipe.from_rules(RECIPE),
                                  format=fmt, redact=["pii"], workers=1, progress=False))
    rows = {r["id"]: r for r in _read(tmp_path / "out")}
    assert len(rows) == N
    counted = {t: 0 for t in labelled.TYPES}
    for d in corpus["docs"]:
        r = rows[d.id]
        assert r["source"] == "web" and r["meta"]["n"] >= 0 and list(r)[-1] == "ts_redacted"
        assert set(r["ts_redacted"]) == set(labelled.TYPES)
        for p in d.plants:
            if p.type != "decoy":
                assert p.value.lstrip("+(") not in r["text"], (p, r["text"])
        for t, n in r["ts_redacted"].items():
            assert r["text"].count(PLACEHOLDERS[t]) == n
            counted[t] += n
    assert all(counted[t] for t in labelled.TYPES)
    assert res.redacted == counted
    summary = json.loads((tmp_path / "out" / ".textsieve" / "selection.json").read_text())
    assert summary["counts"]["redacted_this_run"] == counted and summary["redact"]["names"] == ["pii"]


def test_redaction_with_line_rules_is_consistent_and_deterministic(corpus, tmp_path):
    ann = corpus["jsonl"]
    rules = {"words": "rps_doc_word_count >= 1", "lines": "line: rps_lines_num_words >= 4"}
    plain = Recipe.from_rules(rules)
    with_key = Recipe.from_yaml(json.dumps({"rules": rules, "redact": ["pii"]}))
    assert with_key.redact == ["pii"] and with_key.to_dict()["redact"] == ["pii"]
    run_select(SelectConfig(str(ann), str(tmp_path / "cut"), recipe=plain, workers=1, progress=False))
    run_select(SelectConfig(str(ann), str(tmp_path / "both"), recipe=with_key, workers=1, progress=False))
    run_select(SelectConfig(str(ann), str(tmp_path / "both2"), recipe=plain, redact=["pii"], workers=2,
                            progress=False))
    assert (tmp_path / "both" / "web.jsonl.gz").read_bytes() == (tmp_path / "both2" / "web.jsonl.gz").read_bytes()
    cut = {r["id"]: r["text"] for r in _read(tmp_path / "cut")}
    both = {r["id"]: r for r in _read(tmp_path / "both")}
    pii = {r["id"]: r for r in pq.read_table(ann / "sets" / "pii" / "web.parquet").to_pylist()}
    originals = {d.id: d.text for d in corpus["docs"]}
    cut_some = 0
    for doc_id, text in cut.items():
        # the cut text with every span of the original text that survived the cut replaced
        values = sorted(((originals[doc_id][s["start"]:s["end"]], PLACEHOLDERS[t]) for t in labelled.TYPES
                         for s in pii[doc_id][f"ts_pii_{t}"]), key=lambda x: -len(x[0]))
        expected, n = text, 0
        for value, placeholder in values:
            n += expected.count(value)
            expected = expected.replace(value, placeholder)
        assert both[doc_id]["text"] == expected
        assert sum(both[doc_id]["ts_redacted"].values()) == n
        cut_some += n < len(values)
    assert cut_some  # some spans were in cut lines and are not counted


def test_a_span_column_named_directly_is_removed(corpus, tmp_path):
    ann = corpus["jsonl"]
    run_select(SelectConfig(str(ann), str(tmp_path / "o"), recipe=Recipe.from_rules(RECIPE),
                            redact=["ts_pii_email"], workers=1, progress=False))
    pii = {r["id"]: r["ts_pii_email"] for r in pq.read_table(ann / "sets" / "pii" / "web.parquet").to_pylist()}
    for d, r in zip(corpus["docs"], _read(tmp_path / "o")):
        spans = pii[d.id]
        assert r["ts_redacted"] == {"ts_pii_email": len(spans)}
        assert len(r["text"]) == len(d.text) - sum(s["end"] - s["start"] for s in spans)
        assert "|||" not in r["text"] and all(d.text[s["start"]:s["end"]] not in r["text"] for s in spans)


def test_bad_redact_names_are_one_line(corpus, tmp_path, capsys):
    ann = corpus["jsonl"]
    assert main(["select", str(ann), "--recipe", "gopher", "--redact", "nosuch", "-o", str(tmp_path / "x"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("textsieve: error: select --redact nosuch: no such column")
    assert "ts_pii_email" in err[0]
    assert main(["select", str(ann), "--recipe", "gopher", "--redact", "ts_pii_count", "-o",
                 str(tmp_path / "x"), "-q"]) == 2
    assert "not a span list" in capsys.readouterr().err
    bare = corpus["tmp"] / "bare"
    shutil.copytree(ann, bare, ignore=shutil.ignore_patterns("pii"))
    assert main(["select", str(bare), "--recipe", "gopher", "--redact", "pii", "-o", str(tmp_path / "y"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"textsieve: error: select --redact pii: {bare} has no attribute set sets/pii with span columns; "
                   f"run `textsieve pii {bare}` first"]
    with pytest.raises(RecipeError, match="'redact' must be a list of names"):
        Recipe.from_yaml("rules: {a: 'rps_doc_word_count > 1'}\nredact: 3\n")


# ---------------------------------------------------------------- issue 14 review: only selected rows converted

def test_load_regions_converts_only_the_selected_rows(corpus, tmp_path):
    """A selection of a few rows of a large shard gets exactly the spans a whole-shard read gives
    them, and Python memory stays that of a batch, not of the shard (before: every row's spans
    became Python objects, ~27 MB for 40k rows)."""
    import numpy as np

    from textsieve.personal_data.redact_plan import load_regions

    t = pq.read_table(corpus["jsonl"] / "sets" / "pii" / "web.parquet")
    cols = [f"ts_pii_{k}" for k in labelled.TYPES]
    reps = 40_000 // t.num_rows
    big = pa.concat_tables([t.select(cols)] * reps)
    big = big.add_column(0, "row", pa.array(np.arange(big.num_rows), pa.int64()))
    path = tmp_path / "big.parquet"
    pq.write_table(big, path)
    sources = [(str(path), c, PLACEHOLDERS[c[len("ts_pii_"):]], c[len("ts_pii_"):]) for c in cols]
    rows = np.array([1, 7, N + 3, big.num_rows - 2], np.int64)
    whole = {c: big.column(c).to_pylist() for c in cols}  # the reference: every row converted
    expected = [[(s["start"], s["end"], rep, lab) for _, c, rep, lab in sources for s in whole[c][r]]
                for r in rows.tolist()]
    got = load_regions(sources, rows)
    assert got == expected and sum(map(len, got)) > 0
    # the peak is traced in a fresh process: tracemalloc in a test process whose earlier tests
    # left native threads running (Arrow, DuckDB) once crashed a CI worker
    import subprocess

    measure = ("import json, sys, tracemalloc\nimport numpy as np\n"
               "from textsieve.personal_data.redact_plan import load_regions\n"
               "sources, rows = json.loads(sys.argv[1])\nsources = [tuple(s) for s in sources]\n"
               "load_regions(sources, np.array(rows[:1], np.int64))  # imports and first-use caches\n"
               "tracemalloc.start()\nload_regions(sources, np.array(rows, np.int64))\n"
               "print(tracemalloc.get_traced_memory()[1])\n")
    out = subprocess.run([sys.executable, "-c", measure, json.dumps([sources, rows.tolist()])], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    peak = int(out.stdout.strip())
    assert peak < 5_000_000, peak
    assert load_regions(sources, np.array([big.num_rows + 5], np.int64)) == [[]]  # a row the set lacks


def test_redacting_a_few_rows_gives_the_same_text_as_redacting_all(corpus, tmp_path):
    """`select --redact pii` of a few rows writes each of them exactly as the full selection does."""
    ann = corpus["jsonl"]
    run_select(SelectConfig(str(ann), str(tmp_path / "all"), recipe=Recipe.from_rules(RECIPE), redact=["pii"],
                            workers=1, progress=False))
    full = {r["id"]: r for r in _read(tmp_path / "all")}
    counts = sorted(d.text.count(" ") for d in corpus["docs"])
    few = Recipe.from_rules({"long": f"rps_doc_word_count >= {counts[-3]}"})
    run_select(SelectConfig(str(ann), str(tmp_path / "few"), recipe=few, redact=["pii"], workers=1, progress=False))
    rows = _read(tmp_path / "few")
    assert 0 < len(rows) < N // 4
    for r in rows:
        assert r == full[r["id"]]
