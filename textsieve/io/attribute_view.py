"""One joined view of an annotate folder: its shards plus every attribute set beside them.

Stages store attributes in several places (see `textsieve.io.attributes`): annotate's shards
at `DIR/docs/<rel>.parquet` and later sets at `DIR/sets/<name>/<rel>.parquet` (`dedup_exact`,
`dedup_fuzzy`, `dsir_wiki`, ...). Every one of them has the key columns `id`, `shard`, `row`.
`select`'s compiler LEFT JOINs the sets a recipe uses onto the annotate shards on
(shard, row); this module builds the same join over *all* sets, so a notebook can explore the
attributes without knowing the layout: a document missing from a set has nulls there.

Column names: the annotate shards' columns keep their names (spans, `X__score` twins,
`ts_length`, MinHash bands), then each set's columns in set-name order, minus the keys. A set
column whose name is already taken is renamed `<set>.<column>` rather than shadowing it.

Four forms, one plan (`AttributeLayout`): a DuckDB relation (lazy; DuckDB reads only the
columns a query uses), a pyarrow Table (materialized: pass `columns=` to keep it small), a
polars LazyFrame (lazy `scan_parquet` joins; needs polars, which textsieve does not require),
or a Hugging Face `datasets.Dataset` (materialized; needs `datasets`, the `hf` extra).

Flat view (`flat=True`): a doc-level span signal is stored as a list of one span
`[{start, end, score}]` (RPv2's layout), so in `datasets`, pandas or polars its value is
`r["x"][0]["score"]`. Flat, each such column is its score, a plain number under the signal's
own name, read from the scalar `X__score` twin that annotate (and the imports) store beside
every doc-level span column, and the twin is not listed again. What has no twin stays as
stored: line-level and other span lists have one value per line or span, not per document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.errors import TextsieveError
from textsieve.io.attributes import SCORE_SUFFIX, attribute_sets, attribute_shards

KEYS = ("id", "shard", "row")
JOIN_KEYS = ("shard", "row")
FORMS = ("duckdb", "arrow", "polars", "datasets")


class AttributesError(TextsieveError, ValueError):
    """An attribute view that cannot be built as asked (unknown form or column, no polars)."""


@dataclass
class AttributeSet:
    """One relation of the view: its files and {stored column name: name in the view}."""

    name: str  # "" for annotate's own shards
    files: list[str]
    columns: dict[str, str] = field(default_factory=dict)
    doc_spans: dict[str, str] = field(default_factory=dict)  # doc-level span column -> its stored twin

    def flat(self) -> dict[str, tuple[str, str]]:
        """{view name: (stored column it is read from, its own stored name)} of the flat view
        (module doc): a doc span is read from its twin, the twin is not listed again."""
        twins = set(self.doc_spans.values())
        return {view: (self.doc_spans.get(stored, stored), stored) for stored, view in self.columns.items()
                if stored not in twins}


@dataclass
class AttributeLayout:
    directory: str
    fs: fsspec.AbstractFileSystem
    sets: list[AttributeSet]

    @property
    def columns(self) -> list[str]:
        """Every column of the view, in order (keys first)."""
        return list(KEYS) + [v for s in self.sets for v in s.columns.values()]

    @property
    def flat_columns(self) -> list[str]:
        """Every column of the flat view (module doc), in order (keys first)."""
        return list(KEYS) + [v for s in self.sets for v in s.flat()]


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
            arrow = pq.ParquetFile(fh).schema_arrow
        stored = [f for f in arrow if f.name not in KEYS]
        cols = {}
        for f in stored:
            cols[f.name] = f.name if f.name not in seen else f"{name}.{f.name}"
            seen.add(cols[f.name])
        sets.append(AttributeSet(name, [_url(sfs, p) for p in sfiles], cols, _doc_spans(stored)))
    return AttributeLayout(directory, fs, sets)


def _doc_spans(fields: list[Any]) -> dict[str, str]:
    """The doc-level span columns among `fields`: the span lists stored with a scalar
    `X__score` twin (annotate writes one for every doc-level signal, and for no other column)."""
    names = {f.name for f in fields}
    return {f.name: f.name + SCORE_SUFFIX for f in fields
            if f.name + SCORE_SUFFIX in names and pa.types.is_list(f.type)}


def _pick(lay: AttributeLayout, columns: list[str] | None, flat: bool = False) -> set[str] | None:
    if columns is None:
        return None
    valid = lay.flat_columns if flat else lay.columns
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


def _column_sql(alias: str, read: str, view: str) -> str:
    """SQL of one view column: stored column `read`, named `view`."""
    return f"{alias}.{_q(read)}" + (f" AS {_q(view)}" if view != read else "")


def _shown(s: AttributeSet, flat: bool) -> dict[str, str]:
    """{view name: stored column read} of a set in the view asked for."""
    return {v: read for v, (read, _) in s.flat().items()} if flat else {v: c for c, v in s.columns.items()}


def view_sql(lay: AttributeLayout, columns: list[str] | None = None, flat: bool = False) -> str:
    """The DuckDB query of the view (sets none of whose columns are wanted are not joined);
    `flat`: the flat view (module doc)."""
    want = _pick(lay, columns, flat)
    select = [f"a.{_q(k)}" for k in KEYS if want is None or k in want]
    joins = []
    for i, s in enumerate(lay.sets):
        alias = "a" if i == 0 else f"s{i}"
        cols = [(read, v) for v, read in _shown(s, flat).items() if want is None or v in want]
        if i and not cols:
            continue
        select += [_column_sql(alias, read, v) for read, v in cols]
        rel = f"read_parquet([{', '.join(_lit(f) for f in s.files)}])"
        if i == 0:
            joins.append(f"{rel} AS a")
        else:
            on = " AND ".join(f"a.{_q(k)} = {alias}.{_q(k)}" for k in JOIN_KEYS)
            joins.append(f"LEFT JOIN {rel} AS {alias} ON {on}")
    return f"SELECT {', '.join(select) or '*'} FROM {' '.join(joins)} ORDER BY a.{_q('shard')}, a.{_q('row')}"


def to_duckdb(directory: str, columns: list[str] | None = None, connection: Any = None, flat: bool = False) -> Any:
    """The view as a lazy `duckdb.DuckDBPyRelation` on `connection` (default: a new one; the
    relation keeps it alive). fsspec URLs are registered with DuckDB first."""
    import duckdb

    from textsieve.io.locations import register_filesystems

    lay = layout(directory)
    from textsieve.io.duckdb_spill import point_spill

    con = connection if connection is not None else point_spill(duckdb.connect())
    register_filesystems(con, [f for s in lay.sets for f in s.files])
    return con.sql(view_sql(lay, columns, flat))


def to_arrow(directory: str, columns: list[str] | None = None, flat: bool = False) -> Any:
    """The view as a `pyarrow.Table` (read into memory)."""
    rel = to_duckdb(directory, columns, flat=flat)
    fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return fetch()


def to_datasets(directory: str, columns: list[str] | None = None, flat: bool = False) -> Any:
    """The view as a Hugging Face `datasets.Dataset` (read into memory, from the Arrow table)."""
    try:
        import datasets
        from datasets.table import InMemoryTable
    except ImportError:
        raise AttributesError("attributes as a Hugging Face dataset needs datasets, which is not installed: pip "
                              "install 'textsieve[hf]' (or use as_='arrow')") from None
    return datasets.Dataset(InMemoryTable(to_arrow(directory, columns, flat)))


def to_polars(directory: str, columns: list[str] | None = None, flat: bool = False) -> Any:
    """The view as a `polars.LazyFrame` of lazy Parquet scans joined on (shard, row)."""
    try:
        import polars as pl
    except ImportError:
        raise AttributesError("attributes as polars needs polars, which is not installed: pip install polars "
                              "(or use as_='duckdb' or as_='arrow')") from None
    lay = layout(directory)
    want = _pick(lay, columns, flat)
    if any("://" in f for s in lay.sets for f in s.files):
        table = pl.from_arrow(to_arrow(directory, columns, flat))
        assert isinstance(table, pl.DataFrame)  # a Table gives a DataFrame (a lone array would give a Series)
        return table.lazy()
    frame = None
    for i, s in enumerate(lay.sets):
        cols = {v: read for v, read in _shown(s, flat).items() if want is None or v in want}
        if i and not cols:
            continue
        keys = list(KEYS) if i == 0 else list(JOIN_KEYS)
        scan = pl.scan_parquet(s.files).select([*keys, *(pl.col(read).alias(v) for v, read in cols.items())])
        frame = scan if frame is None else frame.join(scan, on=list(JOIN_KEYS), how="left")
    assert frame is not None
    frame = frame.sort(list(JOIN_KEYS))
    order = lay.flat_columns if flat else lay.columns
    return frame if want is None else frame.select([c for c in order if c in want])


def attributes(directory: str, as_: str = "duckdb", *, columns: list[str] | None = None,
               connection: Any = None, flat: bool = False) -> Any:
    """The joined attribute view of `directory` in the form `as_` (see module doc); `flat`:
    each doc-level span signal as its score (module doc)."""
    if as_ not in FORMS:
        raise AttributesError(f"as_={as_!r}: expected one of {', '.join(FORMS)}")
    if connection is not None and as_ != "duckdb":
        raise AttributesError("connection= is only used with as_='duckdb'")
    if as_ == "duckdb":
        return to_duckdb(directory, columns, connection, flat)
    if as_ == "arrow":
        return to_arrow(directory, columns, flat)
    if as_ == "datasets":
        return to_datasets(directory, columns, flat)
    return to_polars(directory, columns, flat)
