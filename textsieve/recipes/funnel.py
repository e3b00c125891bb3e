"""The dry-run funnel: what each rule removes, alone and cumulatively in recipe order.

All figures are counts and sums of one aggregate query over the attribute columns; no text is
read. Characters are document lengths (`ts_length`, or the `end` of a doc-level span). For a
line rule, "removed documents" are documents left without any line, and "removed characters"
are the characters of the lines it cuts (plus those of documents dropped earlier, for the
cumulative figure).

Line rules are evaluated once per line into a small bit mask (bit j = line rule j passes);
each alone/cumulative figure is then a cheap masked sum over the line lengths. When every rule
reads annotate's own shards, line rules and line reductions are computed in NumPy from the
Arrow buffers (`funnel_fast`, `linefast`) and the same query runs per batch over the results:
decoding span lists in DuckDB list comprehensions costs 3-5x more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import duckdb

from textsieve.io.locations import register_filesystems
from textsieve.recipes.sql import Compiled, Schema, compile_recipe, q, read_schema
from textsieve.recipes.language import Recipe


@dataclass
class RuleCount:
    name: str
    kind: str  # "doc" or "line"
    condition: str
    removed_alone: int
    removed_cumulative: int
    chars_removed_alone: int
    chars_removed_cumulative: int


@dataclass
class Funnel:
    recipe: str
    total: int
    total_chars: int
    kept: int
    kept_chars: int
    rules: list[RuleCount] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"recipe": self.recipe, "rules": [asdict(r) for r in self.rules], "total": self.total,
                "total_chars": self.total_chars, "kept": self.kept, "kept_chars": self.kept_chars,
                "seconds": round(self.seconds, 3)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def table(self) -> str:
        """The funnel as a text table (what `select --dry-run` prints)."""
        def pct(x: int, of: int) -> str:
            return f"{100.0 * x / of:5.1f}%" if of else "  -  "

        w = max([len(r.name) for r in self.rules] + [8])
        head = (f"{'rule':<{w}}  {'kind':4}  {'alone: docs':>18}  {'chars':>19}  "
                f"{'cumulative: docs':>18}  {'chars':>19}")
        lines = [f"recipe {self.recipe}: {self.total:,} documents, {self.total_chars:,} characters", head]
        for r in self.rules:
            lines.append(f"{r.name:<{w}}  {r.kind:4}  {r.removed_alone:>11,} {pct(r.removed_alone, self.total)}  "
                         f"{r.chars_removed_alone:>12,} {pct(r.chars_removed_alone, self.total_chars)}  "
                         f"{r.removed_cumulative:>11,} {pct(r.removed_cumulative, self.total)}  "
                         f"{r.chars_removed_cumulative:>12,} {pct(r.chars_removed_cumulative, self.total_chars)}")
        lines.append(f"{'kept':<{w}}        {self.kept:>11,} {pct(self.kept, self.total)}  "
                     f"{self.kept_chars:>12,} {pct(self.kept_chars, self.total_chars)}")
        return "\n".join(lines)


def line_masks(c: Compiled) -> tuple[dict[str, int], list[int]]:
    """Bit of each line rule (recipe order) and the bit sets whose kept characters the funnel
    needs: each rule alone and every prefix of the line rules."""
    line_bit = {n: 1 << j for j, n in enumerate(n for n in c.order if n in c.line_rules)}
    masks: set[int] = set()
    acc = 0
    for n in c.order:
        if n in line_bit:
            masks.add(line_bit[n])
            acc |= line_bit[n]
            masks.add(acc)
    return line_bit, sorted(masks)


def funnel_sql(c: Compiled, source: str | None = None, precomputed: bool = False,
               group: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The aggregate query and the (figure, rule) order of its output columns. `source` replaces
    the FROM clause (it must be aliased `a`); with `precomputed`, the kept characters of each
    line mask come from columns `__ts_k<mask>` of `a` (see `linefast`) instead of SQL. With
    `group` (an SQL expression over `source`), one row per group value, the value first (the
    report's funnel per source and per language)."""
    names = c.order
    doc_idx = {n: i for i, n in enumerate(n for n in names if n in c.doc_rules)}
    line_bit, masks = line_masks(c)
    base = [f"{c.schema.length_sql} AS _len"]
    base += [f"coalesce({c.doc_rules[n]}, FALSE) AS _d{i}" for n, i in doc_idx.items()]
    mid = ["_len"] + [f"_d{i}" for i in doc_idx.values()]
    if group is not None:
        base.append(f"{group} AS _g")
        mid.append("_g")
    if line_bit and precomputed:
        base += [f'a."__ts_k{b}" AS _k{b}' for b in masks]
        mid += [f"_k{b}" for b in masks]
    elif line_bit:
        bits = " + ".join(f"(CASE WHEN coalesce({c.line_rules[n]}, FALSE) THEN {b} ELSE 0 END)"
                          for n, b in line_bit.items())
        base.append(f"[{bits} for _x in {c.line_source}] AS _lm")
        base.append(f"{c.line_lengths_sql()} AS _ll")
        mid += [f"coalesce(list_sum(list_where(_ll, [(_m & {b}) = {b} for _m in _lm])), 0) AS _k{b}" for b in masks]

    aggs, cols = ["count(*)", "coalesce(sum(_len), 0)"], [("total", ""), ("total_chars", "")]
    doc_acc: list[str] = []
    line_acc = 0
    for n in names:
        if n in doc_idx:
            d = f"_d{doc_idx[n]}"
            aggs += [f"count_if(NOT {d})", f"coalesce(sum(_len) FILTER (WHERE NOT {d}), 0)"]
            doc_acc.append(d)
        else:
            b = line_bit[n]
            aggs += [f"count_if(_k{b} = 0)", f"coalesce(sum(_len - _k{b}), 0)"]
            line_acc |= b
        survive = " AND ".join(doc_acc + ([f"_k{line_acc} > 0"] if line_acc else [])) or "TRUE"
        kept = f"_k{line_acc}" if line_acc else "_len"
        aggs += [f"count(*) - count_if({survive})",
                 f"coalesce(sum(_len), 0) - coalesce(sum({kept}) FILTER (WHERE {survive}), 0)"]
        cols += [("alone", n), ("chars_alone", n), ("cum", n), ("chars_cum", n)]
    sql = (f"WITH base AS (SELECT {', '.join(base)} FROM {source or c.from_sql()}), "
           f"mid AS (SELECT {', '.join(mid)} FROM base) "
           + (f"SELECT {', '.join(aggs)} FROM mid" if group is None else
              f"SELECT _g, {', '.join(aggs)} FROM mid GROUP BY _g"))
    return sql, cols


def connect(threads: int | None = None, locations: Iterable[str] = ()) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read `locations` (local paths or any fsspec URL, see
    `textsieve.io.locations`)."""
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return register_filesystems(con, locations)


def schema_files(schema: Schema) -> list[str]:
    """Every Parquet file a query over `schema` may read (for `connect`)."""
    return [f for files in schema.files.values() for f in files]


def compute_funnel(directory: str, recipe: Recipe, threads: int | None = None) -> Funnel:
    """Dry-run `recipe` over the annotate folder `directory` (attribute columns only)."""
    t0 = time.perf_counter()
    schema = read_schema(directory)
    compiled = compile_recipe(recipe, schema)
    if compiled.relations == {"a"} and uses_lines(compiled):
        from textsieve.recipes.funnel_numpy import fast_funnel_values

        vals = fast_funnel_values(recipe, schema, threads)
    else:
        sql, cols = funnel_sql(compiled)
        row = connect(threads, schema_files(schema)).execute(sql).fetchone()
        vals = dict(zip(cols, (int(v or 0) for v in row)))
    total, total_chars = vals[("total", "")], vals[("total_chars", "")]
    rules = []
    by_name = {r.name: r for r in recipe.rules}
    for n in compiled.order:
        rules.append(RuleCount(n, "line" if by_name[n].line else "doc", by_name[n].source(),
                               vals[("alone", n)], vals[("cum", n)], vals[("chars_alone", n)], vals[("chars_cum", n)]))
    last = rules[-1]
    return Funnel(recipe.name, total, total_chars, total - last.removed_cumulative,
                  total_chars - last.chars_removed_cumulative, rules, time.perf_counter() - t0)


def uses_lines(c: Compiled) -> bool:
    """Whether a recipe touches line-level span lists (what the NumPy path speeds up)."""
    return bool(c.line_rules) or any(col.kind == "line" and f"a.{q(col.name)}" in sql
                                     for sql in c.doc_rules.values() for col in c.schema.columns.values())
