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
