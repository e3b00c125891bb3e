"""The numba twin of the native fast MinHash kernel (``ts_fast_signatures`` in
``textsieve/native/rpv2_minhash.c``), used when the C library was not built. Definition:
``textsieve.dedup.fast_minhash``."""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.dedup.fast_minhash import MAX32, POLY
from textsieve.text.hashing import fmix64 as _fmix64

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_SPACE = 0x20


@njit(cache=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, inline="always")
def _read64(buf, p):
    v = np.uint64(0)
    for j in range(8):
        v |= np.uint64(buf[p + j]) << np.uint64(8 * j)
    return v


@njit(cache=True, inline="always")
def _read32(buf, p):
    v = np.uint64(0)
    for j in range(4):
        v |= np.uint64(buf[p + j]) << np.uint64(8 * j)
    return v


@njit(cache=True, inline="always")
def _round(acc, lane):
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@njit(cache=True, inline="always")
def _merge(acc, val):
    acc ^= _round(np.uint64(0), val)
    return acc * _P1 + _P4


@njit(cache=True)
def xxh64_kernel(buf, start, end, seed):
    """xxHash64 of ``buf[start:end]`` (the reference algorithm, little-endian reads)."""
    n = end - start
    p = start
    if n >= 32:
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        while p + 32 <= end:
            v1 = _round(v1, _read64(buf, p))
            v2 = _round(v2, _read64(buf, p + 8))
            v3 = _round(v3, _read64(buf, p + 16))
            v4 = _round(v4, _read64(buf, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + _P5
    h += np.uint64(n)
    while p + 8 <= end:
        h ^= _round(np.uint64(0), _read64(buf, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        h ^= _read32(buf, p) * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h ^= np.uint64(buf[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def fast_kernel(content, offsets, ngram, s, sig, valid):
    n_docs = offsets.shape[0] - 1
    num_perm = s.shape[0]
    max_len = 0
    for d in range(n_docs):
        max_len = max(max_len, offsets[d + 1] - offsets[d])
    wh = np.empty(max_len // 2 + 2, dtype=np.uint64)
    hs = np.empty(max_len // 2 + 2, dtype=np.uint32)
    poly = np.uint64(POLY)
    top = np.uint64(1)  # P ** (ngram - 1)
    for _ in range(ngram - 1):
        top *= poly
    m32 = np.uint32(MAX32)
    c1 = np.uint32(0x85EBCA6B)
    c2 = np.uint32(0xC2B2AE35)
    zero = np.uint64(0)

    for d in range(n_docs):
        # ---- word hashes
        n_words = 0
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:
            if content[i] == _SPACE:
                i += 1
                continue
            j = i
            while j < end and content[j] != _SPACE:
                j += 1
            wh[n_words] = xxh64_kernel(content, i, j, zero)
            n_words += 1
            i = j
        if n_words < ngram:
            valid[d] = False
            for k in range(num_perm):
                sig[d, k] = m32
            continue
        # ---- shingle hashes (rolling polynomial)
        r = np.uint64(0)
        for j in range(ngram):
            r = r * poly + wh[j]
        n_sh = n_words - ngram + 1
        for i in range(n_sh):
            if i:
                r = (r - wh[i - 1] * top) * poly + wh[i + ngram - 1]
            hs[i] = np.uint32(_fmix64(r) & np.uint64(MAX32))
        # ---- permutations: a vectorisable 32-bit min-reduction per permutation
        for k in range(num_perm):
            sk = s[k]
            m = m32
            for i in range(n_sh):  # numba widens uint32 products to uint64: truncate each
                x = np.uint32(hs[i] ^ sk)
                x = np.uint32(x ^ (x >> np.uint32(16)))
                x = np.uint32(x * c1)
                x = np.uint32(x ^ (x >> np.uint32(13)))
                x = np.uint32(x * c2)
                x = np.uint32(x ^ (x >> np.uint32(16)))
                m = min(m, x)
            sig[d, k] = m
        valid[d] = True
