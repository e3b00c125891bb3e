"""Throughput of ``textsieve.dedup.minhash.signatures`` (one core) against a hashlib+numpy baseline.

Usage::

    python benchmarks/minhash_speed.py [--corpus PATH] [--limit N] [--baseline-limit N] [--repeat K]

Normalization (§3.2) is done in Python beforehand and is *not* timed. Both kernels are timed:
the C library (``textsieve.native``, the default) and its numba twin (compiled or loaded from
its cache and warmed up before timing). Both implementations run
single-threaded in this process; docs/s is reported per core from CPU time
(``time.process_time``) and, for reference, from wall-clock time.

The baseline is the straightforward vectorised Python approach: per document, split the words,
build the set of 13-word shingles, ``hashlib.sha1`` each one, then apply all permutations with a
``(n_shingles, 128)`` numpy expression and take the column minima.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import string
import time
import unicodedata
from pathlib import Path

import numpy as np

from textsieve.dedup import minhash as mh
from textsieve.text.batch_encoding import encode_batch

_PUNCT = str.maketrans("", "", string.punctuation)


def _default_corpus() -> Path:
    shared = os.environ.get("TEXTSIEVE_SHARED")
    root = Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared"
    return root / "corpora" / "dev" / "web_sample.jsonl.gz"


def normalize(text: str) -> str:
    return unicodedata.normalize("NFD", " ".join(text.translate(_PUNCT).lower().split()))


def baseline(docs: list[str], ngram: int = mh.NGRAM) -> tuple[np.ndarray, np.ndarray]:
    a, b = mh.permutations()
    p = np.uint64(mh.MERSENNE_PRIME)
    m32 = np.uint64(mh.MAX_HASH)
    sig = np.full((len(docs), a.shape[0]), mh.MAX_HASH, dtype=np.uint32)
    valid = np.zeros(len(docs), dtype=bool)
    for i, doc in enumerate(docs):
        words = doc.split()
        if len(words) < ngram:
            continue
        shingles = {" ".join(words[j : j + ngram]) for j in range(len(words) - ngram + 1)}
        hv = np.array(
            [int.from_bytes(hashlib.sha1(s.encode("utf-8")).digest()[:4], "little") for s in shingles],
            dtype=np.uint64,
        )
        phv = ((hv[:, None] * a[None, :] + b[None, :]) % p) & m32  # uint64 wraps, like the original
        sig[i] = phv.min(axis=0)
        valid[i] = True
    return sig, valid


def _timed(fn, *args):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=_default_corpus())
    ap.add_argument("--limit", type=int, default=0, help="use only the first N docs (0: all)")
    ap.add_argument("--baseline-limit", type=int, default=1500, help="docs for the slow baseline")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of the kernel (best is kept)")
    args = ap.parse_args()

    texts = []
    with gzip.open(args.corpus, "rt", encoding="utf-8") as fh:
        for line in fh:
            texts.append(json.loads(line)["text"])
            if args.limit and len(texts) >= args.limit:
                break
    t0 = time.perf_counter()
    norm = [normalize(t) for t in texts]
    content, offsets = encode_batch(norm)
    t_norm = time.perf_counter() - t0
    n = len(norm)
    n_words = np.array([s.count(" ") + 1 if s else 0 for s in norm])
    print(f"corpus       {args.corpus}")
    print(
        f"docs         {n:,}  ({content.nbytes / n:,.0f} normalized bytes/doc, "
        f"{n_words.mean():,.0f} words/doc; normalization {t_norm:.1f}s, not timed)"
    )

    native = mh.rpv2_signatures
    results = {}
    for kernel in ("C", "numba"):
        mh.rpv2_signatures = native if kernel == "C" else (lambda: None)
        if kernel == "C" and native() is None:
            print("C            not built (no C compiler at install time?); skipped")
            continue
        t0 = time.perf_counter()
        mh.signatures(content[: offsets[1]], offsets[:2])  # load the library / compile or load numba's cache
        print(f"{kernel:<12} first call (load or compile) {time.perf_counter() - t0:.2f}s")
        best_cpu = best_wall = float("inf")
        for _ in range(max(1, args.repeat)):
            (sig, valid), cpu, wall = _timed(mh.signatures, content, offsets)
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
        results[kernel] = (sig, valid)
        print(
            f"{kernel:<12} {n / best_cpu:10,.0f} docs/s per core (CPU time; wall {n / best_wall:,.0f} docs/s)"
            f"  = {best_cpu / n * 1e6:.1f} us/doc"
        )
    mh.rpv2_signatures = native
    fast = n / best_cpu
    if len(results) == 2:
        same_kernels = all(np.array_equal(x, y) for x, y in zip(results["C"], results["numba"]))
        print(f"C == numba   {same_kernels}")
    sig, valid = results.get("C", results["numba"])

    m = min(n, args.baseline_limit) if args.baseline_limit else n
    (bsig, bvalid), cpu, wall = _timed(baseline, norm[:m])
    slow = m / cpu
    print(
        f"baseline     {slow:10,.0f} docs/s per core (CPU time; wall {m / wall:,.0f} docs/s)"
        f"  = {cpu / m * 1e6:.1f} us/doc  [hashlib + numpy, first {m:,} docs]"
    )
    same = bool(np.array_equal(bvalid, valid[:m]) and np.array_equal(bsig[bvalid], sig[:m][valid[:m]]))
    print(f"speed-up     {fast / slow:10.1f}x   (numba vs baseline; signatures identical on the baseline docs: {same})")


if __name__ == "__main__":
    main()
