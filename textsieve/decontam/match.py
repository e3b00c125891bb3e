"""Documents against a loaded index: the three columns of the `sets/decontam` set for a batch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from textsieve.decontam.index import LoadedIndex, load_index
from textsieve.decontam.ngrams import fold_table
from textsieve.io.arrow_arrays import numeric_array, string_lists
from textsieve.signals.spans import free_spans, span_type
from textsieve.text.batch_encoding import codepoints_batch

COUNT = "ts_contam_count"
SPANS = "ts_contam_spans"
BENCH = "ts_contam_bench"


def columns_schema() -> pa.Schema:
    """The set's computed columns: spans in annotate's span layout (int scores), so `select --redact`
    and the report read them like any span signal."""
    return pa.schema([pa.field(COUNT, pa.int64()), free_spans(SPANS), pa.field(BENCH, pa.list_(pa.string()))])


@dataclass
class Matcher:
    """What one worker holds: the memory-mapped index and what the kernel needs beside it."""

    index: LoadedIndex
    lengths: np.ndarray
    names: list[str]
    fold: np.ndarray


def open_matcher(work: str, lengths: list[int], names: list[str]) -> Matcher:
    return Matcher(load_index(work), np.asarray(lengths, dtype=np.int64), list(names), fold_table())


def match_texts(m: Matcher, texts: list[str]) -> dict[str, pa.Array]:
    """{count, spans, bench} columns for `texts` (one row each)."""
    from textsieve.decontam.ngram_kernels import match_batch

    cps, off = codepoints_batch(texts)
    ix = m.index
    counts, masks, span_off, ss, se, sc = match_batch(cps, off, m.fold, m.lengths, ix.exact, ix.keys, ix.masks,
                                                      ix.buckets, ix.shift, ix.bloom, ix.bbase, ix.bm, ix.bk)
    # columns from buffers: `pa.array` loads pandas through pyarrow's shim
    items = pa.StructArray.from_arrays([numeric_array(ss, pa.int64()), numeric_array(se, pa.int64()),
                                        numeric_array(sc, pa.int64())], names=["start", "end", "score"])
    spans = pa.ListArray.from_arrays(numeric_array(span_off, pa.int32()), items, type=span_type("int"))
    benches: list[list[str]] = []
    for mask in masks.tolist():
        benches.append(sorted(name for b, name in enumerate(m.names) if mask >> b & 1) if mask else [])
    return {COUNT: numeric_array(counts, pa.int64()), SPANS: spans, BENCH: string_lists(benches)}
