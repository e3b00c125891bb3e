"""The numba kernel behind `raw_kernel.scan_raw` (one pass over the code points of a batch).

Output layout, stop-word table and the definition of every statistic: `raw_kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from textsieve.text.raw_kernel import (
    BULLETS,
    D_ALPHA_TOKENS,
    D_CURLY,
    D_ELLIPSIS3,
    D_ELLIPSIS_CHAR,
    D_HASH,
    D_LINES,
    D_LINES_ELLIPSIS,
    D_RAW_TOKENS,
    D_SENTENCES,
    D_STOP_TOKENS,
    D_UPPER_TOKENS,
    JAVASCRIPT,
    L_BULLET,
    L_END,
    L_JAVASCRIPT,
    L_NORM_LEN,
    L_NORM_NUMERIC,
    L_NORM_WORDS,
    L_START,
    L_TERMINAL,
    L_UPPER,
    N_DOC_STATS,
    N_LINE_STATS,
)
from textsieve.text.unicode_props import F_ASCII_ALPHA, F_ASCII_PUNCT, F_LOWER_OR_TITLE, F_SPACE, F_UPPER, F_WORD
from textsieve.text.wordpunct_numba import doc_scratch, tokenize_into


@njit(cache=True, inline="always")
def _is_stop(cps, s, e, h, lang, sw_hash, sw_lang_off, sw_word_off, sw_chars):
    """Is the token cps[s:e], of FNV-1a hash h, in language slot `lang`'s stop words?"""
    if lang < 0:
        return False
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
def _token_stats(cps, s0, e0, lang, flags, tok_start, tok_end, tok_seen, tok_fnv,
                 sw_hash, sw_lang_off, sw_word_off, sw_chars):
    """(raw tokens, with an ASCII letter, all caps, stop words) of the document cps[s0:e0].

    Its own function rather than a block of `scan_raw`: LLVM optimizes the smaller loop nests
    better (the whole scan ran ~1.5x faster when measured)."""
    n_tok = tokenize_into(cps, s0, e0, flags, lang >= 0, tok_start, tok_end, tok_seen, tok_fnv, 0)
    n_alpha = 0
    n_upper = 0
    n_stop = 0
    for t in range(n_tok):
        seen = tok_seen[t]
        if seen & F_ASCII_ALPHA:
            n_alpha += 1
        # str.isupper(): a cased upper character and no lower/title one
        if (seen & F_UPPER) and not (seen & F_LOWER_OR_TITLE):
            n_upper += 1
        if _is_stop(cps, tok_start[t], tok_end[t], tok_fnv[t], lang, sw_hash, sw_lang_off, sw_word_off, sw_chars):
            n_stop += 1
    return n_tok, n_alpha, n_upper, n_stop


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
    tok_start, tok_end, tok_seen, tok_fnv = doc_scratch(cps, doc_off, flags)
    nl = 0
    for d in range(n_docs):
        s0 = doc_off[d]
        e0 = doc_off[d + 1]
        lang = doc_lang[d]
        # --- raw tokens: \w+ | [^\w\s]+ (wordpunct) ---
        n_tok, n_alpha, n_upper, n_stop = _token_stats(cps, s0, e0, lang, flags, tok_start, tok_end, tok_seen,
                                                       tok_fnv, sw_hash, sw_lang_off, sw_word_off, sw_chars)
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
                for b in BULLETS:
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
                    if js_pos < 10 and norm_len[c] == 1 and norm_ascii[c] == JAVASCRIPT[js_pos]:
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
