"""Compiled scan of raw text: raw tokens, sentences, symbols and lines, for a batch of documents.

One pass over the code points of every document computes all the counts RPv2's raw-text signals
need (spec §3.3, §3.4, §4.1, §4.3, §4.4), so no signal re-tokenizes. The pure-Python twin of every
quantity here is `textsieve.signals.reference`; tests cross-check the two on random text.

Inputs are the UTF-32 code points of all documents concatenated (`cps`), `doc_off` (n_docs+1
code-point offsets) and the property tables of `unicode_props`. Stop words arrive as a hashed
table (see `StopWordTable`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.text.unicode_props import (
    F_ASCII_ALPHA,
    F_ASCII_PUNCT,
    F_LOWER_OR_TITLE,
    F_SPACE,
    F_UPPER,
    F_WORD,
)

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

_JAVASCRIPT = np.array([ord(c) for c in "javascript"], dtype=np.uint8)
_BULLETS = np.array([0x2022, 0x2023, 0x25B6, 0x25C0, 0x25E6, 0x25A0, 0x25A1, 0x25AA, 0x25AB, 0x2013],
                    dtype=np.uint32)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


class StopWordTable:
    """Stop-word sets of several languages in a form a kernel can probe.

    For each language slot, the 64-bit FNV-1a hashes of its words (over code points) are sorted;
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
        self.word_off = np.zeros(len(words) + 1, dtype=np.int64)
        self.word_off[1:] = np.cumsum([len(w) for w in words]) if words else []
        joined = "".join(words)
        self.chars = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).copy()


def _fnv_py(word: str) -> int:
    h = 0xCBF29CE484222325
    for ch in word:
        h = ((h ^ ord(ch)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


@njit(cache=True, inline="always")
def _is_stop(cps, s, e, lang, sw_hash, sw_lang_off, sw_word_off, sw_chars):
    if lang < 0:
        return False
    h = _FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.uint64(cps[i])) * _FNV_PRIME
    lo = sw_lang_off[lang]
    hi = sw_lang_off[lang + 1]
    while lo < hi:  # leftmost position with hash >= h
        mid = (lo + hi) >> 1
        if sw_hash[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    end = sw_lang_off[lang + 1]
    while lo < end and sw_hash[lo] == h:
        ws = sw_word_off[lo]
        we = sw_word_off[lo + 1]
        if we - ws == e - s:
            same = True
            for k in range(e - s):
                if sw_chars[ws + k] != cps[s + k]:
                    same = False
                    break
            if same:
                return True
        lo += 1
    return False


@njit(cache=True)
def scan_raw(cps, doc_off, doc_lang, flags, norm_len, norm_numeric, norm_ascii,
             sw_hash, sw_lang_off, sw_word_off, sw_chars):
    """Return (doc_stats int64[n_docs, N_DOC_STATS], line_stats int64[n_lines, N_LINE_STATS],
    line_off int64[n_docs+1]) for the batch."""
    n_docs = doc_off.shape[0] - 1
    doc_stats = np.zeros((n_docs, N_DOC_STATS), dtype=np.int64)
    n_lines_max = 0
    for d in range(n_docs):  # upper bound on lines: newlines + 1 per doc
        n_lines_max += 1
        for i in range(doc_off[d], doc_off[d + 1]):
            if cps[i] == 10:
                n_lines_max += 1
    line_stats = np.zeros((n_lines_max, N_LINE_STATS), dtype=np.int64)
    line_off = np.zeros(n_docs + 1, dtype=np.int64)
    nl = 0
    for d in range(n_docs):
        s0 = doc_off[d]
        e0 = doc_off[d + 1]
        lang = doc_lang[d]
        # --- raw tokens: \w+ | [^\w\s]+ ---
        i = s0
        n_tok = 0
        n_alpha = 0
        n_upper = 0
        n_stop = 0
        while i < e0:
            f = flags[cps[i]]
            if f & F_SPACE:
                i += 1
                continue
            is_word = (f & F_WORD) != 0
            j = i
            has_alpha = False
            cased = False
            lower_seen = False
            while j < e0:
                g = flags[cps[j]]
                if is_word:
                    if not (g & F_WORD):
                        break
                else:
                    if (g & F_WORD) or (g & F_SPACE):
                        break
                if g & F_ASCII_ALPHA:
                    has_alpha = True
                if g & F_LOWER_OR_TITLE:
                    lower_seen = True
                elif g & F_UPPER:
                    cased = True
                j += 1
            n_tok += 1
            if has_alpha:
                n_alpha += 1
            if cased and not lower_seen:
                n_upper += 1
            if _is_stop(cps, i, j, lang, sw_hash, sw_lang_off, sw_word_off, sw_chars):
                n_stop += 1
            i = j
        doc_stats[d, D_RAW_TOKENS] = n_tok
        doc_stats[d, D_ALPHA_TOKENS] = n_alpha
        doc_stats[d, D_UPPER_TOKENS] = n_upper
        doc_stats[d, D_STOP_TOKENS] = n_stop
        # --- sentences: non-overlapping matches of \b[^.!?]+[.!?]* ---
        n_sent = 0
        i = s0
        while i < e0:
            c = cps[i]
            if c == 46 or c == 33 or c == 63:
                i += 1
                continue
            prev_word = i > s0 and (flags[cps[i - 1]] & F_WORD) != 0
            cur_word = (flags[c] & F_WORD) != 0
            if prev_word == cur_word:  # no word boundary here
                i += 1
                continue
            n_sent += 1
            while i < e0 and not (cps[i] == 46 or cps[i] == 33 or cps[i] == 63):
                i += 1
            while i < e0 and (cps[i] == 46 or cps[i] == 33 or cps[i] == 63):
                i += 1
        doc_stats[d, D_SENTENCES] = n_sent
        # --- symbol counts ---
        n_hash = 0
        n_ell3 = 0
        n_ellc = 0
        n_curly = 0
        dots = 0
        for i in range(s0, e0):
            c = cps[i]
            if c == 46:
                dots += 1
                continue
            if dots:
                n_ell3 += dots // 3
                dots = 0
            if c == 35:
                n_hash += 1
            elif c == 0x2026:
                n_ellc += 1
            elif c == 123 or c == 125:
                n_curly += 1
        n_ell3 += dots // 3
        doc_stats[d, D_HASH] = n_hash
        doc_stats[d, D_ELLIPSIS3] = n_ell3
        doc_stats[d, D_ELLIPSIS_CHAR] = n_ellc
        doc_stats[d, D_CURLY] = n_curly
        # --- lines: [^\n]*\n | [^\n]+$ ---
        line_off[d] = nl
        ls = s0
        n_ell_lines = 0
        while ls < e0:
            le = ls
            while le < e0 and cps[le] != 10:
                le += 1
            if le < e0:
                le += 1  # include the newline
            row = line_stats[nl]
            row[L_START] = ls - s0
            row[L_END] = le - s0
            # rstrip / lstrip views
            r = le - 1
            while r >= ls and (flags[cps[r]] & F_SPACE):
                r -= 1
            if r >= ls:
                c = cps[r]
                if c == 46 or c == 33 or c == 63 or c == 0x201D:
                    row[L_TERMINAL] = 1
                if c == 0x2026 or (r - 2 >= ls and c == 46 and cps[r - 1] == 46 and cps[r - 2] == 46):
                    n_ell_lines += 1
            q = ls
            while q < le and (flags[cps[q]] & F_SPACE):
                q += 1
            if q < le:
                c = cps[q]
                for b in _BULLETS:
                    if c == b:
                        row[L_BULLET] = 1
                        break
            # per-character counts and the normalized view of the line
            n_up = 0
            words = 0
            nlen = 0
            nnum = 0
            njs = 0
            in_word = False
            js_pos = 0  # chars of "javascript" matched so far in this token, -1 = no match
            for k in range(ls, le):
                c = cps[k]
                g = flags[c]
                if g & F_UPPER:
                    n_up += 1
                if g & F_ASCII_PUNCT:
                    continue  # deleted by normalization, transparent inside words
                if g & F_SPACE:
                    if in_word and js_pos == 10:
                        njs += 1
                    in_word = False
                    continue
                if not in_word:
                    in_word = True
                    words += 1
                    js_pos = 0
                nlen += norm_len[c]
                nnum += norm_numeric[c]
                if js_pos >= 0:
                    if js_pos < 10 and norm_len[c] == 1 and norm_ascii[c] == _JAVASCRIPT[js_pos]:
                        js_pos += 1
                    else:
                        js_pos = -1
            if in_word and js_pos == 10:
                njs += 1
            if words > 1:
                nlen += words - 1
            row[L_UPPER] = n_up
            row[L_NORM_WORDS] = words
            row[L_NORM_LEN] = nlen
            row[L_NORM_NUMERIC] = nnum
            row[L_JAVASCRIPT] = njs
            nl += 1
            ls = le
        doc_stats[d, D_LINES] = nl - line_off[d]
        doc_stats[d, D_LINES_ELLIPSIS] = n_ell_lines
    line_off[n_docs] = nl
    return doc_stats, line_stats[:nl], line_off
