"""RedPajama-V2-exact MinHash signatures (spec ``rpv2-signals.md`` §7), batched in numba.

Definition (§7.1-7.3):

* tokens are the *normalized words* of a document (§3.2/§3.3); a document with fewer than
  ``NGRAM`` (13) of them gets no signature;
* a shingle is ``NGRAM`` consecutive words joined by single spaces, hashed as the first 4 bytes
  of its UTF-8 SHA-1 read little-endian (datasketch ``sha1_hash32``);
* permutation i maps a hash h to ``((h*a_i + b_i) mod 2**64 mod (2**61-1)) & 0xFFFFFFFF``
  (uint64 wrap *before* the Mersenne reduction, as numpy computes it in the original), with
  ``a, b`` drawn interleaved from ``RandomState(42)``; signature value i is the minimum over the
  shingles, starting from ``2**32-1``;
* bands: ``optimal_param(threshold, 128)`` rows per band, each band stored as the big-endian
  bytes of its uint32 values.

``signatures`` works on a whole batch at once: the normalized content of all documents is
concatenated into one uint8 buffer (words separated by single ASCII spaces), so every shingle is
a contiguous slice of that buffer, hashed in place several shingles per vectorised SHA-1.
Two kernels compute the same values: the C library of ``textsieve.native`` (used when it was
built at install time; it keeps a MinHash process free of numba's ~125 MB of JIT state) and
``minhash_numba`` (the fallback). Each takes about 40-55 us per dev-corpus document on one core
(``benchmarks/minhash_speed.py``). Shingles are not deduplicated: the minimum over the
multiset equals the minimum over RPv2's set.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from textsieve.native import rpv2_signatures

__all__ = [
    "NUM_PERM",
    "NGRAM",
    "SEED",
    "THRESHOLDS",
    "MERSENNE_PRIME",
    "MAX_HASH",
    "PERM_CHECKSUM",
    "permutations",
    "optimal_param",
    "signatures",
    "band_bytes",
    "bands_hex",
    "bands_arrow",
    "id_int",
    "signature_key",
]

NUM_PERM = 128
NGRAM = 13
SEED = 42
THRESHOLDS = (1.0, 0.9, 0.8, 0.7)

MERSENNE_PRIME = (1 << 61) - 1
MAX_HASH = (1 << 32) - 1
#: SHA-256 of the (2, 128) uint64 array [a; b] (C order, little-endian) for seed 42 (§7.2).
PERM_CHECKSUM = "6a5665743fa1884640a8eb3543348255a90b4dbd55b093f39e3d61ac90eac9e1"



# --------------------------------------------------------------------------------------------
# permutations and banding parameters
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rs = np.random.RandomState(seed)
    a = np.empty(num_perm, dtype=np.uint64)
    b = np.empty(num_perm, dtype=np.uint64)
    for i in range(num_perm):  # the two draws interleave (§7.2)
        a[i] = rs.randint(1, MERSENNE_PRIME, dtype=np.uint64)
        b[i] = rs.randint(0, MERSENNE_PRIME, dtype=np.uint64)
    if num_perm == NUM_PERM and seed == SEED:
        digest = hashlib.sha256(np.stack([a, b]).astype("<u8").tobytes()).hexdigest()
        if digest != PERM_CHECKSUM:
            raise AssertionError(f"minhash permutation checksum {digest} != {PERM_CHECKSUM} (§7.2)")
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def permutations(num_perm: int = NUM_PERM, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The permutation coefficients ``(a, b)``, uint64 arrays of length ``num_perm`` (§7.2).

    ``a_i = randint(1, 2**61-1)`` and ``b_i = randint(0, 2**61-1)`` are drawn alternately from
    ``numpy.random.RandomState(seed)``. For the RPv2 defaults the §7.2 checksum is verified.
    """
    a, b = _permutations(int(num_perm), int(seed))
    return a.copy(), b.copy()


@functools.lru_cache(maxsize=64)
def optimal_param(
    threshold: float,
    num_perm: int = NUM_PERM,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int]:
    """``(bands, rows)`` minimising the weighted LSH false-positive/negative areas (§7.3).

    For every ``b`` in ``1..num_perm`` and ``r`` in ``1..num_perm // b`` (in that order, first
    minimum wins), with ``P(s) = 1 - (1 - s**r)**b`` the probability that two documents of
    Jaccard similarity ``s`` share a band::

        FP = integral_0^t P(s) ds,   FN = integral_t^1 (1 - P(s)) ds,
        error = wFP * FP + wFN * FN

    The integrands are polynomials of degree ``b*r <= num_perm``; Gauss-Legendre quadrature
    with ``num_perm // 2 + 1`` nodes integrates them exactly (up to rounding), so no SciPy.
    """
    t = float(threshold)
    n = int(num_perm)
    if not 0.0 <= t <= 1.0 or n < 1:
        raise ValueError(f"need 0 <= threshold <= 1 and num_perm >= 1, got {threshold}, {num_perm}")
    bs = np.array([b for b in range(1, n + 1) for _ in range(1, n // b + 1)], dtype=np.float64)
    rs = np.array([r for b in range(1, n + 1) for r in range(1, n // b + 1)], dtype=np.float64)
    x, w = gauss_legendre(n // 2 + 8)

    def area(lo: float, hi: float, false_negative: bool) -> np.ndarray:
        s = (hi - lo) / 2.0 * x + (hi + lo) / 2.0
        p = 1.0 - (1.0 - s[None, :] ** rs[:, None]) ** bs[:, None]
        if false_negative:
            p = 1.0 - p
        # einsum's own loop, not BLAS (see `gauss_legendre`)
        return (hi - lo) / 2.0 * np.einsum("ij,j->i", p, w)

    error = false_positive_weight * area(0.0, t, False) + false_negative_weight * area(t, 1.0, True)
    k = int(np.argmin(error))  # first minimum, like the strict '<' scan of the original
    return int(bs[k]), int(rs[k])


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The `n` Gauss-Legendre nodes on [-1, 1] (ascending) and their weights, by Newton's method on
    the Legendre recurrence. Why not ``np.polynomial.legendre.leggauss``: it finds the nodes with
    LAPACK, and that call (like a BLAS matrix product) wakes OpenBLAS's threads, which then spun
    for ~0.2 CPU-s in every annotate process (3.6% of a 1-worker run). `optimal_param` chooses the
    same (bands, rows) either way (tests/test_minhash.py, a grid of thresholds and sizes)."""
    m = (n + 1) // 2
    z = np.cos(np.pi * (np.arange(m) + 0.75) / (n + 0.5))
    for _ in range(100):
        value, slope = _legendre(n, z)
        step = value / slope
        z = z - step
        if np.max(np.abs(step)) < 1e-16:
            break
    slope = _legendre(n, z)[1]
    weights = 2.0 / ((1.0 - z * z) * slope * slope)
    # z descends from near 1 (to the middle node 0 when n is odd): mirrored for the negative half
    half = n // 2
    x = np.concatenate([-z[:half], z[half:], z[:half][::-1]])
    w = np.concatenate([weights[:half], weights[half:], weights[:half][::-1]])
    return x, w


def _legendre(n: int, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Legendre polynomial P_n and its derivative at `z`, by the three-term recurrence."""
    p1, p2 = np.ones_like(z), np.zeros_like(z)
    for j in range(1, n + 1):
        p1, p2 = ((2 * j - 1) * z * p1 - (j - 1) * p2) / j, p1
    return p1, n * (z * p1 - p2) / (z * z - 1.0)


def signature_key(threshold: float) -> str:
    """Column/JSON key of a banded signature, e.g. ``signature_sim0.9`` (Python ``str(float)``)."""
    return f"signature_sim{float(threshold)}"


# --------------------------------------------------------------------------------------------
# the kernel
# --------------------------------------------------------------------------------------------


def _as_u8(content) -> np.ndarray:
    if isinstance(content, (bytes, bytearray, memoryview)):
        content = np.frombuffer(content, dtype=np.uint8)
    content = np.ascontiguousarray(content)
    if content.ndim != 1 or (content.dtype != np.uint8 and content.size):
        raise TypeError(f"content must be a 1-d uint8 array, got {content.dtype} {content.shape}")
    return content.astype(np.uint8, copy=False)


def _readonly(arr: np.ndarray) -> np.ndarray:
    # one kernel specialisation (and one cache entry) whatever the caller's writeability
    view = arr.view()
    view.setflags(write=False)
    return view


def signatures(
    content: np.ndarray,
    offsets: np.ndarray,
    ngram: int = NGRAM,
    num_perm: int = NUM_PERM,
    seed: int = SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """MinHash signatures of a batch of documents.

    ``content`` is a uint8 array holding the concatenated UTF-8 bytes of every document's
    normalized content (§3.2: words separated by single ASCII spaces, no leading or trailing
    space; a document may be empty), and ``offsets`` the ``n_docs + 1`` int64 byte offsets of the
    documents in it. Returns ``(sig, valid)``: ``sig`` is uint32 ``[n_docs, num_perm]``, ``valid``
    is bool ``[n_docs]`` and is ``n_words >= ngram``. Rows of invalid documents are all
    ``0xFFFFFFFF`` and must be treated as null (RPv2 stores no signature for them).
    """
    content, offsets, sig, valid = check_batch(content, offsets, ngram, num_perm)
    a, b = _permutations(int(num_perm), int(seed))
    if not valid.shape[0]:
        return sig, valid
    native = rpv2_signatures()
    if native is None:
        from textsieve.dedup.minhash_numba import signatures_kernel

        signatures_kernel(content, offsets, int(ngram), a, b, sig, valid)
        return sig, valid
    flags = np.empty(valid.shape[0], dtype=np.uint8)
    bad = np.zeros(1, dtype=np.int64)
    rc = native(content.ctypes.data, offsets.ctypes.data, valid.shape[0], int(ngram), a.ctypes.data,
                b.ctypes.data, int(num_perm), sig.ctypes.data, flags.ctypes.data, bad.ctypes.data)
    if rc == -3:
        raise MemoryError("signatures: out of memory in the native MinHash kernel")
    if rc:
        what = "a leading or trailing space" if rc == -1 else "consecutive spaces"
        raise ValueError(f"signatures: normalized content of document {int(bad[0])} has {what}")
    np.not_equal(flags, 0, out=valid)
    return sig, valid


def check_batch(content, offsets, ngram: int, num_perm: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate a signature batch (shared by the RPv2 and the fast kernels) and allocate its
    outputs: (content, offsets, sig uint32 [n_docs, num_perm], valid bool [n_docs]). An empty
    buffer becomes one zero byte: the kernels' loaders need a non-empty buffer."""
    content = _readonly(_as_u8(content))
    offsets = _readonly(np.ascontiguousarray(offsets, dtype=np.int64))
    if offsets.ndim != 1 or offsets.shape[0] < 1:
        raise ValueError("offsets must be a 1-d array of n_docs + 1 byte offsets")
    if offsets[0] < 0 or offsets[-1] > content.shape[0] or np.any(offsets[1:] < offsets[:-1]):
        raise ValueError("offsets must be non-decreasing and within the content buffer")
    if ngram < 1:
        raise ValueError("ngram must be >= 1")
    n_docs = offsets.shape[0] - 1
    if content.shape[0] == 0:
        content = _readonly(np.zeros(1, dtype=np.uint8))
    return (content, offsets, np.empty((n_docs, int(num_perm)), dtype=np.uint32),
            np.empty(n_docs, dtype=np.bool_))


# --------------------------------------------------------------------------------------------
# bands, ids
# --------------------------------------------------------------------------------------------


def band_bytes(sig_row: np.ndarray, threshold: float, num_perm: int = NUM_PERM) -> list[bytes]:
    """The bands of one signature for ``threshold``: big-endian uint32 bytes of each row block.

    Band k covers values ``[k*r, (k+1)*r)``; values past ``bands*rows`` are unused (§7.3).
    """
    bands, rows = optimal_param(threshold, num_perm)
    raw = np.asarray(sig_row, dtype=np.uint32)[: bands * rows].astype(">u4").tobytes()
    step = 4 * rows
    return [raw[k * step : (k + 1) * step] for k in range(bands)]


def bands_hex(sig_row: np.ndarray, threshold: float, num_perm: int = NUM_PERM) -> list[str]:
    """``band_bytes`` as hex strings, the form used by the golden files."""
    return [band.hex() for band in band_bytes(sig_row, threshold, num_perm)]


def bands_arrow(sig: np.ndarray, valid: np.ndarray, threshold: float, num_perm: int = NUM_PERM):
    """A whole batch's bands for one threshold as a pyarrow ``list<binary>`` array (§7.4).

    Row i is ``band_bytes(sig[i], threshold)`` when ``valid[i]`` and null otherwise. Built from
    buffers, without a Python loop over documents.
    """
    import pyarrow as pa

    sig = np.asarray(sig, dtype=np.uint32)
    valid = np.asarray(valid, dtype=np.bool_)
    n = sig.shape[0]
    bands, rows = optimal_param(threshold, num_perm)
    data = np.ascontiguousarray(sig[:, : bands * rows].astype(">u4"))
    large = data.nbytes >= 2**31  # binary offsets are int32
    value_offsets = np.arange(n * bands + 1, dtype=np.int64) * (4 * rows)
    if not large:
        value_offsets = value_offsets.astype(np.int32)
    binary = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(),
        n * bands,
        [None, pa.py_buffer(value_offsets), pa.py_buffer(data)],
    )
    # from buffers, as the rest: `pa.array` would import pandas (textsieve.io.arrow_arrays says why)
    list_offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32)
                                                                                  * np.int32(bands))])
    mask = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(~valid, bitorder="little"))])
    return pa.ListArray.from_arrays(list_offsets, binary, mask=mask)


def id_int(doc_id: str) -> int:
    """RPv2's LSH node id (§2.3): the first 8 bytes of SHA-1(id, UTF-8) as a little-endian uint64.

    (RPv2 reads them in native byte order; every host it ran on is little-endian.)
    """
    return int.from_bytes(hashlib.sha1(doc_id.encode("utf-8")).digest()[:8], "little")
