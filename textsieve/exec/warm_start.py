"""Pool workers forked from a warm server instead of spawned cold.

Why: a spawned worker is a new interpreter that imports NumPy, pyarrow, fsspec and the stage's
modules before its first task (~0.4 CPU-s for annotate). Every worker pays it, and on a short run
it is the gap between 2 workers and twice one: annotate on the dev corpus cut into 4 shards ran
1.52-1.62x faster with 2 spawned workers than with one, and 1.68-1.93x with workers from this
module's server (four runs of `benchmarks/annotate.py`; 1.86-1.95x when forked from the command
itself, which is not safe, below).

Forking the command's own process is not safe here: a child would inherit the output folder's
lock descriptor (a worker orphaned by a killed run would keep the re-run out), the progress and
Arrow threads' state mid-operation, and the finalizers of the parent's buffered writers. Python's
forkserver avoids all of it: the server is a fresh interpreter (exec'd, passed no descriptor but
its own pipes and the standard streams) that imports the modules named here once and then forks
each worker from itself. The CLI starts it (`start`, from `commands.warm`) when a command line
will run a local pool of 2 or more workers, before parsing it (which imports the command's
modules), so the server imports while the command imports its own and plans its work, and workers
start with nothing left to import.

What a forked worker does not get from its parent, and how it gets it anyway:
- the preparation data (sys.path, working folder, no main module: `clean_spawn.bare_main`)
  travels as with spawn; the server's own imports use the command's path too
  (`server_environment`);
- the environment is the server's, from when it started: `local._start_worker` applies the
  parent's environment as it is when the pool starts (`environment`);
- its parent process is the server, not the command. A worker asks `multiprocessing.parent_process()`
  (the command's sentinel, `run_alive`), not `os.getppid()`, whether the command runs. When the
  command dies, the server sees its "alive" pipe close and exits (each worker closes its own copy,
  `release_server`), and every worker it forked dies with it (`forked_worker_start` arms
  PR_SET_PDEATHSIG): a pool worker otherwise waits for its next task for ever once the command is
  gone, spawned or forked.

A library caller (`textsieve.annotate(...)`) keeps spawned workers unless it calls `start` itself:
the server lives as long as the process and keeps the standard streams of the moment it started,
which a long-lived host process (a notebook, a test runner capturing output) may have swapped.
A server that no pool used is killed at exit (`_end_unused_server`).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
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

_STATE: dict[str, Any] = {"started": False, "used": False}
log = logging.getLogger("textsieve.exec")
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
    modules); the pools this process starts afterwards fork their workers from it. Returns whether
    the server runs: False where fork servers do not exist or it could not start (a socket path
    too long for a deep $TMPDIR, an unwritable one), and the pools spawn. Once per process: a
    second call changes nothing.

    The server starts in this process's environment plus `server_environment`, with Ctrl-C
    ignored (it would print a traceback from the middle of its imports; the pool's workers set
    their own handler, `local._on_ctrl_c`)."""
    if _STATE["started"]:
        return True
    if not available():
        return False
    from multiprocessing import forkserver

    _use_own_temp_dir()
    try:
        with server_environment(), _sigint_ignored():
            # last: the modules those stage modules' workers import lazily (`warm_preload`)
            forkserver.set_forkserver_preload([*PRELOAD, *modules, "textsieve.exec.warm_preload"])
            forkserver.ensure_running()
    except OSError as exc:
        log.debug("no fork server (%s); workers are spawned", exc)
        return False
    _STATE["started"] = True
    if not _STATE.get("at_exit"):
        atexit.register(_end_unused_server)
        _STATE["at_exit"] = True
    return True


@contextmanager
def server_environment() -> Iterator[None]:
    """While active: `WORKER_THREADS` (NumPy reads them as it loads), and this process's module
    search path for the server's imports. Python 3.11's fork server imports its preloads before it
    applies the caller's `sys.path`, with the folder it started in first (`-c`): a `textsieve/` or
    `fsspec.py` there would be what its workers run. `PYTHONSAFEPATH` drops that folder and
    `PYTHONPATH` lists this process's path (a forked worker then gets its owner's environment
    back, `adopt_environment`)."""
    with _ENV_LOCK, worker_threads():
        saved = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
        os.environ["PYTHONSAFEPATH"] = "1"
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ctrl-C ignored while a child starts (an ignored signal stays ignored across exec, and Python
    then installs no KeyboardInterrupt handler); only the main thread may change it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


#: the name of this module's multiprocessing temporary folders: `<prefix><pid>-<random>`
TEMP_PREFIX = "textsieve-mp-"


def _use_own_temp_dir() -> None:
    """Give multiprocessing (the server's socket lives there) a temporary folder named after this
    process, and remove those of processes that no longer run. multiprocessing's own `pymp-*`
    folder is removed at a clean exit only, so every killed command would leave one behind, with
    nothing in its name to tell whether its process still runs. (CPython reads the folder from the
    process's private `_config`; where it is already set, nothing changes.)"""
    import multiprocessing
    import shutil
    import tempfile

    config = getattr(multiprocessing.current_process(), "_config", None)
    if not isinstance(config, dict) or config.get("tempdir"):
        return
    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        pid = name[len(TEMP_PREFIX):].split("-", 1)[0] if name.startswith(TEMP_PREFIX) else ""
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    try:
        folder = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-")
    except OSError:
        return  # multiprocessing makes its own, or fails to, and `start` falls back to spawn
    config["tempdir"] = folder
    atexit.register(shutil.rmtree, folder, True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def started() -> bool:
    return bool(_STATE["started"])


def pool_context_used() -> None:
    """A pool is about to fork workers from the server (`clean_spawn.pool_context`)."""
    _STATE["used"] = True


def _end_unused_server() -> None:
    """At exit, kill a server no pool used. It may still be importing its modules (~0.4 s), and it
    holds the command's standard streams: a caller reading them to the end (`subprocess.run`
    with captured output, `textsieve ... | tail`) would wait for those imports after a command
    that had nothing to do or stopped at an error. A server that forked workers is idle by now and
    exits as the command's "alive" pipe closes."""
    if _STATE.get("used") or not _STATE["started"]:
        return
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:  # already gone
        pass


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


def forked_worker_start() -> None:
    """In a pool worker, first: when the server forked it, close its copy of the server's "alive"
    pipe (`release_server`) and end with the server (PR_SET_PDEATHSIG; the server ends with the
    command). Nothing in a spawned worker. (Ctrl-C: `local._on_ctrl_c`, in every worker.)"""
    if not release_server():
        return
    end_with_parent()
    if not run_alive():  # the command ended before the signal was armed
        os._exit(1)


def end_with_parent() -> None:
    """Linux: the kernel kills this process when the thread that started it exits. For a worker
    the server forked, that is the server, which exits as soon as the command does: a pool worker
    left behind by a killed command would otherwise wait for a next task for ever. (Annotate's
    whole-shard workers also call it when spawned, from the run's main thread.)"""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
            pass


def release_server() -> bool:
    """In a worker the server forked: close its copy of the server's "alive" pipe, and say whether
    there was one (False: not a worker of the server). The server exits when every copy is
    closed; while a worker held one, a killed command's server (and so the workers'
    PR_SET_PDEATHSIG) would wait for the workers to end by themselves. A worker starts no pool of
    its own, so it never needs the server. (CPython keeps the copy in the module's private
    `_forkserver`; on a version without it, nothing is closed.)"""
    from multiprocessing import forkserver

    server: Any = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is None or getattr(server, "_forkserver_pid", None) is not None:  # set: the server's owner
        return False
    try:
        os.close(fd)
    except OSError:  # pragma: no cover - already closed
        pass
    server._forkserver_alive_fd = None
    return True


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
