"""RPv2 repetition signals (spec §4.2): character fractions of repeated word n-grams."""

from __future__ import annotations

from textsieve.signals.registry import DocScores, ratio, round8, signal
from textsieve.text import word_kernel as wk
from textsieve.text.views import BatchViews

G = "repetition"


def _top_ngram(n: int):
    col = wk.TOP_NS.index(n)

    def score(v: BatchViews) -> DocScores:
        chars = v.words(wk.W_TOP_CHARS + col) * v.words(wk.W_TOP_COUNT + col)
        value, _ = ratio(chars, v.words(wk.W_CHARS))
        return DocScores(round8(value))

    signal(f"rps_doc_frac_chars_top_{n}gram", level="doc", group=G,
           definition=f"Characters in the most frequent word {n}-gram x its count / characters in words "
                      "(overlaps counted; 0 if it occurs once).")(score)


def _dupe_ngrams(n: int):
    col = wk.DUPE_NS.index(n)

    def score(v: BatchViews) -> DocScores:
        value, _ = ratio(v.words(wk.W_DUPE_CHARS + col), v.words(wk.W_CHARS))
        return DocScores(round8(value))

    signal(f"rps_doc_frac_chars_dupe_{n}grams", level="doc", group=G,
           definition=f"Fraction of word characters covered by word {n}-grams that occur more than once.")(score)


for _n in wk.TOP_NS:
    _top_ngram(_n)
for _n in wk.DUPE_NS:
    _dupe_ngrams(_n)
