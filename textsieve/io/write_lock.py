"""One writer per output: an advisory lock `ROOT/.lock` held while a run publishes into `ROOT`.

Why: two runs writing one output folder used to collide. Two identical `annotate` runs raced on
the same staging files (the second died with a raw `[Errno 2] ... .tmp-...`), and two `dedup
fuzzy` runs with different settings both exited 0, the last writer winning silently. Every
`io.publish.Publication` takes this lock when it opens a generation and gives it back when it
commits or gives up, so a second writer fails at once with one line naming the holder
(`pid@host`, the stage, since when).

The lock is `flock(2)` on a local file: the kernel drops it when the holding process ends, however
it ends, so the lock of a killed run is simply taken by the next one (nothing stale to clean).
Within one process the lock is re-entrant: a run that opens the same output again (a re-run in a
notebook after an error) takes it over. Object stores (s3://, gs://, memory://) have no such
lock; there a second writer is not detected yet (a lease object with owner and expiry would be).
"""

from __future__ import annotations

import datetime
import os
from typing import Any

from textsieve.errors import TextsieveError
from textsieve.io.leftovers import writer_tag

LOCK = ".lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no advisory locks
    fcntl = None  # type: ignore[assignment]

#: locks this process holds: lock path -> its open descriptor (re-entrant within the process)
_HELD: dict[str, int] = {}


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
    if local is None or fcntl is None:
        return None
    os.makedirs(local, exist_ok=True)
    path = os.path.join(local, LOCK)
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
