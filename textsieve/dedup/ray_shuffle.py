"""LSH banding and grouping for `dedup fuzzy` as a distributed shuffle on Ray.

The local stage scatters band rows into on-disk partitions by the top key bits
(`partitions.PartitionWriter`) and groups each partition (`partitions.Grouper`). On Ray the same
work is split into the two halves of a shuffle:

  map     one task per piece of an annotate shard (whole row groups, at most ~one sort budget of
          band rows): read the band columns, hash the bands (`lsh.band_rows`), sort the rows by
          partition (stable) and return one block per *reduce group* (a contiguous range of
          partitions) as a Ray object. Objects live in Ray's object store, which spills to disk
          under pressure, so no process holds the corpus;
  reduce  one task per reduce group: for each of its partitions, slice that partition's rows out
          of every map block (blocks are memory-mapped from the object store, the slice is the
          only copy), write them to a local file in map order and group it with the local
          `Grouper` under the same row budget. Only the edges come back.

The driver keeps nothing but edges and runs union-find over them as before. Because map pieces
are taken in shard and row order and slices are concatenated in that order, every partition
holds exactly the rows, in exactly the order, of the local partition file: edges, statistics and
therefore every output byte match the local executor.

Map tasks open the annotate shards by path (fsspec), so on a multi-node cluster the folder must
be reachable from every node (shared file system or object storage); reduce tasks only use
node-local temporary files (`--tmp-dir`, else the system default).

Workers that die are handled by Ray: map and reduce tasks are pure (a reduce writes only to its
own fresh temporary folder), so Ray's retry of a task whose worker died recomputes the same
blocks, and nothing is lost or counted twice.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict

import numpy as np
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable, id_ints
from textsieve.dedup.lsh import band_rows, band_values
from textsieve.dedup.partitions import ROW, EdgeStore, Grouper, GroupStats
from textsieve.exec.progress import Progress
from textsieve.exec.ray_exec import ensure_ray

MAX_RETRIES = 3  # Ray-side retries of a map/reduce task whose worker process died


def _parts(rows: np.ndarray, bits: int) -> np.ndarray:
    """Level-0 partition of each row: the top `bits` of h1, as `PartitionWriter` computes it."""
    if bits == 0:
        return np.zeros(rows.shape[0], dtype=np.int64)
    return ((rows["h1"] >> np.uint64(64 - bits)) & np.uint64((1 << bits) - 1)).astype(np.int64)


def group_bounds(bits: int, groups: int) -> np.ndarray:
    """Partition boundaries of the reduce groups: group g holds partitions [b[g], b[g+1])."""
    n = 1 << bits
    return np.unique(np.linspace(0, n, min(n, groups) + 1).astype(np.int64))


def pieces(table: ShardTable, docs_per_piece: int) -> list[tuple[int, list[int]]]:
    """(shard index, row groups) work units in corpus order, each about `docs_per_piece` docs."""
    out = []
    for i, path in enumerate(table.paths):
        with table.fs.open(path, "rb") as fh:
            meta = pq.ParquetFile(fh).metadata
        current, n = [], 0
        for rg in range(meta.num_row_groups):
            current.append(rg)
            n += meta.row_group(rg).num_rows
            if n >= docs_per_piece:
                out.append((i, current))
                current, n = [], 0
        if current or not out or out[-1][0] != i:
            out.append((i, current))
    return out


def _map(fs, path: str, where: str, row_groups: list[int], cols: list[tuple[float, str]],
         bounds: dict[float, np.ndarray], bits: dict[float, int]):
    """Band rows of one piece, per threshold cut into one block per reduce group."""
    with fs.open(path, "rb") as fh:
        tab = pq.ParquetFile(fh).read_row_groups(row_groups, columns=["id", *[c for _, c in cols]], use_threads=False)
    ii = id_ints(tab.column("id"))
    counts, blocks = [], []
    for t, col in cols:
        valid, values = band_values(tab.column(col), f"{where}: column {col}")
        rows = band_rows(values, ii[valid])
        part = _parts(rows, bits[t])
        order = np.argsort(part, kind="stable")
        rows, part = rows[order], part[order]
        cut = np.searchsorted(part, np.arange((1 << bits[t]) + 1))  # rows of partition p: cut[p]:cut[p+1]
        counts.append(int(valid.sum()))
        for g in range(len(bounds[t]) - 1):  # (partition offsets within the block, rows)
            first, last = bounds[t][g], bounds[t][g + 1]
            blocks.append((cut[first:last + 1] - cut[first], rows[cut[first]:cut[last]]))
    return ((tab.num_rows, counts), *blocks)


def _reduce(block_refs: list, first: int, last: int, max_rows: int, tmp_dir: str | None):
    """Group partitions [first, last) from the map blocks of one reduce group; (edges, stats)."""
    import ray

    blocks = [b for b in ray.get(block_refs) if b[1].shape[0]]  # memory-mapped from the object store
    stats = GroupStats()
    edges = []
    work = tempfile.mkdtemp(prefix="textsieve-reduce-", dir=tmp_dir)
    try:
        for p in range(first, last):
            path = os.path.join(work, f"p{p:05d}.bin")
            n = 0
            with open(path, "wb") as fh:
                for offsets, rows in blocks:
                    lo, hi = int(offsets[p - first]), int(offsets[p - first + 1])
                    if hi > lo:
                        rows[lo:hi].tofile(fh)
                        n += hi - lo
            if not n:
                os.remove(path)
                continue
            grouper = Grouper(work, max_rows)
            grouper.group_partitions([(path, n)])
            stats.add(grouper.stats)
            edges.append(grouper.all_edges())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return (np.concatenate(edges) if edges else np.zeros((0, 2), dtype=np.uint64)), asdict(stats)


def ray_lsh(table: ShardTable, cols: dict[float, str], bits: dict[float, int], max_rows: int, *,
            address: str | None = None, workers: int | None = None, tmp_dir: str | None = None,
            progress: bool = True, store: Callable[[float], EdgeStore] | None = None,
            ) -> tuple[dict[float, int], dict[float, EdgeStore], dict[float, dict]]:
    """`(docs with bands, edges, grouping stats)` per threshold, as the local scan + group gives.
    Each reduce task's edges go into the threshold's `store(t)` as they arrive (default: one in
    memory), so the driver holds what the store holds, not every edge."""
    ray = ensure_ray(address, num_cpus=workers if not address else None)
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    ts = list(cols)
    bounds = {t: group_bounds(bits[t], 4 * workers) for t in ts}
    n_blocks = [len(bounds[t]) - 1 for t in ts]
    # a map piece yields at most ~max_rows band rows (RPv2: at most 14 bands per doc and threshold),
    # so a map task holds no more than one sort budget of rows
    work = pieces(table, max(1, max_rows // (14 * len(ts))))
    map_task = ray.remote(num_returns=1 + sum(n_blocks), max_retries=MAX_RETRIES)(_map)
    red_task = ray.remote(max_retries=MAX_RETRIES)(_reduce)
    fs_ref = ray.put(table.fs)
    col_items = [(t, cols[t]) for t in ts]
    outs = [map_task.remote(fs_ref, table.paths[i], table.rels[i], rgs, col_items, bounds, bits) for i, rgs in work]
    with_bands = {t: 0 for t in ts}
    sizes = [table.fs.size(p) for p in table.paths]
    bar = Progress("dedup fuzzy", total_bytes=sum(sizes), enabled=progress)
    done_bytes = 0.0
    try:
        shard_of = {out[0]: work[k][0] for k, out in enumerate(outs)}
        left = list(shard_of)
        while left:
            done, left = ray.wait(left, num_returns=1)
            n_docs, counts = ray.get(done[0])
            for t, c in zip(ts, counts):
                with_bands[t] += c
            i = shard_of[done[0]]
            done_bytes += sizes[i] * n_docs / max(1, int(table.n_rows[i]))
            bar.update(n_docs, int(done_bytes))
    finally:
        bar.close()
    reds = []
    offset = 1
    for t, nb in zip(ts, n_blocks):
        for g in range(nb):
            refs = [out[offset + g] for out in outs]
            reds.append((t, red_task.remote(refs, int(bounds[t][g]), int(bounds[t][g + 1]), max_rows, tmp_dir)))
        offset += nb
    del outs
    edges = {t: store(t) if store is not None else EdgeStore("", max_rows) for t in ts}
    stats = {t: GroupStats() for t in ts}
    for t, ref in reds:  # in partition order, as the local Grouper emits them
        e, s = ray.get(ref)
        edges[t].add(e)
        del e
        stats[t].add(GroupStats(**s))
    out_stats = {}
    for t in ts:
        stats[t].spilled_bytes += stats[t].rows * ROW.itemsize  # the level-0 scatter, as locally
        out_stats[t] = asdict(stats[t])
    return with_bands, {t: edges[t].close() for t in ts}, out_stats


class RayKeyShuffle:
    """`dedup exact`'s key grouping as a Ray shuffle (issue 29 item 2), with `PartitionWriter`'s
    `add`: the driver, which receives the hashed shards in corpus order, cuts their key rows into
    one block per reduce group (a range of level-0 partitions, as `PartitionWriter` would file
    them) and puts each block in the object store; `finish` groups every reduce group as a Ray
    task (`_reduce`, the same `Grouper` per partition as locally) and adds the returned edges to
    a store. Rows reach each partition in the local file's order, so the edges are the same."""

    def __init__(self, bits: int, max_rows: int, address: str | None = None, tmp_dir: str | None = None,
                 workers: int | None = None):
        self.ray = ensure_ray(address)
        workers = workers or max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        self.bits, self.max_rows, self.tmp_dir = bits, max_rows, tmp_dir
        self.bounds = group_bounds(bits, 4 * workers)
        self.held: list[np.ndarray] = []
        self.n_held = 0
        self.blocks: list[list] = []  # per map block: one object ref per reduce group
        self.rows = 0

    def add(self, rows: np.ndarray) -> None:
        self.held.append(rows)
        self.n_held += rows.shape[0]
        self.rows += rows.shape[0]
        if self.n_held >= max(1, self.max_rows // 2):
            self._put()

    def _put(self) -> None:
        if not self.held:
            return
        rows = np.concatenate(self.held)
        self.held, self.n_held = [], 0
        part = _parts(rows, self.bits)
        order = np.argsort(part, kind="stable")
        rows, part = rows[order], part[order]
        cut = np.searchsorted(part, np.arange((1 << self.bits) + 1))
        refs = []
        for g in range(len(self.bounds) - 1):
            first, last = self.bounds[g], self.bounds[g + 1]
            refs.append(self.ray.put((cut[first:last + 1] - cut[first], rows[cut[first]:cut[last]])))
        self.blocks.append(refs)

    def finish(self, store: EdgeStore) -> tuple[EdgeStore, GroupStats]:
        """Group every reduce group on Ray; the edges in `store` (closed) and the summed stats."""
        self._put()
        red_task = self.ray.remote(max_retries=MAX_RETRIES)(_reduce)
        futures = [red_task.remote([b[g] for b in self.blocks], int(self.bounds[g]), int(self.bounds[g + 1]),
                                   self.max_rows, self.tmp_dir) for g in range(len(self.bounds) - 1)]
        stats = GroupStats()
        for f in futures:  # in partition order, as the local Grouper emits them
            e, s = self.ray.get(f)
            store.add(e)
            del e
            stats.add(GroupStats(**s))
        self.blocks = []
        return store.close(), stats
