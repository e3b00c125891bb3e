"""WordPunct tokens: the matches of ``\\w+|[^\\w\\s]+`` with Python-`re` Unicode ``\\w`` and ``\\s``.

This is NLTK's `WordPunctTokenizer` (spec §3.3), the tokenizer of RPv2's raw-text signals
(word counts, stop words, all-caps words), of its DSIR importance features (§4.6) and of
textsieve's own DSIR features. A token is a maximal run of word characters, or a maximal run of
characters that are neither word characters nor whitespace, so ``it's`` gives ``it``, ``'``,
``s``. Those three consumers share one compiled rule, `wordpunct_numba.tokenize_into`, so they
cannot drift apart; each does its own per-token work (counts, stop words, hashes) over the bounds,
flags and FNV-1a hashes it returns.

`WORDPUNCT` below is the pure-Python twin (the definition itself); `tests/test_wordpunct.py`
checks the kernel against it on random text. The numba code is in `wordpunct_numba`, imported on
the first call of `token_bounds`, so importing this module does not load numba.
"""

from __future__ import annotations

import re

import numpy as np

WORDPUNCT = re.compile(r"\w+|[^\w\s]+")


def wordpunct_spans(text: str) -> list[tuple[int, int]]:
    """Code-point (start, end) of every token of `text`: the reference for `token_bounds`."""
    return [m.span() for m in WORDPUNCT.finditer(text)]


def token_bounds(cps: np.ndarray, doc_off: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """WordPunct tokens of every document of a batch (`batch_encoding.codepoints_batch` input,
    `unicode_props.unicode_tables().flags`).

    Returns (start, end, tok_off): int64 code-point bounds into `cps` of each token, and n_docs+1
    offsets of each document's tokens into them.
    """
    from textsieve.text.wordpunct_numba import token_bounds as kernel

    return kernel(cps, doc_off, flags)
