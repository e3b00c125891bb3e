"""A web-like duplicate corpus of any size, generated from the dev corpus (for the scale study in
``dedup_speed.py --scale-10m``).

Why not the dev corpus replicated: replication makes every document a near-duplicate, which is
nothing like the web. Here, as measured on crawls, most documents are unique and about 30% sit in
clusters whose sizes follow a heavy tail (a few boilerplate pages repeated thousands of times,
most clusters of 2-5):

* a **unique** document is 4 chunks of 40-80 words, each cut at a random place of a random dev
  document, so two unique documents share (almost) no 13-word shingle;
* a **cluster** has a base document made the same way; each member is the base with one of its
  last 3 words replaced (a changed footer, a date), so two members differ in at most 6 of their
  13-word shingles and stay above a Jaccard of 0.9: at threshold 0.8 a cluster is found whole
  unless LSH misses it;
* cluster sizes are drawn from a Zipf law (exponent 2) cut at ``max_cluster``; the largest is
  set to ``max_cluster`` once ``n`` leaves room for it; members are scattered over the whole
  corpus (a random permutation), so they land in different shards.

Everything follows from ``seed``: the same ``n`` gives the same bytes, and the first ``m``
documents of a size-``n`` corpus are *not* a size-``m`` corpus (clusters span the whole range) -
the study takes its 1M subset as the first shards of the 10M corpus.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

CHUNKS = 4
CHUNK_WORDS = (40, 80)


def cluster_sizes(n: int, share: float = 0.3, max_cluster: int = 10_000, seed: int = 0) -> list[int]:
    """Sizes (each >= 2) summing to about ``share * n``: Zipf(2) draws, the first set to the cap."""
    rng = np.random.default_rng(seed)
    target = int(share * n)
    sizes: list[int] = [max_cluster] if target >= 20 * max_cluster else []
    total = sum(sizes)
    while total < target:
        s = int(min(rng.zipf(2.0) + 1, max_cluster, target - total))
        if s < 2:
            break
        sizes.append(s)
        total += s
    return sizes


def _words(texts: list[str]) -> list[list[str]]:
    return [w for w in (t.split() for t in texts) if len(w) >= CHUNK_WORDS[1]]


def _base(rng: random.Random, words: list[list[str]]) -> list[str]:
    out: list[str] = []
    for _ in range(CHUNKS):
        src = words[rng.randrange(len(words))]
        k = rng.randint(*CHUNK_WORDS)
        at = rng.randrange(len(src) - k + 1)
        out += src[at:at + k]
    return out


def generate(texts: list[str], n: int, folder: Path, *, shard_docs: int = 250_000, seed: int = 0,
             max_cluster: int = 10_000) -> dict[str, int]:
    """Write ``n`` documents as ``part-NNNNN.jsonl`` shards of ``shard_docs`` under ``folder``.
    Returns counts: documents, clusters, clustered documents, largest cluster."""
    folder.mkdir(parents=True, exist_ok=True)
    words = _words(texts)
    sizes = cluster_sizes(n, max_cluster=max_cluster, seed=seed)
    label = np.full(n, -1, dtype=np.int64)
    clustered = sum(sizes)
    slots = np.random.default_rng(seed + 1).permutation(n)[:clustered]
    label[slots] = np.repeat(np.arange(len(sizes)), sizes)
    vocab = [w for ws in words[:200] for w in ws]
    bases: dict[int, list[str]] = {}
    rng = random.Random(seed)
    for start in range(0, n, shard_docs):
        with open(folder / f"part-{start // shard_docs:05d}.jsonl", "w", encoding="utf-8") as fh:
            lines = []
            for k in range(start, min(start + shard_docs, n)):
                c = int(label[k])
                if c < 0:
                    doc = _base(rng, words)
                else:
                    base = bases.get(c)
                    if base is None:
                        base = bases[c] = _base(random.Random(f"{seed}/{c}"), words)
                    doc = list(base)
                    doc[len(doc) - 1 - rng.randrange(3)] = rng.choice(vocab)
                lines.append(json.dumps({"id": f"web/{k}", "text": " ".join(doc)}, ensure_ascii=False))
            fh.write("\n".join(lines) + "\n")
    return {"docs": n, "clusters": len(sizes), "clustered": clustered, "largest": max(sizes, default=0)}
