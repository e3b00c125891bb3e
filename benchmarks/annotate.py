"""Annotate speed: docs/s per core for the 28 RPv2 rule signals + MinHash.

Prints, from one run on the same documents:
  1. the floor: reading and parsing the input alone (ShardReader),
  2. textsieve annotate with 1 worker (read + signals + MinHash + Parquet write),
  3. textsieve annotate with all cores (per-core figure = docs/s / cores),
  4. a straightforward pure-Python implementation of the same signals (textsieve.signals.reference,
     the executable spec) plus MinHash with hashlib and NumPy permutations, on a subset,
and the ratios between them. Target (issue 2): >= 1,500 docs/s per core; the RPv2 reference code
runs at about 90 docs/s per core on these documents.

Usage: python benchmarks/annotate.py [--input PATH] [--reference-docs N]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from textsieve.dedup.minhash import NGRAM, THRESHOLDS, optimal_param, permutations
from textsieve.exec.local import default_workers
from textsieve.io.paths import expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.signals.reference import load_bad_words, load_stop_words, normalize, reference_signals
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
MERSENNE = (1 << 61) - 1


def read_floor(path: str) -> tuple[int, float]:
    t = time.perf_counter()
    n = sum(1 for shard in expand_inputs([path]) for _ in ShardReader(shard, ReadOptions()))
    return n, time.perf_counter() - t


def annotate(path: str, workers: int, resources: Path) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = AnnotateConfig(inputs=[path], output=out, workers=workers, resources=str(resources), progress=False)
        res = run_annotate(cfg)
        return res.documents, res.seconds


def pure_python_minhash(text: str, a: np.ndarray, b: np.ndarray) -> list | None:
    """MinHash as a straightforward implementation would write it: hashlib per shingle, NumPy
    wrapping uint64 arithmetic for the permutations."""
    words = normalize(text).split()
    if len(words) < NGRAM:
        return None
    shingles = {" ".join(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)}
    hv = np.array([int.from_bytes(hashlib.sha1(s.encode("utf-8", "surrogatepass")).digest()[:4], "little")
                   for s in shingles], dtype=np.uint64)
    with np.errstate(over="ignore"):
        phv = ((hv[:, None] * a[None, :] + b[None, :]) % np.uint64(MERSENNE)) & np.uint64(0xFFFFFFFF)
    sig = phv.min(axis=0).astype(np.uint32)
    return [sig[: r * bands].astype(">u4").tobytes() for bands, r in (optimal_param(t, 128) for t in THRESHOLDS)]


def reference(path: str, limit: int, resources: Path) -> tuple[int, float]:
    stop = load_stop_words(resources / "stopwords" / "en.json")
    bad = load_bad_words(resources / "ldnoobw" / "en")
    a, b = permutations()
    texts = []
    for shard in expand_inputs([path]):
        for doc in ShardReader(shard, ReadOptions()):
            texts.append(doc.text)
            if len(texts) >= limit:
                break
    t = time.perf_counter()
    for text in texts:
        reference_signals(text, stop, bad)
        pure_python_minhash(text, a, b)
    return len(texts), time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default=str(SHARED / "corpora/dev/web_sample.jsonl.gz"))
    ap.add_argument("--resources", default=str(SHARED / "golden/rpv2_resources"))
    ap.add_argument("--reference-docs", type=int, default=1000)
    args = ap.parse_args()
    if not Path(args.input).exists():
        print(f"input not found: {args.input} (set TEXTSIEVE_SHARED)", file=sys.stderr)
        return 2
    resources = Path(args.resources)
    annotate(args.input, 1, resources)  # warm-up: numba compile/cache load, page cache
    cores = default_workers()
    rows = []
    n, s = read_floor(args.input)
    rows.append(("read + parse only (floor)", n, s, 1))
    n, s = annotate(args.input, 1, resources)
    one = n / s
    rows.append(("textsieve annotate, 1 worker", n, s, 1))
    if cores > 1:
        n, s = annotate(args.input, cores, resources)
        rows.append((f"textsieve annotate, {cores} workers", n, s, cores))
    n, s = reference(args.input, args.reference_docs, resources)
    ref = n / s
    rows.append(("pure-Python reference (spec twin)", n, s, 1))
    print(f"{'run':<38} {'docs':>7} {'seconds':>8} {'docs/s':>9} {'docs/s/core':>12}")
    for name, n, s, c in rows:
        print(f"{name:<38} {n:>7} {s:>8.2f} {n / s:>9.0f} {n / s / c:>12.0f}")
    print(f"\nannotate (1 worker) vs pure-Python reference: {one / ref:.1f}x")
    print(f"annotate (1 worker) vs RPv2 reference code (~90 docs/s/core): {one / 90:.1f}x")
    print(f"target >= 1,500 docs/s per core: {'met' if one >= 1500 else 'NOT met'} ({one:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
