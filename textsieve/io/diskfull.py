"""A full disk (or an exhausted quota) as one clear error, instead of an `OSError` traceback.

Every stage writes through a few places: `io.atomic` (output shards, summaries, models),
`dedup.partitions` (the key spill) and the shingle files of `dedup fuzzy --verify exact`.
Each turns an `ENOSPC`/`EDQUOT` into `DiskFullError` naming the folder that filled up, the
bytes written so far and (on a local disk) the bytes still free, after removing its partial
file, so the user knows where to make room and nothing half-written is left behind. The CLI
prints any `TextsieveError` as one line; any other `ENOSPC` that slips through (a library
writing on its own) is caught there too (`describe`).

Writes must go through Python file objects (`fh.write(buffer)`, never `ndarray.tofile`): NumPy's
`tofile` reports a short write as a bare `OSError` without `errno`, which cannot be told from
other failures.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from textsieve.errors import TextsieveError

#: "no space left on device" and "disk quota exceeded"
DISK_FULL_ERRNOS = frozenset(e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if e is not None)


class DiskFullError(TextsieveError):
    """The disk (or quota) holding an output or work folder filled up while textsieve wrote to it."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` is the OS saying there is no room left (ENOSPC, EDQUOT)."""
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS


def free_bytes(folder: str) -> int | None:
    """Bytes still free on the local disk holding `folder` (or its nearest existing parent);
    None for a remote filesystem or when it cannot be told."""
    if "://" in folder and not folder.startswith("file://"):
        return None
    path = folder.removeprefix("file://") or "."
    while path and not os.path.isdir(path):
        parent = os.path.dirname(path.rstrip("/"))
        if parent == path:
            break
        path = parent
    try:
        return shutil.disk_usage(path or ".").free
    except OSError:
        return None


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n:,} bytes ({n / 1e6:,.1f} MB)"


def disk_full_error(path: str, *, written: int | None = None, needed: int | None = None,
                    what: str = "writing") -> DiskFullError:
    """The one-line error for a full disk while `what` `path` (a file; its folder is named)."""
    folder = os.path.dirname(path.rstrip("/")) or "."
    parts = [f"no space left on device in {folder} ({what} {os.path.basename(path)})"]
    if needed is not None:
        parts.append(f"about {_size(needed)} needed")
    if written is not None:
        parts.append(f"{_size(written)} written so far")
    free = free_bytes(folder)
    if free is not None:
        parts.append(f"{_size(free)} free")
    hint = "the partial file was removed; free some space there or write elsewhere (--output, --tmp-dir)"
    return DiskFullError("; ".join(parts) + f"; {hint}")


@contextmanager
def disk_full_as_error(path: str, *, written: Callable[[], int | None] = lambda: None,
                       needed: int | None = None, cleanup: Callable[[], object] | None = None,
                       what: str = "writing") -> Iterator[None]:
    """Turn a disk-full `OSError` in the block into `DiskFullError` for `path`, after running
    `cleanup` (remove the partial file); `written()` tells how many bytes made it."""
    try:
        yield
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        done = _call(written)
        if cleanup is not None:
            _call(cleanup)
        raise disk_full_error(path, written=done, needed=needed, what=what) from None


def _call(fn: Callable[[], object]) -> int | None:
    try:
        value = fn()
    except Exception:  # best effort: the disk is full, the file may be gone or unreadable
        return None
    return value if isinstance(value, int) else None


def describe(exc: OSError) -> str:
    """The CLI's one line for a disk-full `OSError` that no writer turned into `DiskFullError`."""
    where = f" in {os.path.dirname(str(exc.filename)) or '.'}" if exc.filename else ""
    free = free_bytes(os.path.dirname(str(exc.filename)) or ".") if exc.filename else None
    tail = f" ({_size(free)} free)" if free is not None else ""
    return (f"no space left on device{where}{tail} ({exc.strerror or exc}); free some space or write elsewhere "
            "(--output, --tmp-dir)")
