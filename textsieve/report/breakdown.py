"""The report's breakdowns: the recipe's funnel (or, without a recipe, the document counts) per
value of a field, such as each document's `source` or its language.

Where the values come from, cheapest first:
* an attribute column (`ts_lang`, or any column `--by` names): joined in DuckDB, no text read;
* otherwise the source records, re-read once per annotate shard (JSON Lines: the field of each
  parsed record; Parquet: only that column). Why re-read: annotate keeps no copy of the
  records, only the (shard, row) pointer back to them, so a record field is only in the source.
  Only the values are kept (a few bytes per document), and both breakdowns share one pass.

Whether the documents have the field is decided over every shard (`_record_fields`: each
Parquet source's whole schema, the first `SAMPLE_RECORDS` records of every other source), not
the first record of the first shard: a folder whose first input lacks `source` while the
others have it gets its per-source view, the documents without one under "(no value)".

The language comes from `ts_lang` when annotate computed it, else from the field annotate read
languages from (`--lang-field`); without either there is no language view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents
from textsieve.io.fields import MISSING, FieldPath
from textsieve.io.source_roots import trusted
from textsieve.recipes.funnel_query import funnel_sql
from textsieve.recipes.schema import Schema, q
from textsieve.recipes.sql import Compiled, lit

MAX_GROUPS = 12  # values shown one by one; the rest are summed into one "other" row
DEFAULT_BY = "source"
LANG_COLUMN = "ts_lang"
TABLE = "__ts_groups"  # the registered table of values re-read from the records
NONE_LABEL = "(no value)"


class BreakdownError(ValueError):
    """`--by FIELD` names neither an attribute column nor a field of the documents."""


@dataclass
class GroupRow:
    """One value of the field: its documents and what the recipe's rules remove from them."""

    value: str
    documents: int
    characters: int
    removed: list[int] = field(default_factory=list)  # per rule, recipe order: removed at that step
    kept: int = 0
    kept_chars: int = 0


@dataclass
class Breakdown:
    title: str  # "source", "language", or the --by field
    field: str  # the column or record field the values come from
    origin: str  # "attribute column" or "source records"
    rules: list[str]  # rule names in recipe order (empty: no recipe, counts only)
    rows: list[GroupRow]
    n_values: int  # distinct values, before folding the tail into "other"


@dataclass
class _Source:
    """Where one breakdown's values are: an SQL expression plus the join that brings it in."""

    field: str
    origin: str
    expr: str
    join: str = ""


SAMPLE_RECORDS = 50  # records per non-Parquet source shard looked at for the fields they have


@dataclass
class _Fields:
    """What the documents' records hold, over every shard: Parquet sources' column names, and a
    few records of each other source; `unreadable`: why some source cannot be re-read."""

    meta: dict  # the first annotate shard's footer (its read options)
    columns: set[str] = field(default_factory=set)
    records: list[dict] = field(default_factory=list)
    unreadable: str | None = None

    def has(self, name: str) -> bool:
        if name in self.columns or name.split(".", 1)[0] in self.columns:
            return True
        path = FieldPath(name)
        return any(path.get(r) is not MISSING for r in self.records)

    def names(self) -> list[str]:
        return sorted(self.columns | {k for r in self.records for k in r})


def _record_fields(ann: str) -> _Fields:
    """The fields of every annotate shard's source (see the module doc); a shard whose source
    cannot be read makes the record views unavailable (`unreadable`), as re-reading needs all."""
    import itertools

    fs, paths = attribute_shards(ann)
    out = _Fields(read_shard_meta(fs, paths[0]))
    for path in paths:
        meta = out.meta if path == paths[0] else read_shard_meta(fs, path)
        if "source_shard" not in meta:
            out.unreadable = out.unreadable or f"{path} records no source shard"
            continue
        try:
            trusted(meta, fs, path)  # a source outside the recorded inputs is not read
            if meta["source_shard"].get("format") == "parquet":
                import pyarrow.parquet as pq

                with _open(meta["source_shard"]["path"]) as fh:
                    out.columns |= set(pq.ParquetFile(fh).schema_arrow.names)
                continue
            out.records += [doc.meta for doc in itertools.islice(source_documents(meta), SAMPLE_RECORDS)]
        except (OSError, TextsieveError) as exc:  # moved or deleted sources: the attribute views still work
            out.unreadable = out.unreadable or str(exc)
    return out


def _open(path: str) -> Any:
    import fsspec

    return fsspec.open(path, "rb").open()


def _label(v: Any) -> str | None:
    if v is None or v is MISSING:
        return None
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)[:80]
    return str(v)


PARALLEL_DOCS = 200_000  # from this many documents, shards are re-read on a process pool


def record_values(ann: str, fields: list[str], lang: bool, workers: int | None = None) -> pa.Table:
    """(shard, row, one string column per field, plus `__lang` when `lang`) for every document,
    re-read from the source records (see the module doc), one task per annotate shard; on a
    process pool when the corpus is large and has several shards (JSON parsing is the cost)."""
    from textsieve.exec.local import default_workers, ordered_map

    fs, paths = attribute_shards(ann)
    metas = [trusted(m, fs, p) for m, p in ((read_shard_meta(fs, p), p) for p in paths) if "source_shard" in m]
    docs = sum(int(m.get("documents") or 0) for m in metas)
    n = min(len(metas), workers or default_workers()) if docs >= PARALLEL_DOCS else 1
    parts = [cols for _, cols in ordered_map(_shard_values, [(m, fields, lang) for m in metas], workers=n)]
    names = ["shard", "row", *fields, *(["__lang"] if lang else [])]
    merged = {k: [v for cols in parts for v in cols[k]] for k in names}
    return pa.table({"shard": pa.array(merged.pop("shard"), pa.string()),
                     "row": pa.array(merged.pop("row"), pa.int64()),
                     **{k: pa.array(v, pa.string()) for k, v in merged.items()}})


def _shard_values(task: tuple[dict, list[str], bool]) -> dict[str, list]:
    """The wanted values of one source shard (a pool task: plain arguments, plain lists back)."""
    meta, fields, lang = task
    cols: dict[str, list] = {"shard": [], "row": [], **{f: [] for f in fields}, **({"__lang": []} if lang else {})}
    rel = meta.get("shard") or meta["source_shard"].get("rel")
    if meta["source_shard"].get("format") == "parquet":
        _parquet_values(meta, rel, fields, lang, cols)
        return cols
    getters = [FieldPath(f) for f in fields]
    for doc in source_documents(meta):
        cols["shard"].append(rel)
        cols["row"].append(doc.row)
        for f, g in zip(fields, getters):
            cols[f].append(_label(g.get(doc.meta)))
        if lang:
            cols["__lang"].append(doc.lang)
    return cols


def _parquet_values(meta: dict, rel: str, fields: list[str], lang: bool, cols: dict[str, list]) -> None:
    """The fields of a Parquet source shard, read column by column (never the text)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    lang_field = (meta.get("read_options") or {}).get("lang_field")
    wanted = list(fields) + ([lang_field] if lang and lang_field else [])
    with _open(meta["source_shard"]["path"]) as fh:
        pf = pq.ParquetFile(fh)
        names = pf.schema_arrow.names
        tops = sorted({w if w in names else w.split(".", 1)[0] for w in wanted} & set(names))
        t = pf.read(columns=tops, use_threads=False) if tops else pa.table({})  # see io.parquet_read
    n = pf.metadata.num_rows
    cols["shard"] += [rel] * n
    cols["row"] += list(range(n))

    def values(name: str | None) -> list:
        if not name:
            return [None] * n
        if name in t.column_names:
            arr = t.column(name)
        elif name.split(".", 1)[0] in t.column_names:
            arr = t.column(name.split(".", 1)[0])
            for part in name.split(".")[1:]:
                try:
                    arr = pc.struct_field(arr, part)
                except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError):
                    return [None] * n
        else:
            return [None] * n
        return [_label(v) for v in arr.to_pylist()]

    for f in fields:
        cols[f] += values(f)
    if lang:
        cols["__lang"] += values(lang_field)


def _plan(ann: str, schema: Schema, by: str | None) -> tuple[_Source | None, _Source | None, str | None]:
    """Where the by-field and the language come from, and a note when the default field is absent."""
    fields = _record_fields(ann)
    meta, unreadable = fields.meta, fields.unreadable
    want = by or DEFAULT_BY
    by_src = note = None
    if want in schema.columns:
        by_src = _column_source(schema, want)
    elif unreadable and by:
        raise BreakdownError(f"report: --by {by}: not an attribute column, and the source records cannot be read "
                             f"({unreadable})")
    elif unreadable:
        note = f"No per-source view: the source records cannot be re-read ({unreadable})."
    elif fields.has(want):
        by_src = _Source(want, "source records", f"{TABLE}.{q(want)}")
    elif by:
        keys = ", ".join(fields.names()) or "none"
        raise BreakdownError(f"report: --by {by}: not an attribute column and not a field of the documents "
                             f"(their records have: {keys})")
    else:
        note = (f"No per-source view: the documents have no `{DEFAULT_BY}` field and no attribute column of that "
                f"name; pass --by FIELD to break the funnel down by another field.")
    lang_src = None
    if LANG_COLUMN in schema.columns:
        lang_src = _column_source(schema, LANG_COLUMN)
    elif (meta.get("read_options") or {}).get("lang_field") and not unreadable:
        lang_src = _Source(meta["read_options"]["lang_field"], "source records", f"{TABLE}.\"__lang\"")
    return by_src, lang_src, note


def _column_source(schema: Schema, name: str) -> _Source:
    """An attribute column as group values: annotate's own (alias `a`) or another set's, which
    is joined under its own alias `__by` (the recipe may join the same set as well)."""
    col = schema.columns[name]
    if col.kind == "line":
        raise BreakdownError(f"report: --by {name}: a line-level signal has one value per line, not per document")
    alias, join = "a", ""
    if col.alias != "a":
        files = ", ".join(lit(f) for f in schema.files[col.alias])
        alias = "__by"
        join = f" LEFT JOIN read_parquet([{files}]) AS __by ON a.shard = __by.shard AND a.\"row\" = __by.\"row\""
    expr = f"{alias}.{q(col.scalar)}" if col.scalar else (
        f"{alias}.{q(name)}[1].score" if col.kind == "doc" else f"{alias}.{q(name)}")
    return _Source(name, "attribute column", expr, join)


def breakdowns(con: duckdb.DuckDBPyConnection, ann: str, schema: Schema, compiled: Compiled | None,
               by: str | None = None) -> tuple[list[Breakdown], list[str]]:
    """The by-field and language breakdowns of the report, and notes on what is missing."""
    by_src, lang_src, note = _plan(ann, schema, by)
    notes = [note] if note else []
    record_fields = [s.field for s in (by_src,) if s and s.origin == "source records"]
    need_lang = bool(lang_src and lang_src.origin == "source records")
    if record_fields or need_lang:
        con.register(TABLE, record_values(ann, record_fields, need_lang))
    out = []
    for title, src in ((by or DEFAULT_BY, by_src), ("language", lang_src)):
        if src is None:
            continue
        out.append(_compute(con, schema, compiled, title, src))
    return out, notes


def _compute(con: duckdb.DuckDBPyConnection, schema: Schema, compiled: Compiled | None, title: str,
             src: _Source) -> Breakdown:
    join = src.join + (f" LEFT JOIN {TABLE} ON a.shard = {TABLE}.shard AND a.\"row\" = {TABLE}.\"row\""
                       if src.expr.startswith(TABLE) else "")
    rows: list[GroupRow] = []
    rules: list[str] = []
    if compiled is None:
        files = ", ".join(lit(f) for f in schema.files["a"])
        for g, n, chars in con.execute(
                f"SELECT CAST({src.expr} AS VARCHAR) AS _g, count(*), coalesce(sum({schema.length_sql}), 0) "
                f"FROM read_parquet([{files}]) AS a{join} GROUP BY _g").fetchall():
            rows.append(GroupRow(g if g is not None else NONE_LABEL, int(n), int(chars), kept=int(n),
                                 kept_chars=int(chars)))
    else:
        rules = list(compiled.order)
        sql, cols = funnel_sql(compiled, source=compiled.from_sql() + join, group=f"CAST({src.expr} AS VARCHAR)")
        for rec in con.execute(sql).fetchall():
            vals = dict(zip(cols, (int(v or 0) for v in rec[1:])))
            cum = [vals[("cum", r)] for r in rules]
            total, chars = vals[("total", "")], vals[("total_chars", "")]
            removed = [c - (cum[i - 1] if i else 0) for i, c in enumerate(cum)]
            rows.append(GroupRow(rec[0] if rec[0] is not None else NONE_LABEL, total, chars, removed,
                                 total - (cum[-1] if cum else 0),
                                 chars - (vals[("chars_cum", rules[-1])] if rules else 0)))
    rows.sort(key=lambda r: (-r.documents, r.value))
    n_values = len(rows)
    if len(rows) > MAX_GROUPS + 1:
        tail = rows[MAX_GROUPS:]
        rows = rows[:MAX_GROUPS] + [GroupRow(
            f"({len(tail):,} other values)", sum(r.documents for r in tail), sum(r.characters for r in tail),
            [sum(r.removed[i] for r in tail) for i in range(len(rules))], sum(r.kept for r in tail),
            sum(r.kept_chars for r in tail))]
    return Breakdown(title, src.field, src.origin, rules, rows, n_values)
