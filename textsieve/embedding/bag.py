"""Documents to bags of tokens for a compiled-BPE static model: split into words, each distinct
word tokenised once per process, token counts per document, all in compiled code.

Why: a static model's document vector needs only its token counts, and with `bpe` tokenising a
word costs ~1 us, so the rest must not cost more. Arrow's split + dictionary-encode made 7M
word strings per 15k documents, and a Python word cache touched every distinct word of every
batch. Here the texts' UTF-8 bytes are read once: words are found with Python's `str.split()`
whitespace (`SPACE`, the code points `str.isspace()` holds for), looked up by FNV-1a hash in a
per-process table whose entries point into an arena of word bytes, and only words new to the
process go to `bpe.tokenize_words`. The cache holds at most CACHE_WORDS words (then it is
emptied): results never depend on it, only speed does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from textsieve.embedding.bpe import BPETables, tokenize_words

#: words kept per process (~60 B each); the cache is emptied before a batch once it holds this many
CACHE_WORDS = 1_000_000
#: the last code point `str.isspace()` holds for is U+3000
SPACE_END = 0x3001
#: True at the code points `str.split()` splits on (checked against `str.isspace` in the tests)
SPACE = np.array([chr(c).isspace() for c in range(SPACE_END)], np.bool_)


class TokenBag:
    """The per-process word cache of one static model and the batch kernel that uses it."""

    def __init__(self, tables: BPETables, n_rows: int) -> None:
        self.tables, self.n_rows = tables, n_rows
        self._clear()

    def _clear(self) -> None:
        self.n_words = 0
        self.arena = np.zeros(1 << 20, np.uint8)  # the cached words' UTF-8 bytes, back to back
        self.word_end = np.zeros(1 << 16, np.int64)  # word i is arena[word_end[i-1]:word_end[i]]
        self.word_key = np.zeros(1 << 16, np.int64)
        self.token_start = np.zeros(1 << 16, np.int64)  # word i's ids: store[token_start[i]:+token_len[i]]
        self.token_len = np.zeros(1 << 16, np.int64)
        self.store = np.zeros(1 << 20, np.int32)
        self.n_tokens = 0
        self.table = np.full((1 << 17, 2), -1, np.int64)  # open addressing: (key, word index or -1)

    def counts(self, texts: list[str]) -> Any:
        """scipy CSR (len(texts), n_rows) of token counts, indices ascending."""
        from scipy.sparse import csr_matrix

        words, doc_words = self._words(texts)
        indptr, indices, data = count_tokens(self.store, self.token_len[:self.n_words], words, doc_words,
                                             self.n_rows, starts=self.token_start[:self.n_words])
        out = csr_matrix((data, indices, indptr), shape=(len(texts), self.n_rows))
        out.has_sorted_indices = True
        return out

    def sums(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """float32 (len(texts), dim): each document's token counts times `vectors`, summed in
        token-id order - the same floats as `counts(texts) @ vectors` (float32 products and sums
        in the same order), without building the matrix."""
        words, doc_words = self._words(texts)
        return _pool(self.store, self.token_start[:self.n_words], self.token_len[:self.n_words], words,
                     doc_words, np.ascontiguousarray(vectors, np.float32))

    def _words(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(each word occurrence's cache index, per-document offsets into them); words new to the
        process are added to the cache and tokenised."""
        import pyarrow as pa

        arr = pa.array(texts, pa.large_string())
        bufs = arr.buffers()
        doc_offsets = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        starts, ends, doc_words = _split(data, doc_offsets, SPACE)
        if self.n_words >= CACHE_WORDS:
            self._clear()
        first = self.n_words
        words = np.empty(len(starts), np.int64)
        done = 0
        while True:  # the kernel stops where the arena, the word arrays or the table need room
            done, self.n_words = _lookup(data, starts, ends, self.arena, self.word_end, self.word_key,
                                         self.table, self.n_words, words, done)
            if done == len(starts):
                break
            self._grow(int(ends[done] - starts[done]))
        if self.n_words > first:  # tokenise the new words, straight from the arena
            offsets = self.word_end[first - 1:self.n_words] if first else \
                np.concatenate([[0], self.word_end[:self.n_words]])
            ids, lens = tokenize_words(self.tables, self.arena, offsets, self.n_rows)
            if self.n_tokens + len(ids) > len(self.store):
                self.store = _grown(self.store, self.n_tokens + len(ids))
            self.store[self.n_tokens:self.n_tokens + len(ids)] = ids
            self.token_start[first:self.n_words] = self.n_tokens + np.concatenate([[0], np.cumsum(lens)[:-1]])
            self.token_len[first:self.n_words] = lens
            self.n_tokens += len(ids)
        return words, doc_words

    def _grow(self, word_bytes: int) -> None:
        """Room for one more word of `word_bytes` bytes: the full one of arena, word arrays and
        table (kept at most half full) doubled."""
        used = int(self.word_end[self.n_words - 1]) if self.n_words else 0
        if used + word_bytes > len(self.arena):
            self.arena = _grown(self.arena, used + word_bytes)
        if self.n_words + 1 > len(self.word_end):
            self.word_end, self.word_key, self.token_start, self.token_len = (
                _grown(a, self.n_words + 1) for a in (self.word_end, self.word_key, self.token_start, self.token_len))
        if 2 * (self.n_words + 1) > len(self.table):
            self.table = _rehash(self.word_key, self.n_words, 2 * len(self.table))


def count_tokens(store: np.ndarray, lens: np.ndarray, words: np.ndarray, doc_offsets: np.ndarray,
                 n_rows: int, starts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR (indptr, indices, data) of per-document token counts, indices ascending: document d
    holds the words words[doc_offsets[d]:doc_offsets[d+1]] (indices into `lens`), word w the
    tokens store[starts[w]:starts[w] + lens[w]] (default starts: back to back)."""
    if starts is None:
        starts = np.zeros(len(lens), np.int64)
        if len(lens) > 1:
            np.cumsum(lens[:-1], out=starts[1:])
    return _count(store, starts.astype(np.int64, copy=False), lens.astype(np.int64, copy=False),
                  words.astype(np.int64, copy=False), doc_offsets.astype(np.int64, copy=False), n_rows)


def _grown(a: np.ndarray, need: int) -> np.ndarray:
    size = max(len(a), 1)
    while size < need:
        size *= 2
    out = np.zeros(size, a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True, nogil=True)
def _split(data, doc_offsets, space):
    """(word starts, word ends, per-document offsets into them): the byte spans of each text's
    `str.split()` words."""
    n_docs = len(doc_offsets) - 1
    starts = np.empty(len(data) // 2 + n_docs + 1, np.int64)
    ends = np.empty(len(starts), np.int64)
    doc_words = np.zeros(n_docs + 1, np.int64)
    n = 0
    for d in range(n_docs):
        i = doc_offsets[d]
        end = doc_offsets[d + 1]
        start = -1
        while i < end:
            b = data[i]
            if b < 0x80:
                width = 1
                cp = np.int64(b)
            elif b < 0xE0:
                width = 2
                cp = ((np.int64(b) & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
            elif b < 0xF0:
                width = 3
                cp = ((np.int64(b) & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) \
                    | (np.int64(data[i + 2]) & 0x3F)
            else:
                width = 4
                cp = np.int64(0x110000)  # no whitespace beyond the BMP
            if cp < len(space) and space[cp]:
                if start >= 0:
                    starts[n] = start
                    ends[n] = i
                    n += 1
                    start = -1
            elif start < 0:
                start = i
            i += width
        if start >= 0:
            starts[n] = start
            ends[n] = end
            n += 1
        doc_words[d + 1] = n
    return starts[:n].copy(), ends[:n].copy(), doc_words


@njit(cache=True, nogil=True)
def _key(data, start, end):
    """A word's table key: a word of at most 7 bytes is its bytes and length packed (exact, top
    bit 0); a longer one is its FNV-1a 64 hash with the top bit set (checked against the arena)."""
    n = end - start
    if n <= 7:
        k = np.int64(n) << 56
        for i in range(n):
            k |= np.int64(data[start + i]) << (8 * i)
        return k
    h = np.int64(-3750763034362895579)  # wrapping int64 arithmetic
    for i in range(start, end):
        h = (h ^ np.int64(data[i])) * np.int64(1099511628211)
    return h | np.int64(-9223372036854775808)


@njit(cache=True, nogil=True)
def _probe(mask, k):
    k = k ^ (k >> 29)
    return (k * np.int64(-7046029254386353131)) >> 20 & mask


@njit(cache=True, nogil=True)
def _lookup(data, starts, ends, arena, word_end, word_key, table, n_words, out, first):
    """out[o] = the cache index of word occurrence o, from o = first on, new words appended to
    the arena; (the occurrence it stopped at, n_words). It stops early at a new word that would
    overfill the arena, the word arrays or the table (more than half full)."""
    mask = len(table) - 1
    for o in range(first, len(starts)):
        s = starts[o]
        e = ends[o]
        k = _key(data, s, e)
        slot = _probe(mask, k)
        while True:
            w = table[slot, 1]
            if w == -1:
                break
            if table[slot, 0] == k:
                if k >= 0:  # packed: equal keys are equal words
                    break
                ws = word_end[w - 1] if w > 0 else 0
                if word_end[w] - ws == e - s:
                    same = True
                    for i in range(e - s):
                        if arena[ws + i] != data[s + i]:
                            same = False
                            break
                    if same:
                        break
            slot = (slot + 1) & mask
        if w == -1:  # a new word
            w = n_words
            ws = word_end[w - 1] if w > 0 else 0
            if ws + e - s > len(arena) or w + 1 > len(word_end) or 2 * (w + 1) > len(table):
                return o, n_words
            for i in range(e - s):
                arena[ws + i] = data[s + i]
            word_end[w] = ws + e - s
            word_key[w] = k
            table[slot, 0] = k
            table[slot, 1] = w
            n_words += 1
        out[o] = w
    return len(starts), n_words


@njit(cache=True, nogil=True)
def _rehash(word_key, n_words, size):
    table = np.full((size, 2), -1, np.int64)
    mask = size - 1
    for w in range(n_words):
        slot = _probe(mask, word_key[w])
        while table[slot, 1] != -1:
            slot = (slot + 1) & mask
        table[slot, 0] = word_key[w]
        table[slot, 1] = w
    return table


@njit(cache=True, nogil=True)
def _doc_tokens(store, starts, lens, words, lo, hi, counts, touched):
    """Count the tokens of word occurrences words[lo:hi] into `counts` (left for the caller to
    read and zero); the distinct token ids, ascending."""
    nt = 0
    for o in range(lo, hi):
        w = words[o]
        for j in range(starts[w], starts[w] + lens[w]):
            t = store[j]
            if counts[t] == 0:
                touched[nt] = t
                nt += 1
            counts[t] += 1
    return np.sort(touched[:nt])


@njit(cache=True, nogil=True)
def _count(store, starts, lens, words, doc_offsets, n_rows):
    n_docs = len(doc_offsets) - 1
    total = 0
    for o in range(len(words)):
        total += lens[words[o]]
    counts = np.zeros(n_rows, np.int64)
    touched = np.empty(n_rows, np.int32)
    indptr = np.zeros(n_docs + 1, np.int64)
    indices = np.empty(min(total, n_docs * n_rows) + 1, np.int32)
    data = np.empty(len(indices), np.float32)
    nnz = 0
    for d in range(n_docs):
        for t in _doc_tokens(store, starts, lens, words, doc_offsets[d], doc_offsets[d + 1], counts, touched):
            indices[nnz] = t
            data[nnz] = counts[t]
            counts[t] = 0
            nnz += 1
        indptr[d + 1] = nnz
    return indptr, indices[:nnz].copy(), data[:nnz].copy()


@njit(cache=True, nogil=True)
def _pool(store, starts, lens, words, doc_offsets, vectors):
    """Per document: its token counts, then sum(count * vector) over its tokens in id order."""
    n_docs = len(doc_offsets) - 1
    n_rows, dim = vectors.shape
    out = np.zeros((n_docs, dim), np.float32)
    counts = np.zeros(n_rows, np.int64)
    touched = np.empty(n_rows, np.int32)
    for d in range(n_docs):
        row = out[d]
        for t in _doc_tokens(store, starts, lens, words, doc_offsets[d], doc_offsets[d + 1], counts, touched):
            c = np.float32(counts[t])
            counts[t] = 0
            vec = vectors[t]
            for i in range(dim):
                row[i] += c * vec[i]
    return out
