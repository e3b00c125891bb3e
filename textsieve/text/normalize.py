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
from collections.abc import Iterator, Sequence

import numpy as np

from textsieve import native
from textsieve.text.batch_encoding import join_batch

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


def normalize_batch_utf8(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """`normalize` of every text as one UTF-8 buffer and its n+1 byte offsets (`encode_batch`'s
    layout), the same bytes as `normalize_utf8` of each.

    One C pass (`annotate_scan.c`'s ts_normalize_collapse) deletes the punctuation, lowers A-Z
    and collapses the whitespace of every text's UTF-8; for a pure-ASCII text (most of a web
    corpus) that is all, and for the others `lower()` and NFD follow, on far fewer characters than
    the text's words as objects, which `str.split()` builds (the C pass is ~20x the five `str`
    calls). Why the order may change: lower() maps no character to or from whitespace (checked
    over every code point in the tests), so collapsing first or after is the same, and final
    sigma's context is a cased letter or a case-ignorable one, never whitespace. Texts over
    CHUNK_CHARS, and every text when the library is not built, go through `normalize_utf8`."""
    fn = native.normalize_collapse()
    if fn is None or any(len(t) > CHUNK_CHARS for t in texts):
        return join_batch([normalize_utf8(t) for t in texts])
    src, offsets = join_batch([t.encode("utf-8", "surrogatepass") for t in texts])
    out = np.empty(max(1, len(src)), dtype=np.uint8)
    out_off = np.empty(len(texts) + 1, dtype=np.int64)
    fn(src.ctypes.data if len(src) else out.ctypes.data, offsets.ctypes.data, len(texts), out.ctypes.data,
       out_off.ctypes.data)
    buf = out[:out_off[-1]]
    if all(t.isascii() for t in texts):
        return buf, out_off
    parts = [buf[out_off[d]:out_off[d + 1]].tobytes() if t.isascii() else
             unicodedata.normalize("NFD", buf[out_off[d]:out_off[d + 1]].tobytes().decode("utf-8", "surrogatepass")
                                   .lower()).encode("utf-8", "surrogatepass") for d, t in enumerate(texts)]
    return join_batch(parts)

