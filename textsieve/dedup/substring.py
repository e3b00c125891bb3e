"""Exact-substring dedup (Lee et al. 2022, "Deduplicating training data makes language models
better"): every token covered by a substring of at least `min_len` tokens that occurs twice or
more in the corpus (in two documents, or twice in one).

How: the documents' token ids are laid end to end, each followed by one separator id that no
token has, and sorted into a suffix array (`pydivsufsort`, libdivsufsort) with its LCP array
(Kasai). Two suffixes next to each other in the array that share a prefix of `c >= min_len`
tokens *within their documents* (the LCP clamped to the tokens left in each one's document, so a
match never runs through a document end) mark `[start, start + c)` at both places. That finds
every repeat: the suffixes between two occurrences of a repeat in suffix order all start with it,
and the separator (in no document) keeps that shared prefix inside each of their documents, so
every neighbouring pair in that run shares at least `min_len` tokens in-document. The marked
tokens are therefore exactly the union of all repeated `min_len`-token windows, the first
occurrence included, as the paper's `collect` step and datatrove's range remover give them.

Tokens (`word_tokens`): without a tokenizer file, runs of word characters (`\\w+`) and runs of
other non-space characters (`[^\\w\\s]+`), about one GPT-2 token each on English web text; with
one (`--tokenizer`, a Hugging Face tokenizer.json), its tokens, as the paper (GPT-2's BPE).
Whitespace is not a token, so a repeat is found across re-wrapped lines; its span runs from the
first token's start to the last token's end.

Memory: `BYTES_PER_TOKEN` per token of a pass (ids, the suffix array over their big-endian
bytes, LCP, the marks); the stage cuts the corpus into partitions of whole documents that fit.
"""

from __future__ import annotations

import re

import numpy as np

#: a token without a tokenizer file: a run of word characters, or of other non-space characters
WORD_PATTERN = re.compile(r"\w+|[^\w\s]+")
#: the paper's threshold: 50 tokens (100 bytes of uint16 GPT-2 ids)
DEFAULT_MIN_LEN = 50
#: peak bytes per token of one suffix-array pass (measured ~42 with 4-byte ids; headroom for the rest)
BYTES_PER_TOKEN = 56
#: the offsets of one token: code-point start and end in its document
OFFSET = np.dtype([("start", "<u4"), ("end", "<u4")])


def word_tokens(text: str) -> tuple[list[str], np.ndarray]:
    """The word tokens of `text` and their `OFFSET`s (module doc)."""
    words: list[str] = []
    spans: list[int] = []
    add_word, add_span = words.append, spans.extend
    for m in WORD_PATTERN.finditer(text):
        add_word(m.group())
        add_span(m.span())
    return words, np.array(spans, dtype=np.uint32).view(OFFSET).reshape(-1) if spans else np.zeros(0, OFFSET)


class Vocabulary:
    """Word -> dense id within one shard (ids in order of first appearance)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, words: list[str]) -> np.ndarray:
        ids, get = self.ids, self.ids.setdefault
        return np.fromiter((get(w, len(ids)) for w in words), dtype=np.uint32, count=len(words))

    def words(self) -> list[str]:
        return list(self.ids)


def repeated(tokens: np.ndarray, doc_len: np.ndarray, min_len: int) -> np.ndarray:
    """Per token of `tokens` (the documents' ids end to end; `doc_len` tokens each): whether a
    substring of >= `min_len` tokens covering it occurs at least twice (module doc)."""
    from pydivsufsort import divsufsort, kasai

    n_tok = int(tokens.shape[0])
    doc_len = np.asarray(doc_len, dtype=np.int64)
    if n_tok <= min_len or min_len < 1:  # two windows of min_len need min_len + 1 tokens (they may overlap)
        return np.zeros(n_tok, dtype=bool)
    total = n_tok + doc_len.shape[0]
    index = np.int32 if total < 2**31 - 1 else np.int64
    ends = np.cumsum(doc_len + 1) - 1  # the separator's position after each document
    is_sep = np.zeros(total, dtype=bool)
    is_sep[ends] = True
    seq = np.empty(total, dtype=np.uint32)
    seq[~is_sep] = tokens
    seq[is_sep] = np.uint32(int(tokens.max()) + 1)
    # tokens left in each position's document (0 at a separator)
    rem = (np.repeat(ends, doc_len + 1) - np.arange(total, dtype=np.int64)).astype(index)
    del is_sep
    sa = divsufsort(seq)
    lcp = kasai(seq, sa)
    del seq
    a, b = sa[:-1], sa[1:]
    c = np.minimum(np.minimum(lcp[:-1], rem[a]), rem[b]).astype(index)
    del lcp, rem
    hit = c >= min_len
    starts = np.concatenate([a[hit], b[hit]]).astype(np.int64)
    lengths = np.concatenate([c[hit], c[hit]]).astype(np.int64)
    del sa, a, b, c, hit
    reach = np.zeros(total, dtype=np.int64)  # per start position: the farthest end marked from it
    np.maximum.at(reach, starts, starts + lengths)
    covered = np.maximum.accumulate(reach) > np.arange(total, dtype=np.int64)
    keep = np.ones(total, dtype=bool)
    keep[ends] = False
    return covered[keep]


def runs(marks: np.ndarray, offsets: np.ndarray, doc_len: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                                 np.ndarray]:
    """The marked tokens' spans, per document: `(doc_offsets, start, end, tokens)` where spans
    `doc_offsets[k]:doc_offsets[k+1]` are document k's, `start`/`end` code points (first token's
    start to last token's end) and `tokens` the marked tokens each covers. A run never crosses a
    document; consecutive marked tokens form one span."""
    n = marks.shape[0]
    first = np.zeros(n, dtype=bool)
    doc_start = np.cumsum(doc_len) - doc_len
    first[doc_start[doc_len > 0]] = True
    m = marks.astype(bool)
    prev = np.zeros(n, dtype=bool)
    prev[1:] = m[:-1]
    begin = np.flatnonzero(m & (~prev | first))
    last = np.zeros(n, dtype=bool)
    last[(doc_start + doc_len - 1)[doc_len > 0]] = True
    nxt = np.zeros(n, dtype=bool)
    nxt[:-1] = m[1:]
    stop = np.flatnonzero(m & (~nxt | last))
    doc_of = np.searchsorted(np.cumsum(doc_len), begin, side="right")
    doc_offsets = np.searchsorted(doc_of, np.arange(doc_len.shape[0] + 1), side="left").astype(np.int32)
    return (doc_offsets, offsets["start"][begin].astype(np.int64), offsets["end"][stop].astype(np.int64),
            (stop - begin + 1).astype(np.int64))
