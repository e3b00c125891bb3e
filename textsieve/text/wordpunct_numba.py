"""The numba code behind `wordpunct`: the one compiled WordPunct rule.

`tokenize_into` is called once per document by every kernel that tokenizes (the raw-text scan,
the RPv2 importance features through `token_bounds`, the DSIR features), so the rule itself lives
here only; each kernel then does its own per-token work over what it returns. Definition and
pure-Python twin: `wordpunct`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.text.hashing import FNV64_OFFSET, FNV64_PRIME
from textsieve.text.unicode_props import F_SPACE, F_WORD


@njit(cache=True, nogil=True)
def tokenize_into(cps, s, e, flags, hashed, start, end, seen, fnv, k):
    """Write the tokens of ``cps[s:e]`` to ``start[k:]``, ``end[k:]``, ``seen[k:]`` (and
    ``fnv[k:]`` when `hashed`); return the new k.

    `flags` is `unicode_tables().flags`, indexed by code point. start/end are int64 bounds into
    `cps`. ``seen`` (uint8) is the bitwise OR of the flags of the token's code points, so a caller
    that needs a per-token property (has an ASCII letter, is all caps) reads it without another
    pass over the token; ``fnv`` (uint64) is the 64-bit FNV-1a of its code points
    (`hashing.FNV64_*`), computed in the same pass for the callers that key tokens by it (stop
    words, DSIR features). The arrays need room for the document's tokens (`count_tokens`;
    `doc_scratch` allocates them for the largest document of a batch).

    Called once per document, not once per token: a per-token call (even inlined) costs an
    atomic reference-count update of the array arguments per token, which made the token loops
    ~1.6x slower when measured.
    """
    i = s
    while i < e:
        f = flags[cps[i]]
        if f & F_SPACE:
            i += 1
            continue
        is_word = (f & F_WORD) != 0
        acc = f
        h = FNV64_OFFSET
        if hashed:
            h = (h ^ np.uint64(cps[i])) * FNV64_PRIME
        j = i + 1
        while j < e:
            g = flags[cps[j]]
            if is_word:
                if not (g & F_WORD):
                    break
            elif (g & F_WORD) or (g & F_SPACE):
                break
            acc |= g
            if hashed:
                h = (h ^ np.uint64(cps[j])) * FNV64_PRIME
            j += 1
        start[k] = i
        end[k] = j
        seen[k] = acc
        if hashed:
            fnv[k] = h
        k += 1
        i = j
    return k


@njit(cache=True, nogil=True)
def count_tokens(cps, s, e, flags):
    """The number of tokens `tokenize_into` writes for ``cps[s:e]``: maximal runs of word code
    points or of punctuation (neither word nor space), counted without storing them."""
    n = 0
    prev = 0  # 0 space (or start), 1 word, 2 punctuation
    for i in range(s, e):
        f = flags[cps[i]]
        cls = 0 if f & F_SPACE else (1 if f & F_WORD else 2)
        if cls != 0 and cls != prev:
            n += 1
        prev = cls
    return n


@njit(cache=True, nogil=True)
def doc_scratch(cps, doc_off, flags):
    """(start, end, seen, fnv) buffers large enough for `tokenize_into` on any one document of a
    batch: sized to the most tokens a document has (counted first), not to its code points, and
    with int32 bounds (callers keep a batch within `batch_encoding.MAX_BATCH_CODE_POINTS`), so a
    30 MB document costs ~17 bytes per token here instead of 25 per character (6x less)."""
    most = 0
    for d in range(doc_off.shape[0] - 1):
        most = max(most, count_tokens(cps, doc_off[d], doc_off[d + 1], flags))
    return (np.empty(most, dtype=np.int32), np.empty(most, dtype=np.int32),
            np.empty(most, dtype=np.uint8), np.empty(most, dtype=np.uint64))


@njit(cache=True, nogil=True)
def token_bounds(cps, doc_off, flags):
    """(start, end, tok_off) of the tokens of every document; see `wordpunct.token_bounds`."""
    n_docs = doc_off.shape[0] - 1
    start = np.empty(cps.shape[0], dtype=np.int64)  # at most one token per code point
    end = np.empty(cps.shape[0], dtype=np.int64)
    seen = np.empty(cps.shape[0], dtype=np.uint8)
    no_hashes = np.empty(0, dtype=np.uint64)
    tok_off = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        k = tokenize_into(cps, doc_off[d], doc_off[d + 1], flags, False, start, end, seen, no_hashes, k)
        tok_off[d + 1] = k
    return start[:k], end[:k], tok_off
