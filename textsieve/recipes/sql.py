"""Compile a recipe into DuckDB SQL over the attribute Parquet of one annotate folder.

Why one query: DuckDB reads only the columns the rules mention (projection pushdown on
Parquet), evaluates every rule in one vectorised pass on all cores, and never touches text.
The main attribute shards are the `a` relation; every attribute set `DIR/_<name>/` whose
columns a rule uses is LEFT JOINed on (shard, row), so a document missing from a set sees
nulls there (and fails rules on it, see `recipe` on nulls). Which columns exist, and of which
kind, is `schema`'s job.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from textsieve.recipes.language import (
    REDUCTIONS,
    Between,
    Binary,
    Call,
    Col,
    In,
    IsNull,
    Lit,
    Node,
    Recipe,
    RecipeError,
    Rule,
    Unary,
    columns_of,
    rule_errors,
)
from textsieve.recipes.schema import END, Column, Schema, q

# The schema used to live here; callers that import it from `sql` keep working.
from textsieve.recipes.schema import KEY_COLUMNS as KEY_COLUMNS
from textsieve.recipes.schema import read_schema as read_schema
from textsieve.recipes.schema import schema_from_arrow as schema_from_arrow

MODEL_ATTRS = ("predict",)


class SqlModel(Protocol):
    """What a recipe needs of a learned model (`learned.model.LearnedModel`): its prediction as
    SQL, given SQL for each feature."""

    def predict_sql(self, feature_sql_fn: Callable[[str], str] | None = None) -> str: ...


def lit(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # inf/nan (from the API; the recipe language refuses them) as strings
        return f"CAST({value!r} AS DOUBLE)" if math.isfinite(value) else f"CAST('{value!r}' AS DOUBLE)"
    return "'" + str(value).replace("'", "''") + "'"


def element_field(element: str, name: str) -> str:
    """SQL of field `name` (already quoted if needed) of a line element. A zipped element
    (`_x[k]`) is NULL where list_zip padded a shorter list, and DuckDB 2.0 extracts stale values
    from such a NULL struct inside a list lambda, so the NULL is tested explicitly."""
    if element == "_x":
        return f"{element}.{name}"
    return f"(CASE WHEN {element} IS NULL THEN NULL ELSE {element}.{name} END)"


class _Compiler:
    """AST -> SQL for one rule. `line` (column -> SQL of its element) set: inside a per-line
    context, i.e. the body of a list comprehension over the line spans."""

    def __init__(self, schema: Schema, rule: Rule, models: dict[str, SqlModel],
                 reduce: Callable[[Call], str | None] | None = None):
        self.schema, self.rule, self.models = schema, rule, models
        self.reduce = reduce  # see compile_recipe
        self.used: set[str] = set()  # relation aliases needed
        self.reads: set[tuple[str, str]] = set()  # (alias, stored column) the emitted SQL refers to

    def ref(self, col: Column, stored: str | None = None) -> str:
        """SQL of a stored column of `col`'s relation (`col` itself, or its scalar twin), noted in
        `reads`: the NumPy funnel reads exactly these with pyarrow."""
        name = stored or col.name
        self.reads.add((col.alias, name))
        return f"{col.alias}.{q(name)}"

    def fail(self, msg: str) -> RecipeError:
        return RecipeError(f"rule {self.rule.name!r} ({self.rule.source()!r}): {msg}")

    def column(self, name: str) -> Column:
        if name in self.schema.ambiguous:
            raise self.fail(f"column {name!r} exists in several attribute sets: {self.schema.ambiguous[name]}")
        col = self.schema.columns.get(name)
        if col is None:
            valid = self.schema.valid_names() + [f"{m}.predict" for m in self.models]
            near = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
            hint = f"did you mean {near[0]!r}? " if near else ""
            stale = getattr(self.schema, "stale", [])
            if stale:
                hint = (f"attribute set(s) {', '.join(map(repr, stale))} were left out: made before the documents "
                        "were annotated again; re-run the stage that made them. ") + hint
            raise self.fail(f"unknown column {name!r}; {hint}valid names: {', '.join(valid)}")
        self.used.add(col.alias)
        return col

    def check_known(self, node: Node) -> None:
        """Fail on the first unknown column of `node` (with its "did you mean"), before a check
        that only looks at known columns could report a misleading error instead."""
        for name in columns_of(node):
            alias, _, attr = name.partition(".")
            if not (attr and alias in self.models and name not in self.schema.columns):
                self.column(name)

    def iterate(self, names: list[str]) -> tuple[str, dict[str, str]]:
        """What to iterate for line columns `names` and each column's element SQL. Iterating
        elements (not indexes: `col[i]` copies per access) keeps this linear in the lines."""
        cols = [self.column(n) for n in names]
        if len(cols) == 1:
            return self.ref(cols[0]), {names[0]: "_x"}
        zipped = ", ".join(self.ref(c) for c in cols)
        return f"list_zip({zipped})", {n: f"_x[{k + 1}]" for k, n in enumerate(names)}

    def span(self, col: Column, idx: str) -> str:
        return f"{self.ref(col)}[{idx}]"

    # Returns (sql, type) with type in {"bool", "num", "str", "null", "any"}.
    def expr(self, n: Node, line: dict[str, str] | None) -> tuple[str, str]:
        if isinstance(n, Lit):
            t = "null" if n.value is None else "bool" if isinstance(n.value, bool) else \
                "str" if isinstance(n.value, str) else "num"
            return lit(n.value), t
        if isinstance(n, Col):
            return self.col_expr(n.name, line)
        if isinstance(n, Unary):
            sql, t = self.expr(n.arg, line)
            if n.op == "not":
                self.want(t, "bool", "not")
                return f"(NOT {sql})", "bool"
            self.want(t, "num", "-")
            return f"(-{sql})", "num"
        if isinstance(n, Binary):
            ls, lt = self.expr(n.left, line)
            rs, rt = self.expr(n.right, line)
            if n.op in ("and", "or"):
                self.want(lt, "bool", n.op)
                self.want(rt, "bool", n.op)
                return f"({ls} {n.op.upper()} {rs})", "bool"
            if n.op in ("+", "-", "*", "/"):
                self.want(lt, "num", n.op)
                self.want(rt, "num", n.op)
                if n.op == "/":  # division by zero is unknown, not an error
                    return f"(CAST({ls} AS DOUBLE) / NULLIF({rs}, 0))", "num"
                return f"({ls} {n.op} {rs})", "num"
            self.comparable(lt, rt, n.op)
            op = {"==": "="}.get(n.op, n.op)
            return f"({ls} {op} {rs})", "bool"
        if isinstance(n, Between):
            s, t = self.expr(n.arg, line)
            lo, lt = self.expr(n.low, line)
            hi, ht = self.expr(n.high, line)
            self.comparable(t, lt, "between")
            self.comparable(t, ht, "between")
            return f"({s} {'NOT ' if n.negated else ''}BETWEEN {lo} AND {hi})", "bool"
        if isinstance(n, In):
            s, t = self.expr(n.arg, line)
            for v in n.values:
                self.comparable(t, self.expr(v, line)[1], "in")
            vals = ", ".join(lit(v.value) for v in n.values)
            return f"({s} {'NOT ' if n.negated else ''}IN ({vals}))", "bool"
        if isinstance(n, IsNull):
            if isinstance(n.arg, Col):
                s, _ = self.col_expr(n.arg.name, line, any_kind=True)
            else:
                s, _ = self.expr(n.arg, line)
            return f"({s} IS {'NOT ' if n.negated else ''}NULL)", "bool"
        if isinstance(n, Call):
            return self.call(n, line)
        raise self.fail(f"cannot compile {n!r}")  # pragma: no cover

    def want(self, got: str, want: str, op: str) -> None:
        if got not in (want, "null", "any"):
            raise self.fail(f"operator {op!r} needs a {'condition' if want == 'bool' else 'number'}, got a "
                            f"{ {'bool': 'condition', 'num': 'number', 'str': 'string'}[got] }")

    def comparable(self, a: str, b: str, op: str) -> None:
        kinds = {a, b} - {"null", "any"}
        if len(kinds) > 1 or kinds & {"bool"} and op not in ("==", "!="):
            raise self.fail(f"operator {op!r} cannot compare a {a} with a {b}")

    def col_expr(self, name: str, line: dict[str, str] | None, any_kind: bool = False) -> tuple[str, str]:
        alias, _, attr = name.partition(".")
        if attr and alias in self.models and name not in self.schema.columns:
            if attr not in MODEL_ATTRS:
                raise self.fail(f"model {alias!r} has no attribute {attr!r}; valid: {', '.join(MODEL_ATTRS)}")
            return self.model_sql(alias), "num"
        col = self.column(name)
        if col.kind == "doc":
            if col.scalar:
                return self.ref(col, col.scalar), "num" if col.numeric() else "any"
            return f"{self.span(col, '1')}.score", "num" if col.numeric() else "any"
        if col.kind == "line":
            if line is None:
                if any_kind:
                    return self.ref(col), "any"
                raise self.fail(f"{name!r} is a line-level signal (one score per line); reduce it with "
                                f"{', '.join(f'{r}(...)' for r in REDUCTIONS)}, e.g. 'mean({name}) > 0.5', "
                                f"or cut lines with a 'line: ...' rule")
            return element_field(line[name], "score"), "num" if col.numeric() else "any"
        if col.kind == "other" and not any_kind:
            raise self.fail(f"column {name!r} ({col.type}) can only be tested with 'is null' / 'is not null'")
        t = col.type
        typ = "bool" if pa.types.is_boolean(t) else "num" if col.numeric() else \
            "str" if pa.types.is_string(t) or pa.types.is_large_string(t) else "any"
        return self.ref(col), typ

    def model_sql(self, alias: str) -> str:
        from textsieve.learned.features import feature_sql

        model = self.models[alias]
        if not getattr(model, "sql_compilable", True):  # embeddings/n-grams/trees: its stored prediction set
            from textsieve.learned.prediction_set import prediction_column

            try:
                name = prediction_column(model, self.schema)
            except ValueError as exc:
                raise self.fail(f"model {alias!r}: {exc}") from None
            return self.ref(self.column(name))

        def column_sql(col_name: str) -> str:
            return self.ref(self.column(col_name))

        try:
            return "(" + model.predict_sql(lambda feat: feature_sql(feat, column_sql)) + ")"
        except RecipeError:
            raise
        except Exception as exc:
            raise self.fail(f"model {alias!r} cannot be applied here: {exc}") from None

    def call(self, n: Call, line: dict[str, str] | None) -> tuple[str, str]:
        f, args = n.func, n.args
        if f in ("min", "max") and len(args) > 1 or f in ("abs", "ln", "log1p", "coalesce"):
            parts = [self.expr(a, line) for a in args]
            for _, t in parts:
                self.want(t, "num", f)
            sqls = [s for s, _ in parts]
            if f == "abs" or f == "ln" or f == "log1p":
                if len(sqls) != 1:
                    raise self.fail(f"{f}() takes one argument")
                return {"abs": f"abs({sqls[0]})", "ln": f"ln(NULLIF(greatest({sqls[0]}, 0), 0))",
                        "log1p": f"ln(1 + {sqls[0]})"}[f], "num"
            fn = {"min": "least", "max": "greatest", "coalesce": "coalesce"}[f]
            return f"{fn}({', '.join(sqls)})", "num"
        if len(args) != 1:
            raise self.fail(f"{f}() takes one argument")
        self.check_known(args[0])
        kinds = self.schema.columns
        line_cols = [c for c in columns_of(args[0]) if kinds.get(c) and kinds[c].kind == "line"]
        if not line_cols:
            raise self.fail(f"{f}() reduces a line-level signal, but {args[0]!r} uses none; line-level "
                            f"columns: {', '.join(c for c, v in sorted(kinds.items()) if v.kind == 'line')}")
        if line is not None:
            raise self.fail(f"{f}() cannot be nested inside a line context")
        reads = set(self.reads)
        rng, env = self.iterate(line_cols)
        body, t = self.expr(args[0], env)
        if f not in ("count", "frac"):
            self.want(t, "num", f)
        if self.reduce is not None:
            name = self.reduce(n)
            if name is not None:  # a computed column: the SQL no longer reads the line columns
                self.reads = reads
                return f"a.{q(name)}", "num"
        if f in ("count", "frac"):
            if t not in ("bool", "any", "null"):
                # count(col): lines with a known score
                body, t = f"({body} IS NOT NULL)", "bool"
            ints = f"[CAST({body} AS INTEGER) for _x in {rng}]"  # NULL stays NULL (ignored)
            if f == "count":
                return f"coalesce(list_sum({ints}), 0)", "num"
            return f"list_avg({ints})", "num"
        self.want(t, "num", f)
        vals = f"[{body} for _x in {rng}]"
        if f == "sum":
            return f"coalesce(list_sum({vals}), 0)", "num"
        return {"mean": f"list_avg({vals})", "min": f"list_min({vals})", "max": f"list_max({vals})"}[f], "num"


@dataclass
class Compiled:
    """A recipe checked against a schema and translated, once: the SQL of each rule (one boolean
    per document rule, one per-line condition for line rules) plus what the AST says about it,
    so that callers (funnel, report, select) never re-compile or read it back out of the SQL."""

    schema: Schema
    doc_rules: dict[str, str]  # name -> SQL condition (NULL-safe: coalesced to FALSE)
    line_rules: dict[str, str]  # name -> per-line condition over the element `_x` of line_source
    order: list[str]  # rule names in recipe order
    line_source: str | None  # SQL of the list iterated (as `_x`) for line rules
    line_anchor: str | None  # SQL of the element (inside that iteration) whose span is cut
    relations: set[str]
    reads: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)  # rule -> (alias, stored column)
    line_env: dict[str, str] = field(default_factory=dict)  # line column -> its element in line_source, in order
    recipe: Recipe | None = None
    models: dict[str, SqlModel] = field(default_factory=dict)
    repeat_sql: str | None = None  # copies of each kept document (`repeat:`), a BIGINT in 1..cap

    @property
    def line_columns(self) -> list[str]:
        """The line columns iterated together (zipped) by the line rules."""
        return list(self.line_env)

    def columns_read(self, rules: Iterable[str], alias: str = "a") -> set[str]:
        """Stored columns of relation `alias` that the SQL of `rules` reads (scalar twins by their
        own name)."""
        return {name for r in rules for a, name in self.reads.get(r, ()) if a == alias}

    def from_sql(self, relations: set[str] | None = None) -> str:
        """FROM clause: annotate shards plus the attribute sets the rules use (or `relations`)."""
        def rel(alias: str) -> str:
            files = ", ".join(lit(f) for f in self.schema.files[alias])
            return f"read_parquet([{files}])"

        sql = f"{rel('a')} AS a"
        for alias in sorted((self.relations if relations is None else relations) - {"a"}):
            sql += f" LEFT JOIN {rel(alias)} AS {alias} ON a.shard = {alias}.shard AND a.\"row\" = {alias}.\"row\""
        return sql

    def expr_sql(self, rule: Rule, node: Node, line: bool = False) -> tuple[str, set[str]]:
        """SQL of `node`, a part of `rule` (the report's histograms and examples show such
        values), and the relations it needs. `line`: inside the line iteration (`_x`)."""
        c = _Compiler(self.schema, rule, self.models)
        sql, _ = c.expr(node, self.line_env if line else None)
        return sql, c.used | {"a"}

    def with_reduce(self, reduce: Callable[[Call], str | None]) -> Compiled:
        """The same checked recipe rendered again with the line reductions `reduce` claims as
        columns of `a` (see `compile_recipe`): the NumPy funnel computes those columns itself.
        Schema, models and the line-rule checks are reused; nothing is read or parsed again."""
        if self.recipe is None:
            raise ValueError("with_reduce needs the Compiled of compile_recipe")
        bad: dict[str, str] = {}
        compiled = _render(self.recipe, self.schema, self.models, self.line_columns, reduce, bad)
        if bad:  # the rules compiled once already; only a `reduce` column could break one
            problems = [(r.name, bad[r.name]) for r in self.recipe.rules if r.name in bad]
            raise rule_errors(self.recipe.name, problems, self.recipe.lines, self.recipe.origin)
        return compiled

    def line_mask_sql(self, names: list[str]) -> str:
        """Per-document list of line-kept flags for the line rules `names` (all TRUE)."""
        cond = " AND ".join(f"coalesce({self.line_rules[n]}, FALSE)" for n in names)
        return f"[{cond} for _x in {self.line_source}]"

    def line_lengths_sql(self) -> str:
        a = self.line_anchor
        if a is None:
            raise ValueError("line_lengths_sql: the recipe has no line rules")
        return f"[{element_field(a, END)} - {element_field(a, 'start')} for _x in {self.line_source}]"


def compile_recipe(recipe: Recipe, schema: Schema, models: dict[str, SqlModel] | None = None,
                   reduce: Callable[[Call], str | None] | None = None) -> Compiled:
    """Check every rule against `schema` and translate it. Raises one RecipeError naming every
    bad rule (`language.rule_errors`), not only the first.

    `reduce`, if given, is asked for every (checked) line reduction such as `frac(...)`; when it
    returns a column name, the reduction compiles to that column of `a` instead of a DuckDB
    list comprehension (the funnel precomputes such columns in NumPy, see `lines_numpy`)."""
    models = models if models is not None else load_models(recipe)
    bad: dict[str, str] = {}
    compiled = _render(recipe, schema, models, _line_columns(recipe, schema, models, bad), reduce, bad)
    if bad:
        problems = [(r.name, bad[r.name]) for r in recipe.rules if r.name in bad]
        problems += [("repeat", bad["repeat"])] if "repeat" in bad else []
        raise rule_errors(recipe.name, problems, recipe.lines, recipe.origin)
    return compiled


def _line_columns(recipe: Recipe, schema: Schema, models: dict[str, SqlModel], bad: dict[str, str]) -> list[str]:
    """Check the line rules (known columns, at least one line column each) and return every
    line column the good ones use, in order: one iteration zips them for all line rules. A bad
    rule's message goes into `bad`."""
    line_cols: list[str] = []
    for rule in recipe.line_rules:
        try:
            _Compiler(schema, rule, models).check_known(rule.node)
            used = [n for n in columns_of(rule.node) if schema.columns.get(n) and schema.columns[n].kind == "line"]
            if not used:
                raise _Compiler(schema, rule, models).fail(
                    "a 'line:' rule must use a line-level column; line-level columns: "
                    + (", ".join(n for n, v in sorted(schema.columns.items()) if v.kind == "line")
                       or "none in this folder (annotate line-level signals first)"))
        except RecipeError as exc:
            bad[rule.name] = str(exc)
            continue
        line_cols += [n for n in used if n not in line_cols]
    return line_cols


def _render(recipe: Recipe, schema: Schema, models: dict[str, SqlModel], line_cols: list[str],
            reduce: Callable[[Call], str | None] | None, bad: dict[str, str]) -> Compiled:
    """Translate every rule (checking its types); see `compile_recipe`. Rules already in `bad`
    are passed over, and each newly failing one is added to it."""
    doc: dict[str, str] = {}
    line: dict[str, str] = {}
    relations = {"a"}
    reads: dict[str, frozenset[tuple[str, str]]] = {}
    source: str | None = None
    env: dict[str, str] = {}
    if line_cols:  # one iteration shared by every line rule (not one rule's reads: see Compiled.line_env)
        source, env = _Compiler(schema, recipe.line_rules[0], models).iterate(line_cols)
        relations |= {schema.columns[n].alias for n in line_cols}
    for rule in recipe.rules:
        if rule.name in bad:
            continue
        c = _Compiler(schema, rule, models, reduce)
        try:
            sql, t = c.expr(rule.node, env if rule.line else None)
            if t not in ("bool", "null"):
                raise c.fail("the rule is a value, not a condition; compare it, e.g. "
                             f"'{rule.text} > 0'" + (" (boolean columns can be used bare)" if t != "bool" else ""))
        except RecipeError as exc:
            bad[rule.name] = str(exc)
            continue
        (line if rule.line else doc)[rule.name] = sql
        relations |= c.used
        reads[rule.name] = frozenset(c.reads)
    anchor = env.get(line_cols[0]) if line_cols else None
    repeat_sql = None
    if recipe.repeat is not None:  # checked like a rule, under the name `repeat`
        rule = Rule("repeat", recipe.repeat.by)
        c = _Compiler(schema, rule, models, reduce)
        try:
            sql, t = c.expr(rule.node, None)
            if t not in ("num", "null"):
                raise c.fail("repeat.by must be a number (a cluster size, a count), not a condition or text")
            relations |= c.used
            repeat_sql = (f"CAST(least(greatest(coalesce(floor(CAST({sql} AS DOUBLE)), 1), 1), "
                          f"{int(recipe.repeat.cap)}) AS BIGINT)")
        except RecipeError as exc:
            bad["repeat"] = str(exc)
    return Compiled(schema, doc, line, [r.name for r in recipe.rules], source, anchor, relations, reads, env,
                    recipe, models, repeat_sql)


def load_models(recipe: Recipe) -> dict[str, SqlModel]:
    """The learned models a recipe declares (`models: {alias: path}`)."""
    if not recipe.models:
        return {}
    from textsieve.learned.model import load_model

    out: dict[str, SqlModel] = {}
    for alias, path in recipe.models.items():
        tried = recipe.model_search.get(alias)
        if tried and not Path(path).exists():
            written, places = tried[0], tried[1:]
            where = " and ".join(f"{pl} ({lbl})" for pl, lbl in zip(places, (
                ["the recipe's folder", "the working directory"] if len(places) == 2 else ["the working directory"])))
            raise RecipeError(f"recipe {recipe.name!r}: model {alias!r}: {written!r} not found; looked in {where}")
        try:
            out[alias] = load_model(path)
        except (OSError, ValueError) as exc:
            raise RecipeError(f"recipe {recipe.name!r}: model {alias!r} ({path}): {exc}") from None
    return out


FeatureSql = Callable[[str], str]
