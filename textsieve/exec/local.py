"""Run a function over a stream of tasks on a local process pool, results in input order.

Annotating is CPU-bound and reading is not, so the main process reads and batches documents
while workers compute. Results come back in submission order (outputs must not depend on
scheduling) and at most `max_pending` tasks are in flight, so memory stays bounded however
large the input: `Pool.imap` would drain the whole input iterator up front. One worker means no
pool at all, which keeps tracebacks and profiling simple.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import deque
from typing import Any, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ordered_map(fn: Callable[[T], R], tasks: Iterable[T], *, workers: int,
                initializer: Callable[..., Any] | None = None, initargs: tuple = (),
                max_pending: int | None = None) -> Iterator[tuple[T, R]]:
    """Yield (task, fn(task)) in task order, computing up to `workers` tasks at once."""
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        for task in tasks:
            yield task, fn(task)
        return
    limit = max_pending or 2 * workers
    # spawn, not fork: the parent holds Arrow thread pools and progress threads that must not
    # be duplicated mid-operation into children.
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=initializer, initargs=initargs) as pool:
        pending: deque = deque()
        for task in tasks:
            pending.append((task, pool.apply_async(fn, (task,))))
            while len(pending) >= limit:
                done_task, result = pending.popleft()
                yield done_task, result.get()
        while pending:
            done_task, result = pending.popleft()
            yield done_task, result.get()
