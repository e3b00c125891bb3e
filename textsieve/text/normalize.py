"""RPv2's text normalization (spec §3.2), computed with a few C-level string calls.

Deleting ASCII punctuation is done on the UTF-8 bytes: ASCII bytes never occur inside a
multi-byte UTF-8 sequence, so `bytes.translate` with a delete set is exact and several times
faster than `str.translate` with a deletion map. Lowercasing the whole text at once equals
lowercasing each piece because the only context-dependent mapping (final sigma) never looks
across whitespace; NFD applied after whitespace collapsing never creates whitespace.

A long text is normalized in pieces cut at whitespace (`CHUNK_CHARS`): `str.split()` of a 30 MB
text holds millions of word objects at once (~15x the text in memory). Every step is exact per
piece: punctuation deletion and lowercasing are per character (final sigma never looks across
whitespace), the collapsed words of the whole are the pieces' words in order (a cut at a
whitespace character splits no word), and NFD leaves a space, a starter, as a boundary.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterator

_PUNCT = string.punctuation.encode("ascii")


def strip_punct_lower(text: str) -> str:
    """Delete `string.punctuation` characters, then `str.lower()`."""
    raw = text.encode("utf-8", "surrogatepass").translate(None, _PUNCT)
    return raw.decode("utf-8", "surrogatepass").lower()


#: texts longer than this are normalized piece by piece (pieces of about this many characters)
CHUNK_CHARS = 1 << 20


def _normalize_piece(text: str) -> str:
    return unicodedata.normalize("NFD", " ".join(strip_punct_lower(text).split()))


def _pieces(text: str) -> Iterator[str]:
    """`text` cut into pieces of about CHUNK_CHARS, each cut just after a space or newline (made
    one at a time: all of them at once would copy the whole text)."""
    start = 0
    while len(text) - start > CHUNK_CHARS:
        cut = max(text.rfind(" ", start, start + CHUNK_CHARS), text.rfind("\n", start, start + CHUNK_CHARS))
        if cut < 0:  # no space or newline in the window: the next one, wherever it is
            ahead = [i for i in (text.find(" ", start + CHUNK_CHARS), text.find("\n", start + CHUNK_CHARS)) if i >= 0]
            if not ahead:
                break
            cut = min(ahead)
        yield text[start:cut + 1]
        start = cut + 1
    yield text[start:]


def normalize(text: str) -> str:
    """RPv2 `normalize`: strip ASCII punctuation, lowercase, collapse whitespace, then NFD."""
    if len(text) <= CHUNK_CHARS:
        return _normalize_piece(text)
    return " ".join(n for n in (_normalize_piece(p) for p in _pieces(text)) if n)


def normalize_utf8(text: str) -> bytes:
    """`normalize(text)` as UTF-8 (surrogatepass): a long text piece by piece, so its normalized
    string (2-4 bytes per character) and the pieces it is joined from are never held."""
    if len(text) <= CHUNK_CHARS:
        return normalize(text).encode("utf-8", "surrogatepass")
    return b" ".join(b for b in (_normalize_piece(p).encode("utf-8", "surrogatepass") for p in _pieces(text)) if b)
