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

The permutation step is a 32-bit min-reduction over a document's shingle hashes, which the
compiler vectorises, instead of 64-bit multiply-and-reduce per value. Two kernels compute it:
the C library of ``textsieve.native`` (no numba in the process) and ``fast_minhash_numba``
(the fallback when the library was not built); tests check they agree.
Distinct shingles collide in ``h`` with probability 2**-32, which moves a Jaccard estimate by far
less than MinHash's own sampling error (about ``sqrt(J(1-J)/128)``).
"""

from __future__ import annotations

import numpy as np

from textsieve.dedup.minhash import NGRAM, NUM_PERM, SEED, THRESHOLDS, bands_arrow, check_batch
from textsieve.native import fast_signatures as native_fast_signatures

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
    if not valid.shape[0]:
        return sig, valid
    s = seeds(int(num_perm), int(seed))
    native = native_fast_signatures()
    if native is None:
        from textsieve.dedup.fast_minhash_numba import fast_kernel

        fast_kernel(content, offsets, int(ngram), s, sig, valid)
        return sig, valid
    flags = np.empty(valid.shape[0], dtype=np.uint8)
    if native(content.ctypes.data, offsets.ctypes.data, valid.shape[0], int(ngram), s.ctypes.data,
              int(num_perm), sig.ctypes.data, flags.ctypes.data):
        raise MemoryError("signatures: out of memory in the native fast MinHash kernel")
    np.not_equal(flags, 0, out=valid)
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
    from textsieve.dedup.fast_minhash_numba import xxh64_kernel

    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, dtype=np.uint8)
    return int(xxh64_kernel(buf, 0, len(data), np.uint64(seed)))
