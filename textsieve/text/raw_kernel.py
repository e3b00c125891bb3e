"""Compiled scan of raw text: raw tokens, sentences, symbols and lines, for a batch of documents.

One pass over the code points of every document computes all the counts RPv2's raw-text signals
need (spec §3.3, §3.4, §4.1, §4.3, §4.4), so no signal re-tokenizes. The pure-Python twin of every
quantity here is `textsieve.signals.reference`; tests cross-check the two on random text.

Inputs are the UTF-32 code points of all documents concatenated (`cps`), `doc_off` (n_docs+1
code-point offsets) and the property tables of `unicode_props`. Stop words arrive as a hashed
table (see `StopWordTable`).

This module holds the output layout and the stop-word table. The scan is C
(`native/annotate_scan.c`, built with the package); where it was not built, its numba twin
`raw_scan_numba` is imported on the first call, so a process that never scans raw text
(e.g. `annotate --signals minhash`) never loads numba either way.
"""

from __future__ import annotations

import numpy as np

from textsieve.native import scan_raw as native_scan_raw
from textsieve.text.batch_encoding import MAX_BATCH_CODE_POINTS, codepoints_batch

# Per-document outputs, columns of `doc_stats`.
D_RAW_TOKENS = 0  # len(W_raw)
D_ALPHA_TOKENS = 1  # raw tokens with an ASCII letter
D_UPPER_TOKENS = 2  # raw tokens with str.isupper()
D_STOP_TOKENS = 3  # raw tokens in the language's stop-word set
D_SENTENCES = 4  # matches of \b[^.!?]+[.!?]*
D_HASH = 5  # count("#")
D_ELLIPSIS3 = 6  # count("...") (non-overlapping)
D_ELLIPSIS_CHAR = 7  # count("…")
D_CURLY = 8  # count("{") + count("}")
D_LINES = 9  # number of raw lines
D_LINES_ELLIPSIS = 10  # raw lines whose rstrip ends with "..." or "…"
N_DOC_STATS = 11

# Per-line outputs, columns of `line_stats` (one row per raw line of the batch).
L_START = 0  # code-point offset of the line in its document
L_END = 1  # exclusive end, includes the "\n"
L_TERMINAL = 2  # rstrip ends with . ! ? or U+201D
L_BULLET = 3  # lstrip starts with one of RPv2's bullet characters
L_UPPER = 4  # characters with isupper()
L_NORM_WORDS = 5  # whitespace tokens of the normalized line
L_NORM_LEN = 6  # length of the normalized line (NFD code points, single spaces)
L_NORM_NUMERIC = 7  # isnumeric() code points of the normalized line
L_JAVASCRIPT = 8  # normalized tokens equal to "javascript"
N_LINE_STATS = 9

JAVASCRIPT = np.array([ord(c) for c in "javascript"], dtype=np.uint8)
BULLETS = np.array([0x2022, 0x2023, 0x25B6, 0x25C0, 0x25E6, 0x25A0, 0x25A1, 0x25AA, 0x25AB, 0x2013],
                    dtype=np.uint32)


class StopWordTable:
    """Stop-word sets of several languages in a form a kernel can probe.

    For each language slot, the 64-bit FNV-1a hashes of its words (over code points; the hash
    the WordPunct kernel computes for each token, `hashing.FNV64_*`) are sorted;
    a token is a member when its hash is found *and* its code points equal the stored word's,
    so membership is exact, not probabilistic.
    """

    def __init__(self, lists: list[frozenset[str] | None]):
        hashes: list[int] = []
        words: list[str] = []
        lang_off = [0]
        for words_of_lang in lists:
            entries = sorted((_fnv_py(w), w) for w in (words_of_lang or ()))
            hashes.extend(h for h, _ in entries)
            words.extend(w for _, w in entries)
            lang_off.append(len(hashes))
        self.hashes = np.array(hashes, dtype=np.uint64)
        self.lang_off = np.array(lang_off, dtype=np.int64)
        chars, self.word_off = codepoints_batch(words)
        self.chars = chars.copy()


def _fnv_py(word: str) -> int:
    """`hashing.FNV64_*` FNV-1a over the code points of `word`, in Python ints."""
    h = 0xCBF29CE484222325
    for ch in word:
        h = ((h ^ ord(ch)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def scan_raw(cps, doc_off, doc_lang, flags, norm_len, norm_numeric, norm_ascii,
             sw_hash, sw_lang_off, sw_word_off, sw_chars):
    """Return (doc_stats int64[n_docs, N_DOC_STATS], line_stats int64[n_lines, N_LINE_STATS],
    line_off int64[n_docs + 1]); see `raw_scan_numba.scan_raw`. The C twin (`native.scan_raw`)
    runs when it was built, the numba kernel otherwise: the same values."""
    native = native_scan_raw()
    if native is not None:
        if cps.shape[0] > MAX_BATCH_CODE_POINTS:  # (the numba path's check, below)
            raise ValueError("a batch of 2**31 code points or more cannot be annotated (set --max-doc-bytes below "
                             "2GiB to skip such documents)")
        return _scan_native(native, cps, doc_off, doc_lang, flags, norm_len, norm_numeric, norm_ascii,
                            sw_hash, sw_lang_off, sw_word_off, sw_chars)
    from textsieve.text.raw_scan_numba import scan_raw as kernel

    if cps.shape[0] > MAX_BATCH_CODE_POINTS:
        raise ValueError("a batch of 2**31 code points or more cannot be annotated (set --max-doc-bytes below 2GiB "
                         "to skip such documents)")
    return kernel(cps, doc_off, doc_lang, flags, norm_len, norm_numeric, norm_ascii,
                  sw_hash, sw_lang_off, sw_word_off, sw_chars)


def _scan_native(fn, cps, doc_off, doc_lang, *tables):
    """`scan_raw` through the C library: the caller allocates the outputs (lines: at most the
    newlines plus one per document)."""
    arrays: list[np.ndarray] = [np.ascontiguousarray(cps, dtype=np.uint32),
                                np.ascontiguousarray(doc_off, dtype=np.int64),
                                np.ascontiguousarray(doc_lang, dtype=np.int64)]
    dtypes = (np.uint8, np.uint8, np.uint8, np.uint8, np.uint64, np.int64, np.int64, np.uint32)
    tabs: list[np.ndarray] = [np.ascontiguousarray(t, dtype=dt) for t, dt in zip(tables, dtypes)]
    n_docs = arrays[1].shape[0] - 1
    docs = np.zeros((n_docs, N_DOC_STATS), dtype=np.int64)
    lines = np.zeros((int(np.count_nonzero(arrays[0] == 10)) + n_docs, N_LINE_STATS), dtype=np.int64)
    line_off = np.zeros(n_docs + 1, dtype=np.int64)
    nl = fn(arrays[0].ctypes.data, arrays[1].ctypes.data, n_docs, arrays[2].ctypes.data,
            *[t.ctypes.data for t in tabs], docs.ctypes.data, lines.ctypes.data, line_off.ctypes.data)
    return docs, lines[:nl], line_off


#: documents longer than this many code points are scanned piece by piece (`scan_texts`)
RAW_PIECE = 1 << 20
_SENTENCE_ENDS = (".\n", "!\n", "?\n")


def _cuts(text: str) -> list[int]:
    """Where `text` may be cut so that each piece scans to the same counts as the whole: just
    after a newline that follows `.`, `!` or `?`. Lines end at the newline; tokens and `...`
    runs never cross it; and a sentence match (`\\b[^.!?]+[.!?]*`) ends before it, while no
    match can start at it (no word boundary between the mark and the newline), so the scan
    after the cut starts in the state a piece starts in. About RAW_PIECE code points apart; a
    text without such a place stays whole."""
    cuts, start = [], 0
    while len(text) - start > RAW_PIECE:
        at = max(text.rfind(e, start, start + RAW_PIECE) for e in _SENTENCE_ENDS)
        if at < 0:
            ahead = [i for i in (text.find(e, start + RAW_PIECE) for e in _SENTENCE_ENDS) if i >= 0]
            if not ahead:
                break
            at = min(ahead)
        cuts.append(at + 2)
        start = at + 2
    return cuts


def scan_texts(texts, doc_lang, flags, norm_len, norm_numeric, norm_ascii, sw_hash, sw_lang_off, sw_word_off,
               sw_chars):
    """`scan_raw` over a batch of Python strings. A document longer than RAW_PIECE is scanned in
    pieces (`_cuts`) whose counts are added and whose lines are shifted to document offsets, so
    its UTF-32 copy (4 bytes per character) never exists whole: for a 30 MB document that copy
    was the largest allocation of the batch. Same values as one scan (tests/test_kernels_vs_reference.py)."""
    tables = (flags, norm_len, norm_numeric, norm_ascii, sw_hash, sw_lang_off, sw_word_off, sw_chars)
    if all(len(t) <= RAW_PIECE for t in texts):
        cps, doc_off = codepoints_batch(texts)
        return scan_raw(cps, doc_off, doc_lang, *tables)
    # the lines go straight into one table sized by the newlines (+1 per document): gathering
    # the pieces' tables and concatenating them held every line twice. int32 halves it (a batch
    # holds under 2**31 code points, so every offset and count fits); `BatchViews.line` widens
    # one column at a time
    lines = np.zeros((sum(t.count("\n") + 1 for t in texts), N_LINE_STATS), dtype=np.int32)
    docs = np.zeros((len(texts), N_DOC_STATS), dtype=np.int64)
    line_off = np.zeros(len(texts) + 1, dtype=np.int64)
    nl = 0
    run: list[int] = []  # consecutive short documents, scanned together

    def flush(nl: int) -> int:
        if run:
            cps, doc_off = codepoints_batch([texts[i] for i in run])
            d, ls, lo = scan_raw(cps, doc_off, doc_lang[run], *tables)
            docs[run] = d
            lines[nl:nl + ls.shape[0]] = ls
            line_off[run[0]:run[-1] + 2] = lo + nl
            nl += ls.shape[0]
            run.clear()
        return nl
    for i, text in enumerate(texts):
        if len(text) <= RAW_PIECE:
            run.append(i)
            continue
        nl = flush(nl)
        line_off[i] = nl
        bounds = [0, *_cuts(text), len(text)]
        for a, b in zip(bounds, bounds[1:]):
            cps, doc_off = codepoints_batch([text[a:b]])
            d, ls, _ = scan_raw(cps, doc_off, doc_lang[i:i + 1], *tables)
            del cps
            docs[i] += d[0]
            ls[:, L_START] += a
            ls[:, L_END] += a
            lines[nl:nl + ls.shape[0]] = ls
            nl += ls.shape[0]
        line_off[i + 1] = nl
    nl = flush(nl)
    return docs, lines[:nl], line_off
