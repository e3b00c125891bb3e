"""Run textsieve's shard-parallel work on Ray, with the local pool's contract.

`ray_ordered_map` is a drop-in for `textsieve.exec.local.ordered_map`: it yields (task, result)
in task order, keeps at most `max_pending` tasks in flight (memory stays bounded however large
the input), and runs `initializer(*initargs)` once per worker process. Workers are Ray actors,
one per worker, because annotate's per-process state (word-list tables, loaded models) is
expensive to build and must not be rebuilt per task, which plain Ray tasks would do.

Fault tolerance: actors are created without Ray-side restarts or retries, and the driver owns
recovery. When an actor dies (killed, out of memory, node lost) every task it held is resubmitted
to a fresh actor, which runs the initializer again. Each task's result is taken exactly once,
in order, so a lost worker loses nothing and duplicates nothing; a result lost with its node
(finished, but held in that node's object store) counts as the worker's death. When the actor
died with its node and the cluster has no CPU left for a fresh one, the pool shrinks instead (a
replacement would wait for a CPU forever, and so would the results queued behind it).

Ray is optional (`pip install textsieve[ray]`); importing this module does not import Ray.
(The tests kill workers by wrapping `fn`, see `tests/hooks/ray_kill.py`; nothing here knows.)
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from textsieve import extensions
from textsieve.errors import TextsieveError

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger("textsieve.ray")

MAX_ATTEMPTS = 4  # a task whose worker died this many times is an error, not bad luck
EXECUTORS = ("local", "ray")


class RayUnavailable(TextsieveError, RuntimeError):
    """`--executor ray` was asked for but Ray is not installed or cannot be reached."""


def require_ray():
    """Import Ray or explain how to get it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("--executor ray needs Ray, which is not installed: pip install 'textsieve[ray]' "
                             "(or pip install ray), or use --executor local") from exc
    return ray


def ensure_ray(address: str | None = None, num_cpus: int | None = None):
    """Connect to the Ray cluster at `address` ('auto' = the one `ray start` made on this machine),
    or start a local one with `num_cpus` (default: all cores); reuse an existing connection."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    try:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            from textsieve.exec.local import default_workers

            ray.init(num_cpus=num_cpus or default_workers(), include_dashboard=False, log_to_driver=False)
    except ConnectionError as exc:
        raise RayUnavailable(f"--address {address}: cannot connect to a Ray cluster there ({exc})") from exc
    return ray


def cluster_cpus(address: str | None = None) -> int:
    """CPUs of the Ray cluster (connecting or starting it): the default number of workers."""
    ray = ensure_ray(address)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


#: seconds the driver waits for the head result before it checks for actors the cluster cannot place
HEAD_WAIT_S = 5.0


def live_cpus(ray: Any) -> int:
    """CPUs of the cluster's nodes that are alive now (`cluster_resources` may still count a node
    whose death the caller has just seen)."""
    return int(sum(n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")))


class _Worker:
    """One worker process: initialised once, then runs `fn` on task after task."""

    def __init__(self, fn: Callable, initializer: Callable | None, initargs: tuple):
        self.fn = fn
        if initializer is not None:
            initializer(*initargs)

    def run(self, task: Any) -> Any:
        return self.fn(task)


def ray_ordered_map(fn: Callable[[T], R], tasks: Iterable[T], *, workers: int,
                    initializer: Callable[..., Any] | None = None, initargs: tuple = (),
                    address: str | None = None, max_pending: int | None = None,
                    inline: Callable[[T], bool] | None = None) -> Iterator[tuple[T, R]]:
    """Yield (task, fn(task)) in task order, computing up to `workers` tasks at once on Ray actors.

    `fn`, `initializer`, tasks and results must be picklable (module-level functions and plain
    data), exactly as for the local process pool. A task for which `inline(task)` is true runs
    in the driver after every earlier task (`exec.local.InlineRunner`)."""
    from textsieve.exec.local import InlineRunner

    here: InlineRunner[T, R] = InlineRunner(fn, inline, initializer, initargs)
    ray = ensure_ray(address, num_cpus=workers if not address else None)
    from ray.exceptions import GetTimeoutError, ObjectLostError, RayActorError

    available = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if workers > available:  # more actors than CPUs would never all start: ordered results would hang
        log.warning("Ray cluster has %d CPU(s); using %d workers instead of %d", available, available, workers)
        workers = available
    workers = max(1, workers)
    limit = max_pending or 2 * workers
    actor_cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Worker)
    initializer, initargs = extensions.worker_initializer(initializer, initargs)  # extension registrations
    init_ref = ray.put(initargs)  # shared by every (re)started actor, shipped once

    def new_actor():
        return actor_cls.remote(fn, initializer, init_ref)

    actors: list[Any] = [new_actor() for _ in range(workers)]
    load = [0] * workers
    # a replacement actor's `__ray_ready__` ref until it answers: one made just after a node died,
    # while the GCS still counted that node alive, can never be placed and must be dropped
    fresh: list[Any] = [None] * workers
    # pending entries: [task, actor slot, object ref, attempts]; deque order = task order
    pending: deque[list] = deque()

    def submit(entry: list) -> None:
        slot = min((k for k in range(workers) if actors[k] is not None), key=lambda k: load[k])
        load[slot] += 1
        entry[1] = slot
        entry[2] = actors[slot].run.remote(entry[0])

    def replace(slot: int) -> None:
        """The actor in `slot` died: start a fresh one if the cluster still has a CPU for it (else
        drop the slot), and move all its tasks there or elsewhere."""
        try:
            ray.kill(actors[slot], no_restart=True)
        except Exception:  # already gone
            pass
        others = sum(1 for k, a in enumerate(actors) if a is not None and k != slot)
        if others + 1 <= live_cpus(ray) or not others:
            actors[slot] = new_actor()
            fresh[slot] = actors[slot].__ray_ready__.remote()
        else:
            log.warning("the Ray cluster lost CPUs (a node left?): going on with %d worker(s)", others)
            actors[slot] = None
            fresh[slot] = None
        move_tasks(slot)

    def move_tasks(slot: int) -> None:
        load[slot] = 0
        for entry in pending:
            if entry[1] == slot:
                entry[3] += 1
                if entry[3] >= MAX_ATTEMPTS:
                    raise RuntimeError(f"a task failed {entry[3]} times because its Ray worker died; giving up")
                submit(entry)

    def drop_unplaceable() -> None:
        """While the head result is late: drop replacement actors that have not started while the
        cluster has fewer live CPUs than actors (they would wait for a CPU forever), moving their
        tasks to the others."""
        waiting = [k for k in range(workers) if actors[k] is not None and fresh[k] is not None]
        if not waiting:
            return
        started, _ = ray.wait([fresh[k] for k in waiting], num_returns=len(waiting), timeout=0)
        for k in waiting:
            if fresh[k] in started:
                fresh[k] = None
        for k in waiting:
            live = sum(1 for a in actors if a is not None)
            if fresh[k] is None or live <= max(1, live_cpus(ray)):
                continue
            log.warning("the Ray cluster lost CPUs (a node left?): going on with %d worker(s)", live - 1)
            try:
                ray.kill(actors[k], no_restart=True)
            except Exception:  # pragma: no cover - never started
                pass
            actors[k], fresh[k] = None, None
            move_tasks(k)

    def take_head() -> tuple[T, R]:
        while True:
            entry = pending[0]
            try:
                result = ray.get(entry[2], timeout=HEAD_WAIT_S)
            except GetTimeoutError:  # still running, or waiting for an actor that cannot start
                drop_unplaceable()
                continue
            except RayActorError as exc:
                if getattr(exc, "actor_init_failed", False):  # the initializer raised: not a crash
                    raise
                log.warning("Ray worker died; resubmitting its %d task(s) to a fresh worker",
                            sum(1 for e in pending if e[1] == entry[1]))
                replace(entry[1])
                continue
            except ObjectLostError:  # done, but its result was on a node that is gone (with its worker)
                log.warning("a Ray worker's result was lost with its node; resubmitting its %d task(s)",
                            sum(1 for e in pending if e[1] == entry[1]))
                replace(entry[1])
                continue
            pending.popleft()
            load[entry[1]] -= 1
            return entry[0], result

    try:
        for task in tasks:
            if here.wants(task):
                while pending:
                    yield take_head()
                yield task, here.run(task)
                continue
            entry = [task, -1, None, 0]
            pending.append(entry)
            submit(entry)
            while len(pending) >= limit:
                yield take_head()
        while pending:
            yield take_head()
    finally:
        for actor in actors:
            if actor is None:  # a slot dropped when the cluster shrank
                continue
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # pragma: no cover - already gone
                pass
