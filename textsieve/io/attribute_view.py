"""One joined view of an annotate folder: its shards plus every attribute set beside them.

Stages store attributes in several places (see `textsieve.io.attributes`): annotate's shards
at `DIR/<rel>.parquet` and later sets at `DIR/_<name>/<rel>.parquet` (`_dedup_exact`,
`_dedup_fuzzy`, `_dsir_wiki`, ...). Every one of them has the key columns `id`, `shard`, `row`.
`select`'s compiler LEFT JOINs the sets a recipe uses onto the annotate shards on
(shard, row); this module builds the same join over *all* sets, so a notebook can explore the
attributes without knowing the layout: a document missing from a set has nulls there.

Column names: the annotate shards' columns keep their names (spans, `X__score` twins,
`ts_length`, MinHash bands), then each set's columns in set-name order, minus the keys. A set
column whose name is already taken is renamed `<set>.<column>` rather than shadowing it.

Three forms, one plan (`AttributeLayout`): a DuckDB relation (lazy; DuckDB reads only the
columns a query uses), a pyarrow Table (materialized: pass `columns=` to keep it small), or a
polars LazyFrame (lazy `scan_parquet` joins; needs polars, which textsieve does not require).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow.parquet as pq

from textsieve.errors import TextsieveError
from textsieve.io.attributes import attribute_sets, attribute_shards

KEYS = ("id", "shard", "row")
JOIN_KEYS = ("shard", "row")
FORMS = ("duckdb", "arrow", "polars")


class AttributesError(TextsieveError, ValueError):
    """An attribute view that cannot be built as asked (unknown form or column, no polars)."""


@dataclass
class AttributeSet:
    """One relation of the view: its files and {stored column name: name in the view}."""

    name: str  # "" for annotate's own shards
    files: list[str]
    columns: dict[str, str] = field(default_factory=dict)


@dataclass
class AttributeLayout:
    directory: str
    fs: fsspec.AbstractFileSystem
    sets: list[AttributeSet]

    @property
    def columns(self) -> list[str]:
        """Every column of the view, in order (keys first)."""
        return list(KEYS) + [v for s in self.sets for v in s.columns.values()]


def _url(fs: fsspec.AbstractFileSystem, path: str) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else f"{protocol}://{path}"


def layout(directory: str) -> AttributeLayout:
    """Find the annotate shards and attribute sets of `directory` and name the view's columns."""
    fs, files = attribute_shards(directory)
    seen = set(KEYS)
    sets: list[AttributeSet] = []
    for name in ["", *attribute_sets(directory)]:
        try:
            sfs, sfiles = (fs, files) if name == "" else attribute_shards(directory, name)
        except FileNotFoundError:
            continue  # a set folder with no finished shard yet (e.g. a model file only)
        with sfs.open(sfiles[0], "rb") as fh:
            stored = [n for n in pq.ParquetFile(fh).schema_arrow.names if n not in KEYS]
        cols = {}
        for col in stored:
            cols[col] = col if col not in seen else f"{name}.{col}"
            seen.add(cols[col])
        sets.append(AttributeSet(name, [_url(sfs, p) for p in sfiles], cols))
    return AttributeLayout(directory, fs, sets)


def _pick(lay: AttributeLayout, columns: list[str] | None) -> set[str] | None:
    if columns is None:
        return None
    valid = lay.columns
    unknown = [c for c in columns if c not in valid]
    if unknown:
        import difflib

        near = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise AttributesError(f"{lay.directory}: unknown attribute column {unknown[0]!r}{hint}; "
                              f"columns: {', '.join(valid)}")
    return set(columns)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def view_sql(lay: AttributeLayout, columns: list[str] | None = None) -> str:
    """The DuckDB query of the view (sets none of whose columns are wanted are not joined)."""
    want = _pick(lay, columns)
    select = [f"a.{_q(k)}" for k in KEYS if want is None or k in want]
    joins = []
    for i, s in enumerate(lay.sets):
        alias = "a" if i == 0 else f"s{i}"
        cols = [(c, v) for c, v in s.columns.items() if want is None or v in want]
        if i and not cols:
            continue
        select += [f"{alias}.{_q(c)}" + (f" AS {_q(v)}" if v != c else "") for c, v in cols]
        rel = f"read_parquet([{', '.join(_lit(f) for f in s.files)}])"
        if i == 0:
            joins.append(f"{rel} AS a")
        else:
            on = " AND ".join(f"a.{_q(k)} = {alias}.{_q(k)}" for k in JOIN_KEYS)
            joins.append(f"LEFT JOIN {rel} AS {alias} ON {on}")
    return f"SELECT {', '.join(select) or '*'} FROM {' '.join(joins)} ORDER BY a.{_q('shard')}, a.{_q('row')}"


def to_duckdb(directory: str, columns: list[str] | None = None, connection: Any = None) -> Any:
    """The view as a lazy `duckdb.DuckDBPyRelation` on `connection` (default: a new one; the
    relation keeps it alive). fsspec URLs are registered with DuckDB first."""
    import duckdb

    from textsieve.io.locations import register_filesystems

    lay = layout(directory)
    from textsieve.io.duckdb_spill import point_spill

    con = connection if connection is not None else point_spill(duckdb.connect())
    register_filesystems(con, [f for s in lay.sets for f in s.files])
    return con.sql(view_sql(lay, columns))


def to_arrow(directory: str, columns: list[str] | None = None) -> Any:
    """The view as a `pyarrow.Table` (read into memory)."""
    rel = to_duckdb(directory, columns)
    fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return fetch()


def to_polars(directory: str, columns: list[str] | None = None) -> Any:
    """The view as a `polars.LazyFrame` of lazy Parquet scans joined on (shard, row)."""
    try:
        import polars as pl
    except ImportError:
        raise AttributesError("attributes as polars needs polars, which is not installed: pip install polars "
                              "(or use as_='duckdb' or as_='arrow')") from None
    lay = layout(directory)
    want = _pick(lay, columns)
    if any("://" in f for s in lay.sets for f in s.files):
        table = pl.from_arrow(to_arrow(directory, columns))
        assert isinstance(table, pl.DataFrame)  # a Table gives a DataFrame (a lone array would give a Series)
        return table.lazy()
    frame = None
    for i, s in enumerate(lay.sets):
        cols = {c: v for c, v in s.columns.items() if want is None or v in want}
        if i and not cols:
            continue
        keys = list(KEYS) if i == 0 else list(JOIN_KEYS)
        scan = pl.scan_parquet(s.files).select([*keys, *cols]).rename({c: v for c, v in cols.items() if c != v})
        frame = scan if frame is None else frame.join(scan, on=list(JOIN_KEYS), how="left")
    assert frame is not None
    frame = frame.sort(list(JOIN_KEYS))
    return frame if want is None else frame.select([c for c in lay.columns if c in want])


def attributes(directory: str, as_: str = "duckdb", *, columns: list[str] | None = None,
               connection: Any = None) -> Any:
    """The joined attribute view of `directory` in the form `as_` (see module doc)."""
    if as_ not in FORMS:
        raise AttributesError(f"as_={as_!r}: expected one of {', '.join(FORMS)}")
    if connection is not None and as_ != "duckdb":
        raise AttributesError("connection= is only used with as_='duckdb'")
    if as_ == "duckdb":
        return to_duckdb(directory, columns, connection)
    if as_ == "arrow":
        return to_arrow(directory, columns)
    return to_polars(directory, columns)
