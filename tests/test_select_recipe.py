"""Recipe parsing and validation: the rule language, bundled recipes, and the error messages."""

from __future__ import annotations

import pyarrow as pa
import pytest

from textsieve.recipes.language import (
    Between,
    Binary,
    Call,
    Col,
    In,
    IsNull,
    Lit,
    Recipe,
    RecipeError,
    Unary,
    bundled_recipes,
    load_recipe,
    parse_rule,
)
from textsieve.recipes.sql import Column, Schema, compile_recipe, read_schema

SPAN_F = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64())]))
SPAN_I = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.int64())]))


def _schema() -> Schema:
    s = Schema("DIR", {"a": ["a.parquet"], "s0": ["s.parquet"]}, {"s0": "dedup_exact"})
    for name, kind, typ, alias in [
        ("rps_doc_word_count", "doc", SPAN_I, "a"),
        ("rps_doc_mean_word_length", "doc", SPAN_F, "a"),
        ("rps_lines_num_words", "line", SPAN_I, "a"),
        ("rps_lines_start_with_bulletpoint", "line", SPAN_F, "a"),
        ("signature_sim0.8", "other", pa.list_(pa.binary()), "a"),
        ("dup_exact_keep", "scalar", pa.bool_(), "s0"),
        ("dup_exact_group", "scalar", pa.int64(), "s0"),
    ]:
        s.columns[name] = Column(name, kind, alias, typ, "" if alias == "a" else "dedup_exact")
    return s


def test_parse_precedence_and_forms():
    n = parse_rule("a between 1 and 2 and not b > 3 or c in [1, 'x'] and d is not null")
    assert n == Binary("or",
                       Binary("and", Between(Col("a"), Lit(1), Lit(2)), Unary("not", Binary(">", Col("b"), Lit(3)))),
                       Binary("and", In(Col("c"), (Lit(1), Lit("x"))), IsNull(Col("d"), negated=True)))
    assert parse_rule("frac(x == 1) <= 0.9") == Binary("<=", Call("frac", (Binary("==", Col("x"), Lit(1)),)), Lit(0.9))
    assert parse_rule("x = -1.5e3") == Binary("==", Col("x"), Lit(-1500.0))
    assert parse_rule("quality.predict > 0.5") == Binary(">", Col("quality.predict"), Lit(0.5))
    assert parse_rule("a not between 1 and 2") == Between(Col("a"), Lit(1), Lit(2), negated=True)


@pytest.mark.parametrize("text, fragment", [
    ("rps_doc_word_count => 5", "'>' at position 20"),
    ("rps_doc_word_count ~ 5", "unexpected '~'"),
    ("rps_doc_word_count between 5", "expected 'and'"),
    ("median(rps_lines_num_words) > 1", "unknown function 'median'"),
    ("rps_doc_word_count > ", "found the end"),
    ("x in [y]", "literal values only"),
])
def test_syntax_errors_name_rule_and_operators(text, fragment):
    with pytest.raises(RecipeError) as e:
        Recipe.from_rules({"my_rule": text})
    msg = str(e.value)
    assert "'my_rule'" in msg and fragment in msg
    assert "valid operators: <, <=" in msg and "between" in msg


@pytest.mark.parametrize("text, fragment", [
    ("rps_doc_wordcount > 5", "unknown column 'rps_doc_wordcount'; did you mean 'rps_doc_word_count'? "
                              "valid names: dup_exact_group, dup_exact_keep, "
                              "rps_doc_mean_word_length, rps_doc_word_count, rps_lines_num_words"),
    ("rps_lines_num_words > 5", "'rps_lines_num_words' is a line-level signal"),
    ("rps_doc_word_count", "is a value, not a condition"),
    ("dup_exact_keep > 1", "cannot compare a bool with a num"),
    ("not rps_doc_word_count", "operator 'not' needs a condition"),
    ("mean(rps_doc_word_count) > 1", "reduces a line-level signal"),
    ("signature_sim0.8 > 1", "can only be tested with 'is null'"),
    ("quality.predict > 0.5", "unknown column 'quality.predict'"),
])
def test_semantic_errors_name_rule_column_and_valid_names(text, fragment):
    with pytest.raises(RecipeError) as e:
        compile_recipe(Recipe.from_rules({"bad": text}), _schema(), models={})
    assert "rule 'bad'" in str(e.value) and fragment in str(e.value)


def test_line_rule_needs_line_column():
    with pytest.raises(RecipeError, match="rule 'l'.*must use a line-level column; line-level columns: "
                                          "rps_lines_num_words, rps_lines_start_with_bulletpoint"):
        compile_recipe(Recipe.from_rules({"l": "line: rps_doc_word_count > 3"}), _schema(), models={})


def test_compiles_booleans_sets_nulls_and_reductions():
    c = compile_recipe(Recipe.from_rules({
        "keep": "dup_exact_keep",
        "grp": "dup_exact_group is null or dup_exact_group != 3",
        "bul": "frac(rps_lines_start_with_bulletpoint == 1) <= 0.9",
        "sig": "signature_sim0.8 is not null",
        "lines": "line: rps_lines_num_words >= 5",
    }), _schema(), models={})
    assert c.relations == {"a", "s0"}
    assert set(c.doc_rules) == {"keep", "grp", "bul", "sig"} and set(c.line_rules) == {"lines"}
    assert "LEFT JOIN" in c.from_sql() and "list_avg" in c.doc_rules["bul"]


def test_recipe_yaml_forms_and_errors(tmp_path):
    r = Recipe.from_yaml("rules:\n  - b: 'x > 1'\n  - a: 'line: y < 2'\n")
    assert [x.name for x in r.rules] == ["b", "a"] and r.rules[1].line and r.rules[1].text == "y < 2"
    with pytest.raises(RecipeError, match="used twice"):
        Recipe.from_yaml("rules:\n  - a: 'x > 1'\n  - a: 'x > 2'\n")
    with pytest.raises(RecipeError, match="unknown keys \\['rule'\\]"):
        Recipe.from_yaml("rule:\n  a: 'x > 1'\n")
    with pytest.raises(RecipeError, match="rule 'a': condition must be a string"):
        Recipe.from_yaml("rules:\n  a: 5\n")
    with pytest.raises(RecipeError,
                       match="no bundled recipe 'gopherr'; bundled: c4, fineweb-like, gopher, rpv1-arxiv, rpv1-books, "
                             "rpv1-c4, rpv1-cc, rpv1-github, rpv1-stackexchange, rpv1-wikipedia, rpv2-card-gopher, "
                             "rpv2-gopher"):
        load_recipe("gopherr")
    p = tmp_path / "m.yaml"
    p.write_text("models: {quality: q.json}\nrules:\n  ok: 'quality.predict > 0.5'\n")
    assert load_recipe(str(p)).models == {"quality": str(tmp_path / "q.json")}


def test_bundled_recipes_are_short_cited_and_valid():
    from importlib import resources

    names = bundled_recipes()
    rpv1 = {f"rpv1-{s}" for s in ("cc", "c4", "github", "arxiv", "wikipedia", "stackexchange", "books")}
    assert set(names) == {"rpv2-gopher", "rpv2-card-gopher", "gopher", "c4", "fineweb-like"} | rpv1
    for name in names:
        text = (resources.files("textsieve.recipes") / "bundled" / f"{name}.yaml").read_text()
        assert len(text.splitlines()) <= 20 and text.startswith("#")
        load_recipe(name)  # parses
    assert [r.name for r in load_recipe("c4").line_rules] == ["terminal_punctuation", "min_words_per_line",
                                                              "no_javascript"]


def test_a_recipe_extends_another_replacing_rules_of_the_same_name(tmp_path):
    """`extends:` starts from a base recipe's rules (rpv1-c4 is C4's); a rule of the same name
    replaces the base's in its place, new rules come after."""
    assert [r.source() for r in load_recipe("rpv1-c4").rules] == [r.source() for r in load_recipe("c4").rules]
    p = tmp_path / "mine.yaml"
    p.write_text("extends: c4\nrules:\n  min_sentences: rps_doc_num_sentences >= 5\n  long: rps_doc_word_count > 50\n")
    rules = load_recipe(str(p)).rules
    assert [r.name for r in rules][3:5] == ["min_sentences", "no_bad_words"] and rules[-1].name == "long"
    assert rules[3].source() == "rps_doc_num_sentences >= 5"


@pytest.mark.parametrize("literal, value", [
    ("'café'", "café"), ("'naïve – 日本'", "naïve – 日本"), ("'it\\'s'", "it's"), ('"say \\"hi\\""', 'say "hi"'),
    ("'a\\\\b'", "a\\b"), ("'tab\\there'", "tab\there"), ("'\\u00e9\\U0001F600\\x41'", "é\U0001F600A"),
])
def test_string_literals_round_trip_exactly(literal, value):
    """Literals keep every character as written and decode only backslash escapes; DuckDB gets
    the same string back (issue 16, item 15: 'café' used to become 'cafÃ©')."""
    import duckdb

    from textsieve.recipes.sql import lit

    node = Recipe.from_rules({"r": f"id == {literal}"}).rules[0].node
    assert node.right == Lit(value)
    assert duckdb.connect().execute(f"SELECT {lit(value)}").fetchall() == [(value,)]


def test_unknown_escape_names_the_rule():
    with pytest.raises(RecipeError, match=r"rule 'bad': unknown escape \\x in a string literal"):
        _ = Recipe.from_rules({"bad": "id == '\\x'"}).rules[0].node


@pytest.mark.parametrize("text, match", [
    ("rps_doc_word_count > 1e999", r"rule 'big': the number 1e999 is out of range"),
    ("rps_doc_word_count > -1e400", r"rule 'big': the number 1e400 is out of range"),
    ("rps_doc_word_count > 100000000000000000000000", r"rule 'big': the integer 1\d+ does not fit in 64 bits"),
])
def test_out_of_range_numbers_name_the_rule(text, match):
    """Issue 16, item 15: `x > 1e999` became `CAST(inf AS DOUBLE)` and DuckDB failed with a
    BinderError traceback ('Referenced column "inf" not found'); now the rule is named."""
    with pytest.raises(RecipeError, match=match):
        _ = Recipe.from_rules({"big": text}).rules[0].node


def test_non_finite_floats_reach_duckdb_as_values():
    """The Python API can build a literal the language refuses; it still renders as a value."""
    import duckdb

    from textsieve.recipes.sql import lit

    assert duckdb.connect().execute(f"SELECT {lit(float('inf'))} > 1e308, {lit(-float('inf'))} < 0").fetchall() == [
        (True, True)]


# ---------------------------------------------------------------- issue 26 item 6: every bad rule at once

BAD_RULES = """\
name: typos
rules:
  words: "rps_doc_word_count >= 50"
  mean_len: "rps_doc_mean_wordlength between 3 and 10"
  lines: "line: rps_lines_num_word >= 3"
  value: "rps_doc_word_count"
  bullets: "frac(rps_lines_start_with_bulletpoint == 1) <= 0.9"
"""


@pytest.fixture(scope="module")
def attrs(dev_dir, tmp_path_factory):
    """40 real web pages annotated with a doc- and two line-level signals."""
    import gzip
    import json

    from _files import web_docs

    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    tmp = tmp_path_factory.mktemp("recipe-errors")
    with gzip.open(tmp / "web.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in web_docs(dev_dir, 40))
    run_annotate(AnnotateConfig([str(tmp / "web.jsonl.gz")], str(tmp / "attrs"), workers=1, progress=False,
                                signals=["rps_doc_word_count", "rps_lines_num_words",
                                         "rps_lines_start_with_bulletpoint"]))
    return tmp / "attrs"


def test_every_bad_rule_is_reported_with_its_line(attrs, tmp_path, capsys):
    """Three bad rules of five (an unknown doc column, an unknown line column, a value that is
    not a condition): one error lists all three in recipe order with their lines in the file,
    and the list of valid names once, not three times."""
    from textsieve.cli import main

    recipe = tmp_path / "typos.yaml"
    recipe.write_text(BAD_RULES)
    assert main(["select", str(attrs), "--recipe", str(recipe), "--dry-run", "-q"]) != 0
    err = capsys.readouterr().err
    head, *items, foot = err.strip().splitlines()
    assert head == f"textsieve: error: recipe file {recipe}: recipe 'typos' has 3 bad rules:"
    assert [i.split(":")[0] for i in items] == ["  - line 4", "  - line 5", "  - line 6"]
    assert "rule 'mean_len'" in items[0] and "unknown column 'rps_doc_mean_wordlength'" in items[0]
    assert "rule 'lines'" in items[1] and "did you mean 'rps_lines_num_words'?" in items[1]
    assert "rule 'value'" in items[2] and "is a value, not a condition" in items[2]
    assert foot.startswith("  valid names: ") and "rps_lines_num_words" in foot and err.count("valid names") == 1
    with pytest.raises(RecipeError) as e:  # the API raises the same, with each problem by rule
        compile_recipe(load_recipe(recipe), read_schema(str(attrs)))
    assert [rule for rule, _ in e.value.problems] == ["mean_len", "lines", "value"]


def test_every_syntax_error_is_reported_and_one_keeps_its_message(tmp_path):
    recipe = tmp_path / "syntax.yaml"
    recipe.write_text("rules:\n  - a: 'rps_doc_word_count => 5'\n  - ok: 'rps_doc_word_count > 5'\n"
                      "  - b: 'x in [y]'\n  - c: 7\n  - ok: 'rps_doc_word_count > 6'\n")
    with pytest.raises(RecipeError) as e:
        load_recipe(recipe)
    msg = str(e.value)
    assert msg.startswith(f"recipe file {recipe}: recipe 'syntax' has 4 bad rules:\n  - line 2: rule 'a': ")
    assert "\n  - line 4: rule 'b': " in msg and "literal values only" in msg
    assert "\n  - line 5: rule 'c': condition must be a string, got 7" in msg
    assert "\n  - line 3: recipe 'syntax': rule name 'ok' used twice" in msg  # the name's first line
    assert msg.count("valid operators:") == 1
    with pytest.raises(RecipeError) as one:  # a single bad rule: its message as before, with its line
        Recipe.from_yaml("rules:\n  good: 'x > 1'\n  bad: 'x => 1'\n")
    assert str(one.value).startswith("line 3: rule 'bad': expected a column, number, string or '('")
