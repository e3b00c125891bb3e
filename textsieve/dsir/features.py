"""Hashed n-gram features for DSIR, compiled: one numba pass over the code points of a batch.

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

from dataclasses import asdict, dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np
from numba import njit

from textsieve.text.hashing import fmix64 as _fmix64

from textsieve.text.unicode_props import F_SPACE, F_WORD, unicode_tables

FEATURE_VERSION = 1
TOKENIZER = "wordpunct-unicode-lower"
HASH = "fnv1a64-codepoints+fmix64"

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
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
    def from_json(cls, d: dict) -> "HashedNgramParams":
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
def _ngram_kernel(cps, starts, flags, n_buckets, n, seed_key, out, out_off, out_tok):
    """Tokenize and hash every document of a batch; returns the number of n-grams written."""
    hist = np.zeros(n, dtype=np.uint64)  # ring of the last n token keys
    nb = np.uint64(n_buckets)
    pos = 0
    n_docs = starts.shape[0] - 1
    for d in range(n_docs):
        out_off[d] = pos
        ntok = 0
        cls = 0  # 0 none, 1 word, 2 punctuation
        h = _FNV_OFFSET
        end = starts[d + 1]
        i = starts[d]
        while i <= end:
            if i < end:
                c = cps[i]
                f = flags[c] if c < flags.shape[0] else 0
                ccls = 0 if (f & 2) else (1 if (f & 1) else 2)
            else:
                ccls = 0  # flush the last token
                c = 0
            if ccls != cls and cls != 0:
                # token complete: key, history, n-grams ending here
                key = _fmix64(h ^ seed_key)
                hist[ntok % n] = key
                ntok += 1
                out[pos] = np.uint32(key % nb)
                pos += 1
                m = 2
                while m <= n and m <= ntok:
                    g = hist[(ntok - m) % n]
                    for j in range(1, m):
                        g = _fmix64((g * _CHAIN) ^ hist[(ntok - m + j) % n])
                    out[pos] = np.uint32(g % nb)
                    pos += 1
                    m += 1
                h = _FNV_OFFSET
            if ccls != 0:
                h = (h ^ np.uint64(c)) * _FNV_PRIME
            cls = ccls
            i += 1
        out_tok[d] = ntok
    out_off[n_docs] = pos
    return pos


_FLAGS: np.ndarray | None = None


def _class_flags() -> np.ndarray:
    """Per code point: bit 1 = Python-re word character, bit 2 = whitespace (from CPython)."""
    global _FLAGS
    if _FLAGS is None:
        fl = unicode_tables().flags
        out = np.zeros(fl.shape[0], dtype=np.uint8)
        out[(fl & F_WORD) != 0] = 1
        out[(fl & F_SPACE) != 0] = 2  # \w and \s are disjoint
        _FLAGS = out
    return _FLAGS


def featurize(texts: Sequence[str], params: HashedNgramParams) -> NgramBatch:
    """Bucket ids of the n-grams of each text (one compiled pass over the whole batch)."""
    lowered = [t.lower() for t in texts]
    lengths = np.fromiter((len(t) for t in lowered), dtype=np.int64, count=len(lowered))
    starts = np.zeros(len(lowered) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    cps = np.frombuffer("".join(lowered).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    out = np.empty(max(int(starts[-1]) * params.ngrams, 1), dtype=np.uint32)
    off = np.empty(len(lowered) + 1, dtype=np.int64)
    tok = np.empty(len(lowered), dtype=np.int64)
    seed_key = np.uint64(_fmix64(np.uint64(params.seed) ^ _SEED_MIX))
    total = _ngram_kernel(cps, starts, _class_flags(), params.buckets, params.ngrams, seed_key, out, off, tok)
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
