"""The benchmark n-gram index: built once per run into a work folder that every worker memory-maps.

Why files and memory maps: the workers of a run are separate processes; an index loaded into each
would cost workers x its size. Written once as `.npy` files and opened with `mmap_mode="r"`, its
pages sit once in the page cache and are shared by all workers.

Modes (the layout: `ngram_kernels`):

* exact (default): the distinct 64-bit keys, sorted, with the bit set of the benchmarks holding
  each and a bucket table (one bucket per 1-2 keys): 16 bytes per key plus at most 8 for the
  table. No false positives beyond the key hash's ~K / 2^64 per look-up;
* Bloom (`bloom_fp`): one filter per benchmark sized for its n-gram count at that false-positive
  rate *per look-up*. A document of W words is looked up about W times per n-gram length in
  `lengths` (n, plus each length of a short example used whole: up to n - min_words + 1 of
  them, 6 with n=13 and min_words=8) and per benchmark, so it is falsely flagged with
  probability about W x len(lengths) x benchmarks x rate (`doc_false_positive`; 1e-6, 1,000
  words, one benchmark, 6 lengths: ~0.6%). A Bloom filter has no false negatives: its matches
  are a superset of exact mode's.

Memory (`--memory`): building the exact index peaks at `EXACT_PEAK_BYTES_PER_NGRAM` (24) bytes
per benchmark n-gram counted (duplicates included): one 8-byte buffer of every n-gram, sorted
and de-duplicated in place per benchmark, plus the merged keys and masks (16 per distinct key)
while merging; after it the buffer is freed and keys + masks + bucket table take less. Mode
choice: Bloom when `bloom_fp` is given; else exact, unless that peak exceeds the allowance, in
which case Bloom at `AUTO_BLOOM_FP` (the run says so, and the set's info records the mode). A
Bloom filter larger than the allowance is an error naming the size it needs. Besides the
index, reading takes a fixed working set of about `BATCH_WORK_BYTES_PER_CHAR` x `BATCH_CHARS`
(~7 MB), whatever the benchmarks' size.

Two passes over the benchmarks (they are small next to a corpus), each streamed (`bench`): the
first counts n-grams to choose and size the index, the second fills it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textsieve.decontam.bench import Benchmark, BenchmarkError, examples
from textsieve.decontam.ngrams import fold_table
from textsieve.text.batch_encoding import codepoints_batch

#: the exact index's build peak per benchmark n-gram (see the module doc)
EXACT_PEAK_BYTES_PER_NGRAM = 24
AUTO_BLOOM_FP = 1e-6
#: characters of benchmark text per key batch
BATCH_CHARS = 250_000
BATCH_EXAMPLES = 20_000
#: a key batch's working set per character: the examples' str and their join (<= 4 each), code
#: points 4, the kernel's key buffer 8 and the returned keys 8
BATCH_WORK_BYTES_PER_CHAR = 28
#: document length (words) the printed Bloom false-positive rate per document is given for
DOC_WORDS = 1000


@dataclass
class IndexStats:
    """What the index holds, per benchmark and in all (goes into the set's info and summary)."""

    mode: str
    bloom_fp: float | None
    lengths: list[int]  # n-gram lengths looked up: n, then the lengths of short examples used whole
    keys: int  # distinct keys (exact) or inserted n-grams (Bloom)
    size_bytes: int
    reason: str  # why this mode
    benchmarks: dict[str, dict[str, int]] = field(default_factory=dict)


def _batches(bench: Benchmark, fields: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for ex in examples(bench, fields):
        batch.append(ex)
        chars += len(ex)
        if chars >= BATCH_CHARS or len(batch) >= BATCH_EXAMPLES:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _keys(texts: list[str], n: int, min_words: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(keys, short lengths used, examples too short, n-grams of single letters/digits left out)
    of a batch of examples (`ngram_kernels.example_keys`)."""
    from textsieve.decontam.ngram_kernels import example_keys

    cps, off = codepoints_batch(texts)
    return example_keys(cps, off, fold_table(), n, min_words)


def bloom_shape(capacity: int, rate: float) -> tuple[int, int]:
    """(bits, probes) of the textbook-optimal filter for `capacity` keys at false-positive `rate`."""
    capacity = max(1, capacity)
    m = max(64, int(math.ceil(-capacity * math.log(rate) / math.log(2) ** 2)))
    return m, max(1, int(round(m / capacity * math.log(2))))


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def doc_false_positive(rate: float, lengths: list[int], benchmarks: int, words: int = DOC_WORDS) -> float:
    """Probability that a document of `words` words is falsely flagged by Bloom filters of `rate`
    per look-up: one look-up per window, n-gram length and benchmark (see the module doc)."""
    return -math.expm1(words * len(lengths) * benchmarks * math.log1p(-rate))


def _bloom_note(rate: float, lengths: list[int], benchmarks: int) -> str:
    looks = f"{len(lengths)} n-gram length(s) x {benchmarks} benchmark(s)"
    doc = doc_false_positive(rate, lengths, benchmarks)
    return (f"false-positive rate {rate:g} per look-up; a document is looked up once per word, {looks}, so a "
            f"{DOC_WORDS:,}-word document is falsely flagged with probability ~{doc:.2g}")


def build_index(benches: list[Benchmark], fields: list[str], n: int, min_words: int, bloom_fp: float | None,
                memory: int, work: str) -> IndexStats:
    """Count, choose the mode, fill the index and write it to folder `work` (see the module doc)."""
    if not 1 <= min_words <= n:
        raise BenchmarkError(f"--min-words {min_words}: must be between 1 and --ngram ({n})")
    if bloom_fp is not None and not 0.0 < bloom_fp < 1.0:
        raise BenchmarkError(f"--bloom-fp {bloom_fp}: must be between 0 and 1 (e.g. 1e-6)")
    per: dict[str, dict[str, int]] = {}
    short = np.zeros(n, dtype=np.bool_)
    for b in benches:
        st = {"examples": 0, "short_examples_left_out": 0, "letter_ngrams_left_out": 0, "ngrams": 0}
        for texts in _batches(b, fields):
            keys, sh, skipped, letters = _keys(texts, n, min_words)
            st["examples"] += len(texts)
            st["short_examples_left_out"] += int(skipped)
            st["letter_ngrams_left_out"] += int(letters)
            st["ngrams"] += int(keys.shape[0])
            short |= sh
        if st["examples"] == 0:
            raise BenchmarkError(f"benchmark {b.name} ({b.path}): no examples (empty file(s))")
        if st["ngrams"] == 0:  # it would match nothing and the run would say nothing
            also = " or made only of single letters or digits" if st["letter_ngrams_left_out"] else ""
            raise BenchmarkError(f"benchmark {b.name} ({b.path}): all {st['examples']:,} example(s) are shorter than "
                                 f"--min-words ({min_words} words){also}, so it has nothing to match; lower "
                                 "--min-words or check --fields")
        per[b.name] = st
    total = sum(s["ngrams"] for s in per.values())
    lengths = [n] + [k for k in range(n - 1, 0, -1) if short[k]]
    peak = total * EXACT_PEAK_BYTES_PER_NGRAM
    if bloom_fp is None and peak <= memory:
        stats = _fill_exact(benches, fields, n, min_words, work, per, total)
        stats.lengths = lengths
        return stats
    rate = bloom_fp if bloom_fp is not None else AUTO_BLOOM_FP
    note = _bloom_note(rate, lengths, len(benches))
    reason = (f"--bloom-fp: Bloom filters at {note}" if bloom_fp is not None else
              f"building an exact index of {total:,} n-grams takes up to {_mb(peak)}, more than --memory "
              f"({_mb(memory)}); Bloom filters instead, at {note}")
    size = sum((bloom_shape(s["ngrams"], rate)[0] + 63) // 64 * 8 for s in per.values())
    if size > memory:
        raise BenchmarkError(f"decontaminate: a Bloom filter for {total:,} benchmark n-grams at rate {rate:g} needs "
                             f"{_mb(size)}, more than --memory ({_mb(memory)}); raise --memory or --bloom-fp")
    return _fill_bloom(benches, fields, n, min_words, rate, work, per, lengths, reason)


def _fill_exact(benches: list[Benchmark], fields: list[str], n: int, min_words: int, work: str,
                per: dict[str, dict[str, int]], total: int) -> IndexStats:
    """The exact index within `EXACT_PEAK_BYTES_PER_NGRAM` x `total` bytes (see the module doc):
    every n-gram into one buffer, each benchmark's part sorted and de-duplicated in place and
    moved to the front, the parts merged (masks OR-ed) into the keys and masks, then the table."""
    from textsieve.decontam.ngram_kernels import compact_unique, fill_buckets, merge_segments

    buf = np.empty(max(1, total), dtype=np.uint64)
    seg_off = np.zeros(len(benches) + 1, dtype=np.int64)
    pos = 0
    for i, b in enumerate(benches):
        start = pos
        for texts in _batches(b, fields):
            keys = _keys(texts, n, min_words)[0]
            if pos + keys.shape[0] > total:
                raise _changed(b)
            buf[pos:pos + keys.shape[0]] = keys
            pos += keys.shape[0]
            del keys
        if pos - start != per[b.name]["ngrams"]:
            raise _changed(b)
        buf[start:pos].sort()
        distinct = int(compact_unique(buf, start, pos, seg_off[i]))
        per[b.name]["distinct_ngrams"] = distinct
        seg_off[i + 1] = seg_off[i] + distinct
    size_d = int(seg_off[-1])
    keys = np.empty(max(1, size_d), dtype=np.uint64)
    masks = np.empty(max(1, size_d), dtype=np.uint64)
    count = int(merge_segments(buf, seg_off, keys, masks))
    del buf
    keys, masks = keys[:count], masks[:count]
    nbits = max(1, min(40, int(math.floor(math.log2(max(2, count))))))  # 2**nbits <= count: 1-2 keys a bucket
    shift = 64 - nbits
    buckets = np.zeros((1 << nbits) + 1, dtype=np.int64)
    fill_buckets(keys, np.uint64(shift), buckets)
    for name, arr in (("keys", keys), ("masks", masks), ("buckets", buckets)):
        np.save(os.path.join(work, f"{name}.npy"), arr)
    size = keys.nbytes + masks.nbytes + buckets.nbytes
    _write_meta(work, {"mode": "exact", "shift": shift, "n_keys": count})
    return IndexStats("exact", None, [n], count, int(size), "exact set", per)


def _changed(b: Benchmark) -> BenchmarkError:
    return BenchmarkError(f"benchmark {b.name} ({b.path}): changed while it was read (its n-gram count differs "
                          "between the counting and the filling pass); run again")


def _fill_bloom(benches: list[Benchmark], fields: list[str], n: int, min_words: int, rate: float, work: str,
                per: dict[str, dict[str, int]], lengths: list[int], reason: str) -> IndexStats:
    from textsieve.decontam.ngram_kernels import bloom_add

    shapes = [bloom_shape(per[b.name]["ngrams"], rate) for b in benches]
    words = [(m + 63) // 64 for m, _ in shapes]
    base = np.zeros(len(benches), dtype=np.uint64)
    base[1:] = np.cumsum(words[:-1])
    bloom = np.zeros(max(1, sum(words)), dtype=np.uint64)
    for i, b in enumerate(benches):
        m, k = shapes[i]
        for texts in _batches(b, fields):
            bloom_add(bloom, base[i], np.uint64(m), k, _keys(texts, n, min_words)[0])
    np.save(os.path.join(work, "bloom.npy"), bloom)
    _write_meta(work, {"mode": "bloom", "bbase": [int(x) for x in base], "bm": [m for m, _ in shapes],
                       "bk": [k for _, k in shapes]})
    total = sum(s["ngrams"] for s in per.values())
    return IndexStats("bloom", rate, lengths, total, int(bloom.nbytes), reason, per)


def _write_meta(work: str, meta: dict[str, Any]) -> None:
    with open(os.path.join(work, "index.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh)


@dataclass
class LoadedIndex:
    """The index as the match kernel takes it (unused mode's arrays are 1-element stand-ins)."""

    exact: bool
    keys: np.ndarray
    masks: np.ndarray
    buckets: np.ndarray
    shift: np.uint64
    bloom: np.ndarray
    bbase: np.ndarray
    bm: np.ndarray
    bk: np.ndarray


def _frozen(arr: np.ndarray) -> np.ndarray:
    """Read-only, like a memory map: numba compiles one kernel per array type, read-only-ness
    included, so every array the kernel takes is read-only in both modes (one compile, not four)."""
    arr = np.asarray(arr)
    arr.setflags(write=False)
    return arr


def _map(path: str, dtype: type) -> np.ndarray:
    arr = np.load(path, mmap_mode="r") if os.path.getsize(path) > 128 else np.load(path)
    return _frozen(arr if arr.size else np.zeros(1, dtype=dtype))  # an empty array cannot be mapped


def load_index(work: str) -> LoadedIndex:
    """Memory-map the index of folder `work` (once per worker)."""
    with open(os.path.join(work, "index.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    u64, i64 = np.uint64, np.int64
    if meta["mode"] == "exact":
        return LoadedIndex(True, _map(os.path.join(work, "keys.npy"), u64), _map(os.path.join(work, "masks.npy"), u64),
                           _map(os.path.join(work, "buckets.npy"), i64), np.uint64(meta["shift"]),
                           _frozen(np.zeros(1, u64)), _frozen(np.zeros(1, u64)), _frozen(np.zeros(1, u64)),
                           _frozen(np.zeros(1, i64)))
    return LoadedIndex(False, _frozen(np.zeros(1, u64)), _frozen(np.zeros(1, u64)), _frozen(np.zeros(2, i64)),
                       np.uint64(63), _map(os.path.join(work, "bloom.npy"), u64),
                       _frozen(np.asarray(meta["bbase"], u64)), _frozen(np.asarray(meta["bm"], u64)),
                       _frozen(np.asarray(meta["bk"], i64)))
