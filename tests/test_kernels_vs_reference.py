"""The compiled kernels against the pure-Python twin (textsieve.signals.reference) on random text.

Random documents are built from pieces chosen to hit every rule of spec §3-§4: ASCII and Unicode
punctuation, bullets, ellipses, every whitespace kind, combining marks, NFD-expanding letters,
case oddities (İ, final sigma, titlecase ǅ, circled Ⓐ), numerics (¼ ² ③ Ⅻ), CJK, lone surrogates.
"""

from __future__ import annotations

import random

import pytest

from textsieve.signals import REGISTRY
from textsieve.signals.reference import reference_signals
from textsieve.signals.spans import to_arrow
from textsieve.text.views import BatchViews, WordListTables

PIECES = [
    "the", "The", "THE", "and", "of", "a", "A", "I", "is", "javascript", "JavaScript", "javascript:void(0)",
    "lorem", "ipsum", "Lorem Ipsum", "bad", "very bad", "bad word", "ab", "word", "Wörd", "é", "e\u0301",
    "İstanbul", "ΟΔΟΣ", "σ", "ǅemal", "Ⓐ", "3.14", "¼", "²", "③", "Ⅻ", "四", "東京", "😀", "\ud83d",
    "don't", "it's", "#", "##", "...", "....", "......", "…", "{", "}", "{x}", "!", "?", "?!", ".", ",",
    "“quoted”", "”", "\"", "'", "-", "–", "—", "•", "‣", "▶", "◀", "◦", "■", "□", "▪", "▫", "●", "►", "*",
    "_", "__init__", "a_b", "x2", "ab12", "ÀB", "Ça", "ß", "ﬁ", "K", "ſ", "Ǆ", "ǈ", "\u0345", "क्षि",
    "123", "0", "٣", "Ⅷ", "\u00ad", "\u200b", "\x00", "\x1c",
]
SPACES = [" ", " ", " ", "  ", "\n", "\n", "\n\n", "\t", "\r\n", "\r", "\u2028", "\u00a0", "\u3000", "\x0b",
          "\x0c", "\x85", " \n ", ""]


def random_doc(rng: random.Random) -> str:
    n = rng.choice([0, 1, 2, 5, 13, 14, 30, 80])
    parts = []
    for _ in range(n):
        parts.append(rng.choice(PIECES))
        parts.append(rng.choice(SPACES))
    if rng.random() < 0.3:  # repeated phrases exercise the n-gram signals
        phrase = " ".join(rng.choice(PIECES[:20]) for _ in range(rng.randint(2, 12)))
        parts.extend([phrase + rng.choice(SPACES)] * rng.randint(2, 4))
    rng.shuffle(parts) if rng.random() < 0.2 else None
    return "".join(parts)


STOP = frozenset({"the", "and", "of", "a", "I", "is", "it", "don't", "The"})
BAD = frozenset({"bad", "very bad", "bad word", "javascript", "lorem ipsum", "Bad", "s&m", "é"})


@pytest.mark.parametrize("seed", range(4))
def test_kernels_match_reference_on_random_text(seed: int) -> None:
    rng = random.Random(seed)
    texts = [random_doc(rng) for _ in range(400)]
    langs = [rng.choice(["en", "en", "de", None]) for _ in texts]
    tables = WordListTables({"en": STOP}, {"en": BAD})
    views = BatchViews(texts, langs, tables)
    columns = {name: to_arrow(sig, sig.fn(views), views).to_pylist() for name, sig in REGISTRY.items()}
    for i, (text, lang) in enumerate(zip(texts, langs)):
        expected = reference_signals(text, STOP if lang == "en" else None, BAD if lang == "en" else None)
        for name, spans in expected.items():
            got = [[s["start"], s["end"], s["score"]] for s in columns[name][i]]
            assert [[a, b, (type(c), c)] for a, b, c in got] == [[a, b, (type(c), c)] for a, b, c in spans], (
                f"{name} differs on {text!r}")


@pytest.mark.parametrize("seed", range(3))
def test_long_documents_scan_in_pieces_to_the_same_values(seed: int, monkeypatch) -> None:
    """A document longer than RAW_PIECE is scanned piece by piece (so its UTF-32 copy never exists
    whole); with the piece size made tiny, every raw count and line of random documents built to
    cut often (`.`, `!`, `?` before newlines, `...` runs, sentences over lines) is the one-scan value,
    in batches that mix long and short documents."""
    import numpy as np

    from textsieve.text import raw_kernel as rk

    rng = random.Random(100 + seed)
    ends = [".\n", "!\n", "?\n", "...\n", "\n", ". ", "?!\n\n", "….\n"]
    texts = ["".join(random_doc(rng) + rng.choice(ends) for _ in range(rng.randint(0, 12))) for _ in range(60)]
    langs = [rng.choice(["en", None]) for _ in texts]
    tables = WordListTables({"en": STOP}, {"en": BAD})
    whole = BatchViews(texts, langs, tables)._raw
    monkeypatch.setattr(rk, "RAW_PIECE", 40)
    assert sum(len(rk._cuts(t)) for t in texts) > 100
    pieces = BatchViews(texts, langs, tables)._raw
    for a, b in zip(whole, pieces):
        assert np.array_equal(a, b)


def test_the_compact_ngram_table_gives_the_same_ids() -> None:
    """Documents of over a million words build their n-gram ids with a table of ids only
    (`_pair_ids_compact`); on word-id sequences with heavy repetition it gives the keyed
    table's ids exactly."""
    import numpy as np

    from textsieve.text.word_stats_numba import _pair_ids, _pair_ids_compact

    rng = np.random.default_rng(7)
    for vocab in (3, 50, 5000):
        ids = rng.integers(0, vocab, 200_000).astype(np.int32)
        m = ids.shape[0] - 1
        keyed, n_keyed = _pair_ids(ids, ids[1:], m)
        compact, n_compact = _pair_ids_compact(ids, ids[1:], m)
        assert n_keyed == n_compact and np.array_equal(keyed, compact)
