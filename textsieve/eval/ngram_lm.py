"""A small word n-gram language model: interpolated modified Kneser-Ney on hashed n-grams, in NumPy.

Why this model: perplexity of a cheap LM trained on a selection, measured on held-out target
text, is the classic proxy for "is this selection closer to what I want" (DSIR, CCNet). Modified
Kneser-Ney (Chen & Goodman 1998, "An empirical study of smoothing techniques", §3: three
discounts D1, D2, D3+ per order estimated from count-of-counts, interpolation with the lower
order, lower orders built from continuation counts) is the best-known smoothing for n-gram LMs
and is what KenLM implements; simpler schemes (add-k, Witten-Bell) give much worse perplexity on
small training sets, which would blur the comparison between selections.

Design:
  * Tokens: lower-cased runs of Unicode letters, digits and '_' (punctuation is dropped), one
    sequence per document, padded with order-1 `<s>` on the left and ended by `</s>` (predicted).
  * Every word is a 64-bit xxh3 hash; an n-gram's key folds its words' hashes with a 64-bit
    mixer. Counting is `np.unique` over key arrays and lookup is `np.searchsorted`, so fitting
    and scoring are vectorised; with 64-bit keys, collisions are negligible (~1e-6 for 10^7
    n-grams).
  * The lowest order interpolates with a uniform distribution over `vocab_size` words, so an
    unseen word gets a small non-zero probability (open vocabulary). Perplexities are only
    comparable between models with the same `vocab_size` and order.
  * Simplification: n-grams starting with `<s>` get continuation counts like the others
    (KenLM uses raw counts there); it affects only the first word of each document.

Perplexity = exp(-mean natural-log probability) over all predicted tokens (`</s>` included).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_ORDER = 3
DEFAULT_VOCAB = 1 << 20
_SPLIT = r"[^\p{L}\p{N}_]+"
_M64 = np.uint64(0x9E3779B97F4A7C15)


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Key of the sequence (key a, then word b): order-sensitive 64-bit fold."""
    return _splitmix(a * _M64 + b)


def _word_hash(words: Sequence[str]) -> np.ndarray:
    import xxhash

    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words))


BOS = _word_hash(["\x00<s>"])[0]
EOS = _word_hash(["\x00</s>"])[0]


def tokenize(texts: Iterable[str] | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(word hashes of all documents concatenated, tokens per document). Vectorised in Arrow:
    lower-case, split on non-word runs, drop empty pieces, hash each distinct word once."""
    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(list(texts), type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    arr = pc.fill_null(arr, "")
    pieces = pc.split_pattern_regex(pc.utf8_lower(arr), _SPLIT)
    parent = np.asarray(pc.list_parent_indices(pieces).to_numpy(zero_copy_only=False), dtype=np.int64)
    flat = pc.list_flatten(pieces)
    keep = np.asarray(pc.greater(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False), dtype=bool)
    flat = flat.filter(pa.array(keep))
    lengths = np.bincount(parent[keep], minlength=n).astype(np.int64)
    enc = pc.dictionary_encode(flat)
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    table = _word_hash(enc.dictionary.to_pylist())
    return table[codes] if len(codes) else np.zeros(0, np.uint64), lengths


def take_documents(words: np.ndarray, lengths: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of documents `docs` (indices, in that order; repeats allowed) of a tokenized
    corpus, in `tokenize`'s format."""
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    sel_len = lengths[docs]
    if sel_len.sum() == 0:
        return np.zeros(0, np.uint64), sel_len
    offs = np.concatenate(([0], np.cumsum(sel_len)[:-1]))
    idx = np.arange(int(sel_len.sum()), dtype=np.int64) - np.repeat(offs, sel_len) + np.repeat(starts[docs], sel_len)
    return words[idx], sel_len


def _contexts(words: np.ndarray, lengths: np.ndarray, order: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Predicted tokens (each document's words then `</s>`) and, for each j = 1..order-1, the
    word j positions before each of them (`<s>` before the document start)."""
    n_docs = len(lengths)
    total = int(lengths.sum()) + n_docs
    seq_len = lengths + 1
    starts = np.concatenate(([0], np.cumsum(seq_len)[:-1])).astype(np.int64)
    pos = np.arange(total, dtype=np.int64) - np.repeat(starts, seq_len)
    target = np.full(total, EOS, dtype=np.uint64)
    target[pos < np.repeat(lengths, seq_len)] = words
    hist = []
    for j in range(1, order):
        h = np.full(total, BOS, dtype=np.uint64)
        ok = pos >= j
        h[ok] = target[np.nonzero(ok)[0] - j]
        hist.append(h)
    return target, hist


def _ngram_keys(target: np.ndarray, hist: list[np.ndarray], order: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """For l = 1..order: the key of the l-gram ending at each token, and of its (l-1)-word
    context (all zeros for l = 1)."""
    keys, ctxs = [], []
    for l in range(1, order + 1):
        if l == 1:
            ctx = np.zeros(len(target), np.uint64)
            key = target
        else:
            ctx = hist[l - 2]
            for j in range(l - 2, 0, -1):
                ctx = _pair(ctx, hist[j - 1])
            key = _pair(ctx, target)
        keys.append(key)
        ctxs.append(ctx)
    return keys, ctxs


def _discounts(counts: np.ndarray) -> tuple[float, float, float]:
    """Chen & Goodman's modified-KN discounts D1, D2, D3+ from count-of-counts n1..n4; a fixed
    fallback (0.5, 1.0, 1.5) when the data are too small to estimate them."""
    n = [int(np.count_nonzero(counts == k)) for k in (1, 2, 3, 4)]
    if min(n) == 0:
        return 0.5, 1.0, 1.5
    y = n[0] / (n[0] + 2 * n[1])
    d = (1 - 2 * y * n[1] / n[0], 2 - 3 * y * n[2] / n[1], 3 - 4 * y * n[3] / n[2])
    fallback = (0.5, 1.0, 1.5)
    return tuple(float(v) if 0 < v < k else fallback[k - 1] for k, v in zip((1, 2, 3), d))  # type: ignore


@dataclass
class _Level:
    keys: np.ndarray  # sorted n-gram keys
    counts: np.ndarray  # raw (top order) or continuation counts
    ctx_keys: np.ndarray  # sorted context keys
    ctx_total: np.ndarray  # sum of counts in the context
    ctx_gamma: np.ndarray  # D1*N1 + D2*N2 + D3*N3+ of the context (interpolation mass numerator)
    d: tuple[float, float, float]


def _level(keys: np.ndarray, counts: np.ndarray, ctx: np.ndarray) -> _Level:
    d = _discounts(counts)
    ctx_keys, inv = np.unique(ctx, return_inverse=True)
    total = np.bincount(inv, weights=counts, minlength=len(ctx_keys))
    disc = np.where(counts >= 3, d[2], np.where(counts == 2, d[1], d[0]))
    gamma = np.bincount(inv, weights=disc, minlength=len(ctx_keys))
    return _Level(keys, counts.astype(np.int64), ctx_keys, total, gamma, d)


def _lookup(sorted_keys: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.searchsorted(sorted_keys, q)
    idx = np.minimum(idx, max(len(sorted_keys) - 1, 0))
    found = sorted_keys[idx] == q if len(sorted_keys) else np.zeros(len(q), bool)
    return idx, found


class NgramLM:
    """Interpolated modified Kneser-Ney word n-gram LM (see module docstring)."""

    def __init__(self, order: int, vocab_size: int, levels: list[_Level], tokens: int, documents: int):
        self.order, self.vocab_size, self.levels = order, vocab_size, levels
        self.tokens, self.documents = tokens, documents  # training size

    @classmethod
    def fit(cls, texts: Iterable[str] | pa.Array, order: int = DEFAULT_ORDER,
            vocab_size: int = DEFAULT_VOCAB) -> "NgramLM":
        """Count n-grams of `texts` (one document each) and estimate the smoothed model."""
        return cls.fit_tokens(*tokenize(texts), order=order, vocab_size=vocab_size)

    @classmethod
    def fit_tokens(cls, words: np.ndarray, lengths: np.ndarray, order: int = DEFAULT_ORDER,
                   vocab_size: int = DEFAULT_VOCAB) -> "NgramLM":
        """Fit on already tokenized documents (`tokenize`'s output), e.g. a subset of a
        tokenized pool without tokenizing again."""
        if len(lengths) == 0:
            raise ValueError("cannot fit a language model on no documents")
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        target, hist = _contexts(words, lengths, order)
        keys, ctxs = _ngram_keys(target, hist, order)
        levels: list[_Level] = [None] * order  # type: ignore[list-item]
        # top order: raw counts; first occurrence carries the type's context/lower keys down
        uniq, first, counts = np.unique(keys[-1], return_index=True, return_counts=True)
        levels[-1] = _level(uniq, counts, ctxs[-1][first])
        rep = first
        for l in range(order - 1, 0, -1):  # continuation counts: distinct extensions to the left
            uniq, inv = np.unique(keys[l - 1][rep], return_inverse=True)
            counts = np.bincount(inv, minlength=len(uniq))
            first = np.full(len(uniq), -1, np.int64)
            first[inv[::-1]] = rep[::-1]  # any occurrence: a type's context is fixed by its key
            levels[l - 1] = _level(uniq, counts, ctxs[l - 1][first])
            rep = first
        return cls(order, vocab_size, levels, int(lengths.sum()), len(lengths))

    def _token_logprob(self, texts: Iterable[str] | pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        words, lengths = tokenize(texts)
        target, hist = _contexts(words, lengths, self.order)
        p, seen = self.prob(target, hist)
        return np.log(p), lengths + 1, seen

    def prob(self, target: np.ndarray, hist: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """P(word | history) for word hashes `target` and `hist[j-1]` = the word j positions
        before (hashes, `BOS` at a start); also whether each word was seen in training."""
        keys, ctxs = _ngram_keys(target, hist, self.order)
        p = np.full(len(target), 1.0 / self.vocab_size)
        seen = np.zeros(len(target), bool)
        for lv, key, ctx in zip(self.levels, keys, ctxs):
            ci, cfound = _lookup(lv.ctx_keys, ctx)
            ki, kfound = _lookup(lv.keys, key)
            c = np.where(kfound, lv.counts[ki] if len(lv.counts) else 0, 0).astype(np.float64)
            d = np.where(c >= 3, lv.d[2], np.where(c == 2, lv.d[1], np.where(c == 1, lv.d[0], 0.0)))
            tot = lv.ctx_total[ci] if len(lv.ctx_total) else np.ones(len(ctx))
            gam = lv.ctx_gamma[ci] if len(lv.ctx_gamma) else np.zeros(len(ctx))
            p = np.where(cfound, (np.maximum(c - d, 0.0) + gam * p) / np.where(cfound, tot, 1.0), p)
            if lv is self.levels[0]:
                seen = kfound
        return p, seen

    def score(self, texts: Iterable[str] | pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """(sum of natural-log probabilities, number of predicted tokens) per document."""
        lp, n, _ = self._token_logprob(texts)
        doc = np.repeat(np.arange(len(n)), n)
        return np.bincount(doc, weights=lp, minlength=len(n)), n

    def doc_perplexity(self, texts: Iterable[str] | pa.Array) -> np.ndarray:
        """Perplexity of each document (e.g. a CCNet-style quality signal)."""
        s, n = self.score(texts)
        return np.exp(-s / n)

    def evaluate(self, texts: Iterable[str] | pa.Array) -> dict[str, float]:
        """Corpus perplexity, token count and out-of-vocabulary rate (tokens never seen in
        training, `</s>` excluded from neither count)."""
        lp, n, seen = self._token_logprob(texts)
        return {"perplexity": float(np.exp(-lp.mean())) if len(lp) else float("nan"),
                "tokens": int(len(lp)), "oov_rate": float(1.0 - seen.mean()) if len(lp) else 0.0}

    def perplexity(self, texts: Iterable[str] | pa.Array) -> float:
        return self.evaluate(texts)["perplexity"]

    def save(self, path: str | Path) -> None:
        """One .npz file (arrays per order plus a JSON header), written atomically."""
        import io

        import fsspec

        from textsieve.io.atomic import atomic_open

        arrays: dict[str, np.ndarray] = {}
        for i, lv in enumerate(self.levels):
            for f in ("keys", "counts", "ctx_keys", "ctx_total", "ctx_gamma"):
                arrays[f"l{i + 1}_{f}"] = getattr(lv, f)
        header = {"kind": "textsieve.ngram_lm", "version": 1, "order": self.order, "vocab_size": self.vocab_size,
                  "tokens": self.tokens, "documents": self.documents,
                  "discounts": [list(lv.d) for lv in self.levels]}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        fs, p = fsspec.core.url_to_fs(str(path))
        with atomic_open(fs, p, "wb") as fh:
            fh.write(buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> "NgramLM":
        import fsspec

        with fsspec.open(str(path), "rb") as fh, np.load(fh) as z:
            header = json.loads(bytes(z["header"]).decode())
            if header.get("kind") != "textsieve.ngram_lm" or header.get("version") != 1:
                raise ValueError(f"{path}: not a textsieve n-gram LM file (version 1)")
            levels = [_Level(*(z[f"l{i + 1}_{f}"] for f in ("keys", "counts", "ctx_keys", "ctx_total", "ctx_gamma")),
                             tuple(header["discounts"][i])) for i in range(header["order"])]
        return cls(header["order"], header["vocab_size"], levels, header["tokens"], header["documents"])
