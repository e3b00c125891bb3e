"""Compiled statistics over normalized words, for a batch of documents.

RPv2's word-level signals (spec §4.1, §4.2) need word identities (unique words, entropy) and
n-gram identities for n = 2..10 (most frequent n-gram, duplicated n-grams). Building Python
tuples for ~460 words x 9 n-gram sizes per document is what makes the reference slow. Here words
are read straight from the UTF-8 bytes of the normalized content (words are separated by exactly
one space there), given dense ids in first-occurrence order by an exact hash table (hash, then
byte comparison), and n-gram ids are built level by level: the id of an n-gram is the dense id
of the pair (id of its (n-1)-gram prefix, id of its last word). Ids are exact, so there are no
hash collisions to reason about, and "first occurrence" order falls out of the numbering, which
is what `Counter.most_common` tie-breaking needs.

This module holds the output layout. The kernel is C (`native/annotate_scan.c`, built with the
package); where it was not built, its numba twin `word_stats_numba` is imported on the first call.
"""

from __future__ import annotations

import numpy as np

from textsieve.native import word_stats as native_word_stats

# Columns of the int64 `stats` output.
W_WORDS = 0  # len(W)
W_CHARS = 1  # sum of word lengths in code points (T)
W_UNIQUE = 2  # distinct words
W_TOP_CHARS = 3  # 3 columns, n = 2, 3, 4: characters of the top n-gram (0 when count <= 1)
W_TOP_COUNT = 6  # 3 columns, n = 2, 3, 4: count of the top n-gram
W_DUPE_CHARS = 9  # 6 columns, n = 5..10: characters of words covered by duplicated n-grams
N_WORD_STATS = 15

TOP_NS = (2, 3, 4)
DUPE_NS = (5, 6, 7, 8, 9, 10)


def word_stats(buf, doc_off):
    """Per-document word statistics of a batch; see `word_stats_numba.word_stats`. The C twin
    (`native.word_stats`) runs when it was built, the numba kernel otherwise: the same values."""
    if len(doc_off) > 1 and int(np.diff(doc_off).max()) >= 2**31:  # the kernels count words in int32
        raise ValueError("a document of 2 GiB or more of normalized text cannot be annotated (set --max-doc-bytes "
                         "below 2GiB to skip such documents)")
    native = native_word_stats()
    if native is not None:
        buf = np.ascontiguousarray(buf, dtype=np.uint8)
        doc_off = np.ascontiguousarray(doc_off, dtype=np.int64)
        n_docs = doc_off.shape[0] - 1
        stats = np.zeros((n_docs, N_WORD_STATS), dtype=np.int64)
        entropy = np.zeros(n_docs, dtype=np.float64)
        if native(buf.ctypes.data, doc_off.ctypes.data, n_docs, stats.ctypes.data, entropy.ctypes.data) != 0:
            raise MemoryError("word statistics: out of memory")
        return stats, entropy
    from textsieve.text.word_stats_numba import word_stats as kernel

    return kernel(buf, doc_off)
