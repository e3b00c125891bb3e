"""Make a Ray worker process die mid-run, as a real crash would (`os._exit(1)`), to test that
the Ray paths lose and repeat nothing. textsieve knows nothing of this: the test monkeypatches,
in its own process, the two places that hand work to Ray workers, so the function a worker
runs dies on one chosen task:

* `exec.ray_exec.ray_ordered_map` (annotate, dedup exact, select): `kill_ordered_map_task`
  (or `dying_ordered_map` around a direct call) kills the worker running task `n` (0-based,
  counted per call), by submission order;
* the map tasks of dedup fuzzy's shuffle (`dedup.ray_shuffle._map`): `kill_shuffle_map_task`
  kills the worker running map task `n`, i.e. the n-th piece of `ray_shuffle.pieces`.

Each kill happens once (a marker file is created exclusively before dying), so the retry
succeeds; the marker's existence afterwards tells the test that a worker did die. The workers
unpickle the wrappers by reference, so this package must be importable there (`test_ray.py`
puts the tests folder on the Ray workers' PYTHONPATH).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Ray workers import this module too; they need no pytest
    import pytest


def die_once(marker: str) -> None:
    """In a worker: exit hard unless `marker` exists; create it first, so only one process dies."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def _numbered(fn: Callable[[Any], Any], n: int, marker: str, item: tuple[int, Any]) -> Any:
    seq, task = item
    if seq == n:
        die_once(marker)
    return fn(task)


def dying_ordered_map(real: Callable[..., Iterator[tuple[Any, Any]]], n: int,
                      marker_dir: Path) -> tuple[Callable[..., Iterator[tuple[Any, Any]]], list[Path]]:
    """`real` (a `ray_ordered_map`) whose worker dies on task `n` of every call, and the list of
    marker files, one per call so far (each exists once its kill happened)."""
    markers: list[Path] = []

    def ordered_map(fn: Callable[[Any], Any], tasks: Iterable[Any], **kw: Any) -> Iterator[tuple[Any, Any]]:
        marker = marker_dir / f"died-{len(markers)}"
        markers.append(marker)
        inline = kw.pop("inline", None)  # the caller's test sees a task, not its (number, task)
        if inline is not None:
            kw["inline"] = lambda item: inline(item[1])
        for (_, task), result in real(partial(_numbered, fn, n, str(marker)), enumerate(tasks), **kw):
            yield task, result

    return ordered_map, markers


def kill_ordered_map_task(monkeypatch: pytest.MonkeyPatch, n: int, marker_dir: Path) -> list[Path]:
    """Every stage that uses `ray_ordered_map` from now on loses the worker running its task `n`."""
    from textsieve.exec import ray_exec

    wrapped, markers = dying_ordered_map(ray_exec.ray_ordered_map, n, marker_dir)
    monkeypatch.setattr(ray_exec, "ray_ordered_map", wrapped)
    return markers


def kill_shuffle_map_task(monkeypatch: pytest.MonkeyPatch, n: int, marker: Path) -> None:
    """The next Ray dedup fuzzy loses the worker running its map task `n`."""
    from textsieve.dedup import ray_shuffle

    real_pieces = ray_shuffle.pieces
    chosen: dict[str, tuple[str, list[int]]] = {}

    def pieces(table: Any, docs_per_piece: int) -> list[tuple[int, list[int]]]:
        out = real_pieces(table, docs_per_piece)
        shard, row_groups = out[n]
        chosen["piece"] = (table.paths[shard], list(row_groups))
        return out

    def dying_map(fs: Any, path: str, where: str, row_groups: list[int], *rest: Any) -> Any:
        # runs in a Ray worker, which unpickles this closure by value (with `chosen` filled in:
        # `ray_lsh` cuts its pieces before it submits a map task); its own ray_shuffle is unpatched
        from textsieve.dedup.ray_shuffle import _map

        if (path, list(row_groups)) == chosen["piece"]:
            die_once(str(marker))
        return _map(fs, path, where, row_groups, *rest)

    monkeypatch.setattr(ray_shuffle, "pieces", pieces)
    monkeypatch.setattr(ray_shuffle, "_map", dying_map)


def kill_star_step(monkeypatch: pytest.MonkeyPatch, marker: Path) -> None:
    """The next components on Ray (`dedup.ray_components`) lose the worker running their first
    small-star task."""
    from textsieve.dedup import ray_components

    real, path = ray_components.star_step, str(marker)

    def dying(kind: str, parts: int, *blocks: Any) -> Any:
        if kind == "small":
            die_once(path)
        return real(kind, parts, *blocks)

    monkeypatch.setattr(ray_components, "star_step", dying)
