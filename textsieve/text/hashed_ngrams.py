"""Hashed n-gram features (DSIR's featurizer, also the n-gram view of learned models), compiled: one
numba pass over the code points of a batch. It sits in `text/` because both `dsir/` and `learned/` use it.

Feature definition (version `FEATURE_VERSION`; every field is recorded in fitted models):

* text is lower-cased with Python's `str.lower` (as the reference does: no Unicode normalisation,
  no stop words, no stemming);
* tokens are the matches of ``\\w+|[^\\w\\s]+`` with Python's Unicode `\\w` and `\\s` (the rule of
  NLTK's `WordPunctTokenizer`, the reference's default tokenizer): runs of word characters and
  runs of punctuation, so ``it's`` gives ``it``, ``'``, ``s``;
* n-grams for n = 1 … `ngrams` (default 2: unigrams and bigrams), over the whole text (they cross
  line breaks, as in the reference);
* each token is hashed with 64-bit FNV-1a over its code points, seeded, then the MurmurHash3
  `fmix64` finalizer; an n-gram's key chains its tokens' keys through ``fmix64(a * K ^ b)``; the
  bucket is ``key mod buckets`` (default 10,000).

The reference hashes every n-gram string with SHA-256 in Python (55% of its featurizer time);
here the hash is a few multiply/xor per code point, computed where the tokens are found, and a
batch of documents is one UTF-32 buffer (`str.encode` does the decoding in C). Different `seed`s
give independent hash spaces: `eval kl` measures in one that selection did not use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from textsieve.text.batch_encoding import MAX_BATCH_CODE_POINTS, codepoints_batch
from textsieve.text.hashing import fmix64 as _fmix64
from textsieve.text.unicode_props import unicode_tables
from textsieve.text.wordpunct_numba import doc_scratch, tokenize_into

FEATURE_VERSION = 1
TOKENIZER = "wordpunct-unicode-lower"
HASH = "fnv1a64-codepoints+fmix64"

_CHAIN = np.uint64(0x9E3779B97F4A7C15)
_SEED_MIX = np.uint64(0xD6E8FEB86659FD93)


@dataclass(frozen=True)
class HashedNgramParams:
    """What defines the feature space; two models are comparable only if these are equal."""

    buckets: int = 10_000
    ngrams: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.buckets <= 2**31 - 1:
            raise ValueError(f"buckets must be between 1 and 2**31-1, not {self.buckets}")
        if not 1 <= self.ngrams <= 8:
            raise ValueError(f"ngrams must be between 1 and 8, not {self.ngrams}")
        if not 0 <= self.seed < 2**63:
            raise ValueError(f"hash seed must be between 0 and 2**63-1, not {self.seed}")

    def to_json(self) -> dict:
        return {**asdict(self), "tokenizer": TOKENIZER, "hash": HASH, "feature_version": FEATURE_VERSION}

    @classmethod
    def from_json(cls, d: dict) -> HashedNgramParams:
        if d.get("feature_version") != FEATURE_VERSION or d.get("tokenizer") != TOKENIZER or d.get("hash") != HASH:
            raise ValueError(f"unsupported DSIR feature definition {d!r}; this textsieve computes "
                             f"feature_version {FEATURE_VERSION} ({TOKENIZER}, {HASH})")
        return cls(buckets=int(d["buckets"]), ngrams=int(d["ngrams"]), seed=int(d["seed"]))


@dataclass
class NgramBatch:
    """Bucket ids of all n-grams of a batch, document d's in ``buckets[offsets[d]:offsets[d+1]]``,
    and the number of word/punctuation tokens of each document (the 'length' of DSIR)."""

    buckets: np.ndarray  # uint32
    offsets: np.ndarray  # int64, n_docs + 1
    tokens: np.ndarray  # int64, n_docs

    @property
    def ngram_counts(self) -> np.ndarray:
        return np.diff(self.offsets)


@njit(cache=True, nogil=True)
def _doc_ngrams(tok_fnv, n_tok, hist, n, nb, seed_key, out, pos):
    """Write the bucket of each n-gram (n = 1 .. `n`) ending at each of a document's tokens, given
    the tokens' FNV-1a hashes, to ``out[pos:]``; returns the new pos."""
    for t in range(n_tok):
        key = _fmix64(tok_fnv[t] ^ seed_key)
        hist[t % n] = key  # ring of the last n token keys
        out[pos] = np.uint32(key % nb)
        pos += 1
        m = 2
        while m <= n and m <= t + 1:
            g = hist[(t + 1 - m) % n]
            for j in range(1, m):
                g = _fmix64((g * _CHAIN) ^ hist[(t + 1 - m + j) % n])
            out[pos] = np.uint32(g % nb)
            pos += 1
            m += 1
    return pos


@njit(cache=True, nogil=True)
def _ngram_kernel(cps, starts, flags, n_buckets, n, seed_key, out, out_off, out_tok):
    """Tokenize (`wordpunct`) and hash every document of a batch; returns the number of n-grams written."""
    hist = np.zeros(n, dtype=np.uint64)
    nb = np.uint64(n_buckets)
    pos = 0
    n_docs = starts.shape[0] - 1
    tok_start, tok_end, tok_seen, tok_fnv = doc_scratch(cps, starts, flags)
    for d in range(n_docs):
        out_off[d] = pos
        n_tok = tokenize_into(cps, starts[d], starts[d + 1], flags, True, tok_start, tok_end, tok_seen, tok_fnv, 0)
        pos = _doc_ngrams(tok_fnv, n_tok, hist, n, nb, seed_key, out, pos)
        out_tok[d] = n_tok
    out_off[n_docs] = pos
    return pos


def featurize(texts: Sequence[str], params: HashedNgramParams) -> NgramBatch:
    """Bucket ids of the n-grams of each text (one compiled pass over the whole batch)."""
    lowered = [t.lower() for t in texts]
    cps, starts = codepoints_batch(lowered)
    if cps.shape[0] > MAX_BATCH_CODE_POINTS:  # token bounds are int32
        raise ValueError("featurize: a batch of 2**31 code points or more; pass fewer texts at once")
    out = np.empty(max(int(starts[-1]) * params.ngrams, 1), dtype=np.uint32)
    off = np.empty(len(lowered) + 1, dtype=np.int64)
    tok = np.empty(len(lowered), dtype=np.int64)
    seed_key = np.uint64(_fmix64(np.uint64(params.seed) ^ _SEED_MIX))
    total = _ngram_kernel(cps, starts, unicode_tables().flags, params.buckets, params.ngrams, seed_key, out, off, tok)
    return NgramBatch(out[:total].copy(), off, tok)


def batched(texts: Iterable[str], max_chars: int = 4_000_000) -> Iterator[list[str]]:
    """Group texts into batches of about `max_chars` characters (bounds the buffers)."""
    batch: list[str] = []
    size = 0
    for t in texts:
        batch.append(t)
        size += len(t)
        if size >= max_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def bucket_counts(texts: Iterable[str], params: HashedNgramParams) -> tuple[np.ndarray, int]:
    """Total n-gram count per bucket over all texts (the bag-of-n-grams sufficient statistic),
    and the number of texts."""
    counts = np.zeros(params.buckets, dtype=np.int64)
    docs = 0
    for batch in batched(texts):
        fb = featurize(batch, params)
        counts += np.bincount(fb.buckets, minlength=params.buckets)
        docs += len(batch)
    return counts, docs


def doc_sums(batch: NgramBatch, values: np.ndarray) -> np.ndarray:
    """Per document, the sum of `values[bucket]` over its n-grams (0 for a document without)."""
    v = values[batch.buckets]
    cs = np.zeros(v.shape[0] + 1, dtype=np.float64)
    np.cumsum(v, out=cs[1:])
    return cs[batch.offsets[1:]] - cs[batch.offsets[:-1]]
