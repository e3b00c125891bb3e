"""The funnel over annotate's shards with line signals done in NumPy (see `lines_numpy`).

Why a second path: every funnel figure is a count or a sum over documents, so it adds up over
any split of the documents. Each batch (a few row groups of one shard) is read by pyarrow with
only the leaf columns needed (doc-level scalar twins, `score`/`end` leaves of line columns),
the line rules and line reductions become a handful of per-document columns computed in
NumPy, and the same aggregate SQL as the plain path runs over that small Arrow table in
DuckDB. Batches run on a thread pool (pyarrow, NumPy and DuckDB release the GIL).
Used when every rule reads annotate's own shards (no attribute-set joins); anything the NumPy
evaluator does not cover stays in SQL over the fully read column, so results never change.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.recipes.funnel_query import funnel_columns, funnel_sql, line_masks
from textsieve.recipes.lines_numpy import LinePlan
from textsieve.recipes.sql import Compiled

BATCH_ROWS = 65_536
_local = threading.local()


def _con() -> duckdb.DuckDBPyConnection:
    con = getattr(_local, "con", None)
    if con is None:
        from textsieve.io.duckdb_spill import point_spill

        con = _local.con = point_spill(duckdb.connect())
        con.execute("SET threads = 1")
    return con


def _open(path: str, metadata: pq.FileMetaData | None = None) -> pq.ParquetFile:
    if "://" not in path:
        return pq.ParquetFile(path, metadata=metadata)
    fs, p = fsspec.core.url_to_fs(path)
    return pq.ParquetFile(fs.open(p, "rb"), metadata=metadata)


Part = tuple[str, pq.FileMetaData, list[int]]  # (file, its footer, row groups)


def _tasks(files: list[tuple[str, pq.FileMetaData]], rows_per_task: int) -> list[list[Part]]:
    """Work units of about `rows_per_task` documents: runs of row groups, across files (a
    DuckDB query has a fixed cost of a few ms, so tiny shards are grouped)."""
    tasks: list[list[Part]] = []
    cur: list[Part] = []
    rows = 0
    for path, md in files:
        groups: list[int] = []
        for i in range(md.num_row_groups):
            groups.append(i)
            rows += md.row_group(i).num_rows
            if rows >= rows_per_task:
                tasks.append(cur + [(path, md, groups)])
                cur, groups, rows = [], [], 0
        if groups:
            cur.append((path, md, groups))
    if cur or not tasks:
        tasks.append(cur)
    return tasks


def fast_funnel_values(compiled: Compiled, threads: int | None = None) -> dict[tuple[str, str], int]:
    """The funnel's figures keyed like `funnel_sql`'s columns, summed over all batches.
    `compiled`: the recipe compiled over annotate's shards alone (`compile_recipe`)."""
    recipe = compiled.recipe
    if recipe is None:
        raise ValueError("fast_funnel_values needs the Compiled of compile_recipe")
    schema = compiled.schema
    plan = LinePlan(schema)
    compiled = compiled.with_reduce(plan.reduce_hook)  # reductions NumPy does become columns
    precomputed = False
    if compiled.line_rules:
        by_name = {r.name: r for r in recipe.rules}
        rules = [(n, by_name[n].node) for n in compiled.order if n in compiled.line_rules]
        precomputed = plan.add_line_rules(rules, compiled.line_columns)
        if precomputed:
            plan.masks = line_masks(compiled)[1]
    sql, cols = funnel_sql(compiled, source="__ts_batch AS a", precomputed=precomputed)
    top = funnel_columns(compiled, precomputed)
    leaves = plan.leaves()
    read = list(top) + [f"{c}.list.element.score" for c in leaves if c not in top]
    read += [f"{c}.list.element.end" for c, end in leaves.items() if end and c not in top]

    def run(task: list[Part]) -> list[int]:
        if not task:
            return [0] * len(cols)
        parts = [_open(path, md).read_row_groups(groups, columns=read, use_threads=False)
                 for path, md, groups in task]
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        derived = plan.compute(table) if leaves else {}
        for name, arr in derived.items():
            table = table.append_column(name, arr)
        con = _con()
        con.register("__ts_batch", table)
        try:
            row = con.execute(sql).fetchall()[0]
        finally:
            con.unregister("__ts_batch")
        return [int(v or 0) for v in row]

    paths = schema.files["a"]
    workers = max(1, min(threads or len(os.sched_getaffinity(0)), len(paths) * 64))
    totals = [0] * len(cols)
    with ThreadPoolExecutor(workers) as pool:
        footers = list(pool.map(lambda p: _open(p).metadata, paths))  # ~3 ms each: in parallel too
        tasks = _tasks(list(zip(paths, footers)), BATCH_ROWS)
        for row in pool.map(run, tasks):
            totals = [a + b for a, b in zip(totals, row)]
    return dict(zip(cols, totals))

