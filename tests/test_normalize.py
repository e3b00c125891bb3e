"""Long texts are normalized, and matched against LDNOOBW, piece by piece (to hold no list of every
word of a 30 MB document); the result must equal the whole-text computation exactly. Real text:
the bundled sample corpus, plus the characters where piecing could go wrong (final sigma,
Unicode whitespace, combining marks, no whitespace for a long stretch)."""

from __future__ import annotations

import gzip
import json

import pytest

import textsieve.text.normalize as norm
import textsieve.text.views as views
from textsieve.sample import build_sample

TRICKY = ["ΟΔΟΣ. ΣΑΣ\u00a0x\u2003y  \x1c z e\u0301 \u1e9b\u0323 " * 400, ("a" * 3000 + " ") * 40,
          "x" * 9000, " \n " * 3000 + "Ab", "Σ " * 2000, "word\u3000" * 2000]


@pytest.fixture(scope="module")
def sample_text(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("norm") / "s.jsonl.gz"
    build_sample(str(path), max_docs=120)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return "\n".join(json.loads(line)["text"] for line in fh)


@pytest.mark.parametrize("piece", [64, 1000, 1 << 14])
def test_normalizing_in_pieces_equals_the_whole(sample_text, monkeypatch, piece):
    monkeypatch.setattr(norm, "CHUNK_CHARS", piece)
    for text in [sample_text, *TRICKY]:
        assert norm.normalize(text) == norm._normalize_piece(text)


@pytest.mark.parametrize("piece", [16, 500, 1 << 12])
def test_bad_words_in_pieces_equal_the_whole(sample_text, monkeypatch, piece):
    content = norm.normalize(sample_text)
    words = content.split(" ")
    # entries of 1 to 4 words taken from the text itself, so there are matches to count
    bad = frozenset([words[10], " ".join(words[100:102]), " ".join(words[500:503]), " ".join(words[7:11]),
                     "not in the text at all"])
    firsts = frozenset(e.split(" ")[0] for e in bad)
    sizes = sorted({e.count(" ") + 1 for e in bad})
    whole = views._hits(words, len(words), bad, firsts, sizes)
    assert whole > 3
    monkeypatch.setattr(views, "BAD_WORD_PIECE", piece)
    assert views.bad_word_hits(content, bad, firsts, sizes) == whole


@pytest.mark.parametrize("piece", [64, 1 << 14])
def test_normalized_utf8_in_pieces_equals_the_whole(sample_text, monkeypatch, piece):
    """A long document's normalized content is made as UTF-8 piece by piece, never as a string."""
    monkeypatch.setattr(norm, "CHUNK_CHARS", piece)
    for text in [sample_text, *TRICKY, "\ud83d lone " * 50]:
        assert norm.normalize_utf8(text) == norm._normalize_piece(text).encode("utf-8", "surrogatepass")


def test_a_batch_with_a_long_document_gives_the_same_views(sample_text, monkeypatch):
    """With a long document in the batch the views come from UTF-8 (lorem ipsum by a bytes
    pattern, LDNOOBW by decoded pieces, lengths by lead bytes): the same values as from strings."""
    planted = sample_text[:20000] + " Lorem ipsum, LOREM IPSUM lorem ıpsum lorem ipſum lorem\nipsum Σ. " * 3
    texts = [planted, "lorem ipsum dolor", "", "ΟΔΟΣ ipsum lorem"]
    langs = ["en", "en", "en", None]
    tables = views.WordListTables({}, {"en": frozenset({"lorem", "lorem ipsum", "the", "ıpsum"})})
    plain = views.BatchViews(texts, langs, tables)
    want = (plain.normalized, plain.normalized_lengths, plain.lorem_ipsum_counts, plain.bad_word_counts)
    assert not plain._long and want[2][0] == 15 and want[3][0] > 15
    monkeypatch.setattr(norm, "CHUNK_CHARS", 500)
    monkeypatch.setattr(views, "BAD_WORD_PIECE", 300)
    long = views.BatchViews(texts, langs, tables)
    assert long._long
    got = (long.lorem_ipsum_counts, long.bad_word_counts, long.normalized_lengths, long.normalized)
    assert list(got[0]) == list(want[2]) and list(got[1]) == list(want[3]) and list(got[2]) == list(want[1])
    assert got[3] == want[0]


@pytest.mark.slow  # sweeps every code point through both patterns
def test_the_utf8_lorem_pattern_matches_what_the_string_pattern_matches():
    """Each letter of "lorem ipsum" replaced by every code point: both patterns count the same."""
    import sys

    for k in range(len("lorem ipsum")):
        text = "\n".join("lorem ipsum"[:k] + chr(x) + "lorem ipsum"[k + 1:] for x in range(sys.maxunicode + 1))
        data = text.encode("utf-8", "surrogatepass")
        assert len(views._LOREM.findall(text)) == len(views._LOREM_UTF8.findall(data)), k


@pytest.mark.slow  # every code point
def test_no_normalized_character_holds_an_upper_case_lorem_letter():
    """`lorem_ipsum_counts` runs its case-blind pattern only where "lorem" occurs literally: that
    is exact because no character's NFD(lower()) holds L, O, R, E or M (RPv2 normalizes first)."""
    import sys
    import unicodedata

    assert not [hex(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000
                and set(unicodedata.normalize("NFD", chr(c).lower())) & set("LOREM")]


def _whitespace() -> list[str]:
    return [chr(c) for c in range(0x110000) if chr(c).isspace()]


def test_the_c_pass_equals_normalize_on_real_and_crafted_text(sample_text):
    """`normalize_batch_utf8` (one C pass, then lower() and NFD for non-ASCII documents) gives
    `normalize`'s bytes: the sample corpus's documents one by one, and random strings of every
    ASCII byte (controls, \\x00 and \\x01 included), every whitespace character, final sigma,
    combining marks, dotted I and lone surrogates."""
    import random

    from textsieve import native

    if native.normalize_collapse() is None:
        pytest.skip("the native library is not built")
    rng = random.Random(7)
    pool = [chr(c) for c in range(128)] * 3 + _whitespace() + list("ΣσςΑΒİıéÉñ\u0301\u0327ßẞǅ") + \
        ["\ud800", "\udfff", "\U0001f600"]
    texts = sample_text.split("\n\n") + TRICKY[:1] + ["".join(rng.choice(pool) for _ in range(rng.randrange(80)))
                                                      for _ in range(4000)]
    texts += ["", " ", "!!!", "  a  ", "ΑΣ Β", "ΑΣ", "ΑΣ\u00a0Β", "ΑΣ!Β", "\x00 \x01 \x01\x00", " \x01", "\x01 "]
    for batch in (texts, [t for t in texts if t.isascii()]):
        buf, off = norm.normalize_batch_utf8(batch)
        for i, text in enumerate(batch):
            assert buf[off[i]:off[i + 1]].tobytes() == norm.normalize(text).encode("utf-8", "surrogatepass"), text


def test_without_the_library_the_batch_is_normalized_in_python(sample_text, monkeypatch):
    from textsieve import native

    monkeypatch.setattr(native, "normalize_collapse", lambda: None)
    texts = sample_text.split("\n\n")[:200]
    buf, off = norm.normalize_batch_utf8(texts)
    assert [buf[off[i]:off[i + 1]].tobytes() for i in range(len(texts))] == [norm.normalize_utf8(t) for t in texts]


@pytest.mark.slow  # every code point
def test_lower_maps_no_character_to_or_from_whitespace():
    """Why the C pass may collapse whitespace before lower(): lower() keeps every whitespace
    character and makes none (so `split()` cuts the same places either way)."""
    for c in range(0x110000):
        ch = chr(c)
        low = ch.lower()
        assert (low == ch) if ch.isspace() else not any(x.isspace() for x in low), hex(c)


@pytest.mark.slow  # 15,263 documents
def test_the_c_pass_equals_normalize_on_the_dev_corpus(shared_dir):
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    buf, off = norm.normalize_batch_utf8(texts)
    for i, text in enumerate(texts):
        assert buf[off[i]:off[i + 1]].tobytes() == norm.normalize_utf8(text), i


def test_ldnoobw_counts_in_c_equal_the_python_matcher(sample_text, resources_dir, monkeypatch):
    """`ts_bad_word_hits` counts what `bad_word_hits` counts: the real LDNOOBW lists on the
    sample's documents in every list's language, and lists made of the text's own 1- to 5-word
    n-grams (so there are many matches, of every size), with documents of no language or of one
    without a list in between."""
    import random

    from textsieve import native
    from textsieve.signals.reference import load_bad_words

    if native.bad_word_hits() is None:
        pytest.skip("the native library is not built")
    texts = [t for t in sample_text.split("\n\n") if t.strip()][:400]
    rng = random.Random(3)
    words = norm.normalize(" ".join(texts)).split(" ")
    own = frozenset(" ".join(words[i:i + n]) for n in range(1, 6) for i in rng.sample(range(len(words) - 5), 60))
    lists = {lang: load_bad_words(resources_dir / "ldnoobw" / lang) for lang in ("de", "en", "es", "fr", "it")}
    lists["xx"] = own
    tables = views.WordListTables({}, lists)
    cycle = ["en", "xx", None, "de", "zz", "fr", "xx"]
    langs = [cycle[i % len(cycle)] for i in range(len(texts))]
    got = views.BatchViews(texts, langs, tables).bad_word_counts
    monkeypatch.setattr(native, "bad_word_hits", lambda: None)
    want = views.BatchViews(texts, langs, tables).bad_word_counts
    assert got.tolist() == want.tolist()
    assert int(want.sum()) > 100


def test_the_c_pass_never_takes_malformed_utf8_for_whitespace():
    """Python never hands it malformed UTF-8, but the C pass must not read past a cut sequence
    or take a broken or overlong one for a space: such bytes are copied one by one."""
    import numpy as np

    from textsieve import native

    fn = native.normalize_collapse()
    if fn is None:
        pytest.skip("the native library is not built")
    for raw, want in ((b"a\xe2\x85", b"a\xe2\x85"), (b"x\xe0\x82\x85y", b"x\xe0\x82\x85y"), (b"\xc2A b", b"\xc2a b"),
                      (b"\xc2\x85a\xc2\xa0 b\xe3\x80\x80", b"a b"), (b"\xed\xa0\x80 Z", b"\xed\xa0\x80 z")):
        src = np.frombuffer(raw, dtype=np.uint8)
        off = np.array([0, len(raw)], dtype=np.int64)
        out, out_off = np.empty(len(raw), dtype=np.uint8), np.empty(2, dtype=np.int64)
        fn(src.ctypes.data, off.ctypes.data, 1, out.ctypes.data, out_off.ctypes.data)
        assert out[:out_off[1]].tobytes() == want, raw
