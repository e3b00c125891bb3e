"""Connected components (`dedup.components`): the chunked form (issue 29 item 1) against the
one-shot form, on random graphs cut into tiny chunks, in memory and spilled to files."""

from __future__ import annotations

import numpy as np

from textsieve.dedup.components import cluster_ids, components, components_chunked


def _graphs(seed: int, n: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        nodes = int(rng.integers(2, 80))
        ids = rng.choice(np.arange(1, 10_000, dtype=np.uint64), nodes, replace=False)
        edges = ids[rng.integers(0, nodes, (int(rng.integers(1, 150)), 2))]
        yield rng, edges


def test_chunked_equals_one_shot_on_random_graphs():
    for rng, edges in _graphs(11, 150):
        want = components(edges)
        got = components(edges, max_rows=int(rng.integers(1, 9)))
        assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
        assert all(np.array_equal(x, y) for x, y in zip(cluster_ids(want[1], want[0]), cluster_ids(got[1], got[0])))


def test_spilled_rounds_equal_one_shot_and_leave_no_files(tmp_path):
    for rng, edges in _graphs(12, 100):
        step = int(rng.integers(1, 6))

        def chunks(edges=edges, step=step):
            return (edges[i:i + step] for i in range(0, len(edges), step))

        got = components_chunked(chunks, spill=str(tmp_path), rows=3)
        want = components(edges)
        assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    assert list(tmp_path.iterdir()) == []


def test_a_long_chain_and_the_smallest_id_labels():
    ids = np.arange(1000, 0, -1, dtype=np.uint64)  # a path whose ids fall along it
    edges = np.stack([ids[:-1], ids[1:]], axis=1)
    nodes, label = components(edges, max_rows=7)
    assert (label == 0).all() and nodes[0] == 1


class _InlineRay:
    """Ray's task API run inline, in order: `ray_components`' rounds checked without a cluster
    (the real one runs in `tests/test_ray.py`)."""

    @staticmethod
    def remote(**_):
        def wrap(fn):
            class Task:
                @staticmethod
                def remote(*args):
                    return fn(*args)

                @staticmethod
                def options(**_):
                    return Task
            return Task
        return wrap

    @staticmethod
    def put(x):
        return x

    @staticmethod
    def get(x):
        return x


def _store(tmp_path, edges: np.ndarray, rows: int):
    from textsieve.dedup.partitions import EdgeStore

    store = EdgeStore(str(tmp_path), max_rows=rows, max_edges=4 * rows)  # small: spilled and chunked
    for s in range(0, edges.shape[0], 5):
        store.add(np.sort(edges[s:s + 5], axis=1).astype(np.uint64))
    return store.close()


def test_star_rounds_equal_one_shot(tmp_path):
    """Large-star/small-star rounds over hashed partitions (`dedup.ray_components`, the Ray
    form): the one-shot form's nodes and labels, self-loops and spilled stores included."""
    from textsieve.dedup.ray_components import ray_components

    for k, (rng, edges) in enumerate(_graphs(13, 120)):
        store = _store(tmp_path / f"g{k}", edges, int(rng.integers(1, 40)))
        got = ray_components(store, 1 << 20, parts=int(rng.integers(1, 7)), ray=_InlineRay)
        want = components(np.sort(edges, axis=1))
        assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
        store.remove()
    ids = np.arange(3000, 0, -1, dtype=np.uint64)  # a long path: O(log n) rounds, smallest id wins
    nodes, label = ray_components(_store(tmp_path / "path", np.stack([ids[:-1], ids[1:]], axis=1), 64), 1 << 20,
                                  parts=3, ray=_InlineRay)
    assert (label == 0).all() and nodes[0] == 1 and nodes.shape[0] == 3000
