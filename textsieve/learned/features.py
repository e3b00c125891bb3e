"""Document features from stored signal spans, computed identically in NumPy and in DuckDB SQL.

A learned filter is trained in Python but applied by `select` as one SQL query over the
attribute Parquet, so every feature it may use must have two exact implementations. The
feature names are a tiny language:

  rps_doc_word_count                       a doc-level signal: the score of its single span
  mean(rps_lines_num_words)                aggregate of a line-level signal's span scores:
  sum(...) / min(...) / max(...)           mean, sum, min or max over the document's lines
  frac(rps_lines_num_words <= 3)           fraction of lines whose score satisfies a comparison
                                           (== != < <= > >=, a numeric literal on the right)
  log1p(<any of the above>)                ln(1 + x), for heavy-tailed counts (x > -1)

A value is missing (null) when the span list is null or empty (a line aggregate of a document
without lines) or the score is null or NaN; the model replaces missing values by an imputed
constant, which the SQL does with COALESCE.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from textsieve.io.arrow_arrays import to_numpy

AGGREGATES = ("mean", "sum", "min", "max")
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_AGG_RE = re.compile(rf"^(mean|sum|min|max)\(\s*({_NAME})\s*\)$")
_FRAC_RE = re.compile(rf"^frac\(\s*({_NAME})\s*(==|!=|<=|>=|<|>)\s*({_NUM})\s*\)$")
_LOG_RE = re.compile(r"^log1p\((.*)\)$")
_COL_RE = re.compile(rf"^{_NAME}$")


class FeatureError(ValueError):
    """A feature name that is not in the feature language, or names a missing column."""


@dataclass(frozen=True)
class Feature:
    """A parsed feature name. `kind` is "doc", one of AGGREGATES, or "frac"."""

    name: str
    column: str
    kind: str
    op: str | None = None
    value: float | None = None
    log1p: bool = False

    def comparison(self) -> tuple[str, float]:
        """(operator, number) of a `frac` feature; the parser sets both for that kind only."""
        if self.op is None or self.value is None:
            raise FeatureError(f"feature {self.name!r} is not a frac(...) comparison")
        return self.op, self.value


def parse_feature(name: str) -> Feature:
    """Parse one feature name (see the module docstring), or raise FeatureError saying why."""
    text = name.strip()
    log = False
    m = _LOG_RE.match(text)
    if m:
        log, text = True, m.group(1).strip()
    if m := _AGG_RE.match(text):
        return Feature(name, m.group(2), m.group(1), log1p=log)
    if m := _FRAC_RE.match(text):
        return Feature(name, m.group(1), "frac", m.group(2), float(m.group(3)), log1p=log)
    if _COL_RE.match(text):
        return Feature(name, text, "doc", log1p=log)
    raise FeatureError(
        f"feature {name!r} is not understood; use a doc-level signal name, "
        f"{'/'.join(AGGREGATES)}(<line signal>), frac(<line signal> OP number) with OP in "
        f"{' '.join(COMPARISONS)}, or log1p(<feature>)")


def columns_of(names: list[str]) -> list[str]:
    """The attribute columns the features read, in first-use order."""
    out: list[str] = []
    for n in names:
        col = parse_feature(n).column
        if col not in out:
            out.append(col)
    return out


def _scores(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float scores of all spans flattened, per-document offsets, per-document null mask)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    valid = ~np.asarray(to_numpy(column.is_null()), dtype=bool)
    # `flatten` skips null lists; offsets of a sliced array need rebasing to its values.
    filled = pc.if_else(column.is_null(), pa.scalar([], type=column.type), column)
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    offsets = np.asarray(to_numpy(filled.offsets), dtype=np.int64)
    offsets = offsets - offsets[0]
    scores = filled.flatten().field("score")
    values = np.asarray(to_numpy(pc.cast(scores, pa.float64())), dtype=np.float64)
    return values, offsets, ~valid


def compute_feature(feature: Feature, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Float64 values of one feature per document; NaN where missing (see module docstring)."""
    values, offsets, null = _scores(column)
    n = len(offsets) - 1
    counts = np.diff(offsets)
    with np.errstate(invalid="ignore", divide="ignore"):
        if feature.kind == "doc":
            out = np.full(n, np.nan)
            has = counts > 0
            out[has] = values[offsets[:-1][has]]
        else:
            v = values
            if feature.kind == "frac":
                v = _compare(values, *feature.comparison()).astype(np.float64)
                v[np.isnan(values)] = np.nan
            out = _segment(v, offsets, "mean" if feature.kind == "frac" else feature.kind)
        out[null] = np.nan
        if feature.log1p:
            out = np.log1p(out)
    return out


def _compare(values: np.ndarray, op: str, value: float) -> np.ndarray:
    return {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
            ">": np.greater, ">=": np.greater_equal}[op](values, value)


def _segment(v: np.ndarray, offsets: np.ndarray, how: str) -> np.ndarray:
    """Per-segment sum/mean/min/max; NaN for empty segments or segments holding a NaN (SQL's
    list aggregates skip nulls, but stored line scores are never null, so NaN only marks a
    missing score and propagates as missing)."""
    n = len(offsets) - 1
    counts = np.diff(offsets)
    out = np.full(n, np.nan)
    has = counts > 0
    if not has.any():
        return out
    starts = offsets[:-1][has]
    if how in ("sum", "mean"):
        s = np.add.reduceat(v, starts) if len(v) else np.zeros(len(starts))
        out[has] = s / counts[has] if how == "mean" else s
    else:
        out[has] = (np.minimum if how == "min" else np.maximum).reduceat(v, starts)
    return out


def compute_features(table: pa.Table, names: list[str]) -> dict[str, np.ndarray]:
    """All features `names` of the documents of an attribute table (one row per document)."""
    out: dict[str, np.ndarray] = {}
    for name in names:
        f = parse_feature(name)
        if f.column not in table.column_names:
            raise FeatureError(f"feature {name!r} needs the attribute column {f.column!r}, which the "
                               f"attributes do not have; available: {', '.join(available_signals(table.schema))}")
        out[name] = compute_feature(f, table.column(f.column))
    return out


def available_signals(schema: pa.Schema) -> list[str]:
    """Signal columns of an attribute schema (span lists with a numeric `score`)."""
    names = []
    for field in schema:
        t = field.type
        if pa.types.is_list(t) and pa.types.is_struct(t.value_type) and t.value_type.get_field_index("score") >= 0:
            names.append(field.name)
    return names


def default_features(schema: pa.Schema) -> list[str]:
    """Every doc-level rule signal (`rps_doc_*`, which includes a quality classifier's
    `rps_doc_ml_NAME_score`), counts as log1p, the mean of every line-level signal
    (`rps_lines_*`), and log1p of every n-gram LM perplexity `ts_perplexity_NAME` (`annotate
    --models NAME=LM.tsm`; its bucket is left out, a coarse copy of it): the features `learn`
    uses by default. Reference scores like these, from models trained on unlabelled target and
    pool data, are what lifts a filter learned from a few hundred labels (benchmarks/learned.py)."""
    sigs = available_signals(schema)
    out = []
    for s in sigs:
        if s.startswith("rps_doc_"):
            out.append(f"log1p({s})" if s in _LOG_SIGNALS else s)
    out += [f"mean({s})" for s in sigs if s.startswith("rps_lines_")]
    out += [f"log1p({s})" for s in sigs if s.startswith("ts_perplexity_") and not s.endswith("_bucket")]
    return out


# Counts with a long tail; their log is the scale a linear model can use.
_LOG_SIGNALS = frozenset({"rps_doc_word_count", "rps_doc_num_sentences", "rps_doc_ldnoobw_words"})


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(x: float) -> str:
    """A DOUBLE literal that round-trips exactly (repr is shortest round-trip)."""
    if not np.isfinite(x):
        raise FeatureError(f"cannot write the non-finite number {x!r} as SQL")
    return f"CAST({float(x)!r} AS DOUBLE)"


def feature_sql(name: str, column_sql: Callable[[str], str] = quote_ident) -> str:
    """DuckDB SQL for a feature's value (NULL where missing), given SQL for each span-list column
    (default: the quoted column name)."""
    f = parse_feature(name)
    col = column_sql(f.column)
    scores = f"list_transform({col}, lambda s: CAST(s.score AS DOUBLE))"
    if f.kind == "doc":
        expr = f"CAST(({col})[1].score AS DOUBLE)"
    elif f.kind == "frac":
        op, value = f.comparison()
        expr = (f"list_avg(list_transform({col}, lambda s: CASE WHEN s.score {op} {sql_literal(value)} "
                f"THEN 1.0 ELSE 0.0 END))")
    else:
        fn = {"mean": "list_avg", "sum": "list_sum", "min": "list_min", "max": "list_max"}[f.kind]
        expr = f"CAST({fn}({scores}) AS DOUBLE)"
    expr = f"NULLIF({expr}, CAST('NaN' AS DOUBLE))"
    return f"ln(1 + {expr})" if f.log1p else expr
