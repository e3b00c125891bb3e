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


def use_kernels(monkeypatch, kind: str) -> None:
    """Run the C kernels (the default where they were built) or their numba twins (the fallback)."""
    from textsieve.text import raw_kernel, word_kernel

    if kind == "numba":
        monkeypatch.setattr(raw_kernel, "native_scan_raw", lambda: None)
        monkeypatch.setattr(word_kernel, "native_word_stats", lambda: None)
    else:
        assert raw_kernel.native_scan_raw() is not None and word_kernel.native_word_stats() is not None, (
            "the C kernels were not built (textsieve/native/annotate_scan.c; setup.py builds it)")


@pytest.mark.parametrize("kind", ["c", "numba"])
@pytest.mark.parametrize("seed", range(4))
def test_kernels_match_reference_on_random_text(seed: int, kind: str, monkeypatch) -> None:
    use_kernels(monkeypatch, kind)
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


@pytest.mark.parametrize("kind", ["c", "numba"])
@pytest.mark.parametrize("seed", range(3))
def test_long_documents_scan_in_pieces_to_the_same_values(seed: int, kind: str, monkeypatch) -> None:
    """A document longer than RAW_PIECE is scanned piece by piece (so its UTF-32 copy never exists
    whole); with the piece size made tiny, every raw count and line of random documents built to
    cut often (`.`, `!`, `?` before newlines, `...` runs, sentences over lines) is the one-scan value,
    in batches that mix long and short documents."""
    import numpy as np

    from textsieve.text import raw_kernel as rk

    use_kernels(monkeypatch, kind)
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


def test_c_and_numba_kernels_agree_on_the_dev_corpus(shared_dir, monkeypatch) -> None:
    """The C scan and word statistics (`native/annotate_scan.c`) against their numba twins on
    1,000 real web documents with their languages' word lists: every count, line and entropy bit."""
    import gzip
    import json

    import numpy as np

    from textsieve.signals.resources import load_word_lists

    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for _, line in zip(range(1000), fh)]
    texts, langs = [d["text"] for d in docs], [(d.get("meta") or {}).get("lang") for d in docs]
    lists = load_word_lists(shared_dir / "golden" / "rpv2_resources")
    tables = WordListTables(dict(lists.stop_words), dict(lists.bad_words))

    def run(kind: str) -> list:
        with monkeypatch.context() as m:
            use_kernels(m, kind)
            out = []
            for s in range(0, len(texts), 500):
                views = BatchViews(texts[s:s + 500], langs[s:s + 500], tables)
                out.append((views._raw, views._words))
            return out

    for (raw_c, words_c), (raw_nb, words_nb) in zip(run("c"), run("numba")):
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(raw_c, raw_nb))
        assert np.array_equal(words_c[0], words_nb[0]) and words_c[1].tobytes() == words_nb[1].tobytes()


@pytest.mark.slow  # a 1.2-million-word document through both kernels
def test_c_word_stats_take_the_compact_table_for_long_documents() -> None:
    """Past a million n-grams the C kernel, like the numba one, numbers pairs with the compact table."""
    import numpy as np

    from textsieve.text.batch_encoding import encode_batch
    from textsieve.text.word_kernel import word_stats
    from textsieve.text.word_stats_numba import word_stats as numba_word_stats

    rng = random.Random(5)
    words = [f"w{rng.randint(0, 40)}" for _ in range(1_200_000)]
    buf, off = encode_batch([" ".join(words), "a b a b a b", ""])
    c_stats, c_ent = word_stats(buf, off)
    nb_stats, nb_ent = numba_word_stats(buf, off)
    assert np.array_equal(c_stats, nb_stats) and c_ent.tobytes() == nb_ent.tobytes() and c_stats[0, 0] == 1_200_000
