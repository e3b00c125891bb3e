"""Small compiled hash primitives shared by the kernels (fast MinHash, DSIR features, the n-gram LM,
the WordPunct tokenizer's per-token FNV-1a)."""

from __future__ import annotations

import numpy as np
from numba import njit

# 64-bit FNV-1a: h = FNV64_OFFSET; for each code point (or byte) c: h = (h ^ c) * FNV64_PRIME (mod 2**64)
FNV64_OFFSET = np.uint64(0xCBF29CE484222325)
FNV64_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, inline="always")
def fmix64(k):
    """MurmurHash3's 64-bit finalizer: a bijective mix of a uint64 (all bits affect all bits)."""
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xFF51AFD7ED558CCD)
    k ^= k >> np.uint64(33)
    k *= np.uint64(0xC4CEB9FE1A85EC53)
    k ^= k >> np.uint64(33)
    return k
