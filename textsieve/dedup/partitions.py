"""Memory-bounded grouping of (128-bit key, document) rows on disk.

LSH and exact dedup both reduce to one question: which documents share a key? A corpus's key
table (documents x bands x 24 bytes) may not fit in memory, so rows are *scattered* by the top
bits of the key into `n` partition files (raw little-endian NumPy records, appended in chunks),
then each partition is loaded, sorted with `np.lexsort` and cut into runs of equal keys. A run
of m >= 2 rows yields m - 1 edges from its first document to the others: the same connected
components as RPv2's edges to the group minimum (spec §8).

A partition that is still larger than the budget (skew: one key shared by very many
documents, or a bad size estimate) is processed in budget-sized chunks: each chunk is sorted,
emits its edges and is reduced to one row per distinct key (key, first document); the reduced
rows are scattered again on the next key bits and grouped recursively. Every pass either
shrinks the rows (duplicates collapse) or splits them (distinct keys spread over the next
bits), so it terminates, and the edge set links exactly the documents that share a key.

The edges themselves go to an `EdgeStore` (issue 29 item 1): distinct pairs held in memory up to
`max_edges`, then scattered to 16 files by a hash of the pair (the copies of a pair, one per band
it collides in, meet in one file), each made distinct on its own when the store is closed (a file
larger than a sort pass split again on the next hash bits). Readers take them a chunk at a time;
the edge set, and everything computed from it, is the same either way, only the order differs
(sorted in memory, by file on disk).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from textsieve.io.diskfull import disk_full_as_error

ROW = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("doc", "<u8")])
#: working bytes per row while grouping, used to turn a memory budget into rows per pass:
#: the rows (24), the lexsort permutation (8), the sorted copy (24), masks and run bounds, the
#: edges' temporaries, and for an oversized partition the sub-partition buffer of the reduced
#: rows. Measured peak (issue 16): 48 B a row for a partition sorted in one pass, up to ~115 B
#: for one reduced chunk by chunk; the old 72 let a "16 MB" budget use ~45 MB.
WORK_BYTES_PER_ROW = 160
MIN_ROWS = 1024
FANOUT_BITS = 4  # sub-partitions of an oversized partition: 16


def rows_per_pass(memory: int) -> int:
    """How many rows one in-memory sort may hold under a memory budget of `memory` bytes."""
    return max(MIN_ROWS, int(memory) // WORK_BYTES_PER_ROW)


@dataclass
class GroupStats:
    """What the grouping did: how many partitions were sorted and how many passes it took."""

    rows: int = 0
    partitions: int = 0
    passes: int = 0  # in-memory sorts
    max_level: int = 0
    edges: int = 0
    spilled_bytes: int = 0

    def add(self, other: GroupStats) -> None:
        self.rows += other.rows
        self.partitions += other.partitions
        self.passes += other.passes
        self.max_level = max(self.max_level, other.max_level)
        self.edges += other.edges
        self.spilled_bytes += other.spilled_bytes


class PartitionWriter:
    """Scatter rows into `2**bits` append-only files by key bits; buffers at most `buffer_rows`."""

    def __init__(self, directory: str, bits: int, buffer_rows: int, level: int = 0):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.bits = int(bits)
        self.level = level
        # level 0 splits on the top bits of h1; deeper levels on successive low bits of h2,
        # which is independent of h1, so a split always separates distinct keys
        self.shift = np.uint64((level - 1) * FANOUT_BITS) if level else np.uint64(64 - self.bits)
        self.buffer_rows = max(MIN_ROWS, int(buffer_rows))
        self._pending: list[np.ndarray] = []
        self._n_pending = 0
        self.counts = np.zeros(1 << self.bits, dtype=np.int64)
        self.bytes_written = 0

    def path(self, part: int) -> str:
        return os.path.join(self.directory, f"p{part:05d}.bin")

    def part_of(self, h1: np.ndarray) -> np.ndarray:
        if self.bits == 0:
            return np.zeros(h1.shape[0], dtype=np.int64)
        return ((h1 >> self.shift) & np.uint64((1 << self.bits) - 1)).astype(np.int64)

    def part_of_rows(self, rows: np.ndarray) -> np.ndarray:
        return self.part_of(rows["h2"] if self.level else rows["h1"])

    def add(self, rows: np.ndarray) -> None:
        if rows.shape[0]:
            self._pending.append(rows)
            self._n_pending += rows.shape[0]
            if self._n_pending >= self.buffer_rows:
                self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        rows = np.concatenate(self._pending)
        self._pending, self._n_pending = [], 0
        part = self.part_of_rows(rows)
        order = np.argsort(part, kind="stable")
        rows, part = rows[order], part[order]
        bounds = np.searchsorted(part, np.arange((1 << self.bits) + 1))
        for p in np.nonzero(np.diff(bounds))[0]:
            chunk = rows[bounds[p]:bounds[p + 1]]
            path = self.path(int(p))
            # a full disk names the spill folder (the stage removes its work folder on the way out)
            with disk_full_as_error(path, written=lambda: self.bytes_written, what="spilling keys to"), \
                    open(path, "ab") as fh:
                fh.write(as_bytes(chunk))  # not `tofile`: its short write has no errno (io.diskfull)
            self.counts[p] += chunk.shape[0]
            self.bytes_written += chunk.nbytes

    def close(self) -> list[tuple[str, int]]:
        """Flush and return (path, rows) of the non-empty partitions, in partition order."""
        self.flush()
        return [(self.path(int(p)), int(self.counts[p])) for p in np.nonzero(self.counts)[0]]


def as_bytes(array: np.ndarray) -> memoryview:
    """The raw bytes of a contiguous array, without a copy, for `fh.write`."""
    return np.ascontiguousarray(array).data.cast("B")


def sorted_runs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort rows by (key, doc); return (sorted rows, start index of every run of equal keys + end)."""
    order = np.lexsort((rows["doc"], rows["h2"], rows["h1"]))  # doc last: runs start at their smallest doc
    rows = rows[order]
    if rows.shape[0] == 0:
        return rows, np.zeros(1, dtype=np.int64)
    new = np.empty(rows.shape[0], dtype=bool)
    new[0] = True
    new[1:] = (rows["h1"][1:] != rows["h1"][:-1]) | (rows["h2"][1:] != rows["h2"][:-1])
    starts = np.flatnonzero(new)
    return rows, np.append(starts, rows.shape[0]).astype(np.int64)


def run_edges(rows: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Edges (first doc of run, other doc) for every run of >= 2 equal keys; shape (e, 2)."""
    sizes = np.diff(bounds)
    run_of = np.repeat(np.arange(sizes.shape[0]), sizes)
    first = rows["doc"][bounds[:-1]][run_of]
    is_first = np.zeros(rows.shape[0], dtype=bool)
    is_first[bounds[:-1]] = True
    take = ~is_first
    return np.stack([first[take], rows["doc"][take]], axis=1)


def unique_pairs(edges: np.ndarray) -> np.ndarray:
    """The distinct rows of an (e, 2) uint64 edge array, sorted. The same pair is emitted once
    per band it collides in (up to 14 times), so deduplicating shrinks the edge set several-fold
    on duplicate-heavy corpora; the components do not change."""
    if edges.shape[0] < 2:
        return edges
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges = edges[order]
    keep = np.empty(edges.shape[0], dtype=bool)
    keep[0] = True
    keep[1:] = (edges[1:, 0] != edges[:-1, 0]) | (edges[1:, 1] != edges[:-1, 1])
    return edges[keep]


#: bytes per held edge (two uint64)
EDGE_BYTES = 16
#: Buffered edges before an `EdgeStore` deduplicates them (and at least twice the last distinct count);
#: at most a quarter of a sort pass's rows, so the buffer stays within the budget.
COMPACT_EDGES = 1 << 20
_MIX_A, _MIX_B = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
_FANOUT = 1 << FANOUT_BITS


def _bucket(edges: np.ndarray, level: int) -> np.ndarray:
    """The partition of each pair at split `level`: FANOUT_BITS bits of a hash of (a, b)."""
    h = edges[:, 0] * _MIX_A ^ edges[:, 1] * _MIX_B
    h ^= h >> np.uint64(29)
    shift = np.uint64(64 - FANOUT_BITS * (level + 1))
    return ((h >> shift) & np.uint64(_FANOUT - 1)).astype(np.int64)


class EdgeStore:
    """Distinct (a, b) uint64 edges: in memory up to `max_edges`, else partition files under
    `work` of at most `max_rows` distinct edges each once `close`d (module doc)."""

    #: the fewest distinct edges a store holds in memory whatever its share
    min_edges = 1024

    def __init__(self, work: str, max_rows: int, max_edges: int | None = None):
        self.work, self.max_rows = work, max(1024, int(max_rows))
        self.max_edges = None if max_edges is None else max(EdgeStore.min_edges, int(max_edges))
        self.held: list[np.ndarray] = []
        self.pending = self.compacted = 0
        self.parts: list[tuple[str, int]] | None = None  # spilled: (file, rows) of each partition
        self.n = 0  # distinct edges, once closed
        self.closed = False

    @classmethod
    def of(cls, edges: np.ndarray) -> EdgeStore:
        """A closed in-memory store of an edge array (made distinct)."""
        store = cls("", 1024)
        store.add(edges)
        store.close()
        return store

    @property
    def spilled(self) -> bool:
        return self.parts is not None

    def add(self, edges: np.ndarray) -> None:
        edges = np.asarray(edges, dtype=np.uint64).reshape(-1, 2)
        if not edges.shape[0]:
            return
        if self.parts is not None:
            self._scatter(edges)
            return
        self.held.append(edges)
        self.pending += edges.shape[0]
        if self.pending >= max(min(COMPACT_EDGES, self.max_rows // 4), 2 * self.compacted):
            self._compact()
            if self.max_edges is not None and self.compacted > self.max_edges:
                self._start_spill()

    def _compact(self) -> None:
        merged = unique_pairs(np.concatenate(self.held)) if self.held else np.zeros((0, 2), np.uint64)
        self.held = [merged]
        self.compacted = self.pending = merged.shape[0]

    def _start_spill(self) -> None:
        os.makedirs(self.work, exist_ok=True)
        self.parts = [(os.path.join(self.work, f"edges-{k:02x}.u64"), 0) for k in range(_FANOUT)]
        for path, _ in self.parts:
            open(path, "wb").close()
        held, self.held = self.held, []
        for e in held:
            self._scatter(e)

    def _scatter(self, edges: np.ndarray, level: int = 0, parts: list[tuple[str, int]] | None = None) -> None:
        parts = self.parts if parts is None else parts
        assert parts is not None
        bucket = _bucket(edges, level)
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(_FANOUT + 1))
        for k in range(_FANOUT):
            if bounds[k + 1] > bounds[k]:
                path, n = parts[k]
                with open(path, "ab") as fh:
                    fh.write(as_bytes(np.ascontiguousarray(edges[order[bounds[k]:bounds[k + 1]]])))
                parts[k] = (path, n + int(bounds[k + 1] - bounds[k]))

    def close(self) -> EdgeStore:
        """No more edges: make the pairs distinct (every spilled file on its own)."""
        if self.closed:
            return self
        self.closed = True
        if self.parts is None:
            self._compact()
            if self.max_edges is None or self.compacted <= self.max_edges:
                self.n = self.compacted
                return self
            self._start_spill()  # more distinct edges than the share: the readers take files
        assert self.parts is not None
        done: list[tuple[str, int]] = []
        for path, n in self.parts:
            done.extend(self._distinct(path, n, 0))
        self.parts = done
        self.n = sum(n for _, n in done)
        return self

    def _distinct(self, path: str, n: int, level: int) -> list[tuple[str, int]]:
        """`path`'s distinct pairs in files of at most `max_rows` (split on the next hash bits)."""
        if n == 0:
            os.remove(path)
            return []
        if n <= self.max_rows or FANOUT_BITS * (level + 2) > 64:
            edges = unique_pairs(np.fromfile(path, dtype=np.uint64).reshape(-1, 2))
            edges.tofile(path)
            return [(path, int(edges.shape[0]))]
        subs = [(f"{path}.{k:x}", 0) for k in range(_FANOUT)]
        for p, _ in subs:
            open(p, "wb").close()
        for start in range(0, n, self.max_rows):
            chunk = np.fromfile(path, dtype=np.uint64, count=2 * self.max_rows, offset=16 * start).reshape(-1, 2)
            self._scatter(chunk, level + 1, subs)
        os.remove(path)
        out: list[tuple[str, int]] = []
        for p, m in subs:
            out.extend(self._distinct(p, m, level + 1))
        return out

    def chunks(self) -> Iterator[np.ndarray]:
        """The distinct edges, at most `max_rows` at a time (sorted in memory; by file on disk)."""
        self.close()
        if self.parts is None:
            edges = self.held[0] if self.held else np.zeros((0, 2), np.uint64)
            for s in range(0, edges.shape[0], self.max_rows):
                yield edges[s:s + self.max_rows]
            return
        for path, n in self.parts:
            if n:
                yield np.fromfile(path, dtype=np.uint64).reshape(-1, 2)

    def array(self) -> np.ndarray:
        """Every distinct edge in one array (in-memory stores; a spilled one is read whole)."""
        self.close()
        if self.parts is None:
            return self.held[0] if self.held else np.zeros((0, 2), np.uint64)
        return np.concatenate(list(self.chunks()) or [np.zeros((0, 2), np.uint64)])

    def remove(self) -> None:
        """Delete the spilled files (the store is empty afterwards)."""
        for path, _ in self.parts or []:
            if os.path.exists(path):
                os.remove(path)
        self.parts, self.held, self.n = None, [], 0


@dataclass
class Grouper:
    """Group the rows of partition files under a row budget, writing edges to `edges`."""

    work_dir: str
    max_rows: int
    max_edges: int | None = None  # distinct edges held before they spill (`EdgeStore`); None: never
    stats: GroupStats = field(default_factory=GroupStats)
    store: EdgeStore = field(init=False)

    def __post_init__(self) -> None:
        self.store = EdgeStore(f"{self.work_dir}/edges", self.max_rows, self.max_edges)

    def group_partitions(self, parts: list[tuple[str, int]], level: int = 0) -> None:
        for path, n in parts:
            self._group_file(path, n, level)

    def _emit(self, e: np.ndarray) -> None:
        if e.shape[0]:
            self.store.add(e)  # distinct pairs kept: memory follows them, not the band collisions
            self.stats.edges += e.shape[0]

    def _group_file(self, path: str, n: int, level: int) -> None:
        self.stats.partitions += 1
        if level == 0:
            self.stats.rows += n
        self.stats.max_level = max(self.stats.max_level, level)
        if n <= self.max_rows:
            rows, bounds = sorted_runs(np.fromfile(path, dtype=ROW))
            self.stats.passes += 1
            self._emit(run_edges(rows, bounds))
            os.remove(path)
            return
        # too large: reduce chunk by chunk, re-scatter the distinct keys on the next bits (through a
        # buffer of a fraction of a pass: it lives beside the chunk being sorted)
        sub = PartitionWriter(f"{path}.d", FANOUT_BITS, self.max_rows // 8, level=level + 1)
        if (level + 1) * FANOUT_BITS > 64:  # pragma: no cover - needs > 2**60 distinct keys
            raise RuntimeError("dedup: key partitions cannot be split further; raise --memory")
        for start in range(0, n, self.max_rows):
            chunk = np.fromfile(path, dtype=ROW, count=self.max_rows, offset=start * ROW.itemsize)
            rows, bounds = sorted_runs(chunk)
            self.stats.passes += 1
            self._emit(run_edges(rows, bounds))
            sub.add(rows[bounds[:-1]])  # one (key, first doc) per distinct key of the chunk
        os.remove(path)
        subparts = sub.close()
        self.stats.spilled_bytes += sub.bytes_written
        self.group_partitions(subparts, level + 1)

    def all_edges(self) -> np.ndarray:
        """Every distinct edge in one array (sorted when they stayed in memory)."""
        return self.store.array()

    def edge_store(self) -> EdgeStore:
        """The distinct edges, closed: read them a chunk at a time (`EdgeStore.chunks`)."""
        return self.store.close()


def partition_bits(total_rows: int, max_rows: int) -> int:
    """Key bits for the first scatter so that an average partition holds ~max_rows/2 rows."""
    need = max(1, -(-2 * int(total_rows) // int(max_rows)))
    return min(16, int(np.ceil(np.log2(need)))) if need > 1 else 0
