"""Connected components of an `EdgeStore`'s edges as Ray tasks (issue 29 item 1, the Ray half).

The local stage finds components on the driver (`dedup.components`), reading the edges a chunk
at a time but holding one parent per candidate and doing every round's work in one process. On
Ray the rounds are map/reduce steps over edge partitions, so no process holds more than one
partition of the graph and the work spreads over the cluster. The algorithm is Kiveris et al.'s
alternating *large-star* and *small-star* (SoCC 2014, "Connected components in MapReduce and
beyond"), which converges in O(log n) rounds and ends with every component a star around its
smallest node:

  partition  every undirected edge {a, b} is held twice, as a->b in the partition of a and as
             b->a in the partition of b (partition = a 64-bit mix of the node, mod P), so a task
             sees each of its nodes' whole neighbourhood; the copies from different producers
             meet in the same task, which drops repeats;
  large-star for each node u with m = min(u, neighbours of u): each larger neighbour v > u is
             linked to m instead of u;
  small-star for each node u with smaller neighbours: u and those neighbours are all linked to
             m, the smallest of them;
  end        when a large-star and the small-star after it both leave the edge set as it was
             (compared by a digest of the distinct directed pairs each step reads: count and two
             sums of mixed hashes, so no step ships the edges to the driver), every node's
             smallest neighbour-or-self is its component's smallest node.

Each step is one Ray task per partition returning a digest and P blocks (its output, routed to
the next step's partitions); the driver holds object references only, plus at the end the sorted
(node, root) pairs it returns in `components`' form, `(nodes, label)`: the same labels as the
local path, whatever the partitioning (the test compares them on random graphs and on the stage's
edges). The edges enter the object store one `EdgeStore` chunk at a time. A task whose worker
dies is retried by Ray (`max_retries`); tasks are pure, so a retry returns the same blocks.

Skew: a task holds its nodes' neighbourhoods, so a component's smallest node takes every member
as a neighbour (a 10,000-member cluster is 10,000 pairs in one task). Partitions are sized so an
even share fits a quarter of `--memory`; a component of hundreds of millions of members would
still land on one task.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from textsieve.dedup.partitions import EdgeStore
from textsieve.exec.ray_exec import ensure_ray, live_cpus

log = logging.getLogger(__name__)

MAX_RETRIES = 3
#: bytes per directed pair a step task holds at its peak (the pairs, the sort order, the output
#: edges and their routed copies)
PAIR_BYTES = 96
_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised (uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLD
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def route(a: np.ndarray, b: np.ndarray, parts: int) -> list[np.ndarray]:
    """The undirected edges (a[i], b[i]) as directed pairs (src, dst), both ways, one (k, 2)
    uint64 block per partition of src."""
    src = np.concatenate([a, b]).astype(np.uint64)
    dst = np.concatenate([b, a]).astype(np.uint64)
    part = (mix(src) % np.uint64(parts)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    pairs = np.stack([src[order], dst[order]], axis=1)
    cut = np.searchsorted(part[order], np.arange(parts + 1))
    return [pairs[cut[p]:cut[p + 1]] for p in range(parts)]


def _distinct(blocks: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct directed pairs of the blocks as (src, dst), sorted by src then dst."""
    pairs = np.concatenate([np.asarray(b, dtype=np.uint64).reshape(-1, 2) for b in blocks]) if blocks \
        else np.zeros((0, 2), np.uint64)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    src, dst = pairs[order, 0], pairs[order, 1]
    if src.shape[0] > 1:
        keep = np.ones(src.shape[0], dtype=bool)
        keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst = src[keep], dst[keep]
    return src, dst


def digest(src: np.ndarray, dst: np.ndarray) -> tuple[int, int, int]:
    """(count, sum of h, sum of mix(h)) over the pairs, h = mix(src * golden + dst): equal sets
    give equal digests; different ones collide with probability ~2^-128."""
    with np.errstate(over="ignore"):
        h = mix(src * _GOLD + dst)
        return int(src.shape[0]), int(h.sum(dtype=np.uint64)), int(mix(h).sum(dtype=np.uint64))


def _group_min(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first row of each src group, the distinct srcs, m per group = min(src, its smallest dst)):
    pairs are sorted by (src, dst), so a group's first dst is its smallest."""
    if src.shape[0] == 0:
        empty = np.zeros(0, np.uint64)
        return np.zeros(0, np.int64), empty, empty
    head = np.ones(src.shape[0], dtype=bool)
    head[1:] = src[1:] != src[:-1]
    starts = np.flatnonzero(head)
    return starts, src[starts], np.minimum(src[starts], dst[starts])


def star_step(kind: str, parts: int, *blocks: np.ndarray) -> tuple[Any, ...]:
    """One partition's large-star (`kind` "large") or small-star step: (digest of the distinct
    pairs read, then one block per partition of the next step)."""
    src, dst = _distinct(blocks)
    seen = digest(src, dst)
    starts, nodes, m = _group_min(src, dst)
    m_of = np.repeat(m, np.diff(np.append(starts, src.shape[0])))
    loop = dst == src  # a self-loop (a node with no other edge) is kept as it is
    if kind == "large":  # every larger neighbour v of u is linked to m(u)
        sel = dst > src
        a, b = np.concatenate([dst[sel], src[loop]]), np.concatenate([m_of[sel], src[loop]])
    else:  # u and its smaller neighbours are linked to m(u), the smallest of them
        sel = (dst < src) & (dst != m_of)
        moved = m != nodes  # u has a smaller neighbour
        a = np.concatenate([dst[sel], nodes[moved], src[loop]])
        b = np.concatenate([m_of[sel], m[moved], src[loop]])
    return (seen, *route(a, b, parts))


def star_roots(*blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, root) of one partition of the converged graph: each node's smallest
    neighbour-or-self, which in a star forest is its component's smallest node."""
    src, dst = _distinct(blocks)
    _, nodes, m = _group_min(src, dst)
    return nodes, m


def partitions_for(n_edges: int, budget: int, cpus: int) -> int:
    """Partitions P: at least two per CPU, and enough that an even share of the 2 x n_edges
    directed pairs fits a quarter of `budget`."""
    per_task = max(1 << 16, budget // (4 * PAIR_BYTES))
    return int(max(2 * cpus, -(-2 * n_edges // per_task), 1))


def ray_components(store: EdgeStore, budget: int, address: str | None = None,
                   parts: int | None = None, ray: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """`components.components` of the store's edges, computed as Ray tasks (module doc):
    `(nodes, label)`, the sorted distinct endpoints and each one's index of its component's
    smallest node."""
    ray = ray or ensure_ray(address)
    P = parts or partitions_for(store.n, budget, max(1, live_cpus(ray)))
    step = ray.remote(max_retries=MAX_RETRIES)(star_step)
    roots_task = ray.remote(max_retries=MAX_RETRIES)(star_roots)
    inputs: list[list[Any]] = [[] for _ in range(P)]
    for chunk in store.chunks():  # one chunk of the driver's store in memory at a time
        chunk = np.asarray(chunk, dtype=np.uint64).reshape(-1, 2)
        for p, block in enumerate(route(chunk[:, 0], chunk[:, 1], P)):
            if block.shape[0]:
                inputs[p].append(ray.put(block))
    previous: tuple[int, int, int] | None = None
    unchanged = 0  # steps in a row that left the edges as they were
    for k in range(10_000):
        kind = "large" if k % 2 == 0 else "small"
        outs = [step.options(num_returns=P + 1).remote(kind, P, *inputs[p]) for p in range(P)]
        seen = ray.get([o[0] for o in outs])
        total = (sum(s[0] for s in seen), sum(s[1] for s in seen) % (1 << 64), sum(s[2] for s in seen) % (1 << 64))
        log.info("components on Ray: step %d (%s-star) read %d directed pairs in %d partitions", k, kind, total[0], P)
        unchanged = unchanged + 1 if total == previous else 0
        if unchanged >= 2 or total[0] == 0:  # the last large- and small-star steps changed nothing
            break
        previous = total
        inputs = [[outs[q][1 + p] for q in range(P)] for p in range(P)]
    found = ray.get([roots_task.remote(*inputs[p]) for p in range(P)])
    nodes = np.concatenate([n for n, _ in found] or [np.zeros(0, np.uint64)])
    roots = np.concatenate([r for _, r in found] or [np.zeros(0, np.uint64)])
    order = np.argsort(nodes, kind="stable")
    nodes, roots = nodes[order], roots[order]
    return nodes, np.searchsorted(nodes, roots).astype(np.int64)
