"""Paraphrase-style edits for the semantic dedup benchmark: sentence reorder and synonym swaps.

Why these: MinHash sees 13-word shingles, so a copy whose sentences are reordered or whose
words are swapped for near-synonyms shares few shingles with its original although a reader
sees the same text. SemDeDup is meant to catch exactly these.

The synonym list is built at run time from the corpora (nothing is committed): distributional
substitutes, i.e. words that occur in the same contexts. For every word of the vocabulary
(lower-case alphabetic, >= 4 letters, >= `min_count` occurrences) a context vector counts the
words directly left and right of it (over the `context` most frequent words), weighted by
positive PMI; each word's substitute is its nearest neighbour by cosine when that cosine is
>= `min_cosine` and the two are not one another's inflections (shared 4-letter prefix). This
is independent of the embedding model under test (a list built from WordLlama's own nearest
neighbours would flatter it). Substitutes found this way are mostly true synonyms or
co-hyponyms ("big"/"large", "monday"/"friday"), so a swap keeps the text's topic and form.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np

WORD = re.compile(r"[a-z]{4,}")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
PARAPHRASE_KINDS = ("sentence_reorder", "synonym_swap", "reorder_synonym")


def build_substitutes(texts: list[str], min_count: int = 20, context: int = 2000, min_cosine: float = 0.45,
                      max_words: int = 8000) -> dict[str, str]:
    """word -> distributional substitute (see the module doc)."""
    tokens = [re.findall(r"[a-z]+", t.lower()) for t in texts if t.isascii()]
    counts = Counter(w for ts in tokens for w in ts)
    ctx = {w: k for k, (w, _) in enumerate(counts.most_common(context))}
    vocab = [w for w, c in counts.most_common() if c >= min_count and WORD.fullmatch(w)][:max_words]
    index = {w: k for k, w in enumerate(vocab)}
    m = np.zeros((len(vocab), 2 * len(ctx)), np.float32)
    for ts in tokens:
        ids = np.array([index.get(w, -1) for w in ts], np.int64)
        cid = np.array([ctx.get(w, -1) for w in ts], np.int64)
        if ids.shape[0] < 2:
            continue
        left = (ids[1:] >= 0) & (cid[:-1] >= 0)  # word i+1 with its left neighbour i
        np.add.at(m, (ids[1:][left], cid[:-1][left]), 1.0)
        right = (ids[:-1] >= 0) & (cid[1:] >= 0)
        np.add.at(m, (ids[:-1][right], len(ctx) + cid[1:][right]), 1.0)
    total = float(m.sum())
    pw = m.sum(axis=1, keepdims=True) / total
    pc = m.sum(axis=0, keepdims=True) / total
    with np.errstate(divide="ignore"):
        ppmi = np.maximum(np.log(np.maximum(m / total, 1e-30) / np.maximum(pw * pc, 1e-30)), 0.0)
    ppmi[m == 0] = 0.0
    ppmi /= np.maximum(np.linalg.norm(ppmi, axis=1, keepdims=True), 1e-12)
    out: dict[str, str] = {}
    for s in range(0, len(vocab), 1000):
        sims = ppmi[s:s + 1000] @ ppmi.T
        sims[np.arange(sims.shape[0]), s + np.arange(sims.shape[0])] = -1.0
        best = np.argmax(sims, axis=1)
        for r, b in enumerate(best):
            w, v = vocab[s + r], vocab[int(b)]
            if sims[r, b] >= min_cosine and w[:4] != v[:4]:
                out[w] = v
    return out


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE.split(text) if s.strip()]


def reorder(text: str, rng: random.Random) -> str:
    """The text's sentences in a random order (lines kept as sentence boundaries too)."""
    parts = [s for line in text.split("\n") for s in sentences(line)]
    rng.shuffle(parts)
    return " ".join(parts)


def swap(text: str, subs: dict[str, str], share: float, rng: random.Random) -> tuple[str, int]:
    """Each word with a substitute is swapped with probability `share` (case of the first letter
    kept); returns (text, words swapped)."""
    n = 0

    def one(m: re.Match) -> str:
        nonlocal n
        w = m.group(0)
        v = subs.get(w.lower())
        if v is None or rng.random() >= share:
            return w
        n += 1
        return v.capitalize() if w[0].isupper() else v

    return re.sub(r"[A-Za-z]+", one, text), n


def paraphrase(text: str, kind: str, subs: dict[str, str], seed: int, share: float = 0.5) -> str:
    rng = random.Random(seed)
    if kind == "sentence_reorder":
        return reorder(text, rng)
    if kind == "synonym_swap":
        return swap(text, subs, share, rng)[0]
    if kind == "reorder_synonym":
        return swap(reorder(text, rng), subs, share, rng)[0]
    raise ValueError(f"unknown paraphrase kind {kind!r}")
