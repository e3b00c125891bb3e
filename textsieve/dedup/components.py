"""Connected components of the candidate-pair graph (spec §8 step 4), in vectorised NumPy.

Only documents that appear in an edge become nodes (`np.unique` compacts their ordinals), so
memory grows with the number of near-duplicate candidates, not with the corpus. Components are
found by repeated *hooking and shortcutting* (Shiloach-Vishkin style): every root adopts the
smallest root it is linked to, then pointer jumping flattens the forest; this repeats until no
edge joins two different roots. Hooks only ever point to a smaller index, so each component's
root is its smallest node, whatever the edge order; the cluster id is then the smallest RPv2
`id_int` in each component. No numba here on purpose: loading numba and its JIT costs a
`dedup` process ~130 MB of resident memory, far more than its data on most corpora.

Memory: the one-shot form holds ~70 bytes per edge of temporaries (the compacted endpoints, the
live edge copies of each round). With `max_rows`, the edges are instead read `max_rows` at a time
(`components_chunked`: from an array, or from files on disk through any re-iterable source), so
the process holds the sorted distinct nodes and one parent per node (16 bytes per candidate
document) plus one chunk, whatever the number of edges. Each round reads every chunk: find both
ends' roots (pointer jumping over the current forest), hook each larger root onto the smaller; a
round without a cross edge ends it. Roots are the smallest node of their tree at every step, so
the labels are the one-shot form's (tests compare them on graphs cut into tiny chunks).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable

import numpy as np

#: bytes per edge the one-shot form holds at its peak (measured ~73 on 4.9M edges of 1M documents);
#: a stage passes `max_rows = budget // EDGE_BYTES`, so more edges go the chunked way
EDGE_BYTES = 80


def edge_rows(budget: int) -> int:
    """The most edges the one-shot form may take within `budget` bytes (`components`' `max_rows`)."""
    return max(1024, int(budget) // EDGE_BYTES)


def _flatten(parent: np.ndarray) -> np.ndarray:
    """Pointer jumping until every node points at its root (O(log depth) passes)."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand


def _roots(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per node of 0..n-1: the smallest node of its component under the edges (a[i], b[i])."""
    parent = np.arange(n, dtype=np.int64)
    while a.shape[0]:
        ra, rb = parent[a], parent[b]
        lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
        cross = lo != hi
        if not cross.any():
            break
        a, b, lo, hi = a[cross], b[cross], lo[cross], hi[cross]  # edges inside a root are done
        np.minimum.at(parent, hi, lo)  # each root hooks onto the smallest root it touches
        parent = _flatten(parent)
    return parent


def components(edges: np.ndarray, max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`(nodes, label)`: the sorted distinct document ordinals in `edges` (shape (e, 2)) and,
    for each, the index (into `nodes`) of its component's smallest node. With `max_rows`, a
    larger edge array is read in chunks of that many rows (module doc: the same result)."""
    edges = np.asarray(edges, dtype=np.uint64).reshape(-1, 2)
    if max_rows is not None and edges.shape[0] > max_rows:
        step = max(1, int(max_rows))
        return components_chunked(lambda: (edges[i:i + step] for i in range(0, edges.shape[0], step)))
    nodes, inverse = np.unique(edges.ravel(), return_inverse=True)
    inverse = inverse.reshape(-1, 2).astype(np.int64)
    return nodes, _roots(nodes.shape[0], inverse[:, 0].copy(), inverse[:, 1].copy())


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """np.unique by sorting: NumPy 2's hash-based unique is ~15x slower on uint64 ids."""
    x = np.sort(x, kind="stable")
    if x.shape[0] < 2:
        return x
    keep = np.empty(x.shape[0], dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _index_of(nodes: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Positions of `q` in the sorted `nodes`, looked up in sorted order (~8x faster than in
    random order on a million nodes: the binary searches share their cache lines)."""
    order = np.argsort(q, kind="stable")
    out = np.empty(q.shape[0], dtype=np.int64)
    out[order] = np.searchsorted(nodes, q[order])
    return out


def distinct_nodes(chunks: Iterable[np.ndarray]) -> np.ndarray:
    """The sorted distinct endpoints of every chunk, merged as they come (amortised: the held
    uniques are folded into the result when they outgrow it)."""
    acc = np.zeros(0, dtype=np.uint64)
    held: list[np.ndarray] = []
    n_held = 0
    for chunk in chunks:
        u = _sorted_unique(np.asarray(chunk, dtype=np.uint64).ravel())
        held.append(u)
        n_held += u.shape[0]
        if n_held > acc.shape[0] + (1 << 16):
            acc = _sorted_unique(np.concatenate([acc, *held]))
            held, n_held = [], 0
    return _sorted_unique(np.concatenate([acc, *held])) if held else acc


def _find(parent: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The roots of `x` in the forest `parent` (pointer jumping on these entries only)."""
    while True:
        nxt = parent[x]
        if np.array_equal(nxt, x):
            return x
        x = nxt


class _Survivors:
    """A round's cross edges (compact node indexes, int64 pairs): in memory, or appended to a
    file under `spill` and read back `rows` at a time."""

    def __init__(self, spill: str | None, name: str, rows: int):
        self.path = None if spill is None else os.path.join(spill, name)
        self.rows, self.n = rows, 0
        self.held: list[np.ndarray] = []
        if self.path is not None:
            open(self.path, "wb").close()

    def add(self, lo: np.ndarray, hi: np.ndarray) -> None:
        pairs = np.stack([lo, hi], axis=1).astype(np.int64)
        self.n += pairs.shape[0]
        if self.path is None:
            self.held.append(pairs)
        else:
            with open(self.path, "ab") as fh:
                fh.write(pairs.data.cast("B"))

    def read(self) -> Iterable[np.ndarray]:
        if self.path is None:
            yield from self.held
            return
        for start in range(0, self.n, self.rows):
            yield np.fromfile(self.path, dtype=np.int64, count=2 * self.rows, offset=16 * start).reshape(-1, 2)

    def remove(self) -> None:
        self.held = []
        if self.path is not None and os.path.exists(self.path):
            os.remove(self.path)


def components_chunked(chunks: Callable[[], Iterable[np.ndarray]], spill: str | None = None,
                       rows: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """`components` over edges given as chunks: `chunks()` yields (k, 2) uint64 arrays (an
    array's slices, a spill file read a piece at a time) and is called twice. Each round keeps
    only its cross edges, as root pairs, for the next (in memory, or in files under `spill` read
    `rows` at a time), so later rounds read less, as the one-shot form's do."""
    nodes = distinct_nodes(chunks())

    def first() -> Iterable[np.ndarray]:
        for chunk in chunks():
            chunk = np.asarray(chunk, dtype=np.uint64).reshape(-1, 2)
            yield np.stack([_index_of(nodes, chunk[:, 0]), _index_of(nodes, chunk[:, 1])], axis=1)

    parent = np.arange(nodes.shape[0], dtype=np.int64)
    source: Callable[[], Iterable[np.ndarray]] = first
    last: _Survivors | None = None
    for k in itertools.count():
        out = _Survivors(spill, f"cc-round-{k}.i64", rows)
        for pairs in source():
            ra, rb = _find(parent, pairs[:, 0].astype(np.int64)), _find(parent, pairs[:, 1].astype(np.int64))
            lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
            cross = lo != hi
            if cross.any():
                lo, hi = lo[cross], hi[cross]
                np.minimum.at(parent, hi, lo)  # a root hooks onto the smallest root it meets
                out.add(lo, hi)
        if last is not None:
            last.remove()
        parent = _flatten(parent)
        if out.n == 0:
            out.remove()
            return nodes, parent
        last, source = out, out.read
    raise AssertionError("unreachable")  # pragma: no cover


def cluster_ids(label: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the smallest `key` (uint64 id_int) of its component and the component size."""
    n_comp = label.shape[0]
    best = np.full(n_comp, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(best, label, key.astype(np.uint64))
    size = np.bincount(label, minlength=n_comp)
    return best[label], size[label].astype(np.int64)
