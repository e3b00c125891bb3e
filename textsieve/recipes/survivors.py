"""A recipe's survivors: the documents `select --recipe R` would write, as (shard, rows) sets.

Why a module of its own: three stages use the same set. `select --recipe R` writes it;
`select --recipe R --dsir NAME` draws from it (the DSIR pool is the survivors, not the whole
annotated folder), and `dsir fit --recipe R` fits the raw-side n-gram model on it. Each must
see exactly the documents the other two see, or "filter, then DSIR" in one step would differ
from the two-step route (materialize the survivors, annotate them again, fit, resample).

Survivors are the documents that pass every document rule *and* keep at least one line under
the line rules (a document whose lines are all cut is not written, so it is not in the pool).
The line rules themselves are applied when the documents are written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from textsieve.io.arrow_arrays import to_numpy
from textsieve.recipes.language import Recipe, RecipeError, load_recipe
from textsieve.recipes.sql import END, Compiled, element_field

#: source shard rel name -> sorted int64 rows of the survivors in that shard
Survivors = Mapping[str, np.ndarray]


def as_recipe(value: Recipe | str | None) -> Recipe | None:
    """A recipe given as an object, a bundled name or a YAML path (the API accepts all three)."""
    if value is None or isinstance(value, Recipe):
        return value
    if isinstance(value, str):
        return load_recipe(value)
    raise RecipeError(f"recipe must be a Recipe, a bundled recipe name or a YAML path, not {value!r}")


def recipe_rows(directory: str, recipe: Recipe,
                threads: int | None = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The recipe's selection, per source shard: `rows`, `ids`, `lengths`, `counts` (the copies
    written: 1, or the recipe's `repeat:`) and,
    with line rules, the kept line spans `starts`/`ends`; and the attribute sets the rules used.
    One DuckDB query over the attribute Parquet (no text is read)."""
    from textsieve.recipes.funnel import connect, schema_files
    from textsieve.recipes.schema import read_schema
    from textsieve.recipes.sql import compile_recipe

    compiled = compile_recipe(recipe, read_schema(directory))
    con = connect(threads, schema_files(compiled.schema))  # fsspec URLs (memory://, s3://) too
    rel = con.sql(selection_sql(compiled))
    table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
    used = sorted(compiled.schema.sets[a] for a in compiled.relations - {"a"})
    shards = table.column("shard").to_pylist()
    out: dict[str, dict[str, Any]] = {}
    bounds = [0] + [i for i in range(1, len(shards)) if shards[i] != shards[i - 1]] + [len(shards)]
    has_lines = "starts" in table.column_names
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi <= lo:
            continue
        part = table.slice(lo, hi - lo)
        d: dict[str, Any] = {"rows": to_numpy(part.column("row")).astype(np.int64),
                             "ids": part.column("id").to_pylist(),
                             "lengths": to_numpy(part.column("_len")).astype(np.int64),
                             "counts": (to_numpy(part.column("_rep")).astype(np.int64) if "_rep" in table.column_names
                                        else np.ones(hi - lo, np.int64))}
        if has_lines:
            d["starts"] = [np.asarray(x, np.int64) for x in part.column("starts").to_pylist()]
            d["ends"] = [np.asarray(x, np.int64) for x in part.column("ends").to_pylist()]
        out[shards[lo]] = d
    return out, used


def survivors(directory: str, recipe: Recipe | str, threads: int | None = None) -> dict[str, np.ndarray]:
    """Source shard -> sorted rows of the documents `recipe` keeps in the annotated `directory`."""
    resolved = as_recipe(recipe)
    if resolved is None:
        raise RecipeError("survivors: no recipe given")
    rows, _ = recipe_rows(directory, resolved, threads)
    return {shard: d["rows"] for shard, d in rows.items()}


def survivor_mask(shard: np.ndarray, row: np.ndarray, within: Survivors) -> np.ndarray:
    """Boolean mask over documents given by parallel (shard, row) arrays: is it a survivor?"""
    mask = np.zeros(len(row), dtype=bool)
    if not len(row):
        return mask
    names, inverse = np.unique(np.asarray(shard, dtype=object).astype(str), return_inverse=True)
    row = np.asarray(row, dtype=np.int64)
    for code, name in enumerate(names.tolist()):
        keep = within.get(name)
        if keep is None or not len(keep):
            continue
        at = np.flatnonzero(inverse == code)
        mask[at] = np.isin(row[at], keep)
    return mask


def survivors_fingerprint(within: Survivors) -> str:
    """Content hash of a survivor set, so a fit made on other survivors is never reused."""
    h = hashlib.sha256()
    for shard in sorted(within):
        h.update(shard.encode("utf-8") + b"\0")
        h.update(np.ascontiguousarray(within[shard], dtype="<i8").tobytes())
    return h.hexdigest()[:16]


def count(within: Survivors) -> int:
    """Number of survivors."""
    return int(sum(len(v) for v in within.values()))


def selection_sql(c: Compiled) -> str:
    """Selected documents in (shard, row) order, with the kept line spans when there are line rules."""
    conds = [f"coalesce({s}, FALSE)" for s in c.doc_rules.values()] or ["TRUE"]
    cols = ["a.shard AS shard", 'a."row" AS "row"', "a.id AS id", f"{c.schema.length_sql} AS _len"]
    cols += [f"{c.repeat_sql} AS _rep"] if c.repeat_sql is not None else []
    rep = ", _rep" if c.repeat_sql is not None else ""
    if not c.line_rules:
        return f"SELECT {', '.join(cols)} FROM {c.from_sql()} WHERE {' AND '.join(conds)} ORDER BY 1, 2"
    anchor = c.line_anchor
    if anchor is None:  # compile_recipe sets it whenever there are line rules
        raise ValueError("selection_sql: line rules without a line anchor")
    cols += [f"[{element_field(anchor, 'start')} for _x in {c.line_source}] AS _st",
             f"[{element_field(anchor, END)} for _x in {c.line_source}] AS _en",
             f"{c.line_mask_sql(list(c.line_rules))} AS _keep"]
    inner = f"SELECT {', '.join(cols)} FROM {c.from_sql()} WHERE {' AND '.join(conds)}"
    return (f"SELECT shard, \"row\", id, _len{rep}, list_where(_st, _keep) AS starts, list_where(_en, _keep) AS ends "
            f"FROM ({inner}) WHERE list_contains(_keep, TRUE) ORDER BY 1, 2")
