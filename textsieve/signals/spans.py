"""Turn a signal's batch scores into RPv2's span lists as Arrow columns (spec §2.1).

Column type: `list<struct<start: int64, end: int64, score: double | int64>>`. Integer-typed
RPv2 signals (§2.2) keep an int64 score so the JSON type survives the round trip through
Parquet; everything else is a double. Offsets are code points into the raw text.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from textsieve.io.arrow_arrays import numeric_array
from textsieve.signals.registry import DocScores, LineScores, Scores, Signal
from textsieve.text import raw_kernel as rk
from textsieve.text.views import BatchViews


def span_type(dtype: str) -> pa.DataType:
    score = pa.int64() if dtype == "int" else pa.float64()
    return pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", score)]))


#: Field metadata key naming a span column's level where the name cannot tell it (see `free_spans`).
LEVEL_KEY = b"textsieve.level"
FREE = b"spans"
LINES = b"lines"


def free_spans(name: str, dtype: str = "int") -> pa.Field:
    """A span column whose spans are anywhere in the text, any number per document (PII matches,
    contaminated passages): neither one span per document nor one per line, so recipes must not
    read its first span as the document's value. The level travels in the field's metadata
    (kept by Parquet), which `recipes.schema` reads."""
    return pa.field(name, span_type(dtype), metadata={LEVEL_KEY: FREE})


def line_spans(name: str, dtype: str = "int") -> pa.Field:
    """A span column with one span per line (as the `rps_lines_*` signals) whose name does not say
    `_lines_` (`dup_paragraphs_seen`): `line:` rules read it per line."""
    return pa.field(name, span_type(dtype), metadata={LEVEL_KEY: LINES})


def _struct(starts: np.ndarray, ends: np.ndarray, values: np.ndarray, valid: np.ndarray | None,
            dtype: str) -> pa.StructArray:
    scores = numeric_array(values, pa.int64() if dtype == "int" else pa.float64(), valid)
    return pa.StructArray.from_arrays([numeric_array(starts, pa.int64()), numeric_array(ends, pa.int64()), scores],
                                      names=["start", "end", "score"])


def to_arrow(sig: Signal, scores: Scores, views: BatchViews) -> pa.Array:
    """The Arrow column of `sig` for the batch."""
    n = views.n_docs
    if isinstance(scores, DocScores):
        offsets = np.arange(n + 1, dtype=np.int32)
        items = _struct(np.zeros(n, dtype=np.int64), views.lengths, scores.values, scores.valid, sig.dtype)
        return pa.ListArray.from_arrays(numeric_array(offsets, pa.int32()), items, type=span_type(sig.dtype))
    assert isinstance(scores, LineScores)
    starts = views.line(rk.L_START)
    ends = views.line(rk.L_END)
    line_off = views.line_off
    values = scores.values
    valid = scores.valid
    if scores.null_span_when_no_lines:
        empty = np.flatnonzero(line_off[1:] == line_off[:-1])
        if empty.size:  # insert one [0, 0, null] span for each document without lines
            at = line_off[empty]
            starts = np.insert(starts, at, 0)
            ends = np.insert(ends, at, 0)
            values = np.insert(values, at, 0)
            valid = np.insert(np.ones(len(scores.values), bool) if valid is None else valid, at, False)
            line_off = line_off + np.searchsorted(empty, np.arange(n + 1), side="left")
    items = _struct(starts, ends, values, valid, sig.dtype)
    return pa.ListArray.from_arrays(numeric_array(line_off, pa.int32()), items, type=span_type(sig.dtype))
