"""One writer per output: an advisory lock `ROOT/.textsieve/lock` held while a run publishes into `ROOT`.

Why: two runs writing one output folder used to collide. Two identical `annotate` runs raced on
the same staging files (the second died with a raw `[Errno 2] ... .tmp-...`), and two `dedup
fuzzy` runs with different settings both exited 0, the last writer winning silently. Every
`io.publish.Publication` takes this lock when it opens a generation and gives it back when it
commits or gives up, so a second writer fails at once with one line naming the holder
(`pid@host`, the stage, since when).

The lock is `flock(2)` on a local file: the kernel drops it when the holding process ends, however
it ends, so the lock of a killed run is simply taken by the next one (nothing stale to clean).
Within one process the lock is re-entrant: a run that opens the same output again (a re-run in a
notebook after an error) takes it over.

Object stores (s3://, gs://, memory://) have no such lock: there the lock file is a lease, a
small JSON object naming its holder with an expiry (`LEASE_SECONDS`) that a thread of the holder
renews (`RENEW_SECONDS`) while the run lasts. A second writer fails with the holder's name while
the lease runs; a lease that expired (its run died without giving it back) is taken over, and so
is one held by a process of this machine that has ended. After writing its lease a writer reads
it back once, so of two writers starting together the one whose lease was overwritten fails; a
store without conditional writes cannot rule out a narrower race than that.
"""

from __future__ import annotations

import datetime
import json
import os
import threading
import time
import uuid
from typing import Any

from textsieve.errors import TextsieveError
from textsieve.io.leftovers import writer_gone, writer_tag

LOCK = ".textsieve/lock"  # inside the folder's bookkeeping (io.publish.BOOK)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no advisory locks
    fcntl = None  # type: ignore[assignment]

#: locks this process holds: lock path -> its open descriptor (re-entrant within the process)
_HELD: dict[str, int] = {}
#: an object store's lease: how long it holds without renewal, and how often its holder renews it
LEASE_SECONDS = 600.0
RENEW_SECONDS = 120.0
#: leases this process holds: "protocol://path" -> (file system, path, token, stop event)
_LEASES: dict[str, tuple[Any, str, str, threading.Event]] = {}


class OutputLockedError(TextsieveError, RuntimeError):
    """Another live run is writing the same output."""


def _local_root(fs: Any, root: str) -> str | None:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return os.path.abspath(root) if protocol in ("file", "local") else None


def take(fs: Any, root: str, stage: str) -> str | None:
    """Lock output `root` for `stage`; the lock's path (for `release`), or None where no lock
    exists (object stores, non-POSIX). OutputLockedError naming the holder if another process
    has it."""
    local = _local_root(fs, root)
    if local is None:
        return _take_lease(fs, root, stage)
    if fcntl is None:
        return None
    path = os.path.join(local, LOCK)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path in _HELD:  # this process opened the output before and did not finish: take it over
        return path
    for _ in range(8):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 400, 0).decode("utf-8", "replace").strip() or "a process that has not said who"
            os.close(fd)
            raise OutputLockedError(f"{local}: another run is writing here ({holder}); wait for it to finish, or "
                                    "stop it: two runs writing one output would mix or replace each other's "
                                    "results") from None
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break  # locked the file that is there now (not one a finishing run just removed)
        except FileNotFoundError:
            pass
        os.close(fd)
    else:  # pragma: no cover - a storm of runs starting and finishing
        raise OutputLockedError(f"{local}: could not lock {path}: other runs keep taking and releasing it")
    since = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{stage}, pid@host {writer_tag()}, since {since}\n".encode(), 0)
    _HELD[path] = fd
    return path


def release(path: str | None) -> None:
    """Give the lock back and remove its file, while still holding it (no-op for None or a lock
    this process no longer holds); a run that opened the old file meanwhile sees it gone and
    locks the new one (`take` compares inodes)."""
    if path is not None and path in _LEASES:
        _release_lease(path)
        return
    fd = _HELD.pop(path, None) if path is not None else None
    if fd is None:
        return
    try:
        try:
            os.unlink(path)  # type: ignore[arg-type]
        except FileNotFoundError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _utc(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _read_lease(fs: Any, path: str) -> dict[str, Any] | None:
    try:
        data = json.loads(fs.cat_file(path))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _stale(lease: dict[str, Any], now: float) -> bool:
    """A lease nobody holds any more: expired, or its holder a process of this machine that ended."""
    if float(lease.get("expires", 0)) <= now:
        return True
    pid, _, host = str(lease.get("owner", "")).partition("@")
    return pid.isdigit() and bool(host) and writer_gone(int(pid), host, None)


def _write_lease(fs: Any, path: str, token: str, holder: str, since: float) -> None:
    body = {"holder": holder, "owner": writer_tag(), "token": token, "since": since,
            "expires": time.time() + LEASE_SECONDS}
    fs.pipe_file(path, json.dumps(body).encode())


def _take_lease(fs: Any, root: str, stage: str) -> str:
    """Take (or, in this process, take over) the lease of object-store output `root`."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    path = f"{root.rstrip('/')}/{LOCK}"
    key = f"{protocol}://{path}"
    if key in _LEASES:
        return key
    now = time.time()
    current = _read_lease(fs, path)
    if current is not None and current.get("owner") != writer_tag() and not _stale(current, now):
        raise OutputLockedError(
            f"{protocol}://{root}: another run is writing here ({current.get('holder')}, since "
            f"{_utc(float(current.get('since', now)))}; its lease runs to {_utc(float(current['expires']))} unless it "
            "renews it); wait for it to finish, or stop it: two runs writing one output would mix or replace each "
            "other's results")
    token = uuid.uuid4().hex
    holder = f"{stage}, pid@host {writer_tag()}"
    _write_lease(fs, path, token, holder, now)
    back = _read_lease(fs, path)
    if back is None or back.get("token") != token:  # another writer wrote its lease over ours
        raise OutputLockedError(f"{protocol}://{root}: another run took this output at the same moment "
                                f"({(back or {}).get('holder', 'unknown')}); wait for it to finish")
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(RENEW_SECONDS):
            try:
                if (_read_lease(fs, path) or {}).get("token") == token:
                    _write_lease(fs, path, token, holder, now)
            except Exception:  # noqa: BLE001 - a failed renewal is retried; the run itself goes on
                continue

    threading.Thread(target=renew, name=f"textsieve-lease {path}", daemon=True).start()
    _LEASES[key] = (fs, path, token, stop)
    return key


def _release_lease(key: str) -> None:
    fs, path, token, stop = _LEASES.pop(key)
    stop.set()
    try:
        if (_read_lease(fs, path) or {}).get("token") == token:
            fs.rm_file(path)
    except (FileNotFoundError, OSError):
        pass
