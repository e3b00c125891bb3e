"""CPython 3.11's built-in `hash()` for `str` and 2-tuples of `str`, for any PYTHONHASHSEED.

RedPajama-V2's DSIR features put every raw token and raw bigram into the bucket
`abs(hash(x)) % B` (spec §4.6, §11.14), with the interpreter started under `PYTHONHASHSEED=42`.
That value depends on the running process's hash secret, so calling `hash()` here would only be
right if textsieve itself ran under seed 42 (and it cannot re-seed itself). This module computes
the same numbers independently of the running process:

* **Key.** With a fixed PYTHONHASHSEED, `_Py_HashRandomization_Init` fills the 24-byte
  `_Py_HashSecret` with an LCG (`x = x * 214013 + 2531011`, byte = `(x >> 16) & 0xff`); the
  first 16 bytes are SipHash's k0 and k1 (little-endian).
* **str.** `unicode_hash` runs SipHash-1-3 (the default from 3.11 on) over the string's
  internal PEP 393 buffer: 1, 2 or 4 little-endian bytes per code point, chosen by the largest
  code point (< 256, < 65536, otherwise). The empty string hashes to 0, and -1 becomes -2.
* **tuple.** `tuplehash` is the xxHash-style accumulation over the element hashes
  (Objects/tupleobject.c, 64-bit primes).

`str_hash`/`tuple_hash` are the pure-Python twins (readable, used by tests); `token_hashes` is the
numba kernel that hashes every token of a batch in one call from UTF-32 code points.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MASK64 = 0xFFFFFFFFFFFFFFFF

#: The PYTHONHASHSEED of the RedPajama-V2 image (spec §4.6).
RPV2_HASH_SEED = 42


def hash_secret(seed: int) -> tuple[int, int]:
    """SipHash key (k0, k1) that CPython derives from PYTHONHASHSEED=`seed` (0 < seed < 2**32).

    Seed 0 disables randomization in CPython (the secret is all zero), which this also returns.
    """
    if not 0 <= seed <= 4294967295:
        raise ValueError(f"PYTHONHASHSEED must be in [0, 4294967295], got {seed}")
    buf = bytearray(24)
    if seed:
        x = seed
        for i in range(24):
            x = (x * 214013 + 2531011) & 0xFFFFFFFF
            buf[i] = (x >> 16) & 0xFF
    return int.from_bytes(buf[0:8], "little"), int.from_bytes(buf[8:16], "little")


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & MASK64


def _sip_round(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & MASK64
    v2 = (v2 + v3) & MASK64
    v1 = _rotl(v1, 13) ^ v0
    v3 = _rotl(v3, 16) ^ v2
    v0 = _rotl(v0, 32)
    v2 = (v2 + v1) & MASK64
    v0 = (v0 + v3) & MASK64
    v1 = _rotl(v1, 17) ^ v2
    v3 = _rotl(v3, 21) ^ v0
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash13(k0: int, k1: int, data: bytes) -> int:
    """SipHash-1-3 of `data` as CPython 3.11 computes it (unsigned 64-bit result)."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    full = n - n % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 ^= m
    b = ((n & 0xFF) << 56) | int.from_bytes(data[full:], "little")
    v3 ^= b
    v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    v0 ^= b
    v2 ^= 0xFF
    for _ in range(3):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def pep393_bytes(s: str) -> bytes:
    """The internal buffer CPython hashes for `s`: latin-1, UCS-2 or UCS-4, little-endian."""
    top = max(map(ord, s), default=0)
    if top < 0x100:
        return s.encode("latin-1")
    if top < 0x10000:
        return s.encode("utf-16-le", "surrogatepass")
    return s.encode("utf-32-le", "surrogatepass")


def str_hash(s: str, seed: int = RPV2_HASH_SEED) -> int:
    """`hash(s)` of CPython 3.11 (64-bit) under PYTHONHASHSEED=`seed`."""
    if not s:
        return 0
    k0, k1 = hash_secret(seed)
    h = _signed(siphash13(k0, k1, pep393_bytes(s)))
    return -2 if h == -1 else h


_XXPRIME_1 = 11400714785074694791
_XXPRIME_2 = 14029467366897019727
_XXPRIME_5 = 2870177450012600261


def tuple_hash(item_hashes: list[int]) -> int:
    """`hash(t)` of CPython 3.8+ (64-bit) for a tuple whose items hash to `item_hashes`."""
    acc = _XXPRIME_5
    for h in item_hashes:
        acc = (acc + (h & MASK64) * _XXPRIME_2) & MASK64
        acc = ((acc << 31) | (acc >> 33)) & MASK64
        acc = (acc * _XXPRIME_1) & MASK64
    acc = (acc + (len(item_hashes) ^ (_XXPRIME_5 ^ 3527539))) & MASK64
    if acc == MASK64:
        return 1546275796
    return _signed(acc)


def bucket(h: int, buckets: int) -> int:
    """RPv2's `abs(hash(x)) % buckets` (Python integers: abs never overflows)."""
    return abs(h) % buckets


# ---------------------------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------------------------

_C0 = np.uint64(0x736F6D6570736575)
_C1 = np.uint64(0x646F72616E646F6D)
_C2 = np.uint64(0x6C7967656E657261)
_C3 = np.uint64(0x7465646279746573)
_U_XXPRIME_1 = np.uint64(_XXPRIME_1)
_U_XXPRIME_2 = np.uint64(_XXPRIME_2)
_U_XXPRIME_5 = np.uint64(_XXPRIME_5)
_U_TUPLE2_TAIL = np.uint64(2 ^ (_XXPRIME_5 ^ 3527539))
_U_MINUS_ONE = np.uint64(MASK64)


@njit(cache=True, inline="always")
def _rotl_u(x, b):
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@njit(cache=True, inline="always")
def _round_u(v0, v1, v2, v3):
    v0 = v0 + v1
    v2 = v2 + v3
    v1 = _rotl_u(v1, 13) ^ v0
    v3 = _rotl_u(v3, 16) ^ v2
    v0 = _rotl_u(v0, 32)
    v2 = v2 + v1
    v0 = v0 + v3
    v1 = _rotl_u(v1, 17) ^ v2
    v3 = _rotl_u(v3, 21) ^ v0
    v2 = _rotl_u(v2, 32)
    return v0, v1, v2, v3


@njit(cache=True)
def _str_hash_cps(cps, s, e, k0, k1):
    """Unsigned CPython str hash of the code points cps[s:e] (the bits of the signed result)."""
    n = e - s
    if n == 0:
        return np.uint64(0)
    top = np.uint32(0)
    for i in range(s, e):
        if cps[i] > top:
            top = cps[i]
    kind = 1 if top < 0x100 else (2 if top < 0x10000 else 4)
    nbytes = n * kind
    v0 = k0 ^ _C0
    v1 = k1 ^ _C1
    v2 = k0 ^ _C2
    v3 = k1 ^ _C3
    m = np.uint64(0)
    filled = 0  # bytes in m
    for i in range(s, e):
        c = np.uint64(cps[i])
        m |= c << np.uint64(filled * 8)
        filled += kind
        if filled == 8:
            v3 ^= m
            v0, v1, v2, v3 = _round_u(v0, v1, v2, v3)
            v0 ^= m
            m = np.uint64(0)
            filled = 0
    b = (np.uint64(nbytes & 0xFF) << np.uint64(56)) | m
    v3 ^= b
    v0, v1, v2, v3 = _round_u(v0, v1, v2, v3)
    v0 ^= b
    v2 ^= np.uint64(0xFF)
    v0, v1, v2, v3 = _round_u(v0, v1, v2, v3)
    v0, v1, v2, v3 = _round_u(v0, v1, v2, v3)
    v0, v1, v2, v3 = _round_u(v0, v1, v2, v3)
    h = v0 ^ v1 ^ v2 ^ v3
    if h == _U_MINUS_ONE:
        h = _U_MINUS_ONE - np.uint64(1)  # -1 is reserved for errors: CPython returns -2
    return h


@njit(cache=True)
def token_hashes(cps, tok_start, tok_end, k0, k1):
    """CPython str hashes (as uint64 bit patterns) of the tokens cps[tok_start[i]:tok_end[i]]."""
    out = np.empty(tok_start.shape[0], dtype=np.uint64)
    for i in range(tok_start.shape[0]):
        out[i] = _str_hash_cps(cps, tok_start[i], tok_end[i], k0, k1)
    return out


@njit(cache=True, inline="always")
def tuple2_hash_u(h1, h2):
    """CPython tuple hash of (a, b) given hash(a), hash(b) as uint64 bit patterns."""
    acc = _U_XXPRIME_5
    acc = acc + h1 * _U_XXPRIME_2
    acc = _rotl_u(acc, 31)
    acc = acc * _U_XXPRIME_1
    acc = acc + h2 * _U_XXPRIME_2
    acc = _rotl_u(acc, 31)
    acc = acc * _U_XXPRIME_1
    acc = acc + _U_TUPLE2_TAIL
    if acc == _U_MINUS_ONE:
        return np.uint64(1546275796)
    return acc


@njit(cache=True, inline="always")
def abs_mod_u(h, buckets):
    """Python's abs(signed(h)) % buckets for a uint64 bit pattern h."""
    # two's-complement magnitude of a negative pattern; 2**63 stays exact in uint64
    mag = (~h) + np.uint64(1) if h >> np.uint64(63) else h
    return np.int64(mag % np.uint64(buckets))
