"""The benchmark n-gram index: built once per run into a work folder that every worker memory-maps.

Why files and memory maps: the workers of a run are separate processes; an index loaded into each
would cost workers x its size. Written once as `.npy` files and opened with `mmap_mode="r"`, its
pages sit once in the page cache and are shared by all workers.

Modes (the layout: `ngram_kernels`):

* exact (default): the distinct 64-bit keys, sorted, with the bit set of the benchmarks holding
  each and a bucket table; about `EXACT_BYTES_PER_KEY` bytes per key. No false positives beyond
  the key hash's ~K / 2^64 per look-up;
* Bloom (`bloom_fp`): one filter per benchmark sized for its n-gram count at that false-positive
  rate per look-up, so a document with W n-grams is falsely flagged with probability about
  W x rate x benchmarks (1e-6 and 1,000-word documents: ~0.1% of documents). A Bloom filter has no
  false negatives: its matches are a superset of exact mode's.

Mode choice: Bloom when `bloom_fp` is given; else exact, unless the exact index would exceed the
memory allowance (an upper bound, from the n-gram count before duplicates are removed), in which
case Bloom at `AUTO_BLOOM_FP` (the run says so, and the set's info records the mode). A Bloom
filter larger than the allowance is an error naming the size it needs.

Two passes over the benchmarks (they are small next to a corpus): the first counts n-grams to
choose and size the index, the second fills it, so memory stays bounded by the index itself.
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

EXACT_BYTES_PER_KEY = 32  # key 8 + benchmark bits 8 + bucket table <= 16
AUTO_BLOOM_FP = 1e-6
BATCH_CHARS = 4_000_000
BATCH_EXAMPLES = 20_000


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


def _keys(texts: list[str], n: int, min_words: int) -> tuple[np.ndarray, np.ndarray, int]:
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
        st = {"examples": 0, "short_examples_left_out": 0, "ngrams": 0}
        for texts in _batches(b, fields):
            keys, sh, skipped = _keys(texts, n, min_words)
            st["examples"] += len(texts)
            st["short_examples_left_out"] += int(skipped)
            st["ngrams"] += int(keys.shape[0])
            short |= sh
        if st["examples"] == 0:
            raise BenchmarkError(f"benchmark {b.name} ({b.path}): no examples (empty file(s))")
        per[b.name] = st
    total = sum(s["ngrams"] for s in per.values())
    lengths = [n] + [k for k in range(n - 1, 0, -1) if short[k]]
    if bloom_fp is None and total * EXACT_BYTES_PER_KEY <= memory:
        stats = _fill_exact(benches, fields, n, min_words, work, per)
        stats.lengths = lengths
        return stats
    rate = bloom_fp if bloom_fp is not None else AUTO_BLOOM_FP
    reason = (f"--bloom-fp {rate:g}" if bloom_fp is not None else
              f"an exact index of up to {total:,} n-grams ({_mb(total * EXACT_BYTES_PER_KEY)}) exceeds --memory "
              f"({_mb(memory)}); a Bloom filter at false-positive rate {rate:g} per n-gram instead")
    size = sum((bloom_shape(s["ngrams"], rate)[0] + 63) // 64 * 8 for s in per.values())
    if size > memory:
        raise BenchmarkError(f"decontaminate: a Bloom filter for {total:,} benchmark n-grams at rate {rate:g} needs "
                             f"{_mb(size)}, more than --memory ({_mb(memory)}); raise --memory or --bloom-fp")
    return _fill_bloom(benches, fields, n, min_words, rate, work, per, lengths, reason)


def _fill_exact(benches: list[Benchmark], fields: list[str], n: int, min_words: int, work: str,
                per: dict[str, dict[str, int]]) -> IndexStats:
    all_keys = []
    all_bits = []
    for i, b in enumerate(benches):
        parts = [np.unique(_keys(texts, n, min_words)[0]) for texts in _batches(b, fields)]
        keys = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
        per[b.name]["distinct_ngrams"] = int(keys.shape[0])
        all_keys.append(keys)
        all_bits.append(np.full(keys.shape[0], np.uint64(1) << np.uint64(i), dtype=np.uint64))
    keys = np.concatenate(all_keys)
    bits = np.concatenate(all_bits)
    order = np.argsort(keys, kind="stable")
    keys, bits = keys[order], bits[order]
    uniq, first = np.unique(keys, return_index=True)
    masks = np.bitwise_or.reduceat(bits, first) if uniq.shape[0] else np.zeros(0, np.uint64)
    nbits = max(1, min(40, int(math.ceil(math.log2(max(2, uniq.shape[0]))))))
    shift = 64 - nbits
    counts = np.bincount((uniq >> np.uint64(shift)).astype(np.int64), minlength=1 << nbits)
    buckets = np.zeros((1 << nbits) + 1, dtype=np.int64)
    np.cumsum(counts, out=buckets[1:])
    for name, arr in (("keys", uniq), ("masks", masks.astype(np.uint64)), ("buckets", buckets)):
        np.save(os.path.join(work, f"{name}.npy"), arr)
    size = uniq.nbytes + masks.nbytes + buckets.nbytes
    _write_meta(work, {"mode": "exact", "shift": shift, "n_keys": int(uniq.shape[0])})
    return IndexStats("exact", None, [n], int(uniq.shape[0]), int(size), "exact set", per)


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
