"""Line-level rules evaluated in NumPy over Arrow buffers: the funnel's fast path.

Why: DuckDB decodes a `list<struct<start,end,score>>` column whole and evaluates list
comprehensions element by element; with ~40-60 lines per web document that dominates a
funnel (5-8 s per million documents for C4). Here pyarrow reads only the needed leaf columns
(`col.list.element.score`, plus `end` of one column for line lengths), each per-line
predicate is one vectorised NumPy expression over the flat score array, and per-document
results come from list offsets (prefix sums / reduceat). The results are exactly the SQL's:

* SQL three-valued logic: a condition is a pair (definitely true, possibly true); NULL scores
  make comparisons unknown; `coalesce(cond, FALSE)` keeps "definitely true".
* Several line columns in one expression are zipped like DuckDB's `list_zip` (a shorter or
  NULL list is padded with NULLs).
* Reductions: count/frac of a condition (CAST to integer, NULLs ignored), count of a value
  (non-NULL lines), min/max, and sum/mean of integer scores (exact in any order). Sums and
  means of floating scores depend on summation order, so they are left to DuckDB
  (`Unsupported`), as is anything else not listed (doc columns inside a line context, ...).
* Line lengths are differences of consecutive `end`s: RPv2 line spans tile the text (spec
  rpv2-signals §2.1: the first start is 0 and each line starts where the previous ended).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from textsieve.recipes.language import Between, Binary, Call, Col, In, IsNull, Lit, Node, Unary, columns_of
from textsieve.recipes.schema import Schema


class Unsupported(Exception):
    """An expression the NumPy path does not evaluate (DuckDB does instead)."""


# ---------------------------------------------------------------- per-batch line data

@dataclass
class LineCol:
    offsets: np.ndarray  # int64, n_docs + 1, starting at 0
    score: np.ndarray  # flat per-line scores (int64 or float64)
    known: np.ndarray | None  # False where the score is NULL; None: all known
    end: np.ndarray | None = None  # flat `end`s when read


def _flat(a: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    if pa.types.is_boolean(a.type):
        a = a.cast(pa.int64())
    if not (pa.types.is_integer(a.type) or pa.types.is_floating(a.type)):
        raise Unsupported(f"score type {a.type}")
    if a.null_count:
        return np.asarray(a.fill_null(0)), ~np.asarray(a.is_null())
    return np.asarray(a), None


def _chunk(arr: pa.Array, want_end: bool):
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if arr.null_count and np.any(np.diff(offsets)[np.asarray(arr.is_null())] != 0):
        raise Unsupported("null list with elements")  # pragma: no cover (Parquet never gives this)
    struct = arr.values.slice(lo, hi - lo)
    names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
    fields = struct.flatten() if struct.null_count else [struct.field(i) for i in range(len(names))]
    fields = dict(zip(names, fields))
    score, known = _flat(fields["score"])
    end = None
    if want_end:
        end, end_known = _flat(fields["end"])
        if end_known is not None:
            raise Unsupported("null line span end")
    return offsets - lo, score, known, end


def line_col(arr: pa.ChunkedArray | pa.Array, want_end: bool) -> LineCol:
    """Flat buffers of one line-span column read with only its `score` (and `end`) leaves.
    Chunks (one per row group) are joined as NumPy arrays: copying the Arrow list would cost
    more than all the evaluation."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    parts = [_chunk(c, want_end) for c in chunks if len(c)] or [_chunk(pa.array([], arr.type), want_end)]
    if len(parts) == 1:
        return LineCol(*parts[0])
    base = np.cumsum([0] + [int(p[0][-1]) for p in parts[:-1]])
    offsets = np.concatenate([parts[0][0][:1]] + [p[0][1:] + b for p, b in zip(parts, base)])
    score = np.concatenate([p[1] for p in parts])
    known = None
    if any(p[2] is not None for p in parts):
        known = np.concatenate([np.ones(len(p[1]), dtype=bool) if p[2] is None else p[2] for p in parts])
    end = np.concatenate([p[3] for p in parts]) if want_end else None
    return LineCol(offsets, score, known, end)


def _lengths(c: LineCol) -> np.ndarray:
    """Per-line lengths from the tiling ends: end_i - end_(i-1), the first line's is its end."""
    end = c.end
    if end is None:  # pragma: no cover (LinePlan.leaves reads the `end` of the first line column)
        raise ValueError("line lengths need the `end` leaf of the line column")
    lens = np.empty_like(end)
    if len(lens):
        lens[0] = end[0]
        np.subtract(end[1:], end[:-1], out=lens[1:])
    starts = c.offsets[:-1][np.diff(c.offsets) > 0]
    lens[starts] = end[starts]
    return lens


@dataclass
class Zipped:
    """Several line columns aligned like DuckDB's list_zip."""

    offsets: np.ndarray
    cols: dict[str, tuple[np.ndarray, np.ndarray | None]]  # name -> (score, known)
    n: int


def zip_cols(data: dict[str, LineCol], names: list[str]) -> Zipped:
    first = data[names[0]].offsets
    if all(np.array_equal(data[m].offsets, first) for m in names[1:]):
        return Zipped(first, {m: (data[m].score, data[m].known) for m in names}, int(first[-1]))
    lens = np.max([np.diff(data[m].offsets) for m in names], axis=0)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    n = int(offsets[-1])
    cols: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for m in names:
        c = data[m]
        pos = np.repeat(offsets[:-1] - c.offsets[:-1], np.diff(c.offsets)) + np.arange(len(c.score))
        score = np.zeros(n, dtype=c.score.dtype)
        score[pos] = c.score
        known = np.zeros(n, dtype=bool)
        known[pos] = True if c.known is None else c.known
        cols[m] = (score, known)
    return Zipped(offsets, cols, n)


def zip_lengths(data: dict[str, LineCol], names: list[str], z: Zipped) -> np.ndarray:
    """Line lengths of the anchor `names[0]` in the zipped layout (0 where padded)."""
    c = data[names[0]]
    lens = _lengths(c)
    if len(lens) == z.n:
        return lens
    pos = np.repeat(z.offsets[:-1] - c.offsets[:-1], np.diff(c.offsets)) + np.arange(len(lens))
    out = np.zeros(z.n, dtype=lens.dtype)
    out[pos] = lens
    return out


# ---------------------------------------------------------------- expressions (3-valued)

# A value is ("num", values, known) or ("bool", true, possible); known None = all known.
_CMP = {"==": np.equal, "!=": np.not_equal, "<>": np.not_equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


def _and_known(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def check(node: Node, schema: Schema) -> str:
    """Raise Unsupported unless `node` (in a line context) can be evaluated here; its kind."""
    if isinstance(node, Lit):
        if isinstance(node.value, str):
            raise Unsupported("string literal")
        return "bool" if isinstance(node.value, bool) else "num"  # NULL evaluates as an unknown number
    if isinstance(node, Col):
        c = schema.columns.get(node.name)
        if c is None or c.kind != "line" or c.alias != "a" or not c.numeric():
            raise Unsupported(f"column {node.name}")
        return "num"
    if isinstance(node, Unary):
        k = check(node.arg, schema)
        if k != ("bool" if node.op == "not" else "num"):
            raise Unsupported("operand kind")
        return k
    if isinstance(node, Binary):
        lk, rk = check(node.left, schema), check(node.right, schema)
        if node.op in ("and", "or"):
            if lk != "bool" or rk != "bool":
                raise Unsupported("operand kind")
            return "bool"
        if lk != "num" or rk != "num":
            raise Unsupported("operand kind")
        if node.op in _CMP:
            return "bool"
        if node.op in ("+", "-", "*"):
            return "num"
        raise Unsupported(f"operator {node.op}")  # "/": left to DuckDB
    if isinstance(node, (Between, In)):
        parts = (node.arg, node.low, node.high) if isinstance(node, Between) else (node.arg, *node.values)
        if any(check(x, schema) != "num" for x in parts) or (isinstance(node, In) and not node.values):
            raise Unsupported("operand kind")
        return "bool"
    if isinstance(node, IsNull):
        check(node.arg, schema)
        return "bool"
    raise Unsupported(type(node).__name__)


class Evaluator:
    """Evaluates checked line expressions over one Zipped batch."""

    def __init__(self, z: Zipped):
        self.z = z

    def bool(self, node: Node) -> tuple[np.ndarray, np.ndarray]:
        kind, a, b = self.eval(node)
        if kind != "bool":
            raise Unsupported("not a condition")  # pragma: no cover (compile checked types)
        return a, b

    def num(self, node: Node):
        kind, a, b = self.eval(node)
        if kind != "num":
            raise Unsupported("not a number")  # pragma: no cover
        return a, b

    def eval(self, n: Node):
        n_lines = self.z.n
        if isinstance(n, Lit):
            if n.value is None:
                return "num", 0, np.zeros(n_lines, dtype=bool)
            if isinstance(n.value, bool):
                v = np.full(n_lines, n.value)
                return "bool", v, v
            return "num", n.value, None
        if isinstance(n, Col):
            s, k = self.z.cols[n.name]
            return "num", s, k
        if isinstance(n, Unary):
            if n.op == "not":
                t, p = self.bool(n.arg)
                return "bool", ~p, ~t
            v, k = self.num(n.arg)
            return "num", -v, k
        if isinstance(n, Binary):
            if n.op in ("and", "or"):
                ta, pa_ = self.bool(n.left)
                tb, pb = self.bool(n.right)
                op = np.logical_and if n.op == "and" else np.logical_or
                t = op(ta, tb)
                return "bool", t, (t if pa_ is ta and pb is tb else op(pa_, pb))
            lk, lv, lk2 = self.eval(n.left)
            rk, rv, rk2 = self.eval(n.right)
            if lk != "num" or rk != "num":
                raise Unsupported("comparison of conditions")
            known = _and_known(lk2, rk2)
            if n.op in _CMP:
                c = np.broadcast_to(_CMP[n.op](lv, rv), (n_lines,))
                return self._cond(c, known)
            v = {"+": np.add, "-": np.subtract, "*": np.multiply}[n.op](lv, rv)
            return "num", v, known
        if isinstance(n, Between):
            lo = Binary(">=" if not n.negated else "<", n.arg, n.low)
            hi = Binary("<=" if not n.negated else ">", n.arg, n.high)
            return self.eval(Binary("and" if not n.negated else "or", lo, hi))
        if isinstance(n, In):
            if not n.values:
                raise Unsupported("empty IN")  # pragma: no cover
            node: Node = Binary("==", n.arg, n.values[0])
            for val in n.values[1:]:
                node = Binary("or", node, Binary("==", n.arg, val))
            return self.eval(Unary("not", node) if n.negated else node)
        if isinstance(n, IsNull):
            kind, a, b = self.eval(n.arg)
            if kind == "bool":
                isnull = (~a & b) if b is not a else np.zeros(n_lines, dtype=bool)
            else:
                isnull = np.zeros(n_lines, dtype=bool) if b is None else ~b
            v = ~isnull if n.negated else isnull
            return "bool", v, v
        raise Unsupported(type(n).__name__)  # pragma: no cover

    def _cond(self, c: np.ndarray, known):
        if known is None:
            return "bool", c, c
        return "bool", c & known, c | ~known

    def eval_bool(self, node: Node) -> tuple[np.ndarray, np.ndarray]:
        """(definitely true, possibly true); possibly-true is the same array when all known."""
        return self.bool(node)


# ---------------------------------------------------------------- per-document reductions

def seg_sum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact per-document sums of integer/boolean values (int64)."""
    out = np.zeros(len(offsets) - 1, dtype=np.int64)
    has = offsets[1:] > offsets[:-1]
    if len(x):
        out[has] = np.add.reduceat(x, offsets[:-1][has], dtype=np.int64)
    return out


def seg_ext(x: np.ndarray, known, offsets: np.ndarray, fn: str) -> tuple[np.ndarray, np.ndarray]:
    v = x.astype(np.float64) if x.dtype.kind in "iub" else x
    if known is not None:
        v = np.where(known, v, np.inf if fn == "min" else -np.inf)
    counts = seg_sum(np.ones(len(v), dtype=bool) if known is None else known, offsets)
    out = np.zeros(len(offsets) - 1, dtype=np.float64)
    has = np.diff(offsets) > 0
    if len(v):
        ufunc = np.minimum if fn == "min" else np.maximum
        out[has] = ufunc.reduceat(v, offsets[:-1][has])
    return out, counts > 0


@dataclass
class Reduction:
    """One `f(expr)` over line columns, computed per document."""

    name: str  # column name given to DuckDB
    call: Call
    cols: list[str]  # zipped line columns, in compile order

    def compute(self, data: dict[str, LineCol]) -> pa.Array:
        z = zip_cols(data, self.cols)
        ev = Evaluator(z)
        f, arg = self.call.func, self.call.args[0]
        kind, a, b = ev.eval(arg)
        if f in ("count", "frac"):
            if kind == "bool":
                t, p = a, b
                known = None if p is t else (t | ~p)
            else:
                t = np.ones(z.n, dtype=bool) if b is None else b
                known = None
            hits = seg_sum(t, z.offsets)
            if f == "count":
                return pa.array(hits)
            denom = np.diff(z.offsets) if known is None else seg_sum(known, z.offsets)
            with np.errstate(invalid="ignore", divide="ignore"):
                frac = hits / denom
            return pa.array(frac, mask=denom == 0)
        vals = np.broadcast_to(a, (z.n,))
        known = b
        if f in ("min", "max"):
            out, has = seg_ext(vals, known, z.offsets, f)
            if vals.dtype.kind in "iu":
                return pa.array(out.astype(np.int64), mask=~has)
            return pa.array(out, mask=~has)
        # sum / mean of integers (checked by the planner)
        v = vals if known is None else np.where(known, vals, 0)
        s = seg_sum(v, z.offsets)
        cnt = np.diff(z.offsets) if known is None else seg_sum(known, z.offsets)
        if f == "sum":
            return pa.array(s)
        with np.errstate(invalid="ignore", divide="ignore"):
            return pa.array(s / cnt, mask=cnt == 0)


@dataclass
class LinePlan:
    """What the NumPy path computes for one recipe: reductions and the line-rule masks."""

    schema: Schema
    reductions: list[Reduction] = field(default_factory=list)
    line_rules: list[tuple[str, Node]] = field(default_factory=list)  # (rule name, node), bit order
    line_cols: list[str] = field(default_factory=list)  # zipped columns of the line rules
    masks: list[int] = field(default_factory=list)  # kept-characters sums wanted (bit sets)

    def reduce_hook(self, call: Call) -> str | None:
        """compile_recipe's `reduce`: a column name when this reduction is done here."""
        arg = call.args[0]
        cols = [c for c in columns_of(arg) if self.schema.columns.get(c) and self.schema.columns[c].kind == "line"]
        try:
            check(arg, self.schema)
            if call.func in ("sum", "mean") and not all(_is_int(self.schema, c) for c in cols):
                raise Unsupported("floating sum/mean")
        except Unsupported:
            return None
        for r in self.reductions:
            if r.call == call:
                return r.name
        name = f"__ts_r{len(self.reductions)}"
        self.reductions.append(Reduction(name, call, cols))
        return name

    def add_line_rules(self, rules: list[tuple[str, Node]], line_cols: list[str]) -> bool:
        try:
            for _, node in rules:
                check(node, self.schema)
        except Unsupported:
            return False
        self.line_rules, self.line_cols = list(rules), list(line_cols)
        return True

    def leaves(self) -> dict[str, bool]:
        """Line column -> whether its `end` is needed too."""
        out: dict[str, bool] = {}
        for r in self.reductions:
            for c in r.cols:
                out.setdefault(c, False)
        for c in self.line_cols:
            out.setdefault(c, False)
        if self.line_cols:
            out[self.line_cols[0]] = True
        return out

    def compute(self, table: pa.Table) -> dict[str, pa.Array]:
        """Per-document columns (reductions `__ts_r*`, kept characters `__ts_k<mask>`).

        Works one record batch (row group) at a time: documents never span batches, and
        cache-sized arrays are much faster than concatenating a whole read first."""
        parts = [self._compute_batch(b) for b in table.to_batches() if b.num_rows]
        if not parts:
            return self._compute_batch(table.slice(0, 0))
        if len(parts) == 1:
            return parts[0]
        return {k: pa.concat_arrays([p[k] for p in parts]) for k in parts[0]}

    def _compute_batch(self, table: pa.Table | pa.RecordBatch) -> dict[str, pa.Array]:
        data = {c: line_col(table.column(c), end) for c, end in self.leaves().items()}
        out = {r.name: r.compute(data) for r in self.reductions}
        if self.line_rules:
            z = zip_cols(data, self.line_cols)
            ev = Evaluator(z)
            passes = [ev.eval_bool(node)[0] for _, node in self.line_rules]
            lens = zip_lengths(data, self.line_cols, z)
            out.update(self.kept_chars(passes, lens, z.offsets))
        return out


    def kept_chars(self, passes: list[np.ndarray], lens: np.ndarray, offsets: np.ndarray) -> dict[str, pa.Array]:
        """Kept characters per document for every wanted mask. One pass: the line lengths are
        summed per (document, pattern of passed rules), then each mask adds up its patterns."""
        n_docs = len(offsets) - 1
        r = len(passes)
        if r > 8:  # 2^r patterns per document would not pay off
            out = {}
            for m in self.masks:
                keep = np.logical_and.reduce([t for j, t in enumerate(passes) if m >> j & 1])
                out[f"__ts_k{m}"] = pa.array(seg_sum(np.where(keep, lens, 0), offsets))
            return out
        pattern = np.zeros(len(lens), dtype=np.uint8)
        for j, t in enumerate(passes):
            pattern |= t.view(np.uint8) << j  # bit j = rule j passes
        doc = np.repeat(np.arange(n_docs, dtype=np.int64) << r, np.diff(offsets))
        doc |= pattern
        by = np.bincount(doc, weights=lens, minlength=n_docs << r).reshape(n_docs, 1 << r)
        pats = np.arange(1 << r)
        return {f"__ts_k{m}": pa.array(by[:, (pats & m) == m].sum(axis=1).round().astype(np.int64))
                for m in self.masks}


def _is_int(schema: Schema, name: str) -> bool:
    t = schema.columns[name].type.value_type.field("score").type
    return pa.types.is_integer(t) or pa.types.is_boolean(t)
