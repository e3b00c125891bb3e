"""The one WordPunct kernel and the batch encodings of `textsieve.text`, against their pure-Python
definitions on random text (the same pieces as the raw-scan cross-check: every whitespace kind,
combining marks, CJK, lone surrogates, ...)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_kernels_vs_reference import random_doc

from textsieve.text.batch_encoding import codepoints_batch, encode_batch
from textsieve.text.hashed_ngrams import HashedNgramParams, featurize
from textsieve.text.raw_kernel import _fnv_py
from textsieve.text.unicode_props import unicode_tables
from textsieve.text.wordpunct import token_bounds, wordpunct_spans
from textsieve.text.wordpunct_numba import doc_scratch, tokenize_into

EDGE_CASES = ["", " ", "\n\n", "a", "it's", "...", "a.b", "  x  ", "\ud83d", "é\u0301!?", "__init__()", "四 東京"]


def _texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    return EDGE_CASES + [random_doc(rng) for _ in range(300)]


@pytest.mark.parametrize("seed", range(3))
def test_token_bounds_equal_the_regex(seed: int) -> None:
    texts = _texts(seed)
    cps, off = codepoints_batch(texts)
    start, end, tok_off = token_bounds(cps, off, unicode_tables().flags)
    for d, text in enumerate(texts):
        got = [(int(s - off[d]), int(e - off[d])) for s, e in
               zip(start[tok_off[d]:tok_off[d + 1]], end[tok_off[d]:tok_off[d + 1]])]
        assert got == wordpunct_spans(text), repr(text)


def test_token_flags_and_hashes_equal_python() -> None:
    """`seen` is the OR of the tokens' code-point flags, `fnv` their FNV-1a (the stop-word key)."""
    texts = _texts(5)
    flags = unicode_tables().flags
    cps, off = codepoints_batch(texts)
    start, end, seen, fnv = doc_scratch(cps, off, flags)
    for d, text in enumerate(texts):
        n = tokenize_into(cps, off[d], off[d + 1], flags, True, start, end, seen, fnv, 0)
        spans = wordpunct_spans(text)
        assert n == len(spans)
        for t, (a, b) in enumerate(spans):
            want_seen = 0
            for ch in text[a:b]:
                want_seen |= int(flags[ord(ch)])
            assert int(seen[t]) == want_seen
            assert int(fnv[t]) == _fnv_py(text[a:b])


def test_dsir_token_counts_are_wordpunct_counts() -> None:
    texts = _texts(7)
    fb = featurize(texts, HashedNgramParams())
    assert fb.tokens.tolist() == [len(wordpunct_spans(t.lower())) for t in texts]


def test_batch_encodings_round_trip() -> None:
    texts = _texts(3)
    data, off = encode_batch(texts)
    assert data.dtype == np.uint8 and off.dtype == np.int64 and off.shape == (len(texts) + 1,)
    for i, t in enumerate(texts):
        assert bytes(data[off[i]:off[i + 1]]).decode("utf-8", "surrogatepass") == t
    cps, coff = codepoints_batch(texts)
    assert cps.dtype == np.uint32 and coff.dtype == np.int64
    for i, t in enumerate(texts):
        assert [chr(c) for c in cps[coff[i]:coff[i + 1]]] == list(t)
    for empty in (encode_batch([]), codepoints_batch([])):
        assert empty[0].size == 0 and empty[1].tolist() == [0]


def test_count_tokens_is_the_number_tokenize_into_writes() -> None:
    """`doc_scratch` sizes the token buffers by `count_tokens` (not one slot per code point), so
    the count must be exact: fewer slots would overrun them."""
    from textsieve.text.wordpunct_numba import count_tokens

    texts = _texts(7) + ["", "   ", "a", "!!", "a!b ?c\u00e9\u0301 \U0001F600x", "\n\n\tx--y"]
    flags = unicode_tables().flags
    cps, off = codepoints_batch(texts)
    start, end, seen, fnv = doc_scratch(cps, off, flags)
    assert len(start) == max(len(wordpunct_spans(t)) for t in texts)
    for d, text in enumerate(texts):
        assert count_tokens(cps, off[d], off[d + 1], flags) == len(wordpunct_spans(text)), repr(text)
