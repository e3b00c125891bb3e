"""Fast MinHash signatures (signal group ``minhash_fast``): NOT compatible with RedPajama-V2.

``textsieve.dedup.minhash`` reproduces RPv2 bit for bit (SHA-1 per shingle, 64-bit Mersenne
permutations), which is what a user needs to reuse or extend RPv2's published bands. Users who
only want near-duplicate detection on their own corpus do not need that compatibility, and most
of the cost of the exact mode is SHA-1. This module keeps the *same tokens, shingles, signature
shape and banding* (so its bands drop into the same LSH, with ``optimal_param``) but hashes
cheaply. **Its bands never match RPv2 bands**: never mix ``ts_fastsig_sim*`` columns with
``signature_sim*`` columns in one LSH run.

Definition (what ``reference_signatures`` computes in plain Python and the numba kernel must
equal):

* words: the normalized content (§3.2, as for the exact mode) split on ASCII spaces, empty
  pieces dropped; a document with fewer than ``ngram`` (13) words gets no signature;
* word hash ``w = xxh64(word bytes, seed=0)`` (the xxHash64 of the ``xxhash`` package,
  re-implemented in numba);
* shingle ``i`` (words ``i .. i+ngram-1``): ``R_i = sum_j w[i+j] * P**(ngram-1-j) mod 2**64``
  with ``P = 0x9E3779B97F4A7C15`` (a rolling polynomial, so each shingle costs O(1) whatever
  its length), then ``h_i = fmix64(R_i) & 0xFFFFFFFF`` (MurmurHash3's 64-bit finalizer);
* permutation ``k`` (``k < num_perm``): ``fmix32(h ^ s_k)`` with MurmurHash3's bijective 32-bit
  finalizer and ``s_k`` the low 32 bits of the k-th output of SplitMix64 seeded with ``seed``;
  signature value ``k`` is the minimum over the shingles (a set or multiset: same minimum).

The permutation step is a 32-bit min-reduction over a document's shingle hashes, which LLVM
vectorises (16 lanes with AVX-512), instead of 64-bit multiply-and-reduce per value.
Distinct shingles collide in ``h`` with probability 2**-32, which moves a Jaccard estimate by far
less than MinHash's own sampling error (about ``sqrt(J(1-J)/128)``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.text.hashing import fmix64 as _fmix64

from textsieve.dedup.minhash import NGRAM, NUM_PERM, SEED, THRESHOLDS, bands_arrow, check_batch

__all__ = [
    "COLUMN_PREFIX",
    "fast_signature_key",
    "seeds",
    "signatures",
    "fast_bands_arrow",
    "fast_minhash_columns",
    "reference_signatures",
    "xxh64",
]

COLUMN_PREFIX = "ts_fastsig_sim"
MAX32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
POLY = 0x9E3779B97F4A7C15

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_SPACE = 0x20


def fast_signature_key(threshold: float) -> str:
    """Column name of a fast banded signature, e.g. ``ts_fastsig_sim0.8`` (Python ``str(float)``)."""
    return f"{COLUMN_PREFIX}{float(threshold)}"


def seeds(num_perm: int = NUM_PERM, seed: int = SEED) -> np.ndarray:
    """``s_k``: the low 32 bits of the first ``num_perm`` SplitMix64 outputs from ``seed``.

    SplitMix64 rather than a NumPy generator so the definition is fixed whatever NumPy does.
    """
    out = np.empty(num_perm, dtype=np.uint32)
    state = seed & M64
    for k in range(num_perm):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out[k] = (z ^ (z >> 31)) & MAX32
    return out


# --------------------------------------------------------------------------------------------
# numba kernel
# --------------------------------------------------------------------------------------------


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
def _xxh64(buf, start, end, seed):
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
def _fast_kernel(content, offsets, ngram, s, sig, valid):
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
            wh[n_words] = _xxh64(content, i, j, zero)
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


def signatures(
    content: np.ndarray,
    offsets: np.ndarray,
    ngram: int = NGRAM,
    num_perm: int = NUM_PERM,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """Fast (RPv2-INCOMPATIBLE) MinHash signatures of a batch; same contract as
    ``textsieve.dedup.minhash.signatures``.

    ``content``: uint8 array of the concatenated normalized UTF-8 contents; ``offsets``: the
    ``n_docs + 1`` int64 byte offsets. Returns ``(sig uint32 [n_docs, num_perm], valid bool
    [n_docs])``; rows of invalid documents (fewer than ``ngram`` words) are all ``0xFFFFFFFF``.
    """
    content, offsets, sig, valid = check_batch(content, offsets, ngram, num_perm)
    if valid.shape[0]:
        _fast_kernel(content, offsets, int(ngram), seeds(int(num_perm), int(seed)), sig, valid)
    return sig, valid


def fast_bands_arrow(sig: np.ndarray, valid: np.ndarray, threshold: float, num_perm: int = NUM_PERM):
    """Bands for ``threshold`` as ``list<binary>`` (same layout as ``minhash.bands_arrow``)."""
    return bands_arrow(sig, valid, threshold, num_perm)


def fast_minhash_columns(buf: np.ndarray, off: np.ndarray) -> dict:
    """The ``minhash_fast`` signal group for an annotate batch: ``{ts_fastsig_sim{T}: list<binary>}``
    for every RPv2 threshold T, from the batch's normalized UTF-8 buffer and offsets
    (``BatchViews.normalized_utf8``)."""
    sig, valid = signatures(buf, off)
    return {fast_signature_key(t): fast_bands_arrow(sig, valid, t) for t in THRESHOLDS}


# --------------------------------------------------------------------------------------------
# the executable definition (slow, plain Python + the xxhash package)
# --------------------------------------------------------------------------------------------


def _fmix64_py(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & M64
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & M64
    return x ^ (x >> 33)


def _fmix32_py(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & MAX32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & MAX32
    return x ^ (x >> 16)


def reference_signatures(doc: bytes, ngram: int = NGRAM, num_perm: int = NUM_PERM, seed: int = SEED):
    """The definition in the module docstring, written plainly: ``None`` or a list of
    ``num_perm`` ints. For tests; thousands of times slower than ``signatures``."""
    import xxhash

    words = [w for w in doc.split(b" ") if w]
    if len(words) < ngram:
        return None
    wh = [xxhash.xxh64_intdigest(w, seed=0) for w in words]
    shingles = set()
    for i in range(len(words) - ngram + 1):
        r = 0
        for j in range(ngram):
            r = (r * POLY + wh[i + j]) & M64
        shingles.add(_fmix64_py(r) & MAX32)
    return [min(_fmix32_py(h ^ int(sk)) for h in shingles) for sk in seeds(num_perm, seed)]


def xxh64(data: bytes, seed: int = 0) -> int:
    """The numba xxHash64 on one byte string (for tests against the ``xxhash`` package)."""
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, dtype=np.uint8)
    return int(_xxh64(buf, 0, len(data), np.uint64(seed)))
