"""RPv2 content signals (spec §4.4) that need no model: brackets, lorem ipsum, word lists."""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import DocScores, ratio, round8, signal
from textsieve.text import raw_kernel as rk
from textsieve.text import word_kernel as wk
from textsieve.text.views import BatchViews

G = "content"


@signal("rps_doc_curly_bracket", level="doc", group=G,
        definition="Count of '{' and '}' / raw text length.")
def curly_bracket(v: BatchViews) -> DocScores:
    value, _ = ratio(v.raw(rk.D_CURLY), v.lengths)
    return DocScores(round8(value))


@signal("rps_doc_lorem_ipsum", level="doc", group=G,
        definition="Case-insensitive matches of 'lorem ipsum' / normalized text length.")
def lorem_ipsum(v: BatchViews) -> DocScores:
    value, _ = ratio(v.lorem_ipsum_counts, v.normalized_lengths)
    return DocScores(round8(value))


@signal("rps_doc_stop_word_fraction", level="doc", group=G, needs=("stop_words",),
        definition="Raw tokens in the language's stop-word list / number of raw tokens "
                   "(null where the document's language has no list).")
def stop_word_fraction(v: BatchViews) -> DocScores:
    value, _ = ratio(v.raw(rk.D_STOP_TOKENS), v.raw(rk.D_RAW_TOKENS))
    value[v.words(wk.W_WORDS) == 0] = 0.0  # RPv2 guards on normalized words (spec §11.3)
    return DocScores(round8(value))


@signal("rps_doc_ldnoobw_words", level="doc", group=G, needs=("bad_words",),
        definition="Number of normalized word n-grams found in the language's LDNOOBW list "
                   "(null where the document's language has no list).")
def ldnoobw_words(v: BatchViews) -> DocScores:
    return DocScores(v.bad_word_counts.astype(np.float64))
