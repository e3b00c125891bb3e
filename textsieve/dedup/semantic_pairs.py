"""SemDeDup's second step: within each k-means cluster, pairs at cosine >= 1 - eps, then
connected components, under a memory budget.

Spill (`Spill`): while the shards are streamed, every document becomes one record
(k-means cluster, corpus ordinal, keep key, float16 vector) appended to one of P partition
files (P chosen so that a partition is about a quarter of the budget; partition = cluster
mod P). Records arrive in corpus order, so within a partition, and within a cluster, members
are in corpus order.

Pairs (`partition_results`): a partition is loaded (memory-mapped when it is larger than half
the budget), its records grouped by cluster, and each cluster's similarity matrix computed in
fixed `BLOCK` x `BLOCK` tiles (4 MB), so a cluster of any size never needs its n^2 matrix;
a cluster whose float32 vectors exceed a quarter of the budget is re-read tile by tile.
Each tile's edges are merged at once into one union-find forest per eps (roots hooked onto
the smallest root with `dedup.components`), so edges are never collected: a cluster of m
identical documents costs m^2/2 dot products but O(m) memory.

Components: root = the member earliest in corpus order, whose ordinal is the component id;
keep = the member with the largest keep key, ties to the earliest (keys are 0 for
keep=first, the length for keep=longest, the column's value otherwise; -inf for nulls).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from textsieve.dedup.components import components
from textsieve.io.diskfull import disk_full_as_error

BLOCK = 1024  # rows per similarity tile: a 1024 x 1024 float32 tile is 4 MB
LOAD_SHARE = 2  # a partition is read into memory when it fits in budget / LOAD_SHARE, else memory-mapped
FIT_SHARE = 4  # a cluster's float32 vectors are held when they fit in budget / FIT_SHARE, else re-read per tile


def record_dtype(dim: int) -> np.dtype:
    """One spilled document: k-means cluster, corpus ordinal, keep key, vector."""
    return np.dtype([("c", "<i4"), ("o", "<i8"), ("key", "<f8"), ("v", "<f2", (dim,))])


def partition_count(n_docs: int, dim: int, k: int, budget: int) -> int:
    """Partitions so that one holds about a quarter of the budget (at least 1, at most k)."""
    total = n_docs * record_dtype(dim).itemsize
    return int(max(1, min(k, -(-total // max(1, budget // 4)))))


class Spill:
    """Per-partition record files, appended from a bounded buffer."""

    def __init__(self, work: str, parts: int, dim: int, buffer_bytes: int):
        self.work, self.parts, self.dtype = work, parts, record_dtype(dim)
        self.counts = np.zeros(parts, dtype=np.int64)
        self._buf: list[list[np.ndarray]] = [[] for _ in range(parts)]
        self._held = 0
        self._limit = max(self.dtype.itemsize * 256, buffer_bytes)
        self.bytes_written = 0

    def path(self, p: int) -> str:
        return os.path.join(self.work, f"part-{p:05d}.bin")

    def add(self, cluster: np.ndarray, ordinal: np.ndarray, key: np.ndarray, vectors: np.ndarray) -> None:
        rec = np.empty(cluster.shape[0], dtype=self.dtype)
        rec["c"], rec["o"], rec["key"], rec["v"] = cluster, ordinal, key, vectors
        part = cluster % self.parts
        order = np.argsort(part, kind="stable")  # keeps corpus order within a partition
        cuts = np.searchsorted(part[order], np.arange(self.parts + 1))
        for p in np.flatnonzero(np.diff(cuts)):
            chunk = rec[order[cuts[p]:cuts[p + 1]]]
            self._buf[p].append(chunk)
            self.counts[p] += chunk.shape[0]
            self._held += chunk.nbytes
        if self._held >= self._limit:
            self.flush()

    def flush(self) -> None:
        for p, chunks in enumerate(self._buf):
            if not chunks:
                continue
            path = self.path(p)
            data = np.concatenate(chunks)
            with disk_full_as_error(path, written=lambda: self.bytes_written), open(path, "ab") as fh:
                fh.write(data.tobytes())
            self.bytes_written += data.nbytes
            chunks.clear()
        self._held = 0

    def load(self, p: int, budget: int) -> np.ndarray:
        """Partition p's records: read in when they fit in half the budget, else memory-mapped."""
        n = int(self.counts[p])
        if n == 0:
            return np.zeros(0, dtype=self.dtype)
        if n * self.dtype.itemsize <= budget // LOAD_SHARE:
            return np.fromfile(self.path(p), dtype=self.dtype, count=n)
        return np.memmap(self.path(p), dtype=self.dtype, mode="r", shape=(n,))


@dataclass
class EpsResult:
    """Members of duplicate components (size >= 2) at one eps, in no particular order."""

    ordinal: list[np.ndarray] = field(default_factory=list)
    cid: list[np.ndarray] = field(default_factory=list)
    size: list[np.ndarray] = field(default_factory=list)
    keep: list[np.ndarray] = field(default_factory=list)
    pairs: int = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ordinal int64, cid int64, size int32, keep bool), sorted by ordinal."""
        if not self.ordinal:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, bool))
        o = np.concatenate(self.ordinal)
        order = np.argsort(o, kind="stable")
        return (o[order], np.concatenate(self.cid)[order], np.concatenate(self.size)[order],
                np.concatenate(self.keep)[order])


def _merge(parent: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`parent` (every node pointing at its root, the smallest node of its component) after
    adding the edges (a, b)."""
    ra, rb = parent[a], parent[b]
    cross = ra != rb
    if not cross.any():
        return parent
    nodes, label = components(np.stack([ra[cross], rb[cross]], axis=1).astype(np.uint64))
    nodes = nodes.astype(np.int64)
    remap = np.arange(parent.shape[0], dtype=np.int64)
    remap[nodes] = nodes[label]
    return remap[parent]


def cluster_forests(vectors, m: int, eps: list[float], fits: bool) -> tuple[list[np.ndarray], list[int]]:
    """Union-find forests (one per eps) over the m members of one cluster and the edge count per
    eps. `vectors(lo, hi)` returns members lo..hi-1 as float16/float32 rows; with `fits`, all
    members are read once, else tile by tile."""
    parents = [np.arange(m, dtype=np.int64) for _ in eps]
    pairs = [0 for _ in eps]
    lowest = np.float32(1.0 - max(eps))
    limits = [np.float32(1.0 - e) for e in eps]
    whole = np.asarray(vectors(0, m), dtype=np.float32) if fits else None

    def tile(lo: int, hi: int) -> np.ndarray:
        return whole[lo:hi] if whole is not None else np.asarray(vectors(lo, hi), dtype=np.float32)

    for i in range(0, m, BLOCK):
        vi = tile(i, min(m, i + BLOCK))
        for j in range(i, m, BLOCK):
            vj = vi if j == i else tile(j, min(m, j + BLOCK))
            sims = vi @ vj.T
            if j == i:
                sims[np.tril_indices(sims.shape[0], 0, sims.shape[1])] = -2.0  # pairs a < b only
            a, b = np.nonzero(sims >= lowest)
            if not a.shape[0]:
                continue
            s = sims[a, b]
            for e, limit in enumerate(limits):
                sel = s >= limit
                pairs[e] += int(sel.sum())
                if sel.any():
                    parents[e] = _merge(parents[e], a[sel] + i, b[sel] + j)
    return parents, pairs


def _components_of(parent: np.ndarray, ordinals: np.ndarray, keys: np.ndarray, keep_none: bool,
                   out: EpsResult) -> None:
    """Append one cluster's duplicate components (from its forest) to `out`."""
    size = np.bincount(parent, minlength=parent.shape[0])[parent]
    dup = np.flatnonzero(size >= 2)
    if not dup.shape[0]:
        return
    root = parent[dup]
    keep = np.zeros(dup.shape[0], dtype=bool)
    if not keep_none:
        order = np.lexsort((dup, -keys[dup], root))  # per component: largest key, then earliest
        head = np.ones(order.shape[0], dtype=bool)
        head[1:] = root[order][1:] != root[order][:-1]
        keep[order[head]] = True
    out.ordinal.append(ordinals[dup])
    out.cid.append(ordinals[root])
    out.size.append(size[dup].astype(np.int32))
    out.keep.append(keep)


@dataclass(frozen=True)
class _Rows:
    """`rows(lo, hi)`: the vectors of members lo..hi-1 of one cluster (a copy, also from a memory map)."""

    records: np.ndarray
    members: np.ndarray

    def __call__(self, lo: int, hi: int) -> np.ndarray:
        return np.asarray(self.records["v"][self.members[lo:hi]])


@dataclass
class PairStats:
    comparisons: int = 0
    largest_cluster: int = 0
    tiled_clusters: int = 0  # clusters too large for a quarter of the budget, read tile by tile


def partition_results(spill: Spill, p: int, eps: list[float], budget: int, keep_none: bool,
                      results: list[EpsResult], stats: PairStats) -> int:
    """Find partition p's duplicate components for every eps (appended to `results`); returns
    its document count."""
    rec = spill.load(p, budget)
    if rec.shape[0] == 0:
        return 0
    clusters = np.asarray(rec["c"])
    order = np.argsort(clusters, kind="stable")  # by cluster, corpus order within
    lab = clusters[order]
    starts = np.flatnonzero(np.concatenate([[True], lab[1:] != lab[:-1]]))
    ends = np.concatenate([starts[1:], [lab.shape[0]]])
    dim = spill.dtype["v"].shape[0]
    for s, e in zip(starts, ends):
        m = int(e - s)
        stats.largest_cluster = max(stats.largest_cluster, m)
        if m < 2:
            continue
        members = order[s:e]
        stats.comparisons += m * (m - 1) // 2
        fits = m * dim * 4 <= budget // FIT_SHARE
        stats.tiled_clusters += 0 if fits else 1
        parents, pairs = cluster_forests(_Rows(rec, members), m, eps, fits)
        ordinals = np.asarray(rec["o"][members], dtype=np.int64)
        keys = np.asarray(rec["key"][members], dtype=np.float64)
        for k, parent in enumerate(parents):
            results[k].pairs += pairs[k]
            _components_of(parent, ordinals, keys, keep_none, results[k])
    return int(rec.shape[0])
