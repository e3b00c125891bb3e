"""SHA-1 (FIPS 180-4) in numba over slices of one uint8 buffer, scalar and multi-lane.

The MinHash kernel hashes every 13-word shingle of every document; a shingle is a contiguous
slice ``buf[start:start+length]`` of the batch's byte buffer, so nothing here copies or pads a
message in memory: the padding (0x80, zeros, 64-bit big-endian bit length) is synthesised word
by word while a block is loaded.

Two implementations of the same function:

* **scalar** (``sha1_state``, ``sha1_hash32_le``): one message at a time, plain ``@njit`` code;
  simple enough to read against the standard, and cross-checked with the vector version.
* **multi-lane** (``sha1_lanes``): ``LANES`` independent messages at once (16 with AVX-512, 8
  otherwise). Each lane's message words are written, transposed, into a ``(16, LANES)`` uint32
  array, and one compression runs on all lanes with LLVM vector instructions
  (``_compress_lanes``, a numba ``@intrinsic`` that emits the 80 rounds as straight-line
  ``<LANES x i32>`` IR, so the working state lives in vector registers). Lanes may have
  different block counts; a lane's digest is captured after its own last block.

``sha1_hash32_le`` is datasketch's / RPv2's ``sha1_hash32``: the first 4 digest bytes read as a
little-endian uint32, i.e. the byte-swapped state word H0.

Caching: every kernel is ``@njit(cache=True)``. Numba keys a cache entry on the source file of
the *compiled* function only, so after editing this module also delete the cached kernels of
modules that inline it (``textsieve/dedup/__pycache__/minhash.*.nb[ic]``), or they stay stale.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from textsieve.text.vector_lanes import LANES, LaneIR, lane_tables

_M32 = np.uint64(0xFFFFFFFF)
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)  # H0..H4
_K = (0x5A827999, 0x6ED9EBA1, 0x8F1BBCDC, 0xCA62C1D6)  # rounds 0-19, 20-39, 40-59, 60-79
_H0, _H1, _H2, _H3, _H4 = (np.uint64(h) for h in _INIT)
_K0, _K1, _K2, _K3 = (np.uint64(k) for k in _K)


# --------------------------------------------------------------------------------------------
# message loading (shared by both implementations)
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _load_be32(buf, p):
    return (
        (np.uint64(buf[p]) << np.uint64(24))
        | (np.uint64(buf[p + 1]) << np.uint64(16))
        | (np.uint64(buf[p + 2]) << np.uint64(8))
        | np.uint64(buf[p + 3])
    )


# NB: the helpers that take arrays are inlined at numba-IR level (inline="always"; LLVM does
# not inline across separately compiled numba functions) and contain no loops over the array
# and a single exit: otherwise numba's refcount pruning gives up and leaves atomic NRT
# incref/decref calls in the hot loop, which made the loader ~30x slower. ``buf`` must be
# non-empty (the public wrappers ensure it).


@njit(cache=True, inline="always")
def _block_word(buf, start, length, blk, nblocks, t):
    """Word ``t`` (0..15) of block ``blk`` of the padded message ``buf[start:start+length]``.

    Bytes before ``length`` come from the buffer, byte ``length`` is 0x80, then zeros, and the
    last block ends with the 64-bit big-endian bit length.
    """
    q = blk * 64 + 4 * t
    rem = length - q  # message bytes available in this word
    if blk == nblocks - 1 and t >= 14:
        bits = np.uint64(length) * np.uint64(8)
        v = bits >> np.uint64(32) if t == 14 else bits & _M32
    elif rem >= 4:
        v = _load_be32(buf, start + q)
    elif rem < 0:
        v = np.uint64(0)
    else:  # 0-3 message bytes, then the 0x80 terminator
        p = start + q
        if p + 4 <= buf.shape[0]:
            raw = _load_be32(buf, p)  # reads 1-4 bytes past the message, inside the buffer
        else:  # the message ends < 4 bytes before the buffer end: clamp (extra bytes masked off)
            last = buf.shape[0] - 1
            raw = (
                (np.uint64(buf[min(p, last)]) << np.uint64(24))
                | (np.uint64(buf[min(p + 1, last)]) << np.uint64(16))
                | (np.uint64(buf[min(p + 2, last)]) << np.uint64(8))
                | np.uint64(buf[min(p + 3, last)])
            )
        shift = np.uint64(8 * rem)
        keep = (_M32 << (np.uint64(32) - shift)) & _M32  # top `rem` bytes (none when rem == 0)
        v = (raw & keep) | (np.uint64(0x80000000) >> shift)
    return v


@njit(cache=True, inline="always")
def n_blocks(length):
    """Number of 64-byte blocks of a padded message of ``length`` bytes."""
    return (length + 8) // 64 + 1


# --------------------------------------------------------------------------------------------
# scalar implementation
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _rotl(x, n):
    # x must already be < 2**32
    return ((x << np.uint64(n)) | (x >> np.uint64(32 - n))) & _M32


@njit(cache=True, inline="always")
def _compress(w, h0, h1, h2, h3, h4):
    """One SHA-1 compression of the block in w[0:16] (uint64 holding 32-bit words)."""
    for t in range(16, 80):
        w[t] = _rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1)
    a = h0
    b = h1
    c = h2
    d = h3
    e = h4
    for t in range(0, 20):
        tmp = (_rotl(a, 5) + (d ^ (b & (c ^ d))) + e + _K0 + w[t]) & _M32
        e = d
        d = c
        c = _rotl(b, 30)
        b = a
        a = tmp
    for t in range(20, 40):
        tmp = (_rotl(a, 5) + (b ^ c ^ d) + e + _K1 + w[t]) & _M32
        e = d
        d = c
        c = _rotl(b, 30)
        b = a
        a = tmp
    for t in range(40, 60):
        tmp = (_rotl(a, 5) + ((b & c) | (d & (b | c))) + e + _K2 + w[t]) & _M32
        e = d
        d = c
        c = _rotl(b, 30)
        b = a
        a = tmp
    for t in range(60, 80):
        tmp = (_rotl(a, 5) + (b ^ c ^ d) + e + _K3 + w[t]) & _M32
        e = d
        d = c
        c = _rotl(b, 30)
        b = a
        a = tmp
    return (
        (h0 + a) & _M32,
        (h1 + b) & _M32,
        (h2 + c) & _M32,
        (h3 + d) & _M32,
        (h4 + e) & _M32,
    )


@njit(cache=True, inline="always")
def sha1_state(buf, start, end, w):
    """SHA-1 state words (H0..H4) after hashing ``buf[start:end]``; ``w``: scratch uint64[80]."""
    length = end - start
    nblocks = n_blocks(length)
    h0 = _H0
    h1 = _H1
    h2 = _H2
    h3 = _H3
    h4 = _H4
    for blk in range(nblocks):
        if blk * 64 + 64 <= length:  # whole block inside the message
            p = start + blk * 64
            for t in range(16):
                w[t] = _load_be32(buf, p + 4 * t)
        else:
            for t in range(16):
                w[t] = _block_word(buf, start, length, blk, nblocks, t)
        h0, h1, h2, h3, h4 = _compress(w, h0, h1, h2, h3, h4)
    return h0, h1, h2, h3, h4


@njit(cache=True, inline="always")
def bswap32(x):
    return (
        ((x & np.uint64(0xFF)) << np.uint64(24))
        | ((x & np.uint64(0xFF00)) << np.uint64(8))
        | ((x >> np.uint64(8)) & np.uint64(0xFF00))
        | ((x >> np.uint64(24)) & np.uint64(0xFF))
    )


@njit(cache=True, inline="always")
def sha1_hash32_le(buf, start, end, w):
    """First 4 bytes of SHA-1(buf[start:end]) as a little-endian uint32 (returned as uint64)."""
    return bswap32(sha1_state(buf, start, end, w)[0])


# --------------------------------------------------------------------------------------------
# multi-lane implementation
# --------------------------------------------------------------------------------------------


@intrinsic
def _compress_lanes(typingctx, w, st):
    """``st[:, l] = compress(st[:, l], w[:, l])`` for every lane l, as vector code.

    ``w``: C-contiguous uint32 (16, LANES), the block's message words, transposed;
    ``st``: C-contiguous uint32 (5, LANES), the state, updated in place.
    """
    if not lane_tables(w, st):
        return None
    sig = types.void(w, st)

    def codegen(context, builder, signature, args):
        lanes = LaneIR(context, builder, signature, args)
        splat, rotl = lanes.splat, lanes.rotl

        W = lanes.load(0, 16)
        S = lanes.load(1, 5)
        a, b, c, d, e = S
        for t in range(80):
            if t >= 16:  # message schedule in a rolling window of 16 words
                x = builder.xor(
                    builder.xor(W[(t - 3) % 16], W[(t - 8) % 16]),
                    builder.xor(W[(t - 14) % 16], W[t % 16]),
                )
                W[t % 16] = rotl(x, 1)
            if t < 20:
                f = builder.xor(d, builder.and_(b, builder.xor(c, d)))  # Ch
            elif t < 40 or t >= 60:
                f = builder.xor(builder.xor(b, c), d)  # Parity
            else:
                f = builder.or_(builder.and_(b, c), builder.and_(d, builder.or_(b, c)))  # Maj
            tmp = builder.add(
                builder.add(rotl(a, 5), f),
                builder.add(builder.add(e, splat(_K[t // 20])), W[t % 16]),
            )
            e, d, c, b, a = d, c, rotl(b, 30), a, tmp
        lanes.store(1, [builder.add(S[j], v) for j, v in enumerate((a, b, c, d, e))])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def _load_lane(buf, start, length, blk, nblocks, w, lane):
    if blk * 64 + 64 <= length:  # whole block inside the message
        p = start + blk * 64
        for t in range(16):
            w[t, lane] = np.uint32(_load_be32(buf, p + 4 * t))
    else:
        for t in range(16):
            w[t, lane] = np.uint32(_block_word(buf, start, length, blk, nblocks, t))


@njit(cache=True, inline="always")
def sha1_lanes(buf, starts, lengths, w, st, out):
    """SHA-1 of the ``LANES`` messages ``buf[starts[l] : starts[l] + lengths[l]]``.

    ``w``: scratch uint32 (16, LANES); ``st``: scratch uint32 (5, LANES); ``out``: uint32
    (5, LANES) receives each lane's final state H0..H4 (the digest, as big-endian words).
    Every lane must hold a real message (repeat one to fill unused lanes).
    """
    max_blocks = 0
    for lane in range(LANES):
        max_blocks = max(max_blocks, n_blocks(lengths[lane]))
    for lane in range(LANES):
        for j in range(5):
            st[j, lane] = _INIT[j]
    for blk in range(max_blocks):
        for lane in range(LANES):
            nb = n_blocks(lengths[lane])
            if blk < nb:
                _load_lane(buf, starts[lane], lengths[lane], blk, nb, w, lane)
        _compress_lanes(w, st)  # type: ignore[call-arg]  # jitted calls omit typingctx; numba's stubs type a Python call
        for lane in range(LANES):
            if blk == n_blocks(lengths[lane]) - 1:
                for j in range(5):
                    out[j, lane] = st[j, lane]


# --------------------------------------------------------------------------------------------
# batch helpers (tests, benchmarks)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _store_digest(out, i, h0, h1, h2, h3, h4):
    hs = (h0, h1, h2, h3, h4)
    for k in range(5):
        v = np.uint64(hs[k])
        for j in range(4):
            out[i, 4 * k + j] = np.uint8((v >> np.uint64(24 - 8 * j)) & np.uint64(0xFF))


@njit(cache=True, nogil=True)
def _digests_kernel(buf, offsets, multilane):
    n = offsets.shape[0] - 1
    out = np.empty((n, 20), dtype=np.uint8)
    if not multilane:
        w = np.empty(80, dtype=np.uint64)
        for i in range(n):
            h0, h1, h2, h3, h4 = sha1_state(buf, offsets[i], offsets[i + 1], w)
            _store_digest(out, i, h0, h1, h2, h3, h4)
        return out
    wl = np.empty((16, LANES), dtype=np.uint32)
    st = np.empty((5, LANES), dtype=np.uint32)
    res = np.empty((5, LANES), dtype=np.uint32)
    starts = np.empty(LANES, dtype=np.int64)
    lengths = np.empty(LANES, dtype=np.int64)
    for g in range(0, n, LANES):
        for lane in range(LANES):
            i = g + lane if g + lane < n else g
            starts[lane] = offsets[i]
            lengths[lane] = offsets[i + 1] - offsets[i]
        sha1_lanes(buf, starts, lengths, wl, st, res)
        for lane in range(min(LANES, n - g)):
            r = res[:, lane]
            _store_digest(out, g + lane, r[0], r[1], r[2], r[3], r[4])
    return out


def sha1_digests(buf: np.ndarray, offsets: np.ndarray, multilane: bool = True) -> np.ndarray:
    """SHA-1 digests of the slices ``buf[offsets[i]:offsets[i+1]]`` as uint8 ``[n, 20]``.

    ``multilane`` selects the vector implementation, otherwise the scalar one (both are what
    the tests compare with ``hashlib``).
    """
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] < 0 or offsets[-1] > buf.shape[0]:
        raise ValueError("offsets must be n + 1 offsets within the buffer")
    if np.any(offsets[1:] < offsets[:-1]):
        raise ValueError("offsets must be non-decreasing")
    if buf.shape[0] == 0:
        buf = np.zeros(1, dtype=np.uint8)  # kernels need a non-empty buffer
    buf = buf.view()
    buf.setflags(write=False)  # one specialisation whatever the caller passes
    return _digests_kernel(buf, offsets, bool(multilane))
