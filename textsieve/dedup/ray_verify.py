"""`dedup fuzzy --verify exact` on Ray (issue 29 item 2): the candidates' shingles built per shard
as Ray tasks, and the candidate pairs checked as Ray tasks next to them.

Why not the local way on Ray: the local `ShingleStore` writes one file per shard into a work
folder of the driver's machine, which the other nodes cannot read. Here each shard task returns
its candidates' shingle hashes (sorted distinct uint64 per document, back to back, with
offsets) into Ray's object store; a pair task gets a slice of the pairs and the shards its pairs
touch, which Ray resolves on the task's node (no copy on the node that holds them; its
scheduler prefers nodes holding large arguments). The Jaccard of a pair is `jaccard_sorted` of
the same arrays as locally, so the kept edges, and the published set, are byte-identical to
`--executor local` (`tests/test_ray.py`). A task whose worker dies is retried by Ray.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from textsieve.dedup.corpus import ShardTable, source_rows, wanted_shingles
from textsieve.dedup.partitions import EdgeStore
from textsieve.dedup.verify import jaccard_sorted, locate
from textsieve.exec.progress import Progress
from textsieve.exec.ray_exec import ensure_ray

MAX_RETRIES = 3
#: candidate pairs per Ray task
PAIRS_PER_TASK = 50_000


def _shard_shingles(meta: dict, rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets): the wanted rows' shingle hashes back to back, in `rows` order."""
    arrays: list[np.ndarray] = [np.zeros(0, np.uint64)] * len(rows)
    for k, h in wanted_shingles(meta, rows):
        arrays[k] = h
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([a.shape[0] for a in arrays], out=offsets[1:])
    return (np.concatenate(arrays) if arrays else np.zeros(0, np.uint64)), offsets


def _pair_jaccards(pairs: np.ndarray, *shards: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Exact Jaccard per row (shard a, doc a, shard b, doc b) of `pairs`; shard numbers index
    `shards`, each (values, offsets)."""
    out = np.zeros(pairs.shape[0], dtype=np.float64)
    for n, (fa, ka, fb, kb) in enumerate(pairs.tolist()):
        va, oa = shards[fa]
        vb, ob = shards[fb]
        out[n] = jaccard_sorted(va[oa[ka]:oa[ka + 1]], vb[ob[kb]:ob[kb + 1]])
    return out


def ray_exact_edges(table: ShardTable, edges: dict[float, EdgeStore], ends: np.ndarray, budget: int,
                    out: Callable[[float], EdgeStore], address: str | None = None,
                    progress: bool = False) -> dict[float, EdgeStore]:
    """`verify.exact_edges` with the shingles and the pairs as Ray tasks (module doc)."""
    ray = ensure_ray(address)
    shard_task = ray.remote(max_retries=MAX_RETRIES)(_shard_shingles)
    pair_task = ray.remote(max_retries=MAX_RETRIES)(_pair_jaccards)
    ii, ords, _ = locate(table, ends, budget)
    order = np.argsort(ords, kind="stable")
    sorted_ords = ords[order]
    n = sorted_ords.shape[0]
    shard_of, local_of = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    refs = []
    for f, (i, local, meta, rows) in enumerate(source_rows(table, sorted_ords)):
        refs.append(shard_task.remote(meta, rows))
        keys = np.searchsorted(sorted_ords, local + table.base[i])
        shard_of[keys], local_of[keys] = f, np.arange(keys.shape[0])
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n)  # id_int position -> sorted-ordinal index
    result = {}
    for t, src in edges.items():
        kept = out(t)
        bar = Progress(f"dedup fuzzy [verify t{t} on Ray]", src.n, enabled=progress, unit="pairs")
        for e in src.chunks():
            a, b = slot[np.searchsorted(ii, e[:, 0])], slot[np.searchsorted(ii, e[:, 1])]
            futures = []
            for s in range(0, e.shape[0], PAIRS_PER_TASK):
                fa, fb = shard_of[a[s:s + PAIRS_PER_TASK]], shard_of[b[s:s + PAIRS_PER_TASK]]
                need = np.unique(np.concatenate([fa, fb]))
                pairs = np.stack([np.searchsorted(need, fa), local_of[a[s:s + PAIRS_PER_TASK]],
                                  np.searchsorted(need, fb), local_of[b[s:s + PAIRS_PER_TASK]]], axis=1)
                futures.append(pair_task.remote(pairs, *[refs[f] for f in need]))
            jac = np.concatenate([ray.get(f) for f in futures]) if futures else np.zeros(0)
            bar.advance(e.shape[0], e.shape[0])
            kept.add(e[jac >= t])
        bar.close()
        result[t] = kept.close()
    return result
