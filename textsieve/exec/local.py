"""Run a function over a stream of tasks on a local process pool, results in input order.

Annotating is CPU-bound and reading is not, so the main process reads and batches documents
while workers compute. Results come back in submission order (outputs must not depend on
scheduling) and at most `max_pending` tasks are in flight, so memory stays bounded however
large the input: `Pool.imap` would drain the whole input iterator up front. One worker means no
pool at all, which keeps tracebacks and profiling simple.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from textsieve import extensions
from textsieve.errors import TextsieveError
from textsieve.exec import batch_transport, warm_start
from textsieve.exec.clean_spawn import pool_context

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """All cores this process may use."""
    return warm_start.usable_cores()


def ordered_map(fn: Callable[[T], R], tasks: Iterable[T], *, workers: int,
                initializer: Callable[..., Any] | None = None, initargs: tuple = (),
                max_pending: int | None = None, inline: Callable[[T], bool] | None = None,
                settle: bool = False) -> Iterator[tuple[T, R]]:
    """Yield (task, fn(task)) in task order, computing up to `workers` tasks at once.

    A task for which `inline(task)` is true is computed in this process once every earlier task
    is done (`InlineRunner`): a task too big to copy to a worker and its result back. On an error
    (or an abandoned iterator) the tasks not started are dropped; `settle` waits for the running
    ones to end before the error goes on, for tasks that write files themselves."""
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        for task in tasks:
            yield task, fn(task)
        return
    here: InlineRunner[T, R] = InlineRunner(fn, inline, initializer, initargs)
    limit = max_pending or 2 * workers
    # workers first repeat the run-time registrations of extension signals/kinds/readers
    initializer, initargs = extensions.worker_initializer(initializer, initargs)
    # and send their Arrow results with shared buffers once (`batch_transport`)
    # in the environment this process has now (a forked worker has the fork server's otherwise)
    initializer, initargs = _start_worker, (warm_start.environment(), initializer, initargs)
    # spawned, or forked by the warm fork server the CLI started (`warm_start`), never forked from
    # this process: it holds Arrow thread pools, progress threads and the output lock, which must
    # not be duplicated into children. Both contexts keep workers from re-running the caller's
    # script (safe without a main guard, see `clean_spawn`), and the executor (unlike
    # `multiprocessing.Pool`, which respawns dead workers forever) fails fast when a worker dies or
    # its initializer raises.
    pool = ProcessPoolExecutor(workers, mp_context=pool_context(), initializer=initializer,
                               initargs=initargs)
    finished = False
    try:
        pending: deque = deque()
        for task in tasks:
            if here.wants(task):
                while pending:
                    done_task, future = pending.popleft()
                    yield done_task, _result(future)
                yield task, here.run(task)
                continue
            pending.append((task, pool.submit(_in_task, fn, task)))
            while len(pending) >= limit:
                done_task, future = pending.popleft()
                yield done_task, _result(future)
        while pending:
            done_task, future = pending.popleft()
            yield done_task, _result(future)
        finished = True
    finally:
        # on an error or an abandoned iterator, drop queued work instead of computing it
        pool.shutdown(wait=finished or settle, cancel_futures=not finished)


def _start_worker(environ: dict[str, str], initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    """A pool worker's first step: in a worker the fork server made, its ties to the server and the
    command (`warm_start.forked_worker_start`); the pool owner's environment
    (`warm_start.adopt_environment`); results back through `batch_transport`; then the caller's
    initializer."""
    warm_start.forked_worker_start()
    signal.signal(signal.SIGINT, _on_ctrl_c)
    warm_start.adopt_environment(environ)
    batch_transport.register()
    if initializer is not None:
        initializer(*initargs)


_TASK = {"running": False}


def _in_task(fn: Callable[[T], R], task: T) -> R:
    """A pool task, run with `_TASK` saying so (for `_on_ctrl_c`)."""
    _TASK["running"] = True
    try:
        return fn(task)
    finally:
        _TASK["running"] = False


def _on_ctrl_c(signum: int, frame: Any) -> None:
    """A pool worker's Ctrl-C (the terminal sends it to the command and all its workers): inside a
    task, KeyboardInterrupt, so the task cleans up (a writer drops its temporary file) and the
    command gets the interrupt as the task's error; between tasks, nothing. A worker interrupted
    while it waited for or unpickled its next task used to die with a traceback, and the command
    then reported a crashed worker (exit 2) instead of the interrupt (exit 130); after the
    command's own KeyboardInterrupt the pool is shut down and idle workers end normally."""
    if _TASK["running"]:
        raise KeyboardInterrupt


class InlineRunner(Generic[T, R]):
    """The tasks a mapper computes in its own process instead of a worker's: one that holds a
    huge document would exist three times over (here, pickled, in the worker) and its result
    twice (there and here), so the caller marks it (`inline`) and it runs here, after the tasks
    before it, with the workers idle. The worker initializer runs here first, once."""

    def __init__(self, fn: Callable[[T], R], inline: Callable[[T], bool] | None,
                 initializer: Callable[..., Any] | None, initargs: tuple):
        self.fn, self.inline = fn, inline
        self.initializer, self.initargs = initializer, initargs
        self.ready = initializer is None

    def wants(self, task: T) -> bool:
        return self.inline is not None and self.inline(task)

    def run(self, task: T) -> R:
        if not self.ready:
            assert self.initializer is not None
            self.initializer(*self.initargs)
            self.ready = True
        return self.fn(task)


class WorkerCrashError(TextsieveError, RuntimeError):
    """A worker process of the local pool died (killed, out of memory, or its setup failed)."""


def _result(future: Future) -> Any:
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise WorkerCrashError(
            f"a worker process exited unexpectedly ({exc}); it may have been killed or run out of "
            "memory, or failed while starting (its traceback is printed above); re-run with "
            "workers=1 (--workers 1) to see the error in the main process") from None
