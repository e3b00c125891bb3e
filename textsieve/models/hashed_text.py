"""Hashed word unigram+bigram features, fastText-style, as numba kernels over UTF-8 batches.

Used by the `linear` classifier backend, which needs no fastText wheel. Tokens are maximal runs
of bytes other than fastText's separators (space, \\t, \\n, \\v, \\f, \\r, \\0), case kept, as
fastText reads text. A token's hash is 64-bit FNV-1a of its bytes; a bigram's is
`h1 * 116049371 + h2` (fastText's n-gram combination), both mod the bucket count, so features
are stable across processes and platforms. A document's feature vector is the mean of its
token and bigram one-hots (fastText averages its input vectors the same way), so a linear
score is `mean(w[buckets]) + b`, computed without building the vector.
"""

from __future__ import annotations

import numba
import numpy as np

from textsieve.text.batch_encoding import encode_batch

FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)
NGRAM_MULT = np.uint64(116049371)


@numba.njit(cache=True, nogil=True, inline="always")
def _is_sep(c):  # pragma: no cover - numba
    return c == 32 or c == 9 or c == 10 or c == 11 or c == 12 or c == 13 or c == 0


@numba.njit(cache=True, nogil=True)
def _doc_hashes(buf, a, b):  # pragma: no cover - numba
    """Token hashes of buf[a:b]."""
    out = np.empty((b - a) // 2 + 1, dtype=np.uint64)
    n = 0
    i = a
    while i < b:
        while i < b and _is_sep(buf[i]):
            i += 1
        if i >= b:
            break
        h = FNV_OFFSET
        while i < b and not _is_sep(buf[i]):
            h = (h ^ np.uint64(buf[i])) * FNV_PRIME
            i += 1
        out[n] = h
        n += 1
    return out[:n]


@numba.njit(cache=True, nogil=True)
def feature_buckets(buf, off, buckets):  # pragma: no cover - numba
    """Flat bucket ids (unigrams then bigrams of each document) and n+1 offsets into them."""
    n_docs = len(off) - 1
    total = 0
    for d in range(n_docs):
        total += off[d + 1] - off[d] + 1
    idx = np.empty(total, dtype=np.int64)
    doc_off = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    nb = np.uint64(buckets)
    for d in range(n_docs):
        h = _doc_hashes(buf, off[d], off[d + 1])
        for j in range(len(h)):
            idx[k] = np.int64(h[j] % nb)
            k += 1
        for j in range(len(h) - 1):
            idx[k] = np.int64((h[j] * NGRAM_MULT + h[j + 1]) % nb)
            k += 1
        doc_off[d + 1] = k
    return idx[:k], doc_off


@numba.njit(cache=True, nogil=True)
def linear_scores(buf, off, weights, bias):  # pragma: no cover - numba
    """`mean(weights[features]) + bias` per document; NaN for documents without tokens."""
    n_docs = len(off) - 1
    out = np.full(n_docs, np.nan)
    nb = np.uint64(len(weights))
    for d in range(n_docs):
        h = _doc_hashes(buf, off[d], off[d + 1])
        if len(h) == 0:
            continue
        s = 0.0
        for j in range(len(h)):
            s += weights[np.int64(h[j] % nb)]
        for j in range(len(h) - 1):
            s += weights[np.int64((h[j] * NGRAM_MULT + h[j + 1]) % nb)]
        out[d] = s / (2 * len(h) - 1) + bias
    return out


def feature_matrix(texts: list[str], buckets: int):
    """The documents' mean-pooled hashed features as a SciPy CSR matrix (for training)."""
    from scipy.sparse import csr_matrix

    buf, off = encode_batch(texts)
    idx, doc_off = feature_buckets(buf, off, buckets)
    counts = np.diff(doc_off)
    data = np.repeat(1.0 / np.maximum(counts, 1), counts)
    m = csr_matrix((data, idx, doc_off), shape=(len(texts), buckets))
    m.sum_duplicates()
    return m
