"""Seeded spherical mini-batch k-means for semantic dedup (SemDeDup's first step), on the CPU.

Why k-means at all: comparing every pair of documents is n^2; SemDeDup compares only pairs
inside one k-means cluster, so the work is ~n * (average cluster size). A near-duplicate pair
split over two clusters is missed; with ~200 documents per cluster that is rare for pairs at
cosine >= 0.9 (measured in `benchmarks/dedup_semantic.py`).

Out-of-core: the fit reads a seeded random sample (`draw_sample`, one uniform draw per document
in corpus order, the chosen rows spilled to a float16 file), then mini-batches of it through a
memory map; assignment (`assign`) is done batch by batch as the caller streams the shards.

Deterministic: every random choice comes from `numpy.random.default_rng(seed)` streams, every
matrix product has a fixed shape (`BATCH`, `ROW_CHUNK` x `CENTER_CHUNK`) whatever `--memory`
says, and ties go to the lower centroid index, so the same input and seed give the same
centroids and assignments on every run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from textsieve.dedup.semantic_vectors import VectorSet
from textsieve.io.diskfull import disk_full_as_error

MAX_CLUSTERS = 50_000
DOCS_PER_CLUSTER = 200  # default k = n / 200 (SemDeDup's clusters hold a few hundred documents)
MIN_SAMPLE = 100_000  # default sample: at least this many documents ...
SAMPLE_PER_CLUSTER = 40  # ... and 40 per cluster
EPOCHS = 5  # passes of mini-batches over the sample
BATCH = 1024  # documents per mini-batch
ROW_CHUNK = 512  # rows x centroids per similarity block in `assign`
CENTER_CHUNK = 4096


def default_clusters(n_docs: int) -> int:
    """k when `--clusters` is not given: n / 200, within [1, 50,000]."""
    return int(min(MAX_CLUSTERS, max(1, round(n_docs / DOCS_PER_CLUSTER))))


def default_sample(k: int) -> int:
    """Documents the fit reads when `--sample` is not given."""
    return max(MIN_SAMPLE, SAMPLE_PER_CLUSTER * k)


def centroid_bytes(k: int, dim: int) -> int:
    """Memory of the centroids plus one update's scratch (float32)."""
    return 2 * k * dim * 4


def draw_sample(vs: VectorSet, size: int, seed: int, path: str, progress=None) -> int:
    """Write a uniform random sample of about `size` documents' vectors (all of them when the
    corpus is smaller) to `path` as raw float16 rows, in corpus order; returns the row count.
    One draw per document from one seeded stream, so the sample does not depend on batch sizes."""
    n = vs.table.n_docs
    p = 1.0 if size >= n else size / n
    rng = np.random.default_rng([seed, 0])
    count = 0
    with disk_full_as_error(path, written=lambda: count * vs.dim * 2), open(path, "wb") as fh:
        for i in range(len(vs.paths)):
            for _, v in vs.batches(i):
                chosen = v[rng.random(v.shape[0]) < p] if p < 1.0 else v
                fh.write(np.ascontiguousarray(chosen, dtype="<f2").tobytes())
                count += chosen.shape[0]
                if progress is not None:
                    progress.advance(v.shape[0], v.shape[0])
    return count


def assign(x: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nearest centroid index int32, its cosine float32) of each row of `x` (unit rows)."""
    x = np.asarray(x, dtype=np.float32)
    best = np.full(x.shape[0], -np.inf, dtype=np.float32)
    label = np.zeros(x.shape[0], dtype=np.int32)
    for r in range(0, x.shape[0], ROW_CHUNK):
        xr = x[r:r + ROW_CHUNK]
        for c in range(0, centroids.shape[0], CENTER_CHUNK):
            sims = xr @ centroids[c:c + CENTER_CHUNK].T
            arg = np.argmax(sims, axis=1)
            val = sims[np.arange(sims.shape[0]), arg]
            better = val > best[r:r + xr.shape[0]]  # strict: ties keep the lower index
            best[r:r + xr.shape[0]][better] = val[better]
            label[r:r + xr.shape[0]][better] = (arg[better] + c).astype(np.int32)
    return label, best


def _normalize(m: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(m, axis=1, keepdims=True)
    return np.where(norm > 0, m / np.maximum(norm, 1e-12), m).astype(np.float32)


@dataclass
class KMeansStats:
    clusters: int
    sample: int
    epochs: int
    batch: int
    empty_clusters: int


def fit(path: str, count: int, dim: int, k: int, seed: int, progress=None) -> tuple[np.ndarray, KMeansStats]:
    """Spherical mini-batch k-means (Sculley 2010, per-centre learning rate 1/count, centres
    renormalised) over the `count` float16 rows in `path`: float32 (k, dim) unit centroids.
    Initial centres: k distinct sample rows drawn with the seed."""
    k = max(1, min(k, count))
    sample = np.memmap(path, dtype="<f2", mode="r", shape=(count, dim)) if count else np.zeros((0, dim), "<f2")
    rng = np.random.default_rng([seed, 1])
    centroids = _normalize(np.asarray(sample[np.sort(rng.choice(count, k, replace=False))], dtype=np.float32))
    seen = np.zeros(k, dtype=np.float64)
    for _ in range(EPOCHS if k > 1 else 0):
        perm = rng.permutation(count)
        for s in range(0, count, BATCH):
            idx = np.sort(perm[s:s + BATCH])
            x = np.asarray(sample[idx], dtype=np.float32)
            label, _ = assign(x, centroids)
            order = np.argsort(label, kind="stable")
            lab = label[order]
            starts = np.flatnonzero(np.concatenate([[True], lab[1:] != lab[:-1]]))
            which = lab[starts]
            sums = np.add.reduceat(x[order], starts, axis=0)
            n_j = np.diff(np.concatenate([starts, [lab.shape[0]]])).astype(np.float64)
            seen[which] += n_j
            rate = (1.0 / seen[which]).astype(np.float32)[:, None]
            moved = centroids[which] + rate * (sums - n_j.astype(np.float32)[:, None] * centroids[which])
            centroids[which] = _normalize(moved)
            if progress is not None:
                progress.advance(idx.shape[0], idx.shape[0])
    del sample
    empty = int((seen == 0).sum()) if k > 1 else 0
    return centroids, KMeansStats(clusters=k, sample=count, epochs=EPOCHS if k > 1 else 0, batch=BATCH,
                                  empty_clusters=empty)


def remove(path: str) -> None:
    """Drop the sample file once the fit is done (the work folder goes at the end anyway)."""
    try:
        os.remove(path)
    except OSError:
        pass
