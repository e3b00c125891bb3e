"""A SentencePiece-style BPE tokenizer (WordLlama's Llama-2 tokenizer) run in compiled code over
all the distinct words of a batch at once, giving exactly the ids of `tokenizer.model.tokenize`.

Why: a static model's cost is tokenising each distinct word once. Through the `tokenizers`
Python API that is one call per word (~6 us each: the call, a list of Token objects, their ids),
and a 15k-document web corpus has 800k distinct words, so it was half of `textsieve embed`'s
time. Here the words never become Python objects: they are read from the Arrow dictionary's UTF-8
buffer, their merges run in Numba, and the ids come back as one flat array.

Exactness: this is the `tokenizers` BPE algorithm itself (`Word::merge_all`), not an
approximation. Each character is its vocabulary id, else (byte fallback) the ids of its UTF-8
bytes' `<0xXX>` tokens, else the unknown token (consecutive ones fused) or nothing. Then the
adjacent pair with the lowest merge rank is merged, leftmost first, through a heap of (rank,
position) with stale entries skipped, until no pair of the merges table is left. A merge's
rank is its line in the merges list (a repeated pair keeps its last line, as a `HashMap` built
in order does). `tests/test_embed_bpe.py` compares it with `tokenizer.model.tokenize` on real
text. `benchmarks/embed.py` compares every distinct word of the dev corpus.

Only tokenizers this describes take this path: a BPE model without dropout, subword prefix or
suffix, or `ignore_merges`; no pre-tokenizer; a normalizer that only prepends (and maps " ",
absent from a word). `tables_for` returns None for any other, and the caller tokenises word by
word through the library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

MAX_CODE_POINT = 0x110000
#: words of at most this many symbols find their next merge by a scan, longer ones by a heap
SCAN_SYMBOLS = 32


@dataclass(frozen=True)
class BPETables:
    """A BPE model as arrays the compiled kernels read."""

    char_ids: np.ndarray  # int32 (MAX_CODE_POINT,): a code point's token id, -1 when it is no token
    byte_ids: np.ndarray  # int32 (256,): the `<0xXX>` token ids; all -1 without byte fallback
    prefix: np.ndarray  # int32 code points put before every word (SentencePiece's "▁")
    table: np.ndarray  # int64 (slots, 2) open addressing: [pair a * n_ids + b (-1: empty), rank << 32 | merged id]
    n_ids: int  # 1 + the largest token id
    unk_id: int  # -1 when the model has no unknown token
    fuse_unk: bool


def prepend_prefix(config: dict[str, Any]) -> str | None:
    """The string a word reaches the model with, when the normalizer only prepends it (and
    replaces " ", absent from a whitespace-free word) and there is no pre-tokenizer; else None."""
    norm, pre = config.get("normalizer"), config.get("pre_tokenizer")
    if pre is not None or not norm or norm.get("type") != "Sequence":
        return None
    steps = norm.get("normalizers", [])
    kinds = [s.get("type") for s in steps]
    if not kinds or kinds[0] != "Prepend" or kinds.count("Prepend") != 1 \
            or not all(k in ("Prepend", "Replace") for k in kinds):
        return None
    if any(s.get("pattern") != {"String": " "} for s in steps[1:]):
        return None  # a Replace of anything but " " would change the word itself
    return str(steps[0].get("prepend", ""))


def tables_for(tokenizer: Any) -> BPETables | None:
    """The tables of a `tokenizers.Tokenizer` this module can run exactly, else None."""
    config = json.loads(tokenizer.to_str())
    prefix = prepend_prefix(config)
    model = config.get("model") or {}
    if prefix is None or model.get("type") != "BPE" or model.get("dropout") not in (None, 0.0) \
            or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix") \
            or model.get("ignore_merges"):
        return None
    vocab: dict[str, int] = model.get("vocab") or {}
    if not vocab:
        return None
    n_ids = max(vocab.values()) + 1
    char_ids = np.full(MAX_CODE_POINT, -1, np.int32)
    for token, i in vocab.items():
        if len(token) == 1:
            char_ids[ord(token)] = i
    byte_ids = np.full(256, -1, np.int32)
    if model.get("byte_fallback"):
        for b in range(256):
            byte_ids[b] = vocab.get(f"<0x{b:02X}>", -1)
    lefts, rights, news = [], [], []
    for merge in model.get("merges") or []:
        parts = merge.split(" ") if isinstance(merge, str) else list(merge)
        if len(parts) != 2 or any(p not in vocab for p in parts) or parts[0] + parts[1] not in vocab:
            return None  # the library refuses such a file; do not guess
        lefts.append(vocab[parts[0]])
        rights.append(vocab[parts[1]])
        news.append(vocab[parts[0] + parts[1]])
    size = 1 << max(4, (2 * len(lefts)).bit_length())
    table = np.full((size, 2), -1, np.int64)
    _fill(table, np.asarray(lefts, np.int64), np.asarray(rights, np.int64), np.asarray(news, np.int64), n_ids)
    unk = model.get("unk_token")
    unk_id = vocab.get(unk, -1) if isinstance(unk, str) else -1
    return BPETables(char_ids=char_ids, byte_ids=byte_ids, prefix=np.asarray([ord(c) for c in prefix], np.int32),
                     table=table, n_ids=n_ids, unk_id=int(unk_id), fuse_unk=bool(model.get("fuse_unk")))


def tokenize_words(tables: BPETables, data: np.ndarray, offsets: np.ndarray, n_rows: int,
                   scan_symbols: int = SCAN_SYMBOLS) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of the UTF-8 words data[offsets[i]:offsets[i+1]]: (flat int32 ids, int64 count
    per word). Ids of the unknown token and ids >= n_rows (no vector) are left out."""
    return _tokenize(data, offsets.astype(np.int64, copy=False), tables.char_ids, tables.byte_ids,
                     tables.prefix, tables.table, tables.n_ids, tables.unk_id,
                     tables.fuse_unk, n_rows, scan_symbols)


@njit(cache=True, nogil=True)
def _slot(table, n_ids, a, b):
    """The slot of pair (a, b) in the merge table, or the empty slot where it would go."""
    mask = len(table) - 1
    key = a * n_ids + b
    h = ((key * 0x9E3779B1) >> 11) & mask
    while table[h, 0] != -1 and table[h, 0] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True, nogil=True)
def _fill(table, lefts, rights, news, n_ids):
    for r in range(len(lefts)):  # in order: a repeated pair keeps its last rank, as the library's map
        h = _slot(table, n_ids, lefts[r], rights[r])
        table[h, 0] = lefts[r] * n_ids + rights[r]
        table[h, 1] = (r << 32) | news[r]


@njit(cache=True, nogil=True)
def _push(heap_key, heap_new, size, key, new):
    i = size
    heap_key[i] = key
    heap_new[i] = new
    while i > 0:
        parent = (i - 1) >> 1
        if heap_key[parent] <= heap_key[i]:
            break
        heap_key[parent], heap_key[i] = heap_key[i], heap_key[parent]
        heap_new[parent], heap_new[i] = heap_new[i], heap_new[parent]
        i = parent
    return size + 1


@njit(cache=True, nogil=True)
def _pop(heap_key, heap_new, size):
    """Remove the smallest entry (it is left at heap_key[size - 1]); the new size."""
    size -= 1
    heap_key[0], heap_key[size] = heap_key[size], heap_key[0]
    heap_new[0], heap_new[size] = heap_new[size], heap_new[0]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and heap_key[left + 1] < heap_key[left]:
            child = left + 1
        if heap_key[i] <= heap_key[child]:
            break
        heap_key[child], heap_key[i] = heap_key[i], heap_key[child]
        heap_new[child], heap_new[i] = heap_new[i], heap_new[child]
        i = child
    return size


@njit(cache=True, nogil=True)
def _byte_fallback(cp, sym, n, byte_ids):
    """Append the `<0xXX>` tokens of code point cp's UTF-8 bytes when all exist; the new n, or -1."""
    if cp < 0x80:
        nb = 1
        b0 = cp
    elif cp < 0x800:
        nb = 2
        b0 = 0xC0 | (cp >> 6)
    elif cp < 0x10000:
        nb = 3
        b0 = 0xE0 | (cp >> 12)
    else:
        nb = 4
        b0 = 0xF0 | (cp >> 18)
    if byte_ids[b0] < 0:
        return -1
    for k in range(1, nb):
        if byte_ids[0x80 | ((cp >> (6 * (nb - 1 - k))) & 0x3F)] < 0:
            return -1
    sym[n] = byte_ids[b0]
    for k in range(1, nb):
        sym[n + k] = byte_ids[0x80 | ((cp >> (6 * (nb - 1 - k))) & 0x3F)]
    return n + nb


@njit(cache=True, nogil=True)
def _merge_heap(sym, nxt, prv, gone, heap_key, heap_new, n, table, n_ids):
    """The library's merge_all: a heap of (rank, position), stale entries skipped (a stale entry
    spans fewer characters than the pair now at its position, so its merged id differs)."""
    size = 0
    for k in range(n):
        prv[k] = k - 1
        nxt[k] = k + 1 if k + 1 < n else -1
        gone[k] = False
    for k in range(n - 1):
        h = _slot(table, n_ids, sym[k], sym[k + 1])
        if table[h, 0] != -1:
            size = _push(heap_key, heap_new, size, (table[h, 1] >> 32 << 32) | k, table[h, 1] & 0xFFFFFFFF)
    while size > 0:
        size = _pop(heap_key, heap_new, size)
        key = heap_key[size]
        new = heap_new[size]
        pos = key & 0xFFFFFFFF
        if gone[pos] or nxt[pos] == -1:
            continue
        right = nxt[pos]
        h = _slot(table, n_ids, sym[pos], sym[right])
        if table[h, 0] == -1 or (table[h, 1] & 0xFFFFFFFF) != new:
            continue
        sym[pos] = new
        gone[right] = True
        nxt[pos] = nxt[right]
        if nxt[pos] != -1:
            prv[nxt[pos]] = pos
        p = prv[pos]
        if p != -1:
            h = _slot(table, n_ids, sym[p], sym[pos])
            if table[h, 0] != -1:
                size = _push(heap_key, heap_new, size, (table[h, 1] >> 32 << 32) | p, table[h, 1] & 0xFFFFFFFF)
        q = nxt[pos]
        if q != -1:
            h = _slot(table, n_ids, sym[pos], sym[q])
            if table[h, 0] != -1:
                size = _push(heap_key, heap_new, size, (table[h, 1] >> 32 << 32) | pos, table[h, 1] & 0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _merge_scan(sym, nxt, pair_rank, pair_new, n, table, n_ids):
    """merge_all for a short word: the same choice (lowest rank, then leftmost) found by a scan
    of the live pairs' ranks instead of a heap."""
    for k in range(n):
        nxt[k] = k + 1 if k + 1 < n else -1
        pair_rank[k] = -1
        if k + 1 < n:
            h = _slot(table, n_ids, sym[k], sym[k + 1])
            if table[h, 0] != -1:
                pair_rank[k] = table[h, 1] >> 32
                pair_new[k] = table[h, 1] & 0xFFFFFFFF
    while True:
        best = -1
        best_rank = 0
        prev_best = -1
        prev = -1
        k = 0
        while k != -1:
            r = pair_rank[k]
            if r >= 0 and (best == -1 or r < best_rank):
                best, best_rank, prev_best = k, r, prev
            prev = k
            k = nxt[k]
        if best == -1:
            return
        right = nxt[best]
        sym[best] = pair_new[best]
        nxt[best] = nxt[right]
        pair_rank[best] = -1
        q = nxt[best]
        if q != -1:
            h = _slot(table, n_ids, sym[best], sym[q])
            if table[h, 0] != -1:
                pair_rank[best] = table[h, 1] >> 32
                pair_new[best] = table[h, 1] & 0xFFFFFFFF
        if prev_best != -1:
            pair_rank[prev_best] = -1
            h = _slot(table, n_ids, sym[prev_best], sym[best])
            if table[h, 0] != -1:
                pair_rank[prev_best] = table[h, 1] >> 32
                pair_new[prev_best] = table[h, 1] & 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _tokenize(data, offsets, char_ids, byte_ids, prefix, table, n_ids, unk_id,
              fuse_unk, n_rows, scan_symbols):
    n_words = len(offsets) - 1
    longest = 0
    for w in range(n_words):
        longest = max(longest, offsets[w + 1] - offsets[w])
    n_prefix = len(prefix)
    cps = np.empty(longest + n_prefix + 1, np.int64)
    cap = 4 * (longest + n_prefix) + 4  # symbols of one word: at most 4 per code point
    sym = np.empty(cap, np.int64)
    nxt = np.empty(cap, np.int64)
    prv = np.empty(cap, np.int64)
    gone = np.zeros(cap, np.bool_)
    heap_key = np.empty(3 * cap, np.int64)
    heap_new = np.empty(3 * cap, np.int64)
    pair_rank = np.empty(cap, np.int64)
    pair_new = np.empty(cap, np.int64)
    out = np.empty(offsets[n_words] - offsets[0] + 4 * n_prefix * n_words + 1, np.int32)  # <= 1 token per byte
    lens = np.zeros(n_words, np.int64)
    n_out = 0
    for w in range(n_words):
        if offsets[w + 1] == offsets[w]:  # "" (Arrow's split leaves it at a text's edges): no tokens
            continue
        # the word's code points: the prefix, then its UTF-8 decoded (Arrow strings are valid UTF-8)
        m = 0
        for j in range(n_prefix):
            cps[m] = prefix[j]
            m += 1
        i = offsets[w]
        end = offsets[w + 1]
        while i < end:
            b = np.int64(data[i])
            if b < 0x80:
                cps[m] = b
                i += 1
            elif b < 0xE0:
                cps[m] = ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
                i += 2
            elif b < 0xF0:
                cps[m] = ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F)
                i += 3
            else:
                cps[m] = (((b & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
                          | ((np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F))
                i += 4
            m += 1
        # merge_word: a character's id, else its bytes' ids, else a pending unknown token, which
        # (as in the library) is only written when a known character follows or the word ends
        n = 0
        pending = False
        for j in range(m):
            cp = cps[j]
            tid = char_ids[cp] if cp < len(char_ids) else -1
            if tid >= 0:
                if pending:
                    sym[n] = unk_id
                    n += 1
                    pending = False
                sym[n] = tid
                n += 1
                continue
            nb = _byte_fallback(cp, sym, n, byte_ids)
            if nb >= 0:
                n = nb
                continue
            if unk_id >= 0:
                if pending and not fuse_unk:
                    sym[n] = unk_id
                    n += 1
                pending = True
        if pending:
            sym[n] = unk_id
            n += 1
        if n < 2:  # nothing to merge (the walk below reads nxt[0])
            nxt[0] = -1
        elif n <= scan_symbols:
            _merge_scan(sym, nxt, pair_rank, pair_new, n, table, n_ids)
        else:
            _merge_heap(sym, nxt, prv, gone, heap_key, heap_new, n, table, n_ids)
        k = 0 if n > 0 else -1
        start = n_out
        while k != -1:
            t = sym[k]
            if t >= 0 and t < n_rows and t != unk_id:
                out[n_out] = t
                n_out += 1
            k = nxt[k]
        lens[w] = n_out - start
    return out[:n_out].copy(), lens
