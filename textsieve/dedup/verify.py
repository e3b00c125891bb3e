"""Exact Jaccard similarity of 13-word shingle sets (spec §7.1), to verify LSH candidate pairs.

MinHash-LSH only *estimates* similarity; `--verify exact` re-reads the texts and computes the
true Jaccard of the shingle sets MinHash was defined on (normalized words §3.3, overlapping
13-word windows, as a set), so a pair is kept only if it really is at least T similar.
"""

from __future__ import annotations

from textsieve.text.normalize import normalize

NGRAM = 13  # = textsieve.dedup.minhash.NGRAM (§7.1); not imported from there, which loads numba


def shingles(text: str, ngram: int = NGRAM) -> frozenset[str]:
    """The set of `ngram`-word shingles of the normalized words of `text` (empty if too short)."""
    words = normalize(text).split()
    return frozenset(" ".join(words[i:i + ngram]) for i in range(len(words) - ngram + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def exact_jaccard_pairs(pairs: list[tuple[str, str]], ngram: int = NGRAM) -> list[float]:
    """Jaccard of each (text, text) pair; each distinct text is shingled once."""
    cache: dict[int, frozenset] = {}

    def sh(text: str) -> frozenset:
        key = id(text)
        if key not in cache:
            cache[key] = shingles(text, ngram)
        return cache[key]

    return [jaccard(sh(a), sh(b)) for a, b in pairs]
