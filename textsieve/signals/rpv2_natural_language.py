"""RPv2 natural-language signals (spec §4.1)."""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import DocScores, ratio, round8, signal
from textsieve.text import raw_kernel as rk
from textsieve.text import word_kernel as wk
from textsieve.text.views import BatchViews

G = "natural_language"


def _rounded_ratio(num: np.ndarray, den: np.ndarray) -> DocScores:
    value, ok = ratio(num, den)
    return DocScores(round8(value), ok)


@signal("rps_doc_num_sentences", level="doc", group=G,
        definition=r"Number of matches of \b[^.!?]+[.!?]* in the raw text.")
def num_sentences(v: BatchViews) -> DocScores:
    return DocScores(v.raw(rk.D_SENTENCES).astype(np.float64))


@signal("rps_doc_word_count", level="doc", group=G, dtype="int",
        definition="Number of normalized words.")
def word_count(v: BatchViews) -> DocScores:
    return DocScores(v.words(wk.W_WORDS).copy())


@signal("rps_doc_mean_word_length", level="doc", group=G,
        definition="Mean length of the normalized words in NFD code points (null without words).")
def mean_word_length(v: BatchViews) -> DocScores:
    return _rounded_ratio(v.words(wk.W_CHARS), v.words(wk.W_WORDS))


@signal("rps_doc_symbol_to_word_ratio", level="doc", group=G,
        definition="(count of '#', '...' and '…' in the raw text) / number of raw tokens.")
def symbol_to_word_ratio(v: BatchViews) -> DocScores:
    symbols = v.raw(rk.D_HASH) + v.raw(rk.D_ELLIPSIS3) + v.raw(rk.D_ELLIPSIS_CHAR)
    return _rounded_ratio(symbols, v.raw(rk.D_RAW_TOKENS))


@signal("rps_doc_frac_lines_end_with_ellipsis", level="doc", group=G,
        definition="Fraction of raw lines (blank ones included) ending in '...' or '…'.")
def frac_lines_end_with_ellipsis(v: BatchViews) -> DocScores:
    return _rounded_ratio(v.raw(rk.D_LINES_ELLIPSIS), v.raw(rk.D_LINES))


@signal("rps_doc_frac_no_alph_words", level="doc", group=G,
        definition="1 - fraction of raw tokens containing an ASCII letter.")
def frac_no_alph_words(v: BatchViews) -> DocScores:
    value, ok = ratio(v.raw(rk.D_ALPHA_TOKENS), v.raw(rk.D_RAW_TOKENS))
    return DocScores(round8(1.0 - value), ok)


@signal("rps_doc_frac_unique_words", level="doc", group=G,
        definition="Distinct normalized words / number of normalized words.")
def frac_unique_words(v: BatchViews) -> DocScores:
    return _rounded_ratio(v.words(wk.W_UNIQUE), v.words(wk.W_WORDS))


@signal("rps_doc_unigram_entropy", level="doc", group=G,
        definition="Entropy (natural log) of the normalized-word distribution.")
def unigram_entropy(v: BatchViews) -> DocScores:
    return DocScores(round8(v.entropy), v.words(wk.W_WORDS) > 0)


@signal("rps_doc_frac_all_caps_words", level="doc", group=G,
        definition="Fraction of raw tokens that are all upper case (str.isupper).")
def frac_all_caps_words(v: BatchViews) -> DocScores:
    return _rounded_ratio(v.raw(rk.D_UPPER_TOKENS), v.raw(rk.D_RAW_TOKENS))
