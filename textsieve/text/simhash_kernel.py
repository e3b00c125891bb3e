"""The compiled part of `text.simhash`: the SimHash kernel over a text's code points and the
table of word characters it uses (see that module for the definition). Imported when the first
fingerprint is computed, so importing `text.simhash` for its constants does not load numba."""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from textsieve.text.md5_lanes import LANES, md5_lanes


@functools.cache
def word_flags() -> np.ndarray:
    """Per code point: 1 where Python's `re` matches ``\\w`` (`str.isalnum()` or `_`, CPython's
    own rule), asked of the running interpreter once per process (~0.3 s)."""
    flags = np.fromiter((chr(c).isalnum() for c in range(0x110000)), dtype=np.uint8, count=0x110000)
    flags[ord("_")] = 1
    return flags


@njit(cache=True, inline="always")
def _utf8_size(c):
    return 1 if c < 0x80 else (2 if c < 0x800 else (3 if c < 0x10000 else 4))


@njit(cache=True, nogil=True)
def simhash_kernel(cps, flags, width):
    """(fingerprint, number of features) of lower-cased text given as code points: the non-word
    ones dropped, the rest UTF-8 encoded once, every `width`-gram a slice of those bytes."""
    n_all = cps.shape[0]
    kept = np.empty(n_all, dtype=np.uint32)
    n_cp = 0
    n_bytes = 0
    for i in range(n_all):
        c = cps[i]
        if flags[c] & 1:
            kept[n_cp] = c
            n_cp += 1
            n_bytes += _utf8_size(c)
    buf = np.zeros(n_bytes + 4, dtype=np.uint8)  # md5_lanes reads whole words: 4 bytes of slack
    offsets = np.empty(n_cp + 1, dtype=np.int64)
    at = 0
    for i in range(n_cp):
        offsets[i] = at
        c = np.int64(kept[i])
        if c < 0x80:
            buf[at] = c
            at += 1
        elif c < 0x800:
            buf[at] = 0xC0 | (c >> 6)
            buf[at + 1] = 0x80 | (c & 0x3F)
            at += 2
        elif c < 0x10000:
            buf[at] = 0xE0 | (c >> 12)
            buf[at + 1] = 0x80 | ((c >> 6) & 0x3F)
            buf[at + 2] = 0x80 | (c & 0x3F)
            at += 3
        else:
            buf[at] = 0xF0 | (c >> 18)
            buf[at + 1] = 0x80 | ((c >> 12) & 0x3F)
            buf[at + 2] = 0x80 | ((c >> 6) & 0x3F)
            buf[at + 3] = 0x80 | (c & 0x3F)
            at += 4
    offsets[n_cp] = at
    n = n_cp - width + 1
    if n < 1:
        n = 1
    per_byte = np.zeros((8, 256), dtype=np.int64)  # per digest byte: how many features have each value
    w = np.empty((16, LANES), dtype=np.uint32)
    st = np.empty((4, LANES), dtype=np.uint32)
    res = np.empty((4, LANES), dtype=np.uint32)
    starts = np.empty(LANES, dtype=np.int64)
    lengths = np.empty(LANES, dtype=np.int64)
    for first in range(0, n, LANES):
        for lane in range(LANES):
            i = first + lane if first + lane < n else first  # unused lanes repeat a real feature
            end = min(i + width, n_cp)
            starts[lane] = offsets[i]
            lengths[lane] = offsets[end] - offsets[i]
        md5_lanes(buf, starts, lengths, w, st, res)
        for lane in range(min(LANES, n - first)):
            c = res[2, lane]  # digest bytes 8-15 are C then D, each little-endian: read big-endian,
            d = res[3, lane]  # the 64-bit value's top byte is C's lowest
            for b in range(4):
                per_byte[b, (c >> (8 * b)) & 0xFF] += 1
                per_byte[4 + b, (d >> (8 * b)) & 0xFF] += 1
    fp = np.uint64(0)
    for j in range(64):  # bit j of the big-endian value: byte 7 - j // 8, bit j % 8 of it
        ones = 0
        for v in range(256):
            if (v >> (j & 7)) & 1:
                ones += per_byte[7 - (j >> 3), v]
        if 2 * ones > n:
            fp |= np.uint64(1) << np.uint64(j)
    return fp, n
