"""Where real token counts live beside an annotate folder, and which one a consumer uses.

`textsieve tokens` writes the set `sets/tokens_<name>` with the int64 column `ts_tokens_<name>`.
DSIR's token budget, the funnel and the report read it through here, with one rule for which
column (`resolve_token_column`): an explicit column (or tokenizer name) is used as given; no
choice (`None`) means automatic - the one tokens set when exactly one exists, the word/punctuation
proxy when there is none, an error listing them when there are several; ``"words"`` forces the
proxy. The rule lives in one place so DSIR, the funnel and the report cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.parquet_read import read_table

SET_PREFIX = "tokens_"
COLUMN_PREFIX = "ts_tokens_"
WORDS = "words"  # the token_column value that forces word/punctuation counts


class TokenColumnError(TextsieveError, ValueError):
    """A token column that cannot be used as asked (missing set, ambiguous choice)."""


def token_columns(directory: str, sets: Iterable[str] | None = None) -> list[str]:
    """The `ts_tokens_<name>` columns of the current `sets/tokens_*` sets of `directory`, sorted
    (`sets`: the folder's set names when the caller has listed them already)."""
    from textsieve.io.attributes import attribute_sets

    if sets is None:
        try:
            sets = attribute_sets(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
    return sorted(COLUMN_PREFIX + s[len(SET_PREFIX):] for s in sets if s.startswith(SET_PREFIX))


def resolve_token_column(directory: str, requested: str | None, what: str = "token budget") -> str | None:
    """The `ts_tokens_<name>` column to count with, or None for word/punctuation tokens (see module doc).

    `requested`: None (automatic), ``"words"``, a column ``ts_tokens_<name>`` or a tokenizer name."""
    if requested == WORDS:
        return None
    have = token_columns(directory)
    if requested is None:
        if len(have) > 1:
            raise TokenColumnError(f"{what}: {directory} has several token counts ({', '.join(have)}); choose one "
                                   f"with --token-column (or --token-column {WORDS} for word/punctuation tokens)")
        return have[0] if have else None
    col = requested if requested.startswith(COLUMN_PREFIX) else COLUMN_PREFIX + requested
    if col not in have:
        hint = f"it has {', '.join(have)}" if have else "it has none"
        raise TokenColumnError(f"{what}: no token counts {col} in {directory} ({hint}); run `textsieve tokens "
                               f"{directory} --tokenizer PATH --name {col[len(COLUMN_PREFIX):]}` first")
    return col


def set_of(column: str) -> str:
    """`ts_tokens_x` -> the set name `tokens_x`."""
    return SET_PREFIX + column[len(COLUMN_PREFIX):]


def read_token_counts(directory: str, column: str) -> pa.Table:
    """(shard, row, <column>) of every document, in the set's (annotate's) order."""
    from textsieve.io.attributes import attribute_shards

    fs, paths = attribute_shards(directory, set_of(column))
    tables = []
    for p in paths:
        with fs.open(p, "rb") as fh:
            tables.append(read_table(fh, columns=["shard", "row", column]))
    return pa.concat_tables(tables)


def aligned_counts(directory: str, column: str, shard: np.ndarray, row: np.ndarray) -> np.ndarray:
    """The counts of `column` for the documents (shard, row), as int64, in that order.

    A document missing from the set is an error naming the fix (the set was counted on other
    documents), never a silent 0."""
    t = read_token_counts(directory, column)
    s = to_numpy(t.column("shard")).astype(object)
    r = to_numpy(t.column("row")).astype(np.int64)
    n = to_numpy(t.column(column)).astype(np.int64)
    if len(s) == len(shard) and np.array_equal(r, row) and np.array_equal(s, shard):
        return n
    idx = _lookup(s, r, np.asarray(shard, dtype=object), np.asarray(row, dtype=np.int64))
    if (idx < 0).any():
        raise TokenColumnError(f"{column}: {int((idx < 0).sum()):,} document(s) of {directory} have no count in "
                               f"sets/{set_of(column)}; run `textsieve tokens` on the folder again")
    return n[idx]


def _lookup(s: np.ndarray, r: np.ndarray, shard: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Index into (s, r) of each (shard, row), -1 where absent (vectorised: one sort, no dict)."""
    if not len(row):
        return np.zeros(0, np.int64)
    if not len(r):
        return np.full(len(row), -1, np.int64)
    _, inv = np.unique(np.concatenate([s, shard]).astype(str), return_inverse=True)
    width = int(max(r.max(), row.max())) + 1
    have = inv[:len(s)].astype(np.int64) * width + r
    want = inv[len(s):].astype(np.int64) * width + row
    order = np.argsort(have, kind="stable")
    pos = np.minimum(np.searchsorted(have[order], want), len(have) - 1)
    idx = order[pos]
    return np.where(have[idx] == want, idx, -1).astype(np.int64)


def token_info(directory: str, column: str) -> dict:
    """The tokens set's summary (tokenizer fingerprint, kind, totals): what a result counted with it cites."""
    from textsieve.io.attributes import set_summary

    return set_summary(directory, set_of(column)) or {}
