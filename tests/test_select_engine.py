"""select on real annotated text: funnels of the bundled recipes against an independent pure-Python
computation over the same attributes, C4 line removal against the line spans, materialized
output against the source texts, attribute sets, learned models and DSIR integration."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _shared import SHARED

from textsieve.recipes.funnel import compute_funnel
from textsieve.recipes.language import Recipe, RecipeError, load_recipe
from textsieve.stages.select.select import SelectConfig, SelectError, run_select

N_DOCS = 3000


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """The first 3,000 documents of the dev web sample, annotated once per session."""
    src = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not src.is_file():
        pytest.skip(f"dev corpus not found at {src} (set TEXTSIEVE_SHARED)")
    from textsieve.cli import main

    root = tmp_path_factory.mktemp("select")
    (root / "src").mkdir()
    piece = root / "src" / "web3k.jsonl.gz"
    with gzip.open(src, "rb") as fin, gzip.open(piece, "wb") as fout:
        fout.writelines(itertools.islice(fin, N_DOCS))
    ann = root / "ann"
    assert main(["annotate", str(piece), "-o", str(ann), "--resources", str(SHARED / "golden" / "rpv2_resources"),
                 "--lang-field", "meta.lang", "--workers", "1", "-q"]) == 0
    with gzip.open(piece, "rt", encoding="utf-8") as fh:
        texts = [json.loads(line) for line in fh]
    return {"root": root, "src": piece, "ann": str(ann), "records": texts}


def _attrs(ann: str, columns: list[str]) -> list[dict]:
    return pq.read_table(f"{ann}/docs/web3k.parquet", columns=["id", "shard", "row"] + columns).to_pylist()


# ---------------------------------------------------------------- independent twin of the rule semantics

def s(d, col):  # doc-level score; None when null
    spans = d[col]
    return spans[0]["score"] if spans else None


def btw(x, lo, hi):
    return x is not None and lo <= x <= hi


def le(x, v):
    return x is not None and x <= v


def ge(x, v):
    return x is not None and x >= v


def eq(x, v):
    return x is not None and x == v


def frac(d, col, pred):
    known = [sp["score"] for sp in d[col] if sp["score"] is not None]
    return sum(1 for v in known if pred(v)) / len(known) if known else None


RPV2_GOPHER = [
    ("word_count", lambda d: btw(s(d, "rps_doc_word_count"), 50, 100000)),
    ("mean_word_length", lambda d: btw(s(d, "rps_doc_mean_word_length"), 3, 10)),
    ("symbol_to_word", lambda d: le(s(d, "rps_doc_symbol_to_word_ratio"), 0.1)),
    ("bullet_lines", lambda d: le(frac(d, "rps_lines_start_with_bulletpoint", lambda v: v == 1), 0.9)),
    ("top_2gram", lambda d: le(s(d, "rps_doc_frac_chars_top_2gram"), 0.2)),
]
GOPHER = RPV2_GOPHER[:4] + [
    ("ellipsis_lines", lambda d: le(s(d, "rps_doc_frac_lines_end_with_ellipsis"), 0.3)),
    ("no_alpha_words", lambda d: le(s(d, "rps_doc_frac_no_alph_words"), 0.2)),
    ("top_ngrams", lambda d: all(le(s(d, f"rps_doc_frac_chars_top_{n}gram"), t)
                                 for n, t in [(2, .2), (3, .18), (4, .16)])),
    ("dupe_ngrams", lambda d: all(le(s(d, f"rps_doc_frac_chars_dupe_{n}grams"), t)
                                  for n, t in zip(range(5, 11), (.15, .14, .13, .12, .11, .10)))),
]
C4_LINES = [
    ("terminal_punctuation", lambda d, i: eq(d["rps_lines_ending_with_terminal_punctution_mark"][i]["score"], 1)),
    ("min_words_per_line", lambda d, i: ge(d["rps_lines_num_words"][i]["score"], 5)),
    ("no_javascript", lambda d, i: eq(d["rps_lines_javascript_counts"][i]["score"], 0)),
]
C4_DOCS = [
    ("min_sentences", lambda d: ge(s(d, "rps_doc_num_sentences"), 3)),
    ("no_bad_words", lambda d: eq(s(d, "rps_doc_ldnoobw_words"), 0)),
    ("no_lorem_ipsum", lambda d: eq(s(d, "rps_doc_lorem_ipsum"), 0)),
    ("no_curly_bracket", lambda d: eq(s(d, "rps_doc_curly_bracket"), 0)),
]


def py_funnel(docs, doc_rules, line_rules=(), order=None):
    """Funnel by brute force: per document, its length and the characters of kept lines."""
    order = order or [n for n, _ in line_rules] + [n for n, _ in doc_rules]
    dr, lr = dict(doc_rules), dict(line_rules)
    anchor = "rps_lines_num_words"

    def kept_chars(d, names):
        return sum(sp["end"] - sp["start"] for i, sp in enumerate(d[anchor]) if all(lr[n](d, i) for n in names))

    length = [d["rps_doc_word_count"][0]["end"] for d in docs]
    total, chars = len(docs), sum(length)
    out = []
    for k, name in enumerate(order):
        if name in dr:
            fail = [not dr[name](d) for d in docs]
            alone = (sum(fail), sum(L for L, f in zip(length, fail) if f))
        else:
            kc = [kept_chars(d, [name]) for d in docs]
            alone = (sum(1 for c in kc if c == 0), sum(L - c for L, c in zip(length, kc)))
        upto = order[: k + 1]
        lines_so_far = [n for n in upto if n in lr]
        surv_docs, surv_chars = 0, 0
        for d, L in zip(docs, length):
            if not all(dr[n](d) for n in upto if n in dr):
                continue
            c = kept_chars(d, lines_so_far) if lines_so_far else L
            if lines_so_far and c == 0:
                continue
            surv_docs += 1
            surv_chars += c
        out.append({"name": name, "removed_alone": alone[0], "chars_removed_alone": alone[1],
                    "removed_cumulative": total - surv_docs, "chars_removed_cumulative": chars - surv_chars})
    return {"total": total, "total_chars": chars, "rules": out,
            "kept": total - out[-1]["removed_cumulative"], "kept_chars": chars - out[-1]["chars_removed_cumulative"]}


def _strip(f: dict) -> dict:
    keys = ("name", "removed_alone", "chars_removed_alone", "removed_cumulative", "chars_removed_cumulative")
    return {"total": f["total"], "total_chars": f["total_chars"], "kept": f["kept"], "kept_chars": f["kept_chars"],
            "rules": [{k: r[k] for k in keys} for r in f["rules"]]}


DOC_COLS = sorted({c for c in ["rps_doc_word_count", "rps_doc_mean_word_length", "rps_doc_symbol_to_word_ratio",
                               "rps_doc_frac_chars_top_2gram", "rps_doc_frac_chars_top_3gram",
                               "rps_doc_frac_chars_top_4gram", "rps_doc_frac_lines_end_with_ellipsis",
                               "rps_doc_frac_no_alph_words", "rps_doc_num_sentences", "rps_doc_ldnoobw_words",
                               "rps_doc_lorem_ipsum", "rps_doc_curly_bracket"]}
                 | {f"rps_doc_frac_chars_dupe_{n}grams" for n in range(5, 11)})
LINE_COLS = ["rps_lines_start_with_bulletpoint", "rps_lines_ending_with_terminal_punctution_mark",
             "rps_lines_num_words", "rps_lines_javascript_counts"]


@pytest.fixture(scope="session")
def attrs(corpus):
    return _attrs(corpus["ann"], DOC_COLS + LINE_COLS)


@pytest.mark.parametrize("name, doc_rules, line_rules", [
    ("rpv2-gopher", RPV2_GOPHER, []), ("gopher", GOPHER, []), ("c4", C4_DOCS, C4_LINES)])
def test_bundled_funnels_match_independent_computation(corpus, attrs, name, doc_rules, line_rules):
    got = compute_funnel(corpus["ann"], load_recipe(name)).to_dict()
    want = py_funnel(attrs, doc_rules, line_rules)
    assert _strip(got) == want
    assert got["total"] == N_DOCS and 0 < got["kept"] < N_DOCS
    assert all(r["removed_cumulative"] >= r["removed_alone"] for r in got["rules"][:1])


def test_mixed_order_line_and_doc_rules(corpus, attrs):
    recipe = Recipe.from_rules([("min_sentences", "rps_doc_num_sentences >= 3"),
                                ("words", "line: rps_lines_num_words >= 5"),
                                ("bad", "rps_doc_ldnoobw_words == 0"),
                                ("punct", "line: rps_lines_ending_with_terminal_punctution_mark == 1")])
    want = py_funnel(attrs, [C4_DOCS[0], C4_DOCS[1]], [C4_LINES[1], C4_LINES[0]],
                     order=["min_sentences", "min_words_per_line", "no_bad_words", "terminal_punctuation"])
    got = _strip(compute_funnel(corpus["ann"], recipe).to_dict())
    for g in got["rules"]:
        g["name"] = None
    for w in want["rules"]:
        w["name"] = None
    assert got == want


def test_dry_run_reads_no_text_and_cli_json(corpus, capsys):
    from textsieve.cli import main

    hidden = corpus["src"].with_name("moved-away.jsonl.gz")
    corpus["src"].rename(hidden)
    try:
        assert main(["select", corpus["ann"], "--recipe", "gopher", "--dry-run", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert main(["select", corpus["ann"], "--recipe", "gopher", "--dry-run"]) == 0
        table = capsys.readouterr().out
    finally:
        hidden.rename(corpus["src"])
    assert set(out) >= {"rules", "total", "kept"} and out["total"] == N_DOCS
    assert [r["name"] for r in out["rules"]] == [n for n, _ in GOPHER]
    assert {"name", "removed_alone", "removed_cumulative"} <= set(out["rules"][0])
    assert "no_alpha_words" in table and f"{out['kept']:,}" in table


def test_cli_reports_invalid_rule(corpus, tmp_path, capsys):
    from textsieve.cli import main

    p = tmp_path / "bad.yaml"
    p.write_text("rules:\n  short: 'rps_doc_word_cnt >= 50'\n")
    assert main(["select", corpus["ann"], "--recipe", str(p), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "rule 'short'" in err and "unknown column 'rps_doc_word_cnt'" in err and "rps_doc_word_count" in err


def _read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_c4_materialized_lines_cut_by_spans(corpus, attrs, tmp_path):
    out = tmp_path / "c4"
    res = run_select(SelectConfig(corpus["ann"], str(out), recipe=load_recipe("c4"), progress=False, workers=1))
    recs = _read_jsonl(out / "web3k.jsonl.gz")
    want = py_funnel(attrs, C4_DOCS, C4_LINES)
    assert len(recs) == res.documents == want["kept"]
    assert sum(len(r["text"]) for r in recs) == want["kept_chars"]
    for r in recs:
        d, src = attrs[r["row"]], corpus["records"][r["row"]]
        assert r["shard"] == "web3k.jsonl.gz" and r["id"] == d["id"] == src["id"]
        assert all(fn(d) for _, fn in C4_DOCS)
        lines = [src["text"][sp["start"]:sp["end"]] for i, sp in enumerate(d["rps_lines_num_words"])
                 if all(fn(d, i) for _, fn in C4_LINES)]
        assert r["text"] == "".join(lines) and lines
        assert r["meta"] == src["meta"] and r["source"] == src["source"]
    assert sum(1 for r in recs if r["text"] != corpus["records"][r["row"]]["text"]) > len(recs) // 4
    summary = json.loads((out / ".textsieve" / "selection.json").read_text())
    assert summary["status"] == "done" and summary["counts"]["selected"] == want["kept"]
    assert summary["recipe"]["name"] == "c4" and summary["inputs"][0]["fingerprint"]
    # re-run: finished shard skipped; another recipe into the same folder refused
    again = run_select(SelectConfig(corpus["ann"], str(out), recipe=load_recipe("c4"), progress=False))
    assert again.shards_written == [] and len(again.shards_skipped) == 1
    with pytest.raises(SelectError, match="other settings"):
        run_select(SelectConfig(corpus["ann"], str(out), recipe=load_recipe("gopher"), progress=False))


def test_gopher_parquet_output_full_texts(corpus, attrs, tmp_path):
    out = tmp_path / "gopher"
    run_select(SelectConfig(corpus["ann"], str(out), recipe=load_recipe("gopher"), format="parquet",
                            progress=False, workers=1))
    t = pq.read_table(out / "web3k.parquet").to_pylist()
    keep = [i for i, d in enumerate(attrs) if all(fn(d) for _, fn in GOPHER)]
    assert [r["row"] for r in t] == keep
    for r in t:
        src = corpus["records"][r["row"]]
        assert (r["id"], r["text"], r["shard"]) == (src["id"], src["text"], "web3k.jsonl.gz")
        # every source field with its type: `meta` is a struct (absent fields read back as null)
        assert all(r[k] == src[k] for k in src if k != "meta") and r.keys() >= src.keys()
        assert all(v is None for k, v in r.items() if k not in src and k not in ("shard", "row"))
        assert {k: v for k, v in r["meta"].items() if v is not None} == \
            {k: v for k, v in src["meta"].items() if v is not None}


def test_attribute_set_columns_joined_on_shard_row(corpus, attrs):
    """Any attribute set under DIR is usable; rows missing from the set are null (fail)."""
    rows = [d for d in attrs if d["row"] >= 10]  # rows 0..9 absent from the set
    tbl = pa.table({"id": [d["id"] for d in rows], "shard": [d["shard"] for d in rows],
                    "row": pa.array([d["row"] for d in rows], pa.int64()),
                    "toy_keep": [d["row"] % 3 != 0 for d in rows],
                    "toy_score": [None if d["row"] % 5 == 0 else (d["row"] % 7) / 7 for d in rows]})
    setdir = Path(corpus["ann"]) / "sets" / "toyset"
    setdir.mkdir(parents=True, exist_ok=True)
    pq.write_table(tbl, setdir / "web3k.parquet")
    recipe = Recipe.from_rules({"keep": "toy_keep", "score": "toy_score > 0.5",
                                "nullable": "toy_score is null or toy_score >= 0"})
    f = compute_funnel(corpus["ann"], recipe).to_dict()
    by_row = {d["row"]: d for d in rows}

    def val(i, k):
        return (by_row[i]["row"] % 3 != 0) if k == "keep" else (None if i % 5 == 0 else (i % 7) / 7)

    keep_fail = sum(1 for i in range(N_DOCS) if i < 10 or not val(i, "keep"))
    score_fail = sum(1 for i in range(N_DOCS) if i < 10 or val(i, "score") is None or not val(i, "score") > 0.5)
    both = sum(1 for i in range(N_DOCS) if i >= 10 and val(i, "keep") and val(i, "score") is not None
               and val(i, "score") > 0.5)
    assert f["rules"][0]["removed_alone"] == keep_fail
    assert f["rules"][1]["removed_alone"] == score_fail
    assert f["rules"][2]["removed_alone"] == 0  # missing rows are null, and `is null` keeps them
    assert f["kept"] == both


def test_learned_model_as_rule(corpus, tmp_path):
    learned = pytest.importorskip("textsieve.learned.model")
    feats = ["rps_doc_word_count", "mean(rps_lines_num_words)", "frac(rps_lines_start_with_bulletpoint == 1)"]
    model = learned.LearnedModel(features=feats, impute=[0.0, 0.0, 0.0], mean=[300.0, 8.0, 0.05],
                                 scale=[500.0, 5.0, 0.1], coef=[0.8, 1.2, -2.0], intercept=-0.3)
    model.save(tmp_path / "q.json")
    rec = tmp_path / "r.yaml"
    rec.write_text("models: {quality: q.json}\nrules:\n  learned: 'quality.predict > 0.5'\n")
    f = compute_funnel(corpus["ann"], load_recipe(str(rec)))
    table = pq.read_table(f"{corpus['ann']}/docs/web3k.parquet")
    p = model.predict_table(table)
    assert f.kept == int((p > 0.5).sum()) and 0 < f.kept < N_DOCS
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {quality: q.json}\nrules:\n  learned: 'quality.proba > 0.5'\n")
    with pytest.raises(RecipeError, match="model 'quality' has no attribute 'proba'; valid: predict"):
        compute_funnel(corpus["ann"], load_recipe(str(bad)))


def test_dsir_resample_materialized_with_multiplicity(corpus, tmp_path):
    dsir = pytest.importorskip("textsieve.dsir.resample")
    from textsieve.stages.select.dsir_fit import DsirFitConfig, run_fit

    target = SHARED / "corpora" / "dev" / "target_wiki.jsonl.gz"
    run_fit(DsirFitConfig(targets=[str(target)], raw=corpus["ann"], name="wiki", progress=False))
    res = dsir.resample(corpus["ann"], [("wiki", 1.0)], k=300, replace=True, seed=3, temperature=0.01)
    out = tmp_path / "dsir"
    got = run_select(SelectConfig(corpus["ann"], str(out), dsir=[("wiki", 1.0)], k=300, replace=True, seed=3,
                                  temperature=0.01, progress=False, workers=1))
    recs = _read_jsonl(out / "web3k.jsonl.gz")
    assert len(recs) == got.documents == 300 == int(res.count.sum())
    want = {int(r): int(c) for r, c in zip(res.row, res.count)}
    seen: dict[int, int] = {}
    for r in recs:
        seen[r["row"]] = seen.get(r["row"], 0) + 1
        src = corpus["records"][r["row"]]
        assert (r["id"], r["text"]) == (src["id"], src["text"])
    assert seen == want and max(seen.values()) > 1
    summary = json.loads((out / ".textsieve" / "selection.json").read_text())
    assert summary["dsir"]["documents"] == 300 and summary["dsir"]["ess"] == pytest.approx(res.ess)
    # the weight column is usable as a rule
    f = compute_funnel(corpus["ann"], Recipe.from_rules({"w": "ts_dsir_wiki > -1e9"}))
    assert f.total == N_DOCS
    # both: tests/test_select_combined.py
    with pytest.raises(SelectError, match="give a recipe, DSIR targets, or both"):
        run_select(SelectConfig(corpus["ann"], str(tmp_path / "x"), progress=False))


# ---------------------------------------------------------------- NumPy line path == DuckDB SQL

TRICKY_RULES = [
    ("count_long", "count(rps_lines_num_words > 3) >= 2"),
    ("words_no_bullet", "line: rps_lines_num_words >= 5 and not rps_lines_start_with_bulletpoint == 1"),
    ("max_words", "max(rps_lines_num_words) between 3 and 1000"),
    ("sum_words", "sum(rps_lines_num_words) > 100"),
    ("mean_words", "mean(rps_lines_num_words) > 10"),
    ("bullet_null", "frac(rps_lines_start_with_bulletpoint is null) < 0.5"),
    ("min_upper", "min(rps_lines_uppercase_letter_fraction) < 0.2"),
    ("js_or_bullet", "line: rps_lines_javascript_counts in [0, 1] or rps_lines_start_with_bulletpoint is not null"),
    ("count_bullets", "count(rps_lines_start_with_bulletpoint) >= 1"),
    ("zipped_frac", "frac(rps_lines_start_with_bulletpoint == 1 or rps_lines_num_words > 10) < 0.9"),
    ("float_mean", "mean(rps_lines_uppercase_letter_fraction) < 0.3"),  # left to DuckDB (summation order)
    ("arith", "line: rps_lines_num_words * 2 - 1 not between 3 and 7"),
]


def _sql_values(directory: str, recipe: Recipe) -> dict:
    from textsieve.recipes.funnel import connect, funnel_sql
    from textsieve.recipes.sql import compile_recipe, read_schema

    sql, cols = funnel_sql(compile_recipe(recipe, read_schema(directory)))
    return dict(zip(cols, (int(v or 0) for v in connect().execute(sql).fetchone())))


def test_numpy_line_path_matches_duckdb(corpus, monkeypatch):
    import textsieve.recipes.funnel_numpy as ff
    from textsieve.recipes.sql import compile_recipe, read_schema

    monkeypatch.setattr(ff, "BATCH_ROWS", 700)  # several tasks, each spanning row groups
    schema = read_schema(corpus["ann"])
    for recipe in [Recipe.from_rules(TRICKY_RULES), load_recipe("c4"), load_recipe("fineweb-like")]:
        assert ff.fast_funnel_values(compile_recipe(recipe, schema), threads=2) == _sql_values(corpus["ann"], recipe), \
            recipe.name


def test_numpy_line_path_pads_like_list_zip(tmp_path):
    """Zipped line columns of different lengths: the shorter (or NULL) list is padded with NULL
    lines (DuckDB's list_zip), evaluated with SQL's three-valued logic. Expected figures are
    worked out by hand: DuckDB 2.0 itself reads stale scores out of such padded NULL structs
    inside a list lambda (`_x[2].score` gives another row's value), so it is no referee here."""
    from textsieve.recipes.sql import read_schema

    span = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64())]))
    ispan = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.int64())]))
    words = [[(0, 6, 1), (6, 20, 3)], [], [(0, 9, 7)], None, [(0, 4, None), (4, 12, 6), (12, 13, 0)]]
    bullets = [[(0, 6, 1.0), (6, 20, 0.0)], [(0, 0, None)], [(0, 9, None)], [(0, 5, 0.0)],
               [(0, 4, 1.0), (4, 12, None), (12, 13, 0.0)]]
    as_spans = lambda rows: [None if r is None else [dict(start=a, end=b, score=c) for a, b, c in r] for r in rows]  # noqa: E731
    table = pa.table({"id": [f"d{i}" for i in range(5)], "shard": ["x"] * 5, "row": list(range(5)),
                      "ts_length": [20, 0, 9, 5, 13],
                      "rps_lines_num_words": pa.array(as_spans(words), ispan),
                      "rps_lines_start_with_bulletpoint": pa.array(as_spans(bullets), span)})
    pq.write_table(table, tmp_path / "x.parquet", row_group_size=2)
    recipe = Recipe.from_rules([
        # per doc: 1, NULL (padded line only), 1 (NULL or TRUE), NULL (FALSE or NULL), 2/3
        ("f", "frac(rps_lines_start_with_bulletpoint == 1 or rps_lines_num_words > 2) >= 0.5"),
        # kept line lengths per doc: 14 | 0 (padded line kept: words NULL) | 0 | 5 | 4 + 1
        ("l", "line: rps_lines_start_with_bulletpoint == 0 or rps_lines_num_words is null")])
    assert read_schema(str(tmp_path)).columns["rps_lines_num_words"].kind == "line"
    got = _strip(compute_funnel(str(tmp_path), recipe).to_dict())
    assert got == {"total": 5, "total_chars": 47, "kept": 2, "kept_chars": 19, "rules": [
        {"name": "f", "removed_alone": 2, "chars_removed_alone": 5, "removed_cumulative": 2,
         "chars_removed_cumulative": 5},
        {"name": "l", "removed_alone": 2, "chars_removed_alone": 23, "removed_cumulative": 3,
         "chars_removed_cumulative": 28}]}


def test_sql_path_pads_like_list_zip(tmp_path):
    """The plain DuckDB path (used when attribute sets are joined) agrees on padded lines."""
    test_numpy_line_path_pads_like_list_zip(tmp_path)
    recipe = Recipe.from_rules([
        ("f", "frac(rps_lines_start_with_bulletpoint == 1 or rps_lines_num_words > 2) >= 0.5"),
        ("l", "line: rps_lines_start_with_bulletpoint == 0 or rps_lines_num_words is null")])
    from textsieve.recipes.funnel_numpy import fast_funnel_values
    from textsieve.recipes.sql import compile_recipe, read_schema

    assert _sql_values(str(tmp_path), recipe) == fast_funnel_values(compile_recipe(recipe, read_schema(str(tmp_path))))


def test_line_rule_fast_path_over_many_row_groups(corpus, tmp_path):
    """The NumPy line-rule path works one row group at a time; with many small row groups it
    must give exactly the figures of the all-SQL path."""
    import shutil

    from textsieve.recipes.funnel import connect, funnel_sql
    from textsieve.recipes.funnel_numpy import fast_funnel_values
    from textsieve.recipes.sql import compile_recipe, read_schema

    ann = Path(corpus["ann"])
    small = tmp_path / "small"
    (small / ".textsieve").mkdir(parents=True)
    shutil.copy(ann / ".textsieve" / "annotate.json", small / ".textsieve" / "annotate.json")
    for shard in (ann / "docs").glob("*.parquet"):
        table = pq.read_table(shard)
        meta = pq.read_metadata(shard).metadata
        pq.write_table(table.replace_schema_metadata(meta), small / shard.name, row_group_size=97)
    schema = read_schema(str(small))
    for name in ("c4", "fineweb-like"):
        recipe = load_recipe(name)
        sql, cols = funnel_sql(compile_recipe(recipe, schema))
        slow = dict(zip(cols, (int(v or 0) for v in connect(None).execute(sql).fetchone())))
        assert fast_funnel_values(compile_recipe(recipe, schema), 2) == slow
