"""Connected components of the candidate-pair graph (spec §8 step 4), in numba.

Only documents that appear in an edge become nodes (`np.unique` compacts their ordinals), so
memory grows with the number of near-duplicate candidates, not with the corpus. Union-find with
path halving and union by smaller root index gives a root per node; the cluster id is then the
smallest RPv2 `id_int` in each component, which does not depend on edge or shard order.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True, nogil=True)
def _union_all(parent, a, b):
    for i in range(a.shape[0]):
        ra = _find(parent, a[i])
        rb = _find(parent, b[i])
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb
    for x in range(parent.shape[0]):
        parent[x] = _find(parent, x)


def components(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(nodes, label)`: the sorted distinct document ordinals in `edges` (shape (e, 2)) and,
    for each, the index (into `nodes`) of its component's smallest node."""
    edges = np.asarray(edges, dtype=np.uint64).reshape(-1, 2)
    nodes, inverse = np.unique(edges.ravel(), return_inverse=True)
    inverse = inverse.reshape(-1, 2).astype(np.int64)
    parent = np.arange(nodes.shape[0], dtype=np.int64)
    if edges.shape[0]:
        _union_all(parent, inverse[:, 0].copy(), inverse[:, 1].copy())
    return nodes, parent


def cluster_ids(label: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the smallest `key` (uint64 id_int) of its component and the component size."""
    n_comp = label.shape[0]
    best = np.full(n_comp, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(best, label, key.astype(np.uint64))
    size = np.bincount(label, minlength=n_comp)
    return best[label], size[label].astype(np.int64)
