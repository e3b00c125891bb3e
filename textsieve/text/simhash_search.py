"""Every pair of 64-bit fingerprints within a Hamming distance, without comparing all pairs.

Why it scales: split the 64 bits into `blocks` blocks. Two fingerprints that differ in at most
`distance` bits differ in at most `distance` blocks, so they agree exactly on at least
`blocks - distance` of them (the pigeonhole principle). For every choice of that many blocks
(a "table"), fingerprints whose bits agree there are sorted next to each other; only those
runs are compared, and a pair counts when its true distance is within `distance`. Every
qualifying pair shows up in some table, so the result is exact, never an approximation. With
`blocks = distance + 1` this is the `simhash` package's `SimhashIndex` (6 tables of about 10
bits for distance 5, RedPajama-1T's setting); more blocks give longer keys (fewer false
candidates) at the cost of more tables, the trade of Manku et al. (WWW 2007), chosen here from
the number of fingerprints (`choose_blocks`).

Identical fingerprints are collapsed first (`NearGraph.unique`): exact copies then cost
nothing however many there are, and the graph is over distinct fingerprints. Everything is
NumPy (sorts, popcounts); memory is ~40 bytes per distinct fingerprint plus the pairs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

BITS = 64
#: candidate pairs compared per step (bounds the memory of a large run of equal keys)
PAIR_CHUNK = 1 << 22
_BYTE_BITS = np.array([bin(v).count("1") for v in range(256)], dtype=np.uint8)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (`np.bitwise_count` on NumPy 2, a byte table before it)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return count(x)
    as_bytes = np.ascontiguousarray(x, dtype=np.uint64).view(np.uint8).reshape(-1, 8)
    return _BYTE_BITS[as_bytes].sum(axis=1, dtype=np.uint8)


@dataclass(frozen=True)
class NearGraph:
    """Near-duplicate pairs among fingerprints, over their distinct values.

    `unique`: the distinct fingerprints (sorted); `inverse[i]`: which of them input i has;
    (`a[e]`, `b[e]`), a < b: indices into `unique` of a pair within the distance, `hamming[e]`
    its distance (>= 1: equal fingerprints are one value); `compared`: the candidate pairs the
    tables put side by side (all pairs would be m (m - 1) / 2)."""

    unique: np.ndarray
    inverse: np.ndarray
    a: np.ndarray
    b: np.ndarray
    hamming: np.ndarray
    distance: int
    compared: int = 0

    @property
    def n(self) -> int:
        return int(self.inverse.shape[0])

    def earliest(self, rank: np.ndarray) -> np.ndarray:
        """Per input: the smallest `rank` among the inputs within the distance of it, itself
        included. An input whose own rank is that smallest has no near-duplicate ranked before
        it (`rank`: corpus order, or the reference's numeric ids)."""
        rank = np.asarray(rank)
        big = np.iinfo(rank.dtype).max if rank.dtype.kind in "iu" else np.inf
        own = np.full(self.unique.shape[0], big, dtype=rank.dtype)
        np.minimum.at(own, self.inverse, rank)
        best = own.copy()
        np.minimum.at(best, self.a, own[self.b])
        np.minimum.at(best, self.b, own[self.a])
        return best[self.inverse]

    def neighbours(self, i: int) -> list[tuple[int, int]]:
        """(input, distance) of every input within the distance of input i, itself included, in
        input order. For inspection and tests: it walks the pairs, O(pairs)."""
        u = int(self.inverse[i])
        dist = {u: 0}
        for y, d in zip(self.b[self.a == u], self.hamming[self.a == u]):
            dist[int(y)] = int(d)
        for x, d in zip(self.a[self.b == u], self.hamming[self.b == u]):
            dist[int(x)] = int(d)
        return [(j, dist[int(v)]) for j, v in enumerate(self.inverse) if int(v) in dist]


def blocks_of(blocks: int) -> list[tuple[int, int]]:
    """The 64 bits in `blocks` contiguous blocks as (offset, width), the last one taking the
    remainder: `SimhashIndex`'s split for blocks = distance + 1."""
    if not 1 <= blocks <= BITS:
        raise ValueError(f"blocks must be between 1 and {BITS}, not {blocks}")
    width = BITS // blocks
    edges = [width * i for i in range(blocks)] + [BITS]
    return [(edges[i], edges[i + 1] - edges[i]) for i in range(blocks)]


def tables(distance: int, blocks: int) -> list[list[tuple[int, int]]]:
    """One table per choice of `blocks - distance` blocks: the blocks it keys on."""
    if blocks <= distance:
        raise ValueError(f"blocks ({blocks}) must exceed the distance ({distance})")
    return [list(c) for c in itertools.combinations(blocks_of(blocks), blocks - distance)]


def _key(fps: np.ndarray, table: list[tuple[int, int]]) -> tuple[np.ndarray, int]:
    """The table's key of each fingerprint, its chosen blocks packed into the low bits, and its width."""
    key = np.zeros(fps.shape[0], dtype=np.uint64)
    at = 0
    for off, width in table:
        part = (fps >> np.uint64(off)) & np.uint64((1 << width) - 1)
        key |= part << np.uint64(at) if at else part
        at += width
    return key, at


def _sorted(key: np.ndarray, key_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, sorted keys): one `np.sort` of key and index packed in a uint64 where they fit
    (about 10x faster than an argsort), else an argsort."""
    n = key.shape[0]
    idx_bits = max(1, (n - 1).bit_length())
    if key_bits + idx_bits <= BITS:
        packed = np.sort((key << np.uint64(idx_bits)) | np.arange(n, dtype=np.uint64))
        return (packed & np.uint64((1 << idx_bits) - 1)).astype(np.int64), packed >> np.uint64(idx_bits)
    order = np.argsort(key)
    return order, key[order]


def choose_blocks(n: int, distance: int) -> int:
    """The number of blocks that makes the search cheapest for `n` random fingerprints: each
    table costs a sort (~n log n) and compares ~n^2 / 2^(key bits + 1) candidate pairs."""
    if distance >= BITS:
        return BITS
    best, best_cost = distance + 1, float("inf")
    for blocks in range(distance + 1, min(BITS, distance + 9) + 1):
        tables = len(list(itertools.combinations(range(blocks), blocks - distance)))
        bits = (BITS // blocks) * (blocks - distance)  # the narrowest table's key
        cost = tables * (n * max(1.0, np.log2(max(n, 2))) + n * n / 2.0 ** (bits + 1))
        if cost < best_cost:
            best, best_cost = blocks, cost
    return best


def _run_pairs(order: np.ndarray, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every pair (positions in `order`) inside the runs of equal sorted keys, in chunks."""
    n = keys.shape[0]
    if n < 2:
        return []
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate([[0], change])
    sizes = np.diff(np.concatenate([starts, [n]]))
    multi = sizes > 1
    starts, sizes = starts[multi], sizes[multi]
    if not starts.shape[0]:
        return []
    pairs_per_run = sizes * (sizes - 1) // 2
    out = []
    cum = np.cumsum(pairs_per_run)
    lo = 0
    while lo < starts.shape[0]:  # runs in groups of about PAIR_CHUNK pairs (a single huge run alone)
        hi = int(np.searchsorted(cum, (cum[lo - 1] if lo else 0) + PAIR_CHUNK, side="right"))
        hi = max(hi, lo + 1)
        st, sz = starts[lo:hi], sizes[lo:hi]
        # every position p of a run pairs with the positions after it in that run
        pos = _positions(st, sz)
        ends = np.repeat(st + sz, sz - 1)
        later = ends - pos - 1
        first = np.repeat(pos, later)
        offset = np.arange(first.shape[0]) - np.repeat(np.cumsum(later) - later, later)
        out.append((order[first], order[first + 1 + offset]))
        lo = hi
    return out


def _positions(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Every position of the runs but each run's last, vectorised."""
    counts = sizes - 1
    total = int(counts.sum())
    base = np.repeat(starts, counts)
    return base + (np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts))


def near_graph(fingerprints: np.ndarray, distance: int, blocks: int | None = None) -> NearGraph:
    """All pairs of the fingerprints within Hamming `distance` (see the module doc).
    `blocks`: how many blocks to split the bits into (default: `choose_blocks`)."""
    fps = np.ascontiguousarray(fingerprints, dtype=np.uint64)
    if not 0 <= distance <= BITS:
        raise ValueError(f"distance must be between 0 and {BITS}, not {distance}")
    unique, inverse = np.unique(fps, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    m = unique.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if m < 2 or distance == 0:
        return NearGraph(unique, inverse, empty, empty, empty.astype(np.int8), distance)
    blocks = min(blocks or choose_blocks(m, distance), BITS)
    codes: list[np.ndarray] = []
    dists: list[np.ndarray] = []
    compared = 0
    for table in tables(distance, blocks) if distance < BITS else [[]]:
        key, bits = _key(unique, table)
        order, keys = _sorted(key, bits)
        for x, y in _run_pairs(order, keys):
            compared += int(x.shape[0])
            d = popcount(unique[x] ^ unique[y])
            ok = d <= distance
            lo, hi = np.minimum(x[ok], y[ok]), np.maximum(x[ok], y[ok])
            codes.append(lo.astype(np.int64) * m + hi)
            dists.append(d[ok].astype(np.int8))
    if not codes:
        return NearGraph(unique, inverse, empty, empty, empty.astype(np.int8), distance, compared)
    code = np.concatenate(codes)
    code, first = np.unique(code, return_index=True)
    return NearGraph(unique, inverse, code // m, code % m, np.concatenate(dists)[first], distance, compared)
