"""What the compiled recipe knows from its AST: the columns its SQL reads (the NumPy funnel reads
exactly those with pyarrow), the line columns it zips, and the line-use test; no caller reads
them back out of the SQL text."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.recipes.funnel import compute_funnel, connect, funnel_of, uses_lines
from textsieve.recipes.funnel_numpy import fast_funnel_values
from textsieve.recipes.funnel_query import funnel_columns, funnel_sql
from textsieve.recipes.language import Recipe
from textsieve.recipes.lines_numpy import LinePlan
from textsieve.recipes.schema import read_schema
from textsieve.recipes.sql import compile_recipe

ISPAN = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.int64())]))
FSPAN = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64())]))
RULES = [
    ("words", "rps_doc_word_count > 2"),  # read through its scalar twin
    ("lang", "ts_lang != 'a.\"rps_lines_gone\"'"),  # an SQL-looking literal is no column reference
    ("frac", "frac(rps_lines_num_words > 1) >= 0.5"),  # done in NumPy: the SQL reads a computed column
    ("mean", "mean(rps_lines_upper) < 0.5"),  # floating mean: left to DuckDB, so the column is read
    ("cut", "line: rps_lines_num_words >= 2 and rps_lines_upper < 0.9"),
]


def _spans(rows: list, f: type = int) -> list:
    return [[{"start": a, "end": b, "score": f(c)} for a, b, c in r] for r in rows]


def _folder(tmp_path) -> str:
    words = [[(0, 5, 1), (5, 12, 3)], [(0, 7, 2)], [(0, 3, 0), (3, 9, 4), (9, 10, 5)], [(0, 4, 2)]]
    upper = [[(0, 5, 0.1), (5, 12, 0.95)], [(0, 7, 0.2)], [(0, 3, 0.5), (3, 9, 0.1), (9, 10, 0.0)], [(0, 4, 1.0)]]
    wc = [[(0, 12, 4)], [(0, 7, 2)], [(0, 10, 9)], [(0, 4, 2)]]
    table = pa.table({"id": [f"d{i}" for i in range(4)], "shard": ["x"] * 4, "row": list(range(4)),
                      "ts_length": [12, 7, 10, 4], "ts_lang": ["en", "de", "en", 'a."rps_lines_gone"'],
                      "rps_doc_word_count": pa.array(_spans(wc), ISPAN), "rps_doc_word_count__score": [4, 2, 9, 2],
                      "rps_lines_num_words": pa.array(_spans(words), ISPAN),
                      "rps_lines_upper": pa.array(_spans(upper, float), FSPAN)})
    pq.write_table(table, tmp_path / "x.parquet", row_group_size=2)
    return str(tmp_path)


def test_columns_read_come_from_the_ast(tmp_path):
    schema = read_schema(_folder(tmp_path))
    compiled = compile_recipe(Recipe.from_rules(RULES), schema)
    assert compiled.line_env == {"rps_lines_num_words": "_x[1]", "rps_lines_upper": "_x[2]"}
    assert compiled.columns_read(["words"]) == {"rps_doc_word_count__score"}
    assert compiled.columns_read(["lang"]) == {"ts_lang"}
    assert uses_lines(compiled)
    assert not uses_lines(compile_recipe(Recipe.from_rules(RULES[:2]), schema))
    plain = ["rps_doc_word_count__score", "rps_lines_num_words", "rps_lines_upper", "ts_lang", "ts_length"]
    assert funnel_columns(compiled) == plain
    numpy = compiled.with_reduce(LinePlan(schema).reduce_hook)
    # the NumPy path computes frac(...) and the line masks; the float mean still reads its column
    assert funnel_columns(numpy, precomputed=True) == ["rps_doc_word_count__score", "rps_lines_upper", "ts_lang",
                                                       "ts_length"]
    # every quoted `a."..."` of the query, literals aside, is a column the AST reported
    sql, _ = funnel_sql(numpy, source="__ts_batch AS a", precomputed=True)
    refs = {m for m in re.findall(r'a\."((?:[^"]|"")*)"', sql) if not m.startswith("__ts_")}
    assert refs - set(funnel_columns(numpy, precomputed=True)) == {"rps_lines_gone"}  # only the literal


def test_numpy_funnel_from_the_compiled_recipe(tmp_path):
    directory = _folder(tmp_path)
    compiled = compile_recipe(Recipe.from_rules(RULES), read_schema(directory))
    sql, cols = funnel_sql(compiled)
    row = connect().execute(sql).fetchone()
    assert row is not None
    assert fast_funnel_values(compiled) == dict(zip(cols, (int(v or 0) for v in row)))
    once = funnel_of(compiled).to_dict()
    again = compute_funnel(directory, Recipe.from_rules(RULES)).to_dict()
    once.pop("seconds")
    again.pop("seconds")
    assert once == again
