"""Interpolated modified Kneser-Ney word n-gram LMs: the one counting and smoothing code behind
`textsieve eval lm` (an `NgramLM`, scored by interpolating at query time) and `train lm`, whose
models give the `ts_perplexity_*` signals (`ngram_lm_model.train_kn`, which reads the same fit out
in ARPA's backoff form with `backoff_form`).

Why Kneser-Ney: perplexity of a cheap LM is the classic proxy for "is this text like the target"
(DSIR, CCNet). Modified Kneser-Ney (Chen & Goodman 1998, "An empirical study of smoothing
techniques", §3: three discounts D1, D2, D3+ per order estimated from count-of-counts,
interpolation with the lower order, lower orders built from continuation counts) is the
best-known smoothing for n-gram LMs and is what KenLM implements; simpler schemes (add-k,
Witten-Bell) give much worse perplexity on small training sets.

How: every word is a 64-bit hash and an n-gram's key folds its words' hashes (`NgramKeys`), so
counting is `np.unique` over key arrays and lookup is `np.searchsorted`; with 64-bit keys,
collisions are negligible (~1e-5 for 10^7 n-grams).

What a caller chooses, because the two users have always differed and their numbers must stay
what they were (perplexities in reports, signal values, model files):

* the `Tokenizer`: texts to word hashes, and the n-gram key fold. `UNICODE_WORDS` (here, eval lm)
  lower-cases runs of Unicode letters, digits and '_'; `ngram_lm_model.RPV2_WORDS` (the signals)
  splits RPv2-normalized text, digits as 0. Perplexities are only comparable under one tokenizer
  (and, for `NgramLM`, one `vocab_size`).
* the `Variant`: how a document starts and how the discounts are bounded. `PADDED` (eval lm) gives
  every token a full history of `<s>` and continuation-counts n-grams starting with `<s>` like
  the others (a simplification that touches only each document's first words); `KENLM` (train lm)
  is KenLM's `lmplz`: one sentence `<s> w1 … wn </s>`, n-grams starting with `<s>` keep raw counts
  (nothing precedes `<s>` to continue from), and a `<s>` unigram of count 0 carries its backoff.
* the readout. `NgramLM.prob` computes (c − D + γ·p_lower) / total in float64 at query time;
  `backoff_form` stores (c − D) / total + γ/total · p_lower per seen n-gram as float32 log10, as
  ARPA files do. The two round differently, so each keeps its own arithmetic.

The lowest order interpolates with a uniform distribution over `base_vocab` words, so an unseen
word gets a small non-zero probability. Perplexity = exp(-mean natural-log probability) over all
predicted tokens (`</s>` included).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

import numpy as np
import pyarrow as pa

from textsieve.io.arrow_arrays import to_numpy

Texts: TypeAlias = Iterable[str | None] | pa.Array | pa.ChunkedArray
KeyFn: TypeAlias = Callable[[np.ndarray, np.ndarray], np.ndarray]

DEFAULT_ORDER = 3
DEFAULT_VOCAB = 1 << 20


# ---------------------------------------------------------------------------------------------
# tokens and n-gram keys
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NgramKeys:
    """How an n-gram's 64-bit key is folded from its words' hashes.

    `fold="left"`: key(w1…wn) = combine(key(w1…wn-1), wn), so a key extends its context's key;
    `fold="right"`: key(w1…wn) = combine(key(w2…wn), w1), so it extends its suffix's key (what a
    backoff scorer walks). A unigram's key is its word's hash; the empty n-gram's key is 0."""

    bos: np.uint64
    eos: np.uint64
    combine: KeyFn
    fold: Literal["left", "right"]

    def key(self, words: Sequence[np.ndarray], size: int) -> np.ndarray:
        """Keys of `size` n-grams whose i-th words (oldest first) are `words[i]`."""
        if not words:
            return np.zeros(size, np.uint64)
        if self.fold == "left":
            k = words[0]
            for w in words[1:]:
                k = self.combine(k, w)
        else:
            k = words[-1]
            for w in reversed(words[:-1]):
                k = self.combine(k, w)
        return k


@dataclass(frozen=True)
class Tokenizer:
    """Texts to word hashes: `split(texts)` gives (the hashes of all documents' words
    concatenated, the number of words per document). `name` is recorded in saved models."""

    name: str
    split: Callable[[Texts], tuple[np.ndarray, np.ndarray]]
    keys: NgramKeys


_M64 = np.uint64(0x9E3779B97F4A7C15)
_SPLIT = r"[^\p{L}\p{N}_]+"


def _splitmix(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Key of the sequence (key a, then word b): order-sensitive 64-bit fold."""
    return _splitmix(a * _M64 + b)


def xxh3_words(words: Sequence[str]) -> np.ndarray:
    """64-bit xxh3 of each word's UTF-8 bytes (`UNICODE_WORDS`' word hash)."""
    import xxhash

    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words))


def unicode_words(texts: Texts) -> tuple[np.ndarray, np.ndarray]:
    """`UNICODE_WORDS`' split, vectorised in Arrow: lower-case, split on runs of characters that
    are not letters, digits or '_', drop empty pieces, hash each distinct word once."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    arr = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(list(texts), type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    arr = pc.fill_null(arr, "")
    pieces = pc.split_pattern_regex(pc.utf8_lower(arr), _SPLIT)
    parent = np.asarray(to_numpy(pc.list_parent_indices(pieces)), dtype=np.int64)
    flat = pc.list_flatten(pieces)
    keep = np.asarray(to_numpy(pc.greater(pc.utf8_length(flat), 0)), dtype=bool)
    flat = flat.filter(pa.array(keep))
    lengths = np.bincount(parent[keep], minlength=n).astype(np.int64)
    enc = pc.dictionary_encode(flat)
    codes = np.asarray(to_numpy(enc.indices), dtype=np.int64)
    table = xxh3_words(enc.dictionary.to_pylist())
    return table[codes] if len(codes) else np.zeros(0, np.uint64), lengths


UNICODE_WORDS = Tokenizer(
    "unicode-words-lower+xxh3", unicode_words,
    NgramKeys(bos=xxh3_words(["\x00<s>"])[0], eos=xxh3_words(["\x00</s>"])[0], combine=_pair, fold="left"))


def take_documents(words: np.ndarray, lengths: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of documents `docs` (indices, in that order; repeats allowed) of a tokenized
    corpus, in a `Tokenizer`'s format: a subset is fitted without tokenizing it again."""
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    sel_len = lengths[docs]
    if sel_len.sum() == 0:
        return np.zeros(0, words.dtype), sel_len
    offs = np.concatenate(([0], np.cumsum(sel_len)[:-1]))
    idx = np.arange(int(sel_len.sum()), dtype=np.int64) - np.repeat(offs, sel_len) + np.repeat(starts[docs], sel_len)
    return words[idx], sel_len


def histories(words: np.ndarray, lengths: np.ndarray, order: int, bos: object,
              eos: object) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Predicted tokens (each document's words, then `eos`), for j = 1..order-1 the token j
    positions before each (`bos` before the document start), and each token's position in its
    document. Works on any per-word values: hashes, or the word ids of an ARPA export."""
    n_docs = len(lengths)
    total = int(lengths.sum()) + n_docs
    seq_len = lengths + 1
    starts = np.concatenate(([0], np.cumsum(seq_len)[:-1])).astype(np.int64)
    pos = np.arange(total, dtype=np.int64) - np.repeat(starts, seq_len)
    target = np.full(total, eos, dtype=words.dtype)
    target[pos < np.repeat(lengths, seq_len)] = words
    hist = []
    for j in range(1, order):
        h = np.full(total, bos, dtype=words.dtype)
        ok = pos >= j
        h[ok] = target[np.nonzero(ok)[0] - j]
        hist.append(h)
    return target, hist, pos


def ngram_words(target: np.ndarray, hist: list[np.ndarray], n: int) -> list[np.ndarray]:
    """The words of the n-grams ending at each token, oldest first."""
    return [hist[j - 1] for j in range(n - 1, 0, -1)] + [target]


# ---------------------------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Variant:
    """Where the two LMs differ (see the module docstring)."""

    pad_history: bool  # order-1 `<s>` before each document (else one, with a `<s>` unigram of count 0)
    raw_bos_counts: bool  # n-grams starting with `<s>` keep raw counts below the top order
    clamp_discounts: bool  # clamp D1, D2, D3+ to [0.05, k] (else fall back to 0.5, 1, 1.5 outside (0, k))


PADDED = Variant(pad_history=True, raw_bos_counts=False, clamp_discounts=False)
KENLM = Variant(pad_history=False, raw_bos_counts=True, clamp_discounts=True)

_FALLBACK = (0.5, 1.0, 1.5)
_EMPTY, _EMPTY_KEYS, _EMPTY_INDEX = np.zeros(0), np.zeros(0, np.uint64), np.zeros(0, np.int64)


@dataclass
class Level:
    """One order of a fitted model, what `NgramLM` scores with and saves."""

    keys: np.ndarray  # sorted n-gram keys
    counts: np.ndarray  # int64: raw (top order, `<s>`-initial with raw_bos_counts) or continuation counts
    ctx_keys: np.ndarray  # sorted context keys
    ctx_total: np.ndarray  # float64 sum of counts in the context
    ctx_gamma: np.ndarray  # float64 D1*N1 + D2*N2 + D3*N3+ of the context (interpolation mass numerator)
    d: tuple[float, float, float]


@dataclass
class FitLevel(Level):
    """A `Level` as `fit` returns it, plus what the backoff readout and an ARPA export need."""

    ctx_inv: np.ndarray  # index into ctx_keys of each n-gram's context
    suffix: np.ndarray  # key of each n-gram's lower-order suffix w2…wn (0 for unigrams)
    first: np.ndarray  # index of a token where the n-gram ends (-1: the `<s>` unigram)
    bos_start: np.ndarray  # whether the n-gram starts with `<s>`


def discounts(counts: np.ndarray, clamp: bool) -> tuple[float, float, float]:
    """Chen & Goodman's modified-KN discounts D1, D2, D3+ from count-of-counts n1..n4; the fixed
    (0.5, 1.0, 1.5) when the data are too small to estimate them."""
    n1, n2, n3, n4 = (int(np.count_nonzero(counts == k)) for k in (1, 2, 3, 4))
    if min(n1, n2, n3, n4) == 0:
        return _FALLBACK
    y = n1 / (n1 + 2 * n2)
    d1, d2, d3 = 1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3
    if clamp:
        return float(min(max(d1, 0.05), 1)), float(min(max(d2, 0.05), 2)), float(min(max(d3, 0.05), 3))
    return (d1 if 0 < d1 < 1 else 0.5), (d2 if 0 < d2 < 2 else 1.0), (d3 if 0 < d3 < 3 else 1.5)


def discount_of(counts: np.ndarray, d: tuple[float, float, float]) -> np.ndarray:
    """The discount of each n-gram by its count (0 for count 0)."""
    return np.where(counts >= 3, d[2], np.where(counts == 2, d[1], np.where(counts == 1, d[0], 0.0)))


def fit(words: np.ndarray, lengths: np.ndarray, order: int, keys: NgramKeys, variant: Variant) -> list[FitLevel]:
    """Count the n-grams (orders 1..order) of tokenized documents and estimate the discounts and
    each context's total and interpolation mass."""
    if len(lengths) == 0:
        raise ValueError("cannot fit a language model on no documents")
    target, hist, pos = histories(words, lengths, order, keys.bos, keys.eos)
    levels: list[FitLevel] = []
    contexts: list[np.ndarray] = []
    raw: list[np.ndarray] = []
    for n in range(1, order + 1):
        cols = ngram_words(target, hist, n)
        occ = None if variant.pad_history else np.flatnonzero(pos >= n - 2)  # inside `<s> w1 … </s>`
        if occ is not None:
            cols = [c[occ] for c in cols]
        uniq, first, cnt = np.unique(keys.key(cols, len(cols[0])), return_index=True, return_counts=True)
        tok = first if occ is None else occ[first]
        at = [c[first] for c in cols]  # the words of each n-gram (its key fixes them)
        ctx, suffix = keys.key(at[:-1], len(uniq)), keys.key(at[1:], len(uniq))
        bos_start = pos[tok] < n - 1
        if n == 1 and not variant.pad_history:  # the `<s>` unigram: never predicted, count 0
            i = int(np.searchsorted(uniq, keys.bos))
            uniq, cnt = np.insert(uniq, i, keys.bos), np.insert(cnt, i, 0)
            tok, ctx, suffix = np.insert(tok, i, -1), np.insert(ctx, i, 0), np.insert(suffix, i, 0)
            bos_start = np.insert(bos_start, i, True)
        contexts.append(ctx)
        raw.append(cnt.astype(np.int64))
        levels.append(FitLevel(uniq, raw[-1], _EMPTY_KEYS, _EMPTY, _EMPTY, _FALLBACK, _EMPTY_INDEX, suffix, tok,
                               bos_start))
    for n in range(1, order):  # continuation counts: distinct extensions to the left
        lv, higher = levels[n - 1], levels[n]
        cont = np.bincount(np.searchsorted(lv.keys, higher.suffix), minlength=len(lv.keys)).astype(np.int64)
        lv.counts = np.where(lv.bos_start, raw[n - 1], cont) if variant.raw_bos_counts else cont
    for lv, ctx in zip(levels, contexts):
        lv.d = discounts(lv.counts, variant.clamp_discounts)
        lv.ctx_keys, lv.ctx_inv = np.unique(ctx, return_inverse=True)
        m = len(lv.ctx_keys)  # float64 even when empty (an order longer than every document)
        lv.ctx_total = np.bincount(lv.ctx_inv, weights=lv.counts, minlength=m).astype(np.float64, copy=False)
        lv.ctx_gamma = np.bincount(lv.ctx_inv, weights=discount_of(lv.counts, lv.d),
                                   minlength=m).astype(np.float64, copy=False)
    return levels


def ngram_keys(keys: NgramKeys, target: np.ndarray, hist: list[np.ndarray],
               order: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """For n = 1..order: the key of the n-gram ending at each token, and of its (n-1)-word
    context (all zeros for n = 1)."""
    out_keys, out_ctx = [], []
    for n in range(1, order + 1):
        cols = ngram_words(target, hist, n)
        out_keys.append(keys.key(cols, len(target)))
        out_ctx.append(keys.key(cols[:-1], len(target)))
    return out_keys, out_ctx


# ---------------------------------------------------------------------------------------------
# readouts
# ---------------------------------------------------------------------------------------------

def backoff_form(levels: list[FitLevel], base_vocab: int) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """The fitted model in ARPA's backoff form: log10 p (float32) of every n-gram of every
    order, log10 backoff (float32) of every context on its (n-1)-gram's row (0 elsewhere), and
    the probability of an unseen word (only the uniform share). Needs a `KENLM`-style fit: its
    `<s>` unigram (probability 0, logged as -99) is where the backoff of context `<s>` goes."""
    logprob: list[np.ndarray] = []
    backoff = [np.zeros(len(lv.keys), dtype=np.float32) for lv in levels]
    prob_lower = np.zeros(0)
    unk_p = 0.0
    for n, lv in enumerate(levels, start=1):
        a = lv.counts.astype(np.float64)
        gamma = np.divide(lv.ctx_gamma, lv.ctx_total, out=np.ones_like(lv.ctx_gamma), where=lv.ctx_total > 0)
        disc = np.maximum(a - discount_of(a, lv.d), 0.0) / np.maximum(lv.ctx_total[lv.ctx_inv], 1e-300)
        if n == 1:
            lower = np.full(len(a), 1.0 / base_vocab)
        else:
            lower = prob_lower[np.searchsorted(levels[n - 2].keys, lv.suffix)]
        p = disc + gamma[lv.ctx_inv] * lower
        if n > 1:  # the context's backoff weight lives on its (n-1)-gram entry
            where = np.searchsorted(levels[n - 2].keys, lv.ctx_keys)
            backoff[n - 2][where] = np.log10(gamma).astype(np.float32)
        if n == 1:
            unk_p = float(gamma[0] / base_vocab)
            p = np.where(lv.bos_start, 0.0, p)  # <s> is never predicted
        prob_lower = p
        with np.errstate(divide="ignore"):
            logprob.append(np.where(p > 0, np.log10(np.maximum(p, 1e-300)), -99.0).astype(np.float32))
    return logprob, backoff, unk_p


def _lookup(sorted_keys: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.searchsorted(sorted_keys, q)
    idx = np.minimum(idx, max(len(sorted_keys) - 1, 0))
    found = sorted_keys[idx] == q if len(sorted_keys) else np.zeros(len(q), bool)
    return idx, found


_FIELDS = ("keys", "counts", "ctx_keys", "ctx_total", "ctx_gamma")


class NgramLM:
    """Interpolated modified Kneser-Ney word n-gram LM scored at query time (the `PADDED`
    variant; see the module docstring). `vocab_size`: the open vocabulary the lowest order
    interpolates with uniformly."""

    def __init__(self, order: int, vocab_size: int, levels: Sequence[Level], tokens: int, documents: int,
                 tokenizer: Tokenizer = UNICODE_WORDS):
        self.order, self.vocab_size, self.levels = order, vocab_size, list(levels)
        self.tokens, self.documents = tokens, documents  # training size
        self.tokenizer = tokenizer

    @classmethod
    def fit(cls, texts: Texts, order: int = DEFAULT_ORDER, vocab_size: int = DEFAULT_VOCAB,
            tokenizer: Tokenizer = UNICODE_WORDS) -> NgramLM:
        """Count n-grams of `texts` (one document each) and estimate the smoothed model."""
        words, lengths = tokenizer.split(texts)
        return cls.fit_tokens(words, lengths, order=order, vocab_size=vocab_size, tokenizer=tokenizer)

    @classmethod
    def fit_tokens(cls, words: np.ndarray, lengths: np.ndarray, order: int = DEFAULT_ORDER,
                   vocab_size: int = DEFAULT_VOCAB, tokenizer: Tokenizer = UNICODE_WORDS) -> NgramLM:
        """Fit on documents `tokenizer` already split, e.g. a subset of a tokenized pool
        (`take_documents`) without tokenizing again."""
        if len(lengths) == 0:
            raise ValueError("cannot fit a language model on no documents")
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        levels = fit(words, lengths, order, tokenizer.keys, PADDED)
        slim = [Level(lv.keys, lv.counts, lv.ctx_keys, lv.ctx_total, lv.ctx_gamma, lv.d) for lv in levels]
        return cls(order, vocab_size, slim, int(lengths.sum()), len(lengths), tokenizer)

    def _token_logprob(self, texts: Texts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        words, lengths = self.tokenizer.split(texts)
        target, hist, _ = histories(words, lengths, self.order, self.tokenizer.keys.bos, self.tokenizer.keys.eos)
        p, seen = self.prob(target, hist)
        return np.log(p), lengths + 1, seen

    def prob(self, target: np.ndarray, hist: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """P(word | history) for word hashes `target` and `hist[j-1]` = the word j positions
        before (hashes, the tokenizer's `bos` at a start); also whether each word was seen in training."""
        keys, ctxs = ngram_keys(self.tokenizer.keys, target, hist, self.order)
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

    def score(self, texts: Texts) -> tuple[np.ndarray, np.ndarray]:
        """(sum of natural-log probabilities, number of predicted tokens) per document."""
        lp, n, _ = self._token_logprob(texts)
        doc = np.repeat(np.arange(len(n)), n)
        return np.bincount(doc, weights=lp, minlength=len(n)), n

    def doc_perplexity(self, texts: Texts) -> np.ndarray:
        """Perplexity of each document (e.g. a CCNet-style quality signal)."""
        s, n = self.score(texts)
        return np.exp(-s / n)

    def evaluate(self, texts: Texts) -> dict[str, float]:
        """Corpus perplexity, token count and out-of-vocabulary rate (tokens never seen in
        training, `</s>` excluded from neither count)."""
        lp, n, seen = self._token_logprob(texts)
        return {"perplexity": float(np.exp(-lp.mean())) if len(lp) else float("nan"),
                "tokens": int(len(lp)), "oov_rate": float(1.0 - seen.mean()) if len(lp) else 0.0}

    def perplexity(self, texts: Texts) -> float:
        return self.evaluate(texts)["perplexity"]

    def save(self, path: str | Path) -> None:
        """One .npz file (arrays per order plus a JSON header), written atomically. The header
        names the tokenizer when it is not `UNICODE_WORDS` (files written before it had none)."""
        import io

        import fsspec

        from textsieve.io.atomic import atomic_open

        arrays: dict[str, np.ndarray] = {}
        for i, lv in enumerate(self.levels):
            for f in _FIELDS:
                arrays[f"l{i + 1}_{f}"] = getattr(lv, f)
        header: dict[str, object] = {
            "kind": "textsieve.ngram_lm", "version": 1, "order": self.order, "vocab_size": self.vocab_size,
            "tokens": self.tokens, "documents": self.documents, "discounts": [list(lv.d) for lv in self.levels]}
        if self.tokenizer.name != UNICODE_WORDS.name:
            header["tokenizer"] = self.tokenizer.name
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez_compressed(buf, allow_pickle=False, **arrays)
        fs, p = fsspec.core.url_to_fs(str(path))
        with atomic_open(fs, p, "wb") as fh:
            fh.write(buf.getvalue())

    @classmethod
    def load(cls, path: str | Path, tokenizer: Tokenizer = UNICODE_WORDS) -> NgramLM:
        """A model `save` wrote; `tokenizer` must be the one it was trained with."""
        import fsspec

        with fsspec.open(str(path), "rb") as fh, np.load(fh) as z:
            header = json.loads(bytes(z["header"]).decode())
            if header.get("kind") != "textsieve.ngram_lm" or header.get("version") != 1:
                raise ValueError(f"{path}: not a textsieve n-gram LM file (version 1)")
            name = header.get("tokenizer", UNICODE_WORDS.name)
            if name != tokenizer.name:
                raise ValueError(f"{path}: trained with tokenizer {name!r}, not {tokenizer.name!r}")
            levels = []
            for i in range(header["order"]):
                k, c, ck, ct, cg = (z[f"l{i + 1}_{f}"] for f in _FIELDS)
                d1, d2, d3 = header["discounts"][i]
                levels.append(Level(k, c, ck, ct, cg, (d1, d2, d3)))
        return cls(header["order"], header["vocab_size"], levels, header["tokens"], header["documents"], tokenizer)
