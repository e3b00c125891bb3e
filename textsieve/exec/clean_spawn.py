"""`spawn` and `forkserver` multiprocessing contexts whose workers never re-run the caller's `__main__`.

Why: with the spawn (and forkserver) start method, every new worker first re-imports the
parent's main module (`init_main_from_path` / `init_main_from_name` in the preparation data),
so that pickled `__main__` functions resolve. A plain user script such as

    import textsieve as ts
    ts.annotate("data.jsonl.gz", output="attrs", workers=2)

has no `if __name__ == "__main__":` guard, so each worker re-runs the whole script, reaches the
pool again while still bootstrapping, and dies with multiprocessing's "bootstrapping phase"
RuntimeError; `multiprocessing.Pool` then respawns it, forever (the hang of issue 10).
forkserver does not help: its children get the same preparation data and import the script too.

Every function and task textsieve sends to its pools lives in textsieve's own modules, so the
workers do not need the user's main module at all. `CleanMainContext` starts each worker while
`sys.modules["__main__"]` is briefly a bare stand-in module (no `__file__`, no `__spec__`): the
preparation data then names no main module and the child imports only what it unpickles. The
swap is held under a lock and lasts only as long as launching the child (pickling its
preparation data and process object), including respawns from a pool's helper threads.
Scripts with a main guard, `python -m pkg.mod`, notebooks and the CLI behave as before, minus
the needless re-import. Do not use this context for functions defined in `__main__`. The same
holds for `CleanForkServerContext`, used once the command started a fork server
(`warm_start`): its workers are forked by the server but still get the preparation data.

Each worker also starts with one thread per math library (`warm_start.WORKER_THREADS`, unless the caller's
environment sets them): a worker is one core's share of the work, while OpenBLAS (loaded with
NumPy) and OpenMP start as many threads as the machine has cores in every process, and those
spin on the cores the other workers compute on. On the 2-core dev machine, 2 annotate workers on
4 shards, 4 alternating pairs: 6.80 CPU-s with them, 6.40 without (wall 3.75 s -> 3.53 s).
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import context as mp_context
from typing import Any

from textsieve.exec import warm_start
from textsieve.exec.warm_start import worker_threads

_SWAP_LOCK = threading.RLock()


@contextmanager
def bare_main() -> Iterator[None]:
    """While active, `__main__` is an empty module, so spawn's preparation data names none."""
    with _SWAP_LOCK:
        saved = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if saved is None:  # pragma: no cover - an interpreter always has __main__
                sys.modules.pop("__main__", None)
            else:
                sys.modules["__main__"] = saved


class CleanMainProcess(mp_context.SpawnProcess):
    """A spawned process whose preparation data carries no main module to re-import, started with
    one thread per math library (`worker_threads`)."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # multiprocessing's hook name
        with bare_main(), worker_threads():
            return mp_context.SpawnProcess._Popen(process_obj)


class CleanMainContext(mp_context.SpawnContext):
    """The spawn context, with `CleanMainProcess` for every process it (or a pool on it) starts."""

    Process = CleanMainProcess


def clean_spawn_context() -> CleanMainContext:
    """A fresh context object (cheap); pass it as `mp_context=` / `context=` to a pool."""
    return CleanMainContext()


class CleanForkServerProcess(mp_context.ForkServerProcess):
    """A process forked by this process's fork server (`warm_start`), whose preparation data
    names no main module to import. Its environment is the server's: the pool's initializer
    applies the caller's (`warm_start.adopt_environment`)."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # multiprocessing's hook name
        with bare_main():
            return mp_context.ForkServerProcess._Popen(process_obj)


class CleanForkServerContext(mp_context.ForkServerContext):
    """The forkserver context, with `CleanForkServerProcess` for every process it starts."""

    Process = CleanForkServerProcess


def pool_context() -> CleanMainContext | CleanForkServerContext:
    """The context for a new local pool: the warm fork server's once `warm_start.start` ran in
    this process, else clean spawn."""
    if not warm_start.started():
        return CleanMainContext()
    warm_start.pool_context_used()
    return CleanForkServerContext()
