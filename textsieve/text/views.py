"""Shared text views of a batch of documents, computed once and read by every signal.

A signal is a one-line formula over these views (see `textsieve.signals`). The views are lazy:
asking only for MinHash never runs the raw-text scan, and the kernels run once per batch however
many signals read them. All arrays are aligned with the batch's document order; line arrays are
flat over the batch with `line_off` (n_docs + 1) marking each document's lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cached_property

import numpy as np

from textsieve import native
from textsieve.text import normalize as nz
from textsieve.text import raw_kernel as rk
from textsieve.text import word_kernel as wk
from textsieve.text.batch_encoding import join_batch
from textsieve.text.normalize import normalize_batch_utf8, normalize_utf8
from textsieve.text.unicode_props import unicode_tables

LANGS = ("en", "de", "fr", "es", "it")  # RPv2's languages; the order indexes word-list tables
_LOREM = re.compile(r"lorem ipsum", re.IGNORECASE)
#: `_LOREM` over UTF-8: the same matches, spelled out, as `re.IGNORECASE` also matches İ and ı
#: for "i" and ſ for "s" (U+0130, U+0131, U+017F; checked over every code point in the tests)
_LOREM_UTF8 = re.compile(rb"[lL][oO][rR][eE][mM] (?:[iI]|\xc4\xb0|\xc4\xb1)[pP](?:[sS]|\xc5\xbf)[uU][mM]")
_LOREM_WORD = re.compile(rb"lorem")  # what every match holds (`lorem_ipsum_counts`)
_NO_META: dict = {}  # shared, never written: the meta of every document when none was shipped


class WordListTables:
    """Stop-word and bad-word lists by language, prepared once per process. RPv2's five take
    the first table slots; any other language with a list (a user-supplied one) follows."""

    def __init__(self, stop_words: dict[str, frozenset[str]], bad_words: dict[str, frozenset[str]]):
        self.stop_words = stop_words
        self.bad_words = bad_words
        self.langs: tuple[str, ...] = LANGS + tuple(sorted(set(stop_words) - set(LANGS)))
        self.slot = {lang: i for i, lang in enumerate(self.langs)}
        self.stop_table = rk.StopWordTable([stop_words.get(lang) for lang in self.langs])
        # For LDNOOBW: the word counts of all entries, and the first words of every entry, so a
        # document none of whose words starts an entry is ruled out with one set operation.
        self.bad_ngram_sizes = {lang: sorted({e.count(" ") + 1 for e in words})
                                for lang, words in bad_words.items()}
        self.bad_first_words = {lang: frozenset(e.split(" ")[0] for e in words)
                                for lang, words in bad_words.items()}
        self._bad_tables: dict[str, BadWordTable] = {}

    def bad_table(self, lang: str) -> BadWordTable:
        """`lang`'s LDNOOBW entries as the C matcher's hash table (built on first use)."""
        if lang not in self._bad_tables:
            self._bad_tables[lang] = BadWordTable(self.bad_words[lang], self.bad_ngram_sizes[lang])
        return self._bad_tables[lang]


_FNV_OFFSET, _FNV_PRIME, _MASK64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def _fnv1a(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK64
    return h


class BadWordTable:
    """One language's LDNOOBW entries for `ts_bad_word_hits`: their UTF-8 concatenated, FNV-1a
    hashes, an open-addressing table at most half full, and the entries' word counts."""

    def __init__(self, entries: frozenset[str], sizes: list[int]):
        data = sorted(e.encode("utf-8", "surrogatepass") for e in entries)
        self.bytes = np.frombuffer(b"".join(data) or b"\0", dtype=np.uint8)
        self.off = np.zeros(len(data) + 1, dtype=np.int64)
        self.off[1:] = np.cumsum([len(e) for e in data])
        self.hash = np.array([_fnv1a(e) for e in data], dtype=np.uint64)
        self.slots, self.mask = _open_table(self.hash.tolist())
        firsts = sorted({e.split(b" ")[0] for e in data})
        self.first_hash = np.array([_fnv1a(w) for w in firsts], dtype=np.uint64)
        self.first_slots, self.first_mask = _open_table(self.first_hash.tolist())
        self.sizes = np.array(sizes, dtype=np.int64)  # WordListTables.bad_ngram_sizes: sorted


def _open_table(hashes: list[int]) -> tuple[np.ndarray, int]:
    """(slots, mask): linear probing on the low bits, index + 1 per slot, at most half full."""
    size = 1 << max(4, (2 * len(hashes)).bit_length())
    slots = np.zeros(size, dtype=np.int64)
    for i, h in enumerate(hashes):
        slot = h & (size - 1)
        while slots[slot]:
            slot = (slot + 1) & (size - 1)
        slots[slot] = i + 1
    return slots, size - 1


EMPTY_WORD_LISTS = WordListTables({}, {})


class BatchViews:
    """Lazily computed views of `texts` (with per-document language codes, None if unknown).

    Model signals (`textsieve.models`) also read `urls` (the document URLs, None where a record
    has none), `models` (the run's loaded models by user name: `v.models[name]`) and `cache`, a
    per-batch memo where signals that share one computation (a language id and its score) keep
    it. `metas` holds each document's meta (`Document.meta`: a JSON record's other fields) when a
    selected signal declares `needs=("meta",)`, else empty dicts.
    """

    def __init__(self, texts: list[str], langs: list[str | None], word_lists: WordListTables = EMPTY_WORD_LISTS,
                 urls: list[str | None] | None = None, models: dict[str, object] | None = None,
                 metas: list[dict] | None = None):
        self.texts = texts
        self.langs = langs
        self.word_lists = word_lists
        self.urls: list[str | None] = urls if urls is not None else [None] * len(texts)
        self.metas: list[dict] = metas if metas is not None else [_NO_META] * len(texts)
        self.models: dict[str, object] = models if models is not None else {}
        self.cache: dict = {}
        self.n_docs = len(texts)
        self.lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))

    def release(self, *names: str) -> None:
        """Drop cached views that no later signal of the batch needs (a later read computes
        them again, so this only ever costs time)."""
        for name in names:
            self.__dict__.pop(name, None)

    # --- normalized content (§3.2) ---
    @cached_property
    def _long(self) -> bool:
        """Does the batch hold a long document? Then the normalized contents are made as UTF-8
        (`normalized_utf8`) and the built-in signals read that, never a `str` of each content:
        a 30 MB document's normalized string and its pieces cost ~4x its size."""
        return any(len(t) > nz.CHUNK_CHARS for t in self.texts)

    @cached_property
    def normalized(self) -> list[str]:
        """Decoded from the UTF-8 view, which is made first (one C pass for most documents)."""
        buf, off = self.normalized_utf8
        return [buf[off[d]:off[d + 1]].tobytes().decode("utf-8", "surrogatepass") for d in range(self.n_docs)]

    @cached_property
    def normalized_lengths(self) -> np.ndarray:
        if self._long:  # code points = UTF-8 bytes that are not continuation bytes
            buf, off = self.normalized_utf8
            step = 1 << 20  # counted a megabyte at a time: no temporary arrays the size of the text
            return np.array([sum(int(np.count_nonzero((buf[a:min(a + step, off[d + 1])] & 0xC0) != 0x80))
                                 for a in range(off[d], off[d + 1], step)) for d in range(self.n_docs)], dtype=np.int64)
        return np.fromiter((len(c) for c in self.normalized), dtype=np.int64, count=self.n_docs)

    @cached_property
    def normalized_utf8(self) -> tuple[np.ndarray, np.ndarray]:
        """(bytes, n_docs+1 offsets) of the normalized contents, for the word and MinHash kernels."""
        if self._long:
            return join_batch([normalize_utf8(t) for t in self.texts])
        return normalize_batch_utf8(self.texts)

    def _normalized_bytes(self, d: int) -> bytes:
        buf, off = self.normalized_utf8
        return buf[off[d]:off[d + 1]].tobytes()

    # --- raw text scan (§3.3, §3.4) ---
    @cached_property
    def _raw(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = unicode_tables()
        slot = self.word_lists.slot
        lang_idx = np.array([slot.get(g, -1) if g else -1 for g in self.langs], dtype=np.int64)
        st = self.word_lists.stop_table
        return rk.scan_texts(self.texts, lang_idx, t.flags, t.norm_len, t.norm_numeric, t.norm_ascii,
                             st.hashes, st.lang_off, st.word_off, st.chars)

    def raw(self, column: int) -> np.ndarray:
        """A per-document raw statistic (`raw_kernel.D_*`)."""
        return self._raw[0][:, column]

    def line(self, column: int) -> np.ndarray:
        """A per-line statistic (`raw_kernel.L_*`), flat over the batch (int64, whatever the
        table's own width: see `raw_kernel.scan_texts`)."""
        return self._raw[1][:, column].astype(np.int64, copy=False)

    @property
    def line_off(self) -> np.ndarray:
        return self._raw[2]

    # --- normalized words and n-grams (§3.3, §3.5) ---
    @cached_property
    def _words(self) -> tuple[np.ndarray, np.ndarray]:
        buf, off = self.normalized_utf8
        return wk.word_stats(buf, off)

    def words(self, column: int) -> np.ndarray:
        """A per-document word statistic (`word_kernel.W_*`)."""
        return self._words[0][:, column]

    @property
    def entropy(self) -> np.ndarray:
        return self._words[1]

    # --- per-document lookups that stay in Python because they are rare or cheap ---
    @cached_property
    def lorem_ipsum_counts(self) -> np.ndarray:
        if self._long:
            buf, off = self.normalized_utf8
            data = buf.data
            return np.fromiter((len(_LOREM_UTF8.findall(data, off[d], off[d + 1]))
                                if _LOREM_WORD.search(data, off[d], off[d + 1]) else 0
                                for d in range(self.n_docs)), dtype=np.int64, count=self.n_docs)
        # a match needs a literal "lorem": no character's NFD(lower()) holds an upper-case L, O, R,
        # E or M (checked over every code point in the tests), so the regex runs on few documents
        return np.fromiter((len(_LOREM.findall(c)) if "lorem" in c else 0 for c in self.normalized),
                           dtype=np.int64, count=self.n_docs)

    @cached_property
    def bad_word_counts(self) -> np.ndarray:
        """LDNOOBW matches per document (§4.4): n-grams of normalized words found in the list
        (`ts_bad_word_hits` over the UTF-8 view, a call per language; `bad_word_hits` in Python
        when the library is not built)."""
        out = np.zeros(self.n_docs, dtype=np.int64)
        wl = self.word_lists
        fn = native.bad_word_hits()
        if fn is not None:
            buf, off = self.normalized_utf8
            by_lang: dict[str, list[int]] = {}
            for d, lang in enumerate(self.langs):
                if lang and wl.bad_words.get(lang):
                    by_lang.setdefault(lang, []).append(d)
            data = buf if len(buf) else np.zeros(1, dtype=np.uint8)
            for lang, docs in by_lang.items():
                t, idx = wl.bad_table(lang), np.asarray(docs, dtype=np.int64)
                fn(data.ctypes.data, off.ctypes.data, idx.ctypes.data, len(idx), t.slots.ctypes.data, t.mask,
                   t.hash.ctypes.data, t.bytes.ctypes.data, t.off.ctypes.data, t.sizes.ctypes.data, len(t.sizes),
                   t.first_slots.ctypes.data, t.first_mask, t.first_hash.ctypes.data, out.ctypes.data)
            return out
        contents: Iterable[str | bytes] = ((self._normalized_bytes(d) for d in range(self.n_docs)) if self._long
                                           else self.normalized)
        for d, (content, lang) in enumerate(zip(contents, self.langs)):
            if not lang or not content:
                continue
            bad = wl.bad_words.get(lang)
            if not bad:
                continue
            out[d] = bad_word_hits(content, bad, wl.bad_first_words[lang], wl.bad_ngram_sizes[lang])
        return out


#: normalized contents longer than this are matched against LDNOOBW piece by piece
BAD_WORD_PIECE = 1 << 20


def _hits(words: list[str], stop: int, bad: frozenset[str], firsts: frozenset[str], sizes: list[int]) -> int:
    """Entries of `bad` starting at words[0:stop] (n-grams may reach past `stop`)."""
    if firsts.isdisjoint(words):
        return 0
    hits = 0
    for i in range(stop):
        if words[i] not in firsts:
            continue
        for n in sizes:
            if i + n <= len(words) and " ".join(words[i:i + n]) in bad:
                hits += 1
    return hits


def bad_word_hits(content: str | bytes, bad: frozenset[str], firsts: frozenset[str], sizes: list[int]) -> int:
    """LDNOOBW n-grams in one normalized content (words joined by single spaces; as a string or
    its UTF-8, whose space bytes are never inside a character). A long content is split piece by
    piece, carrying the last `max(sizes) - 1` words into the next piece, so every start is
    counted once with all of its n-grams and no list of every word of a 30 MB document is ever
    held (~15x the text)."""
    def words_of(piece: str | bytes) -> list[str]:
        return (piece.decode("utf-8", "surrogatepass") if isinstance(piece, bytes) else piece).split(" ")
    if len(content) <= BAD_WORD_PIECE:
        words = words_of(content)
        return _hits(words, len(words), bad, firsts, sizes)
    keep = max(sizes) - 1
    hits, start = 0, 0
    carry: list[str] = []
    space = b" " if isinstance(content, bytes) else " "
    while start < len(content):
        cut = content.find(space, start + BAD_WORD_PIECE)  # type: ignore[arg-type]
        last = cut < 0
        piece = content[start:] if last else content[start:cut]
        words = carry + words_of(piece)
        if last:
            hits += _hits(words, len(words), bad, firsts, sizes)
            break
        stop = max(len(words) - keep, 0)
        hits += _hits(words, stop, bad, firsts, sizes)
        carry = words[stop:]
        start = cut + 1
    return hits
