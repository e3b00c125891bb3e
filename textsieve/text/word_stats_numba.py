"""The numba kernels behind `word_kernel.word_stats`: exact word and n-gram ids of a batch.

Output layout and the definition of every statistic: `word_kernel`. Word indexes, ids and
counts are int32 (a document has fewer than 2**31 words: `word_kernel` refuses larger ones), which
halves the kernel's memory: a 30 MB document's five million words held ~650 MB of int64 tables.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from textsieve.text.word_kernel import N_WORD_STATS


@njit(cache=True, inline="always")
def _table_size(n):
    size = 16
    while size < 2 * n:
        size <<= 1
    return size


@njit(cache=True)
def _word_ids(buf, starts, ends):
    """Dense ids (first-occurrence order) of the byte strings buf[starts[i]:ends[i]]."""
    n = starts.shape[0]
    size = _table_size(n)
    mask = size - 1
    slots = np.full(size, -1, dtype=np.int32)
    ids = np.empty(n, dtype=np.int32)
    rep = np.empty(n, dtype=np.int32)  # first position of each id, for byte comparison
    n_ids = 0
    for i in range(n):
        s = starts[i]
        e = ends[i]
        h = np.uint64(0xCBF29CE484222325)
        for k in range(s, e):
            h = (h ^ np.uint64(buf[k])) * np.uint64(0x100000001B3)
        slot = np.int64(h & np.uint64(mask))
        while True:
            cand = slots[slot]
            if cand < 0:
                slots[slot] = n_ids
                ids[i] = n_ids
                rep[n_ids] = i
                n_ids += 1
                break
            j = rep[cand]
            rs = starts[j]
            if ends[j] - rs == e - s:
                same = True
                for k in range(e - s):
                    if buf[rs + k] != buf[s + k]:
                        same = False
                        break
                if same:
                    ids[i] = cand
                    break
            slot = (slot + 1) & mask
    return ids, n_ids


@njit(cache=True)
def _pair_ids(left, right, n):
    """Dense ids (first-occurrence order) of the pairs (left[i], right[i]) for i < n."""
    size = _table_size(n)
    mask = size - 1
    keys = np.empty(size, dtype=np.uint64)
    vals = np.full(size, -1, dtype=np.int32)
    out = np.empty(n, dtype=np.int32)
    n_ids = 0
    for i in range(n):
        key = (np.uint64(left[i]) << np.uint64(32)) | np.uint64(right[i])
        slot = np.int64(((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & np.uint64(mask))
        while True:
            v = vals[slot]
            if v < 0:
                vals[slot] = n_ids
                keys[slot] = key
                out[i] = n_ids
                n_ids += 1
                break
            if keys[slot] == key:
                out[i] = v
                break
            slot = (slot + 1) & mask
    return out, n_ids


@njit(cache=True)
def word_stats(buf, doc_off):
    """Return (stats int64[n_docs, N_WORD_STATS], entropy float64[n_docs]).

    `buf` holds the UTF-8 bytes of every document's normalized content, `doc_off` the n_docs+1
    byte offsets. Entropy is summed in first-occurrence order exactly like Python's
    `sum(-c / N * log(c / N) for c in Counter(W).values())`.
    """
    n_docs = doc_off.shape[0] - 1
    stats = np.zeros((n_docs, N_WORD_STATS), dtype=np.int64)
    entropy = np.zeros(n_docs, dtype=np.float64)
    for d in range(n_docs):
        s0 = doc_off[d]
        e0 = doc_off[d + 1]
        if e0 == s0:
            continue
        n = 1
        for k in range(s0, e0):
            if buf[k] == 32:
                n += 1
        starts = np.empty(n, dtype=np.int64)
        ends = np.empty(n, dtype=np.int64)
        wlen = np.zeros(n, dtype=np.int32)
        w = 0
        starts[0] = s0
        for k in range(s0, e0):
            b = buf[k]
            if b == 32:
                ends[w] = k
                w += 1
                starts[w] = k + 1
            elif (b & 0xC0) != 0x80:
                wlen[w] += 1
        ends[n - 1] = e0
        total = 0
        for i in range(n):
            total += wlen[i]
        ids, n_ids = _word_ids(buf, starts, ends)
        counts = np.zeros(n_ids, dtype=np.int64)
        for i in range(n):
            counts[ids[i]] += 1
        ent = 0.0
        for u in range(n_ids):
            c = counts[u]
            ent += (-c / n) * math.log(c / n)
        stats[d, 0] = n
        stats[d, 1] = total
        stats[d, 2] = n_ids
        entropy[d] = ent
        # prefix sums of word lengths: chars of words[i:i+k] = csum[i+k] - csum[i]
        csum = np.zeros(n + 1, dtype=np.int64)
        for i in range(n):
            csum[i + 1] = csum[i] + wlen[i]
        cur = ids
        for size in range(2, 11):
            m = n - size + 1
            if m <= 0:
                break
            cur, n_g = _pair_ids(cur, ids[size - 1:], m)
            gcount = np.zeros(n_g, dtype=np.int32)
            first = np.full(n_g, -1, dtype=np.int32)
            for i in range(m):
                g = cur[i]
                gcount[g] += 1
                if first[g] < 0:
                    first[g] = i
            if size <= 4:
                best = 0
                for g in range(1, n_g):  # strict '>' keeps the earliest n-gram on ties
                    if gcount[g] > gcount[best]:
                        best = g
                if gcount[best] > 1:
                    p = first[best]
                    stats[d, 3 + size - 2] = csum[p + size] - csum[p]
                    stats[d, 6 + size - 2] = gcount[best]
            else:
                covered = 0
                upto = 0  # words before this index are already counted
                for i in range(m):
                    if gcount[cur[i]] > 1:
                        lo = i if i > upto else upto
                        hi = i + size
                        if hi > lo:
                            covered += csum[hi] - csum[lo]
                            upto = hi
                stats[d, 9 + size - 5] = covered
    return stats, entropy
