"""Turn a signal's batch scores into RPv2's span lists as Arrow columns (spec §2.1).

Column type: `list<struct<start: int64, end: int64, score: double | int64>>`. Integer-typed
RPv2 signals (§2.2) keep an int64 score so the JSON type survives the round trip through
Parquet; everything else is a double. Offsets are code points into the raw text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from textsieve.io.arrow_arrays import list_offsets, numeric_array
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


#: `BatchViews.cache` keys of the span bounds every signal of a level shares in a batch
_DOC_BOUNDS, _LINE_BOUNDS = "spans_doc_bounds", "spans_line_bounds"

Bounds = tuple[pa.Array, pa.Array, pa.Array]  # list offsets (int32), span starts, span ends (int64)


def _shared_bounds(views: BatchViews, key: str, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Bounds:
    """The Arrow offsets, starts and ends of one level's spans, built once per batch: every
    document-level signal has the same spans, and so has every line-level one, so their columns
    share these buffers (a batch's line-level columns were ~2/3 copies of the same starts and
    ends, and annotate's writer holds 2,048 rows of them before a row group is written)."""
    got = views.cache.get(key)
    if got is None:
        got = views.cache[key] = (numeric_array(offsets, pa.int32()), numeric_array(starts, pa.int64()),
                                  numeric_array(ends, pa.int64()))
    return got


def _spans(sig: Signal, bounds: Bounds, values: np.ndarray, valid: np.ndarray | None) -> pa.ListArray:
    offsets, starts, ends = bounds
    scores = numeric_array(values, pa.int64() if sig.dtype == "int" else pa.float64(), valid)
    items = pa.StructArray.from_arrays([starts, ends, scores], names=["start", "end", "score"])
    return pa.ListArray.from_arrays(offsets, items, type=span_type(sig.dtype))


def spans_array(per_doc: Sequence[Sequence[tuple[int, int, int]]]) -> pa.ListArray:
    """``pa.array`` of `span_type("int")` from each document's (start, end, score) spans, built
    from buffers (no pandas through pyarrow's shim)."""
    flat = np.array([span for doc in per_doc for span in doc], dtype=np.int64).reshape(-1, 3)
    items = pa.StructArray.from_arrays([numeric_array(flat[:, k], pa.int64()) for k in range(3)],
                                       names=["start", "end", "score"])
    return pa.ListArray.from_arrays(list_offsets((len(d) for d in per_doc), len(per_doc)), items,
                                    type=span_type("int"))


def to_arrow(sig: Signal, scores: Scores, views: BatchViews) -> pa.Array:
    """The Arrow column of `sig` for the batch."""
    n = views.n_docs
    if isinstance(scores, DocScores):
        bounds = _shared_bounds(views, _DOC_BOUNDS, np.arange(n + 1), np.zeros(n, dtype=np.int64), views.lengths)
        return _spans(sig, bounds, scores.values, scores.valid)
    assert isinstance(scores, LineScores)
    line_off = views.line_off
    if scores.null_span_when_no_lines:
        empty = np.flatnonzero(line_off[1:] == line_off[:-1])
        if empty.size:  # insert one [0, 0, null] span for each document without lines
            at = line_off[empty]
            valid = np.ones(len(scores.values), bool) if scores.valid is None else scores.valid
            bounds = (numeric_array(line_off + np.searchsorted(empty, np.arange(n + 1), side="left"), pa.int32()),
                      numeric_array(np.insert(views.line(rk.L_START), at, 0), pa.int64()),
                      numeric_array(np.insert(views.line(rk.L_END), at, 0), pa.int64()))
            return _spans(sig, bounds, np.insert(scores.values, at, 0), np.insert(valid, at, False))
    bounds = _shared_bounds(views, _LINE_BOUNDS, line_off, views.line(rk.L_START), views.line(rk.L_END))
    return _spans(sig, bounds, scores.values, scores.valid)
