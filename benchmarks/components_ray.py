"""Connected components three ways, same edges, same run: the driver's one-shot form, its
chunked form (what `dedup fuzzy` uses past `--memory`'s share) and the Ray form
(`dedup.ray_components`: large-star/small-star rounds as Ray tasks), checked equal.

Usage::

    python benchmarks/components_ray.py [--docs 1000000] [--ray-cpus 2] [--chunk 1000000]

The graph has the shape fuzzy dedup's edges have on web text (`benchmarks/_webdup.py`): 30% of
`--docs` documents in clusters whose sizes follow Zipf(2) up to 10,000, each member linked to
the cluster's first member and to up to two random earlier members (the bands' star and
chains); ids are random 64-bit values, as `id_int`s are. Printed per form: seconds (wall; Ray's
start-up is shown apart and not counted), the driver process's peak RSS growth over the edges,
the rounds Ray took, and the ratios against the one-shot form. On one machine the Ray form pays
for shipping every round through the object store: it exists so that the components need no
single process to hold them (`docs/scaling.md` §6), and its figure here is the price of that on
2 cores, not a speed-up.
"""

from __future__ import annotations

import argparse
import logging
import resource
import tempfile
import time

import numpy as np


def graph(docs: int, seed: int = 0) -> np.ndarray:
    """(e, 2) uint64 distinct edges (small id first) of a web-like duplicate structure."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.iinfo(np.int64).max, size=docs, replace=False).astype(np.uint64)
    in_clusters, at, out = int(0.3 * docs), 0, []
    while at < in_clusters:
        size = int(min(10_000, rng.zipf(2.0) + 1, in_clusters - at))
        if size < 2:
            break
        members = ids[at:at + size]
        k = np.arange(1, size)
        out.append(np.stack([np.repeat(members[0], size - 1), members[1:]], axis=1))
        for _ in range(2):
            out.append(np.stack([members[(rng.random(size - 1) * k).astype(np.int64)], members[1:]], axis=1))
        at += size
    edges = np.concatenate(out)
    edges = np.sort(edges, axis=1)
    edges = edges[edges[:, 0] != edges[:, 1]]
    return np.unique(edges, axis=0)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--ray-cpus", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=1_000_000, help="edges per chunk of the driver's store")
    args = ap.parse_args()

    import ray

    from textsieve.dedup.components import components, components_chunked
    from textsieve.dedup.partitions import EdgeStore
    from textsieve.dedup.ray_components import ray_components

    edges = graph(args.docs)
    print(f"{args.docs:,} documents -> {edges.shape[0]:,} edges over {np.unique(edges).shape[0]:,} candidates")
    rows = []
    base = _rss_mb()
    t = time.perf_counter()
    want = components(edges)
    rows.append(("one-shot (driver)", time.perf_counter() - t, _rss_mb() - base, ""))
    base = _rss_mb()
    t = time.perf_counter()
    got = components_chunked(lambda: (edges[i:i + args.chunk] for i in range(0, edges.shape[0], args.chunk)))
    rows.append(("chunked (driver)", time.perf_counter() - t, _rss_mb() - base, ""))
    assert np.array_equal(got[1], want[1])
    t = time.perf_counter()
    ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
    started = time.perf_counter() - t
    steps: list[str] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            steps.append(record.getMessage())

    logger = logging.getLogger("textsieve.dedup.ray_components")
    logger.setLevel(logging.INFO)
    logger.addHandler(Count())
    with tempfile.TemporaryDirectory() as work:
        store = EdgeStore(work, args.chunk)
        store.add(edges)
        store.close()
        base = _rss_mb()
        t = time.perf_counter()
        got = ray_components(store, 1 << 30, ray=ray)
        rows.append((f"Ray tasks ({args.ray_cpus} CPUs)", time.perf_counter() - t, _rss_mb() - base,
                     f"{len(steps)} steps"))
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), "Ray components differ"
    print("labels: all three equal")
    print(f"{'form':24} {'seconds':>8} {'ratio':>7} {'driver +MB':>11}  notes")
    for name, sec, mb, note in rows:
        print(f"{name:24} {sec:8.2f} {sec / rows[0][1]:6.2f}x {mb:11.0f}  {note}")
    print(f"(Ray start-up {started:.1f} s, not counted)")
    ray.shutdown()


if __name__ == "__main__":
    main()
