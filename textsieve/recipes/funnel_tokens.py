"""Real tokens in the funnel and the report: the corpus's tokens and the tokens a recipe keeps.

Why apart from the funnel query: the counts live in the `sets/tokens_<name>` sets (`textsieve
tokens`), which a recipe rarely names, so the funnel's one aggregate query does not join them.
Here the recipe's survivors (the same `selection_sql` `select` writes from) are looked up in each
tokens set instead; nothing is computed when the folder has no tokens set.

Line rules cut part of a document; its tokens after the cut are not stored, so a cut document
counts ``round(tokens × kept characters / characters)`` and the figure is flagged `estimated`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from textsieve.io.arrow_arrays import to_numpy
from textsieve.recipes.sql import Compiled
from textsieve.tokenization.columns import aligned_counts, read_token_counts, token_columns, token_info


def token_totals(directory: str, sets: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """{ts_tokens_<name>: {"total", "documents", "tokenizer": {kind, fingerprint, ...}}} of every tokens set
    (`sets`: the folder's set names, when the caller has them: the folder is not listed again)."""
    import pyarrow.compute as pc

    out: dict[str, dict[str, Any]] = {}
    for col in token_columns(directory, sets):
        t = read_token_counts(directory, col)
        info = token_info(directory, col)
        out[col] = {"total": int(pc.sum(t.column(col)).as_py() or 0), "documents": t.num_rows,
                    "tokenizer": {k[len("tokenizer_"):]: v for k, v in info.items() if k.startswith("tokenizer_")}}
    return out


def kept_tokens(directory: str, compiled: Compiled, threads: int | None = None) -> dict[str, dict[str, Any]]:
    """{ts_tokens_<name>: {"total", "kept", "estimated"}}: the corpus's tokens and the recipe's survivors'."""
    from textsieve.recipes.funnel import connect, schema_files
    from textsieve.recipes.survivors import selection_sql

    totals = token_totals(directory, compiled.schema.sets.values())
    if not totals:
        return {}
    rel = connect(threads, schema_files(compiled.schema)).sql(selection_sql(compiled))
    t = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
    shard = to_numpy(t.column("shard")).astype(object)
    row = to_numpy(t.column("row")).astype(np.int64)
    frac = None
    if "starts" in t.column_names:  # line rules: the kept characters' share of each document
        length = to_numpy(t.column("_len")).astype(np.float64)
        kept = np.fromiter((int(np.sum(np.asarray(e, np.int64) - np.asarray(s, np.int64)))
                            for s, e in zip(t.column("starts").to_pylist(), t.column("ends").to_pylist())),
                           dtype=np.float64, count=t.num_rows)
        frac = np.divide(kept, length, out=np.ones_like(kept), where=length > 0)
    out = {}
    for col, tot in totals.items():
        counts = aligned_counts(directory, col, shard, row)
        k = int(counts.sum()) if frac is None else int(np.rint(counts * np.minimum(frac, 1.0)).sum())
        out[col] = {"total": tot["total"], "kept": k, "estimated": frac is not None}
    return out
