"""The numba twin of the native RPv2 MinHash kernel (``textsieve/native/rpv2_minhash.c``).

Used when the C library was not built; the values are identical (tested). See
``textsieve.dedup.minhash`` for the definition. Cached on disk (``cache=True``); releases the GIL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.dedup.minhash import MAX_HASH, MERSENNE_PRIME
from textsieve.dedup.sha1_kernel import LANES, bswap32, n_blocks, sha1_lanes

_SPACE = 0x20
_N_BUCKETS = 4  # shingles of 1, 2, 3 and >= 4 SHA-1 blocks


@njit(cache=True, inline="always")
def _permute_min(h, a, b, mins):
    """``mins[k] = min(mins[k], ((h*a[k] + b[k]) mod 2**64 mod p) & 0xFFFFFFFF)`` for all k."""
    p = np.uint64(MERSENNE_PRIME)
    m32 = np.uint64(MAX_HASH)
    s61 = np.uint64(61)
    for k in range(mins.shape[0]):
        x = h * a[k] + b[k]  # wraps mod 2**64, as numpy does in the original
        r = (x & p) + (x >> s61)  # x mod p, up to one subtraction: 2**61 = 1 (mod p), x < 2**64
        if r >= p:
            r -= p
        mins[k] = min(mins[k], r & m32)


@njit(cache=True, nogil=True)
def signatures_kernel(content, offsets, ngram, a, b, sig, valid):
    n_docs = offsets.shape[0] - 1
    num_perm = a.shape[0]
    m32 = np.uint64(MAX_HASH)

    max_len = 0
    for d in range(n_docs):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    max_words = max_len // 2 + 3  # words are separated by single spaces (checked below)
    word_start = np.empty(max_len + 2, dtype=np.int64)  # the scan writes before it checks
    sh_len = np.empty(max_words, dtype=np.int64)
    sh_key = np.empty(max_words, dtype=np.int64)
    order = np.empty(max_words, dtype=np.int64)
    bucket = np.empty(_N_BUCKETS + 1, dtype=np.int64)
    mins = np.empty(num_perm, dtype=np.uint64)
    w = np.empty((16, LANES), dtype=np.uint32)
    st = np.empty((5, LANES), dtype=np.uint32)
    digest = np.empty((5, LANES), dtype=np.uint32)
    starts = np.empty(LANES, dtype=np.int64)
    lengths = np.empty(LANES, dtype=np.int64)

    for d in range(n_docs):
        s0 = offsets[d]
        s1 = offsets[d + 1]
        # ---- words: word j is content[word_start[j] : word_start[j + 1] - 1]
        n_words = 0
        if s1 > s0:
            if content[s0] == _SPACE or content[s1 - 1] == _SPACE:
                raise ValueError("signatures: normalized content has a leading or trailing space")
            word_start[0] = s0
            n_words = 1
            prev_space = False
            double_space = False
            for i in range(s0 + 1, s1 - 1):  # branch-free: spaces are unpredictable
                is_space = content[i] == _SPACE
                double_space |= is_space & prev_space
                prev_space = is_space
                word_start[n_words] = i + 1
                n_words += is_space
            if double_space:
                raise ValueError("signatures: normalized content has consecutive spaces")
        word_start[n_words] = s1 + 1

        if n_words < ngram:
            valid[d] = False
            for k in range(num_perm):
                sig[d, k] = np.uint32(MAX_HASH)
            continue

        # ---- shingles, grouped by SHA-1 block count so that the lanes of a vector
        # compression mostly finish together (the min does not depend on the order)
        n_sh = n_words - ngram + 1
        for k in range(_N_BUCKETS + 1):
            bucket[k] = 0
        for i in range(n_sh):
            length = word_start[i + ngram] - 1 - word_start[i]
            key = min(n_blocks(length), _N_BUCKETS) - 1
            sh_len[i] = length
            sh_key[i] = key
            bucket[key + 1] += 1
        for k in range(_N_BUCKETS):
            bucket[k + 1] += bucket[k]
        for i in range(n_sh):
            key = sh_key[i]
            order[bucket[key]] = i
            bucket[key] += 1

        for k in range(num_perm):
            mins[k] = m32
        for g in range(0, n_sh, LANES):
            n_lanes = min(LANES, n_sh - g)
            for lane in range(LANES):
                i = order[g + lane] if lane < n_lanes else order[g]  # pad with a duplicate
                starts[lane] = word_start[i]
                lengths[lane] = sh_len[i]
            sha1_lanes(content, starts, lengths, w, st, digest)
            for lane in range(n_lanes):
                _permute_min(bswap32(np.uint64(digest[0, lane])), a, b, mins)
        for k in range(num_perm):
            sig[d, k] = np.uint32(mins[k])
        valid[d] = True
