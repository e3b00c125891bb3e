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


#: documents of more words than this build their n-gram ids with the compact table
COMPACT_PAIRS = 1 << 20


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
def _pair_ids_compact(left, right, n):
    """`_pair_ids` for a long document, with the same ids. The table holds only ids; a pair
    is compared at the first position of its id (`rep`), not through a stored 64-bit key: 4
    bytes a slot instead of 12, which for a 30 MB document's 3.8 million words was 100 MB of
    the kernel's peak. Its extra lookups cost ordinary documents time (12-20% slower than the
    keyed table over the dev pool's n-grams, both timed in one process), so they keep that one."""
    size = _table_size(n)
    mask = size - 1
    vals = np.full(size, -1, dtype=np.int32)
    rep = np.empty(n, dtype=np.int32)
    out = np.empty(n, dtype=np.int32)
    n_ids = 0
    for i in range(n):
        a = left[i]
        b = right[i]
        key = (np.uint64(a) << np.uint64(32)) | np.uint64(b)
        slot = np.int64(((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & np.uint64(mask))
        while True:
            v = vals[slot]
            if v < 0:
                vals[slot] = n_ids
                rep[n_ids] = i
                out[i] = n_ids
                n_ids += 1
                break
            r = rep[v]
            if left[r] == a and right[r] == b:
                out[i] = v
                break
            slot = (slot + 1) & mask
    return out, n_ids


@njit(cache=True)
def _doc_words(buf, s0, e0, n):
    """(word ids, distinct words, code points of each word) of the n space-separated words of
    buf[s0:e0]. Ids are dense, in first-occurrence order.

    One pass that hashes each word as it is found: no table of every word's bounds (16 bytes a
    word; for a 30 MB document's 3.8 million words, half the kernel's peak). A word is compared
    with its id's first occurrence, whose bounds are kept per id; those arrays are sized for the
    worst case but only written (so only resident) for the distinct words."""
    size = _table_size(n)
    mask = size - 1
    slots = np.full(size, -1, dtype=np.int32)
    ids = np.empty(n, dtype=np.int32)
    rep_start = np.empty(n, dtype=np.int64)
    rep_end = np.empty(n, dtype=np.int64)
    wlen = np.empty(n, dtype=np.int32)  # a word's code points (4 bytes a word, not prefix sums' 8)
    n_ids = 0
    s = s0
    for w in range(n):
        e = s
        chars = 0
        h = np.uint64(0xCBF29CE484222325)
        while e < e0 and buf[e] != 32:
            b = buf[e]
            if (b & 0xC0) != 0x80:
                chars += 1
            h = (h ^ np.uint64(b)) * np.uint64(0x100000001B3)
            e += 1
        wlen[w] = chars
        slot = np.int64(h & np.uint64(mask))
        while True:
            cand = slots[slot]
            if cand < 0:
                slots[slot] = n_ids
                ids[w] = n_ids
                rep_start[n_ids] = s
                rep_end[n_ids] = e
                n_ids += 1
                break
            rs = rep_start[cand]
            if rep_end[cand] - rs == e - s:
                same = True
                for k in range(e - s):
                    if buf[rs + k] != buf[s + k]:
                        same = False
                        break
                if same:
                    ids[w] = cand
                    break
            slot = (slot + 1) & mask
        s = e + 1
    return ids, n_ids, wlen


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
        ids, n_ids, wlen = _doc_words(buf, s0, e0, n)
        total = 0
        for i in range(n):
            total += wlen[i]
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
        counts = np.zeros(0, dtype=np.int64)  # (reassigning frees an array before the n-gram tables)
        gcount = np.zeros(0, dtype=np.int32)
        first = np.zeros(0, dtype=np.int32)
        cur = ids
        for size in range(2, 11):
            m = n - size + 1
            if m <= 0:
                break
            gcount = np.zeros(0, dtype=np.int32)  # the last size's tables, freed before the next's
            first = np.zeros(0, dtype=np.int32)
            if m > COMPACT_PAIRS:
                cur, n_g = _pair_ids_compact(cur, ids[size - 1:], m)
            else:
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
                    chars = 0
                    for i in range(p, p + size):
                        chars += wlen[i]
                    stats[d, 3 + size - 2] = chars
                    stats[d, 6 + size - 2] = gcount[best]
            else:
                covered = 0
                upto = 0  # words before this index are already counted
                for i in range(m):
                    if gcount[cur[i]] > 1:
                        lo = i if i > upto else upto
                        hi = i + size
                        if hi > lo:
                            for k in range(lo, hi):  # each word is added once: `upto` only grows
                                covered += wlen[k]
                            upto = hi
                stats[d, 9 + size - 5] = covered
    return stats, entropy
