"""Pool workers forked from a warm server instead of spawned cold.

Why: a spawned worker is a new interpreter that imports NumPy, pyarrow, fsspec and the stage's
modules before its first task (~0.4 CPU-s for annotate). Every worker pays it, and on a short run
it is the gap between 2 workers and twice one: annotate on the dev corpus cut into 4 shards ran
1.60x faster with 2 spawned workers than with one, and 1.86-1.95x when forked.

Forking the command's own process is not safe here: a child would inherit the output folder's
lock descriptor (a worker orphaned by a killed run would keep the re-run out), the progress and
Arrow threads' state mid-operation, and the finalizers of the parent's buffered writers. Python's
forkserver avoids all of it: the server is a fresh interpreter (exec'd, passed no descriptor but
its own pipes) that imports the modules named here once and then forks each worker from itself.
The CLI starts it (`start`) as soon as it sees a stage command that will use several local
workers, before parsing the command line (which imports the command's modules), so the server
imports while the command imports its own and plans its work, and workers start with nothing
left to import.

What a forked worker does not get from its parent, and how it gets it anyway:
- the preparation data (sys.path, working folder, no main module: `clean_spawn.bare_main`)
  travels as with spawn;
- the environment is the server's, from when it started: `local._start_worker` applies the
  parent's environment as it is when the pool starts (`environment`);
- its parent process is the server, not the command: a worker that must end with the command
  asks `multiprocessing.parent_process()` (the command's sentinel, `run_alive`), not
  `os.getppid()`. When the command dies, the server sees its "alive" pipe close and exits (each
  worker closes its own copy, `release_server`), so a worker's PR_SET_PDEATHSIG still fires.

A library caller (`textsieve.annotate(...)`) keeps spawned workers unless it calls `start` itself:
the server lives as long as the process and keeps the standard streams of the moment it started,
which a long-lived host process (a notebook, a test runner capturing output) may have swapped.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Light on purpose: `cli` imports this module before any command's (the multiprocessing machinery
# is imported by the functions that use it).

#: what every worker imports: the server imports it once, before it forks any
PRELOAD = ("numpy", "pyarrow", "pyarrow.parquet", "fsspec", "textsieve.io.readers", "textsieve.exec.batch_transport")

#: the environment a worker starts with unless the caller's sets these: one thread per math library
WORKER_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: `spawn` turns the fork server off for a process (to compare, or to rule it out when a worker
#: misbehaves); `forkserver`, or unset, keeps it
START_ENV = "TEXTSIEVE_WORKER_START"
START_METHODS = ("forkserver", "spawn")

_STATE: dict[str, Any] = {"started": False}
_ENV_LOCK = threading.RLock()


def usable_cores() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@contextmanager
def worker_threads() -> Iterator[None]:
    """While active, the `WORKER_THREADS` variables the environment lacks are set (a new process
    inherits the environment as it is when it starts); they are removed again afterwards."""
    with _ENV_LOCK:
        added = [name for name in WORKER_THREADS if name not in os.environ]
        for name in added:
            os.environ[name] = WORKER_THREADS[name]
        try:
            yield
        finally:
            for name in added:
                os.environ.pop(name, None)


def wanted() -> bool:
    """Whether `START_ENV` lets this process use a fork server (ValueError on another value)."""
    value = os.environ.get(START_ENV, "").strip() or START_METHODS[0]
    if value not in START_METHODS:
        raise ValueError(f"${START_ENV} must be one of {', '.join(START_METHODS)}, not {value!r}")
    return value == "forkserver"


def available() -> bool:
    """The forkserver start method exists here (Linux and other POSIX systems)."""
    import multiprocessing

    return sys.platform != "win32" and "forkserver" in multiprocessing.get_all_start_methods()


def start(modules: tuple[str, ...] = ()) -> bool:
    """Start this process's fork server now, preloading `PRELOAD` and `modules` (a stage's worker
    modules); the pools this process starts afterwards fork their workers from it. It is started
    with one thread per math library (`WORKER_THREADS`), which NumPy reads as it loads. Returns
    whether the server is in use (False where fork servers do not exist). Once per process: a
    second call changes nothing."""
    if _STATE["started"]:
        return True
    if not available():
        return False
    from multiprocessing import forkserver

    with worker_threads():
        forkserver.set_forkserver_preload([*PRELOAD, *modules])
        forkserver.ensure_running()
    _STATE["started"] = True
    return True


def started() -> bool:
    return bool(_STATE["started"])


def environment() -> dict[str, str]:
    """The environment a worker should see: this process's, plus `WORKER_THREADS` where unset."""
    return {**WORKER_THREADS, **os.environ}


def adopt_environment(environ: dict[str, str]) -> None:
    """In a worker: make `os.environ` the pool owner's (`environment`), whatever the server had."""
    for name in [n for n in os.environ if n not in environ]:
        del os.environ[name]
    for name, value in environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def release_server() -> None:
    """In a worker the server forked: close its copy of the server's "alive" pipe. The server
    exits when every copy is closed; while a worker held one, a killed command's server (and so
    the PR_SET_PDEATHSIG of the workers that ask for it) would wait for the workers to end by
    themselves. A worker starts no pool of its own, so it never needs the server. (CPython keeps
    the copy in the module's private `_forkserver`; on a version without it, nothing is closed.)"""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None and getattr(server, "_forkserver_pid", None) is None:  # None: not the server's owner
        try:
            os.close(fd)
        except OSError:  # pragma: no cover - already closed
            pass
        server._forkserver_alive_fd = None


def stop() -> None:
    """Stop this process's server (it exits when its "alive" pipe closes) and wait for it, so its
    and its workers' CPU time count in this process's `RUSAGE_CHILDREN`; pools started afterwards
    spawn. For benchmarks and tests; a command's server simply ends with the command."""
    if not _STATE["started"]:
        return
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    stop_server = getattr(server, "_stop", None)
    if stop_server is not None:
        stop_server()
    _STATE["started"] = False


def run_alive() -> bool:
    """In a worker: the process that started the pool still runs (its sentinel pipe is open).
    True outside a worker."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()
