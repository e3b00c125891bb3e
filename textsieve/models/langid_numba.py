"""The numba form of py3langid's batch walk and scores, for installs without the C library
(``native/langid_kernels.c`` computes the same doubles in one pass). Imported only then, so a
process with the C library never imports numba for language id."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def walk(buf, doc_off, nextmove, rowbase, out_feat, n_feat):  # pragma: no cover - numba
    """py3langid's `visit_counts` for every document: the DFA walk over UTF-8 bytes, giving each
    document's (feature, count) pairs in order of first occurrence (as Python's Counter)."""
    n_docs = len(doc_off) - 1
    slot = np.full(n_feat, -1, dtype=np.int64)
    feats = np.empty(len(buf) + 1, dtype=np.int64)
    counts = np.zeros(len(buf) + 1, dtype=np.int64)
    feat_off = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        start = k
        state = 0
        for i in range(doc_off[d], doc_off[d + 1]):
            state = nextmove[rowbase[state] + buf[i]]
            f = out_feat[state]
            if f >= 0:
                s = slot[f]
                if s < 0:
                    slot[f] = k
                    feats[k] = f
                    counts[k] = 1
                    k += 1
                else:
                    counts[s] += 1
        for j in range(start, k):
            slot[feats[j]] = -1
        feat_off[d + 1] = k
    return feats[:k], counts[:k], feat_off


@numba.njit(cache=True, nogil=True)
def scores(feats, counts, feat_off, ptc, pc):  # pragma: no cover - numba
    """py3langid's naive Bayes scores `log1p(counts) @ ptc[feats] + pc` for every document, fused
    (no gathered copy of the table rows), accumulated in float64. py3langid sums in float32 in
    BLAS order; scores are sums of thousands of log-probabilities, so its rounding error reaches
    ~1e-4 in the final probability, and ours is smaller."""
    n = len(feat_off) - 1
    n_classes = ptc.shape[1]
    out = np.zeros((n, n_classes), dtype=np.float64)
    for d in range(n):
        acc = out[d]
        for j in range(feat_off[d], feat_off[d + 1]):
            w = np.log1p(np.float64(counts[j]))
            row = ptc[feats[j]]
            for c in range(n_classes):
                acc[c] += w * row[c]
        for c in range(n_classes):
            acc[c] += pc[c]
    return out
