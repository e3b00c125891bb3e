"""Statistics for the report, computed with DuckDB over the attribute Parquet (no text read,
except the handful of example documents).

Why DuckDB: every figure is an aggregate over one or two columns, which DuckDB reads with
projection pushdown on all cores, so a report over millions of documents stays cheap. The
recipe's thresholds come from its parsed rules (comparisons of a column or a reduction with a
number). The recipe is compiled once (`compile_recipe`); the funnel (`select --dry-run`'s), the
breakdowns, the derived histograms and the examples all work from that one `Compiled`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import fsspec

from textsieve.io.attributes import SCORE_SUFFIX, attribute_set_dir, attribute_sets
from textsieve.io.publish import ANNOTATE_JSON, SELECTION_JSON, holds, summary_of
from textsieve.io.texts import annotated_texts
from textsieve.recipes.funnel import Funnel, connect, funnel_of, schema_files
from textsieve.recipes.funnel_tokens import kept_tokens, token_totals
from textsieve.recipes.language import (
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
    load_recipe,
)
from textsieve.recipes.schema import Schema, q, read_schema
from textsieve.recipes.sql import Compiled, compile_recipe, lit
from textsieve.report.sources import source_summaries

MAX_DISTINCT = 30  # integer signals with at most this many values get one bar per value
BINS = 40
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


@dataclass(frozen=True)
class Threshold:
    """One `quantity <op> value` comparison of a rule: a document (or line) passes when it holds."""

    rule: str
    op: str
    value: float
    shade: bool = True  # False under `or` / `not between`: passing depends on more than this cut

    def passes(self, v: float) -> bool:
        if not self.shade:
            return True
        return {"<": v < self.value, "<=": v <= self.value, ">": v > self.value, ">=": v >= self.value,
                "==": v == self.value, "!=": v != self.value}[self.op]


@dataclass
class Histogram:
    total: int  # rows (documents or lines)
    nulls: int
    counts: list[int]
    lo: float = 0.0
    hi: float = 0.0
    categorical: bool = False
    values: list[float] = field(default_factory=list)  # categorical: the value of each bar
    below: int = 0  # values left of lo (not drawn)
    above: int = 0  # values right of hi (not drawn)
    mean: float | None = None
    median: float | None = None
    log: bool = False  # bins equal in log10(v) over [lo, hi] (heavy tails, see `report.scales`)
    edges: list[float] = field(default_factory=list)  # bin edges when not equal (log bins of integers)


@dataclass
class Quantity:
    """A histogrammed quantity: a signal (doc- or line-level) or a rule's derived expression."""

    name: str
    label: str
    unit: str  # "documents" or "lines"
    hist: Histogram
    thresholds: list[Threshold] = field(default_factory=list)
    group: str = "signal"  # signal | derived | dsir


@dataclass
class Example:
    id: str
    values: dict[str, Any]
    text: str = ""
    # line rules: (line, kept, line values); the line is its (start, end) span until the text is read
    lines: list[tuple[Any, bool, dict[str, Any]]] | None = None
    shard: str = ""
    row: int = 0


@dataclass
class RuleExamples:
    rule: str
    kind: str
    condition: str
    removed: list[Example]
    kept: list[Example]


@dataclass
class ReportData:
    run_dir: str
    annotate_dir: str
    documents: int
    characters: int
    recipe: Recipe | None
    funnel: Funnel | None
    signals: list[Quantity]
    derived: list[Quantity]
    dsir: list[Quantity]
    dedup_fuzzy: dict | None
    dedup_exact: dict | None
    cluster_sizes: dict[str, Histogram]
    examples: list[RuleExamples]
    selection: dict | None
    pipeline: str | None
    sets: list[str]
    notes: list[str] = field(default_factory=list)
    breakdowns: list = field(default_factory=list)  # report.breakdown.Breakdown: per source, per language
    dedup_exact_sets: dict[str, dict] = field(default_factory=dict)  # every `dedup exact` set: its summary
    extraction: dict | None = None  # the `extract.json` of the run the documents came from (report.extraction)
    tokens: dict[str, dict] = field(default_factory=dict)  # `sets/tokens_*`: {ts_tokens_<name>: {total, tokenizer}}
    embeddings: list = field(default_factory=list)  # report.embeddings.EmbeddingView per `sets/embed_*` set
    dedup_semantic: dict | None = None  # `sets/dedup_semantic/summary.json` (report.embeddings)
    # decontamination, personal data, line dedup and tokens sections (report.training_sets)
    training_sets: list = field(default_factory=list)
    sources: list = field(default_factory=list)  # the `source.json` of each source dump read (report.sources)


# ---------------------------------------------------------------- locating the run

def _child(base: str, name: str) -> str:
    """`base`/`name`, in the form the user gave `base` (local path or fsspec URL)."""
    return f"{base.rstrip('/')}/{name}" if base.rstrip("/") else name


def _is_file(location: str) -> bool:
    fs, path = fsspec.core.url_to_fs(location)
    return fs.isfile(path)


def _holds(location: str, rel: str) -> bool:
    """Whether the folder `location` holds bookkeeping file `rel` (an older layout is moved first)."""

    fs, path = fsspec.core.url_to_fs(location)
    return holds(fs, path, rel)


def _subfolders_with(location: str, rel: str) -> list[str]:
    """The sub-folders of `location` that hold bookkeeping file `rel`, sorted, in the user's form."""
    fs, root = fsspec.core.url_to_fs(location)
    root = root.rstrip("/")
    subs = {p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False) if fs.isdir(p)}
    subs = {s for s in subs if not s.startswith(".")}  # bookkeeping, staging: never an output folder
    return sorted(_child(location, sub) for sub in subs if _holds(_child(location, sub), rel))


def read_text(location: str) -> str:
    """A UTF-8 text file at a local path or fsspec URL."""
    with fsspec.open(location, "rb") as fh:
        return fh.read().decode("utf-8")


def locate(run_dir: str, selection: str | None = None) -> tuple[str, str | None, str | None]:
    """(annotate folder, select output folder or None, resolved pipeline file or None) of a run
    folder: an annotate output (has annotate.json) or a `textsieve run` output (attrs/, selected/).
    Local paths and fsspec URLs (memory://, s3://...) alike."""
    fs, path = fsspec.core.url_to_fs(run_dir)
    if not fs.isdir(path):
        raise FileNotFoundError(f"report: {run_dir} is not a folder")
    if _holds(run_dir, ANNOTATE_JSON):
        ann = run_dir
    else:
        found = _subfolders_with(run_dir, ANNOTATE_JSON)
        if not found:
            raise FileNotFoundError(f"report: {run_dir} is neither an annotate output folder (no {ANNOTATE_JSON}) "
                                    "nor a `textsieve run` folder with an annotate output in attrs/")
        ann = _child(run_dir, "attrs") if _child(run_dir, "attrs") in found else found[0]
    sel = None
    if selection:
        if not _holds(selection, SELECTION_JSON):
            raise FileNotFoundError(f"report: --selection {selection}: not a select output (no {SELECTION_JSON})")
        sel = selection
    else:
        cands = _subfolders_with(run_dir, SELECTION_JSON)
        if _child(run_dir, "selected") in cands:
            sel = _child(run_dir, "selected")
        elif cands:
            sel = cands[0]
    pipe = _child(run_dir, "pipeline.resolved.yaml")
    return ann, sel, pipe if _is_file(pipe) else None


def resolve_recipe(spec: str | None, selection: dict | None) -> Recipe | None:
    """--recipe wins; else the recipe recorded in selection.json."""
    if spec:
        return load_recipe(spec)
    if selection and selection.get("recipe"):
        r = selection["recipe"]
        return Recipe.from_dict(r, name=str(r.get("name", "recipe")))
    return None


# ---------------------------------------------------------------- thresholds

def unparse(n: Node) -> str:
    """Readable text of an expression (for chart titles)."""
    if isinstance(n, Lit):
        return repr(n.value) if isinstance(n.value, str) else str(n.value).lower() if isinstance(n.value, bool) \
            else "null" if n.value is None else f"{n.value:g}"
    if isinstance(n, Col):
        return n.name
    if isinstance(n, Call):
        return f"{n.func}({', '.join(unparse(a) for a in n.args)})"
    if isinstance(n, Unary):
        return f"not {unparse(n.arg)}" if n.op == "not" else f"-{unparse(n.arg)}"
    if isinstance(n, Binary):
        return f"{unparse(n.left)} {n.op} {unparse(n.right)}"
    if isinstance(n, Between):
        return f"{unparse(n.arg)} {'not ' if n.negated else ''}between {unparse(n.low)} and {unparse(n.high)}"
    if isinstance(n, In):
        return f"{unparse(n.arg)} {'not ' if n.negated else ''}in [{', '.join(unparse(v) for v in n.values)}]"
    if isinstance(n, IsNull):
        return f"{unparse(n.arg)} is {'not ' if n.negated else ''}null"
    return "?"


def _num(n: Node) -> float | None:
    if isinstance(n, Lit) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
        return float(n.value)
    return None


def comparisons(rule: Rule) -> list[tuple[Node, Threshold]]:
    """(compared expression, threshold) for every `expr <op> number` / `expr between a and b` in
    the rule. Under `not` the operator is negated; under `or` thresholds are not shaded."""
    out: list[tuple[Node, Threshold]] = []

    def walk(n: Node, neg: bool, shade: bool) -> None:
        if isinstance(n, Unary) and n.op == "not":
            walk(n.arg, not neg, shade)
        elif isinstance(n, Binary) and n.op in ("and", "or"):
            sub = shade and ((n.op == "and") != neg)  # `not (a and b)` behaves like an `or`
            walk(n.left, neg, sub)
            walk(n.right, neg, sub)
        elif isinstance(n, Binary) and n.op in _FLIP:
            left, right, op = n.left, n.right, n.op
            if _num(left) is not None and _num(right) is None:
                left, right, op = right, left, _FLIP[op]
            v = _num(right)
            if v is not None and _num(left) is None:
                out.append((left, Threshold(rule.name, _NEGATE[op] if neg else op, v, shade)))
        elif isinstance(n, Between):
            lo, hi = _num(n.low), _num(n.high)
            if lo is not None and hi is not None:
                inside = not (n.negated ^ neg)
                s = shade and inside
                out.append((n.arg, Threshold(rule.name, ">=" if inside else "<", lo, s)))
                out.append((n.arg, Threshold(rule.name, "<=" if inside else ">", hi, s)))

    walk(rule.node, False, True)
    return out


# ---------------------------------------------------------------- histograms

def _one_row(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    """The row of an aggregate query without GROUP BY (DuckDB always returns exactly one).
    Fetched to the end: DuckDB 2 keeps a result whose last fetch returned rows open, and the
    connection then refuses `register` (the report's next step when it reads record fields)."""
    rows = con.execute(sql).fetchall()
    if not rows:  # pragma: no cover
        raise RuntimeError(f"report: no row from {sql[:120]}")
    return rows[0]


def histogram(con: duckdb.DuckDBPyConnection, values_sql: str, cuts: Sequence[float] = (), name: str = "",
              log: bool | None = False) -> Histogram:
    """Histogram of the column `v` of `values_sql`. Integer quantities with few values get one bar
    per value; otherwise BINS equal bins over [min, 99.5th percentile] (extended to a threshold
    that lies within reach), with what falls outside counted in `below`/`above`. `log` None:
    log10 bins when the quantity `name` is heavy-tailed (`report.scales.wants_log`)."""
    from textsieve.report.scales import fill_log, wants_log

    src = f"(SELECT CAST(v AS DOUBLE) AS v FROM ({values_sql}) WHERE v IS NULL OR NOT isnan(CAST(v AS DOUBLE)))"
    total, n, lo, hi, p_hi, mean, med, distinct, ints, nonpos, p99, lo_pos = _one_row(
        con, f"SELECT count(*), count(v), min(v), max(v), approx_quantile(v, 0.995), avg(v), approx_quantile(v, 0.5), "
        f"approx_count_distinct(v), bool_and(v = floor(v)), count_if(v <= 0), approx_quantile(v, 0.99), "
        f"min(v) FILTER (WHERE v > 0) FROM {src}")
    h = Histogram(int(total), int(total - n), [], mean=mean, median=med)
    if not n:
        return h
    if ints and distinct <= MAX_DISTINCT:
        rows = con.execute(f"SELECT v, count(*) FROM {src} WHERE v IS NOT NULL GROUP BY v ORDER BY v").fetchall()
        if len(rows) <= MAX_DISTINCT:
            h.categorical, h.values, h.counts = True, [float(r[0]) for r in rows], [int(r[1]) for r in rows]
            return h
    if (log or (log is None and wants_log(name, int(n), int(nonpos), med, p99))) and lo_pos is not None:
        return fill_log(con, src, h, float(lo_pos), p_hi, float(hi), int(n), int(nonpos), list(cuts), BINS,
                        bool(ints), int(distinct))
    top = p_hi if p_hi is not None and p_hi > lo else hi
    for c in cuts:
        if top < c <= hi and c <= lo + 3 * (top - lo):
            top = c + (c - lo) * 0.05
    if top <= lo:
        top = lo + 1.0
    if ints and top - lo >= BINS:  # integer bins: whole-number edges
        top = lo + math.ceil((top - lo) / BINS) * BINS
    width = (top - lo) / BINS
    rows = con.execute(
        f"SELECT least(CAST(floor((v - {lo!r}) / {width!r}) AS BIGINT), {BINS - 1}) AS b, count(*) FROM {src} "
        f"WHERE v IS NOT NULL AND v <= {top!r} GROUP BY b").fetchall()
    counts = [0] * BINS
    for b, c in rows:
        counts[int(b)] += int(c)
    h.counts, h.lo, h.hi = counts, float(lo), float(top)
    h.above = int(n - sum(counts))
    return h


def _files(schema: Schema, alias: str) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in schema.files[alias]) + "]"


def signal_quantities(con, schema: Schema, cuts: dict[str, list[Threshold]]) -> list[Quantity]:
    """One histogram per annotate signal: doc-level over documents (the `X__score` twin), line-level
    over all lines' scores."""
    out = []
    src = f"read_parquet({_files(schema, 'a')})"
    for name, col in schema.columns.items():
        if col.alias != "a" or col.kind not in ("doc", "line") or not col.numeric():
            continue
        th = cuts.get(name, [])
        if col.kind == "doc":
            expr = q(col.scalar) if col.scalar else f"{q(name)}[1].score"
            sql = f"SELECT {expr} AS v FROM {src}"
            unit = "documents"
        else:
            sql = f"SELECT unnest([_x.score for _x in {q(name)}]) AS v FROM {src}"
            unit = "lines"
        out.append(Quantity(name, name, unit, histogram(con, sql, [t.value for t in th], name=name, log=None), th))
    return out


# ---------------------------------------------------------------- examples

def rule_examples(con, schema: Schema, recipe: Recipe, compiled: Compiled, per_side: int = 3) -> list[RuleExamples]:
    """For each rule, `per_side` documents it removes and `per_side` it keeps (a deterministic
    pseudo-random pick: ordered by a hash of the id), with the values the rule compares."""
    result = []
    frm = compiled.from_sql()
    for rule in recipe.rules:
        if rule.line:
            result.append(_line_examples(con, rule, compiled, frm, per_side))
            continue
        quants: list[tuple[str, str]] = []
        for node, _ in comparisons(rule):
            label = unparse(node)
            if label not in [x[0] for x in quants]:
                quants.append((label, compiled.expr_sql(rule, node)[0]))
        vals = "".join(f", {sql} AS {q('q' + str(i))}" for i, (_, sql) in enumerate(quants))
        cond = compiled.doc_rules[rule.name]
        sides = []
        for keep in (False, True):
            rows = con.execute(f"SELECT a.shard, a.\"row\", a.id{vals} FROM {frm} WHERE "
                               f"{'' if keep else 'NOT '}coalesce({cond}, FALSE) "
                               f"ORDER BY hash(a.id || {lit(rule.name)}) LIMIT {per_side}").fetchall()
            sides.append([Example(str(r[2]), {lab: r[3 + i] for i, (lab, _) in enumerate(quants)},
                                  shard=r[0], row=int(r[1])) for r in rows])
        result.append(RuleExamples(rule.name, "doc", rule.source(), sides[0], sides[1]))
    wanted = {(e.shard, e.row) for r in result for e in r.removed + r.kept}
    texts = annotated_texts(schema.directory, wanted)
    for r in result:
        for e in r.removed + r.kept:
            text = texts.get((e.shard, e.row), "")
            if e.lines is None:
                e.text = text
            else:
                e.lines = [(text[s:t], kept, v) for (s, t), kept, v in e.lines]
    return result


def _line_examples(con, rule: Rule, compiled: Compiled, frm: str, per_side: int) -> RuleExamples:
    """Line rules: documents where the rule cuts lines (removed) and where it keeps every line."""
    cond = compiled.line_rules[rule.name]
    src, anchor = compiled.line_source, compiled.line_anchor
    used = columns_of(rule.node)
    names = [n for n in compiled.line_columns if n in used]
    vals = ", ".join(compiled.expr_sql(rule, Col(n), line=True)[0] for n in names) or "NULL"
    mask = f"[coalesce({cond}, FALSE) for _x in {src}]"
    sides = []
    for cut in (True, False):
        where = f"NOT list_bool_and({mask})" if cut else f"list_bool_and({mask})"
        rows = con.execute(f"SELECT a.shard, a.\"row\", a.id, {mask}, "
                           f"[[{anchor}.start, {anchor}.\"end\"] for _x in {src}], [[{vals}] for _x in {src}] "
                           f"FROM {frm} WHERE len({src}) > 0 AND {where} "
                           f"ORDER BY hash(a.id || {lit(rule.name)}) LIMIT {per_side}").fetchall()
        exs = []
        for shard, row, doc_id, m, spans, lv in rows:
            lines = [((int(s[0]), int(s[1])), bool(k), dict(zip(names, v))) for s, k, v in zip(spans, m, lv)]
            exs.append(Example(str(doc_id), {"lines cut": sum(not k for k in m), "lines": len(m)},
                               lines=lines, shard=shard, row=int(row)))
        sides.append(exs)
    return RuleExamples(rule.name, "line", rule.source(), sides[0], sides[1])


# ---------------------------------------------------------------- the whole report

def collect(run_dir: str, recipe_spec: str | None = None, selection_dir: str | None = None,
            examples: int = 3, threads: int | None = None, by: str | None = None) -> ReportData:
    """Every figure the report shows. `by`: the field the funnel is broken down by (default
    `source`, when the documents or the attributes have it; see `report.breakdown`)."""
    ann, sel_dir, pipe = locate(run_dir, selection_dir)
    selection = summary_of(sel_dir, SELECTION_JSON) if sel_dir else None
    recipe = resolve_recipe(recipe_spec, selection)
    schema = read_schema(ann)
    con = connect(threads, schema_files(schema))  # reads fsspec URLs (memory://, s3://) too
    notes = []
    docs, chars = _one_row(con, f"SELECT count(*), coalesce(sum({schema.length_sql}), 0) FROM "
                                f"read_parquet({_files(schema, 'a')}) AS a")

    cuts: dict[str, list[Threshold]] = {}
    derived_nodes: dict[str, tuple[Rule, Node, list[Threshold]]] = {}
    compiled: Compiled | None = None
    if recipe is not None:
        compiled = compile_recipe(recipe, schema)  # raises RecipeError naming the rule
        for rule in recipe.rules:
            for node, th in comparisons(rule):
                if isinstance(node, Col):
                    cuts.setdefault(node.name, []).append(th)
                else:
                    key = unparse(node)
                    derived_nodes.setdefault(key, (rule, node, []))[2].append(th)
    signals = signal_quantities(con, schema, cuts)
    derived: list[Quantity] = []
    if compiled is not None:
        for key, (rule, node, ths) in derived_nodes.items():
            sql, rel = compiled.expr_sql(rule, node)
            derived.append(Quantity(key, key, "documents",
                                    histogram(con, f"SELECT {sql} AS v FROM {compiled.from_sql(rel)}",
                                              [t.value for t in ths]),
                                    ths, group="derived"))

    sets = attribute_sets(ann)
    dsir = []
    for name in sets:
        if not name.startswith("dsir_"):
            continue
        target = name[len("dsir_"):]
        for wcol, label in ((f"ts_dsir_{target}_norm", "mean log importance weight per n-gram"),
                            (f"ts_dsir_{target}", "log importance weight (sum over n-grams)")):
            if wcol in schema.columns:
                alias = schema.columns[wcol].alias
                dsir.append(Quantity(wcol, f"{wcol}: {label}", "documents",
                                     histogram(con, f"SELECT {q(wcol)} AS v FROM read_parquet({_files(schema, alias)})",
                                               [t.value for t in cuts.get(wcol, [])]),
                                     cuts.get(wcol, []), group="dsir"))

    def summary(set_name: str) -> dict | None:
        return summary_of(attribute_set_dir(ann, set_name))

    # every `dedup exact` set: one per result-changing setting (`stages.dedup_exact.exact_names`)
    exact_sets = {n: s for n in sets if n == "dedup_exact" or n.startswith("dedup_exact_") if (s := summary(n))}
    fuzzy = summary("dedup_fuzzy")
    exact = exact_sets.get("dedup_exact") or next(iter(exact_sets.values()), None)
    sizes: dict[str, Histogram] = {}
    for name, col in schema.columns.items():
        if name.startswith(("dup_fuzzy_t", "dup_exact")) and name.endswith("_size"):
            key = name[:-len("_size")]
            files = _files(schema, col.alias)
            group = key + ("_group" if key.startswith("dup_exact") else "_cluster")
            sizes[key] = histogram(con, f"SELECT any_value({q(name)}) AS v FROM read_parquet({files}) "
                                        f"WHERE {q(name)} > 1 GROUP BY {q(group)}")

    funnel = ex = None
    if recipe is not None and compiled is not None:
        funnel = funnel_of(compiled, threads)
        funnel.tokens = kept_tokens(ann, compiled, threads)  # {} without a `sets/tokens_*` set
        ex = rule_examples(con, schema, recipe, compiled, examples)
    else:
        notes.append("No recipe: give --recipe NAME|PATH (or a select output folder) to see thresholds, "
                     "the funnel and examples.")
    from textsieve.report.breakdown import breakdowns
    from textsieve.report.embeddings import embedding_views, semantic_summary
    from textsieve.report.extraction import extraction_summary
    from textsieve.report.training_sets import set_sections

    views, view_notes = breakdowns(con, ann, schema, compiled, by)
    embeds = embedding_views(ann, compiled, con, recipe.name if recipe else None)  # [] without `sets/embed_*`
    totals = token_totals(ann, sets)
    extra = set_sections(con, ann, schema, totals, funnel.tokens if funnel else {}, int(chars))
    return ReportData(run_dir, ann, int(docs), int(chars), recipe, funnel, signals, derived, dsir, fuzzy, exact,
                      sizes, ex or [], selection, read_text(pipe) if pipe else None, sets, notes + view_notes,
                      views, exact_sets, extraction_summary(ann), totals, embeds, semantic_summary(ann), extra,
                      source_summaries(ann))


__all__ = ["collect", "locate", "comparisons", "histogram", "Threshold", "Histogram", "Quantity", "ReportData",
           "RecipeError", "SCORE_SUFFIX"]
