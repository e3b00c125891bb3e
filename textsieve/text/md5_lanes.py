"""MD5 (RFC 1321) in numba over slices of one uint8 buffer, `LANES` messages at a time.

The SimHash of a book hashes a million short n-grams; one MD5 is a chain of 64 dependent
steps (~150 ns on one core, OpenSSL included), so hashing them one after the other is bound
by that chain. Here `LANES` independent messages (16 with AVX-512, 8 otherwise) are
compressed together: their message words are written, transposed, into a ``(16, LANES)``
uint32 array and one compression runs on all lanes as ``<LANES x i32>`` LLVM vector code
(`_compress_lanes`, a numba ``@intrinsic`` emitting the 64 steps as straight-line IR, so the
state lives in vector registers). A message is a slice ``buf[start:start+length]``; the
padding (0x80, zeros, the 64-bit little-endian bit length) is made word by word as a block is
loaded. The buffer must have 4 readable bytes past its last message (words are read whole).

Caching: every kernel is ``@njit(cache=True)``; numba keys a cache entry on the compiled
function's own file, so after editing this module also delete the cached kernels of modules
that inline it (``textsieve/text/__pycache__/simhash.*.nb[ic]``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from textsieve.text.vector_lanes import LANES, LaneIR, lane_tables

#: the initial state A, B, C, D
INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
#: additive constants floor(abs(sin(i + 1)) * 2**32), rotations and message word of each step
K = tuple(int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF for i in range(64))
S = (7, 12, 17, 22) * 4 + (5, 9, 14, 20) * 4 + (4, 11, 16, 23) * 4 + (6, 10, 15, 21) * 4
G = tuple([i for i in range(16)] + [(5 * i + 1) % 16 for i in range(16, 32)]
          + [(3 * i + 5) % 16 for i in range(32, 48)] + [(7 * i) % 16 for i in range(48, 64)])
_M32 = np.uint64(0xFFFFFFFF)


@intrinsic
def _compress_lanes(typingctx, w, st):
    """``st[:, l] = compress(st[:, l], w[:, l])`` for every lane l, as vector code.

    ``w``: C-contiguous uint32 (16, LANES), the block's message words, transposed;
    ``st``: C-contiguous uint32 (4, LANES), the state A, B, C, D, updated in place.
    """
    if not lane_tables(w, st):
        return None
    sig = types.void(w, st)

    def codegen(context, builder, signature, args):
        lanes = LaneIR(context, builder, signature, args)
        splat = lanes.splat
        ones = splat(0xFFFFFFFF)
        words = lanes.load(0, 16)
        state = lanes.load(1, 4)
        a, b, c, d = state
        for i in range(64):
            if i < 16:
                f = builder.or_(builder.and_(b, c), builder.and_(builder.xor(b, ones), d))
            elif i < 32:
                f = builder.or_(builder.and_(d, b), builder.and_(builder.xor(d, ones), c))
            elif i < 48:
                f = builder.xor(builder.xor(b, c), d)
            else:
                f = builder.xor(c, builder.or_(b, builder.xor(d, ones)))
            f = builder.add(builder.add(f, a), builder.add(splat(K[i]), words[G[i]]))
            a, d, c, b = d, c, b, builder.add(b, lanes.rotl(f, S[i]))
        lanes.store(1, [builder.add(state[j], v) for j, v in enumerate((a, b, c, d))])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def n_blocks(length):
    """64-byte blocks of a padded message of `length` bytes."""
    return (length + 8) // 64 + 1


@njit(cache=True, inline="always")
def _load_le32(buf, p):
    return (np.uint64(buf[p]) | (np.uint64(buf[p + 1]) << np.uint64(8)) | (np.uint64(buf[p + 2]) << np.uint64(16))
            | (np.uint64(buf[p + 3]) << np.uint64(24)))


@njit(cache=True, inline="always")
def _block_word(buf, start, length, blk, nblocks, t):
    """Word `t` (0..15) of block `blk` of the padded message ``buf[start:start+length]``."""
    q = blk * 64 + 4 * t
    rem = length - q  # message bytes in this word
    if blk == nblocks - 1 and t >= 14:
        bits = np.uint64(length) * np.uint64(8)
        return bits & _M32 if t == 14 else bits >> np.uint64(32)
    if rem >= 4:
        return _load_le32(buf, start + q)
    if rem < 0:
        return np.uint64(0)
    shift = np.uint64(8 * rem)  # 0-3 message bytes, then the 0x80 terminator (reads up to 3 bytes past)
    keep = (np.uint64(1) << shift) - np.uint64(1)
    return (_load_le32(buf, start + q) & keep) | (np.uint64(0x80) << shift)


@njit(cache=True, inline="always")
def md5_lanes(buf, starts, lengths, w, st, out):
    """MD5 state words of the `LANES` messages ``buf[starts[l] : starts[l] + lengths[l]]``.

    ``w``: scratch uint32 (16, LANES); ``st``: scratch uint32 (4, LANES); ``out``: uint32
    (4, LANES) receives each lane's final A, B, C, D (the digest as little-endian words).
    Every lane must hold a real message (repeat one to fill unused lanes)."""
    max_blocks = 0
    for lane in range(LANES):
        max_blocks = max(max_blocks, n_blocks(lengths[lane]))
    for lane in range(LANES):
        for j in range(4):
            st[j, lane] = INIT[j]
    for blk in range(max_blocks):
        for lane in range(LANES):
            nb = n_blocks(lengths[lane])
            if blk < nb:
                for t in range(16):
                    w[t, lane] = np.uint32(_block_word(buf, starts[lane], lengths[lane], blk, nb, t))
        _compress_lanes(w, st)  # type: ignore[call-arg]  # jitted calls omit typingctx
        for lane in range(LANES):
            if blk == n_blocks(lengths[lane]) - 1:
                for j in range(4):
                    out[j, lane] = st[j, lane]


@njit(cache=True, nogil=True)
def _digests_kernel(buf, offsets):
    n = offsets.shape[0] - 1
    out = np.empty((n, 16), dtype=np.uint8)
    w = np.empty((16, LANES), dtype=np.uint32)
    st = np.empty((4, LANES), dtype=np.uint32)
    res = np.empty((4, LANES), dtype=np.uint32)
    starts = np.empty(LANES, dtype=np.int64)
    lengths = np.empty(LANES, dtype=np.int64)
    for g in range(0, n, LANES):
        for lane in range(LANES):
            i = g + lane if g + lane < n else g
            starts[lane] = offsets[i]
            lengths[lane] = offsets[i + 1] - offsets[i]
        md5_lanes(buf, starts, lengths, w, st, res)
        for lane in range(min(LANES, n - g)):
            for j in range(4):
                v = res[j, lane]
                for b in range(4):
                    out[g + lane, 4 * j + b] = np.uint8((v >> (8 * b)) & 0xFF)
    return out


def md5_digests(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """MD5 digests of the slices ``buf[offsets[i]:offsets[i+1]]`` as uint8 ``[n, 16]`` (tests
    compare them with `hashlib`)."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets[0] < 0 or offsets[-1] > len(buf):
        raise ValueError("offsets must be n + 1 offsets within the buffer")
    if np.any(offsets[1:] < offsets[:-1]):
        raise ValueError("offsets must be non-decreasing")
    padded = np.zeros(len(buf) + 4, dtype=np.uint8)  # words are read whole: 4 bytes of slack
    padded[: len(buf)] = buf
    return _digests_kernel(padded, offsets)
