"""The dry-run funnel: what each rule removes, alone and cumulatively in recipe order.

All figures are counts and sums of one aggregate query over the attribute columns; no text is
read. Characters are document lengths (`ts_length`, or the `end` of a doc-level span). For a
line rule, "removed documents" are documents left without any line, and "removed characters"
are the characters of the lines it cuts (plus those of documents dropped earlier, for the
cumulative figure).

Line rules are evaluated once per line into a small bit mask (bit j = line rule j passes);
each alone/cumulative figure is then a cheap masked sum over the line lengths. When every rule
reads annotate's own shards, line rules and line reductions are computed in NumPy from the
Arrow buffers (`funnel_numpy`, `lines_numpy`) and the same query (`funnel_query`) runs per
batch over the results: decoding span lists in DuckDB list comprehensions costs 3-5x more.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import duckdb

from textsieve.io.locations import register_filesystems
from textsieve.recipes.funnel_numpy import fast_funnel_values
from textsieve.recipes.funnel_query import funnel_sql
from textsieve.recipes.language import Recipe
from textsieve.recipes.schema import Schema, read_schema
from textsieve.recipes.sql import Compiled, compile_recipe


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
    # real tokens, when the folder has `sets/tokens_*` sets: {ts_tokens_<name>: {total, kept, estimated}}
    tokens: dict[str, dict] = field(default_factory=dict)
    # records written with the recipe's `repeat:` (each kept document up to `cap` times); None without it
    written: int | None = None

    def to_dict(self) -> dict:
        out = {"recipe": self.recipe, "rules": [asdict(r) for r in self.rules], "total": self.total,
               "total_chars": self.total_chars, "kept": self.kept, "kept_chars": self.kept_chars,
               "seconds": round(self.seconds, 3)}
        if self.tokens:
            out["tokens"] = self.tokens
        if self.written is not None:
            out["written"] = self.written
        return out

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
        if self.written is not None:
            lines.append(f"written with repeat: {self.written:,} records ({self.written - self.kept:,} repeats of kept "
                         "documents)")
        lines += self._token_lines()
        return "\n".join(lines)

    def _token_lines(self) -> list[str]:
        out = []
        for col, t in self.tokens.items():
            est = " (estimated: line rules cut documents)" if t.get("estimated") else ""
            share = f"{100.0 * t['kept'] / t['total']:5.1f}%" if t["total"] else "  -  "
            out.append(f"tokens kept ({col}): {t['kept']:,} of {t['total']:,} {share}{est}")
        return out

    def __repr__(self) -> str:
        """The text table: at the prompt a funnel reads as `select --dry-run` prints it."""
        return self.table()

    def _repr_html_(self) -> str:
        """Jupyter's view: the same figures as an HTML table, one row per rule, then `kept`."""
        from textsieve.display import html_table

        def both(x: int, of: int) -> str:
            return f"{x:,} ({100.0 * x / of:.1f}%)" if of else f"{x:,}"

        rows = [[r.name, r.kind, r.condition, both(r.removed_alone, self.total),
                 both(r.chars_removed_alone, self.total_chars), both(r.removed_cumulative, self.total),
                 both(r.chars_removed_cumulative, self.total_chars)] for r in self.rules]
        caption = f"recipe {self.recipe}: {self.total:,} documents, {self.total_chars:,} characters"
        head = ["rule", "kind", "condition", "removed alone: docs", "chars", "cumulative: docs", "chars"]
        kept = [f"kept: {both(self.kept, self.total)} documents, {both(self.kept_chars, self.total_chars)} characters"]
        notes = "".join(f"<p>{html.escape(line)}</p>" for line in kept + self._token_lines())
        return html_table(head, rows, caption, left=(0, 1, 2)) + "\n" + notes


def connect(threads: int | None = None, locations: Iterable[str] = ()) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read `locations` (local paths or any fsspec URL, see
    `textsieve.io.locations`)."""
    from textsieve.io.duckdb_spill import point_spill

    con = point_spill(duckdb.connect())  # never `./.tmp` in the user's folder
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return register_filesystems(con, locations)


def schema_files(schema: Schema) -> list[str]:
    """Every Parquet file a query over `schema` may read (for `connect`)."""
    return [f for files in schema.files.values() for f in files]


def compute_funnel(directory: str, recipe: Recipe, threads: int | None = None) -> Funnel:
    """Dry-run `recipe` over the annotate folder `directory` (attribute columns only)."""
    from textsieve.recipes.funnel_tokens import kept_tokens

    t0 = time.perf_counter()
    compiled = compile_recipe(recipe, read_schema(directory))
    funnel = funnel_of(compiled, threads)
    funnel.tokens = kept_tokens(directory, compiled, threads)  # {} without a `sets/tokens_*` set
    if compiled.repeat_sql is not None:  # the records `select` writes: the kept documents' copies
        from textsieve.recipes.survivors import selection_sql

        sql = f"SELECT coalesce(sum(_rep), 0) FROM ({selection_sql(compiled)})"
        row = connect(threads, schema_files(compiled.schema)).execute(sql).fetchone()
        funnel.written = int(row[0]) if row else 0
    funnel.seconds = time.perf_counter() - t0
    return funnel


def funnel_of(compiled: Compiled, threads: int | None = None) -> Funnel:
    """The funnel of an already compiled recipe (the report compiles once and shares it)."""
    t0 = time.perf_counter()
    recipe = compiled.recipe
    if recipe is None:
        raise ValueError("funnel_of needs the Compiled of compile_recipe (it names the recipe's rules)")
    if compiled.relations == {"a"} and uses_lines(compiled):
        vals = fast_funnel_values(compiled, threads)
    else:
        sql, cols = funnel_sql(compiled)
        row = connect(threads, schema_files(compiled.schema)).execute(sql).fetchone()
        vals = dict(zip(cols, (int(v or 0) for v in row or ())))
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
    """Whether a recipe touches line-level span lists (what the NumPy path speeds up): a line
    rule, or a document rule whose SQL reads a line column of `a` (a reduction, `is null`, a
    learned model's features)."""
    return bool(c.line_rules) or any((col := c.schema.columns.get(n)) is not None and col.kind == "line"
                                     and col.alias == "a" for n in c.columns_read(c.doc_rules))
