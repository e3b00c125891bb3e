"""A Bloom filter in numba for streaming exact dedup of corpora larger than memory (spec §9).

Sizing is the textbook optimum for `capacity` items at false-positive rate p:
``m = ceil(-capacity * ln p / ln(2)**2)`` bits and ``k = max(1, round(m / capacity * ln 2))``
hash functions, derived by double hashing from a 128-bit key (h1, h2):
``index_i = (h1 + i * h2) mod m`` (Kirsch-Mitzenmacher), with h2 forced odd. Keys are already
uniform 128-bit hashes of the document text, so no further hashing is needed. As long as no
more than `capacity` keys are inserted, the false-positive rate stays at or below p (a test
measures it); `test_add` checks and inserts a batch in order, so duplicates inside one batch
are caught too.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _test_add(bits, m, k, h1, h2, seen, insert):
    for i in range(h1.shape[0]):
        a = h1[i] % m
        b = (h2[i] | np.uint64(1)) % m
        present = True
        x = a
        for _ in range(k):
            word = x >> np.uint64(6)
            mask = np.uint64(1) << (x & np.uint64(63))
            if (bits[word] & mask) == 0:
                present = False
                if insert:
                    bits[word] |= mask
            x += b
            if x >= m:
                x -= m
        seen[i] = present


class BloomFilter:
    """`capacity` keys at false-positive rate `error_rate`; memory ``m / 8`` bytes."""

    def __init__(self, capacity: int, error_rate: float):
        if not 0.0 < error_rate < 1.0:
            raise ValueError(f"--bloom-fp {error_rate}: must be between 0 and 1 (e.g. 0.001)")
        if capacity < 1:
            raise ValueError("bloom filter capacity must be at least 1")
        self.capacity = int(capacity)
        self.error_rate = float(error_rate)
        self.m = max(64, int(math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)))
        self.k = max(1, int(round(self.m / capacity * math.log(2))))
        self.bits = np.zeros((self.m + 63) // 64, dtype=np.uint64)
        self.count = 0

    @staticmethod
    def size_bytes(capacity: int, error_rate: float) -> int:
        return int(math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2 / 8))

    def test_add(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        """For each key in order: was it (probably) present before? Then insert it."""
        h1 = np.ascontiguousarray(h1, dtype=np.uint64)
        h2 = np.ascontiguousarray(h2, dtype=np.uint64)
        seen = np.empty(h1.shape[0], dtype=np.bool_)
        if h1.shape[0]:
            _test_add(self.bits, np.uint64(self.m), self.k, h1, h2, seen, True)
        self.count += int(h1.shape[0])
        return seen

    def contains(self, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
        """For each key: (probably) present? Nothing is inserted."""
        h1 = np.ascontiguousarray(h1, dtype=np.uint64)
        h2 = np.ascontiguousarray(h2, dtype=np.uint64)
        seen = np.empty(h1.shape[0], dtype=np.bool_)
        if h1.shape[0]:
            _test_add(self.bits, np.uint64(self.m), self.k, h1, h2, seen, False)
        return seen
