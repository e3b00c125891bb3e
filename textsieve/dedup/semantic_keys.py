"""The keep key of each document for semantic dedup's keep policies.

Why a key: every policy becomes "keep the member with the largest key, ties to the earliest",
so one rule serves first (key 0 for all), longest (`ts_length`, annotate's character count)
and a column (e.g. a quality score from `learn` or any numeric signal), which may live in the
annotate shards or in another attribute set `_<name>` (same shards, same row order). Null
values rank lowest (-inf).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable
from textsieve.errors import TextsieveError
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import LENGTH_COLUMN, attribute_set_dir, attribute_sets, attribute_shards

POLICIES = ("first", "longest", "none")
SET_PREFIX = "set:"


class KeepColumnError(TextsieveError, ValueError):
    """--keep names no numeric column of the annotate folder or its attribute sets."""


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def keep_source(table: ShardTable, keep: str) -> str:
    """Where the keep key comes from: "" (first, none), "annotate" (a column of the annotate
    shards, `ts_length` for longest) or "set:<name>" (an attribute set's column)."""
    if keep in ("first", "none"):
        return ""
    column = LENGTH_COLUMN if keep == "longest" else keep
    schema = table.schema(0) if table.paths else pa.schema([])
    if column in schema.names:
        if not _numeric(schema.field(column).type):
            twin = f"{column}__score" if f"{column}__score" in schema.names else None
            raise KeepColumnError(f"--keep {keep}: column {column} is {schema.field(column).type}, not numeric"
                                  + (f"; use its scalar twin --keep {twin}" if twin else ""))
        return "annotate"
    if keep == "longest":
        raise KeepColumnError(f"--keep longest: {table.directory} has no {LENGTH_COLUMN} column; annotate again")
    seen = []
    for name in attribute_sets(table.directory):
        if name == "dedup_semantic":  # this stage's own output is never its input
            continue
        try:
            fs, paths = attribute_shards(table.directory, name)
            with fs.open(paths[0], "rb") as fh:
                s = pq.ParquetFile(fh).schema_arrow
        except (OSError, ValueError):
            continue
        if column in s.names and _numeric(s.field(column).type):
            return SET_PREFIX + name
        seen.append(name)
    names = [n for n in schema.names if _numeric(schema.field(n).type) and n not in ("row",)]
    hint = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    raise KeepColumnError(f"--keep {keep}: not first, longest or none, and no numeric column {keep!r} in "
                          f"{table.directory} or its attribute sets ({', '.join(seen) or 'none'}); numeric columns "
                          f"include: {hint or 'none'}")


def keep_source_key(table: ShardTable, source: str) -> str:
    """The content key of the attribute set the keep column comes from ("" for the annotate
    shards or no column): part of the stage's fingerprint, so re-scored keep values re-run it."""
    if not source.startswith(SET_PREFIX):
        return ""
    import fsspec

    from textsieve.io.publish import content_key

    fs, root = fsspec.core.url_to_fs(attribute_set_dir(table.directory, source[len(SET_PREFIX):]))
    return content_key(fs, root.rstrip("/"))


def keep_keys(table: ShardTable, i: int, keep: str, source: str) -> np.ndarray:
    """float64 keep key of every document of shard i (-inf for nulls)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    n = int(table.n_rows[i])
    if not source:
        return np.zeros(n, dtype=np.float64)
    column = LENGTH_COLUMN if keep == "longest" else keep
    if source == "annotate":
        col = table.read(i, [column]).column(0)
    else:
        name = source[len(SET_PREFIX):]
        fs, paths = attribute_shards(table.directory, name)
        root = attribute_set_dir(table.directory, name).rstrip("/").split("://")[-1]
        path = next((p for p in paths if p.endswith("/" + table.rels[i]) and root in p), None)
        if path is None:
            raise KeepColumnError(f"--keep {keep}: the set _{name} has no shard {table.rels[i]}; re-run the stage "
                                  "that made it")
        with fs.open(path, "rb") as fh:
            col = pq.read_table(fh, columns=[column]).column(0)
    if len(col) != n:
        raise KeepColumnError(f"--keep {keep}: {len(col):,} values for the {n:,} documents of {table.rels[i]}")
    values = pc.cast(col, pa.float64())
    out = to_numpy(pc.fill_null(values, float("-inf")))
    return np.asarray(out, dtype=np.float64)
