"""Leftovers of interrupted runs: temporary files and work folders whose writer is gone.

A killed run cannot clean up after itself, so the next run does. To tell a dead run's leftovers
from a live run's files (two runs may share a folder: `dedup exact` may write `_dedup_exact`
while `annotate` adds shards), every temporary name records its writer:

* files (`io.atomic`): `.NAME.tmp-PID@HOST-RAND`, beside the final file;
* local work folders (dedup's partition spill): `textsieve-STAGE-PID@HOST.RAND` in the temp
  folder (`--tmp-dir`, else the system's).

A leftover is removed when its writer is provably gone: on this host, no process has that pid,
the process is a zombie, or the pid now belongs to a process started after the leftover was
last written (pid reuse). A leftover from another host (a Ray worker writing to a shared
bucket) cannot be checked, so it is removed only after `STALE_AFTER` seconds untouched.
Temporary names start with '.', so readers never list them as output.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import tempfile
import time

import fsspec

log = logging.getLogger("textsieve.leftovers")

TMP_MARK = ".tmp-"  # in every temporary file name (`io.atomic.temp_name`)
WORK_PREFIX = "textsieve-"  # every local work folder (`work_dir`)
STALE_AFTER = 24 * 3600  # seconds untouched after which another host's leftover counts as dead

_HOST = re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname() or "localhost")
# `.NAME.tmp-PID@HOST-RAND`; older textsieve wrote `.NAME.tmp-PID-RAND` (taken as this host)
_TMP_RE = re.compile(re.escape(TMP_MARK) + r"(\d+)(?:@([A-Za-z0-9._-]+))?-([0-9a-f]{8})$")
_WORK_RE = re.compile(re.escape(WORK_PREFIX) + r"[a-z-]+?-(\d+)@([A-Za-z0-9._-]+)\.[a-z0-9_]{8}$")


def writer_tag() -> str:
    """`PID@HOST` of this process, the part of a temporary name that says who writes it."""
    return f"{os.getpid()}@{_HOST}"


def work_dir(stage: str, parent: str | None = None) -> str:
    """A new local work folder for `stage` (e.g. "dedup-exact"), tagged with its writer so a
    later run can remove it if this one is killed (`remove_stale_work_dirs`)."""
    return tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{stage}-{writer_tag()}.", dir=parent)


def _proc_start(pid: int) -> tuple[float, str] | None:
    """(start time as epoch seconds, state letter) of a process, from Linux /proc; None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith(b"btime"))
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK"), fields[0].decode()
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def writer_gone(pid: int, host: str | None, mtime: float | None, now: float | None = None) -> bool:
    """Whether the process that wrote a leftover (last modified at `mtime`) has certainly ended."""
    now = time.time() if now is None else now
    if host is not None and host != _HOST:  # another machine: only age can tell
        return mtime is not None and now - mtime > STALE_AFTER
    if pid == os.getpid():
        return False  # this very process: the file may be open right now
    if os.name != "posix":  # os.kill(pid, 0) would terminate the process on Windows
        return mtime is not None and now - mtime > STALE_AFTER
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return False
    proc = _proc_start(pid)
    if proc is None:
        return False
    started, state = proc
    return state in ("Z", "X") or (mtime is not None and started > mtime + 1.0)


def _mtime(fs: fsspec.AbstractFileSystem, path: str) -> float | None:
    try:
        return fs.modified(path).timestamp()
    except (NotImplementedError, OSError, AttributeError, ValueError, KeyError):
        return None


def parse_temp_name(name: str) -> tuple[int, str | None] | None:
    """(pid, host or None for the old host-less form) of a temporary file name, else None."""
    if not name.startswith("."):
        return None
    m = _TMP_RE.search(name)
    return (int(m.group(1)), m.group(2)) if m else None


def remove_stale_temps(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """Delete the temporary files under `root` (recursively) whose writer is gone; returns them.
    Live runs' temporary files are left alone, so this is safe while other runs write."""
    root = root.rstrip("/")
    if not fs.exists(root) or not fs.isdir(root):
        return []
    removed, size = [], 0
    for path, info in fs.find(root, detail=True).items():
        tag = parse_temp_name(path.rsplit("/", 1)[-1])
        if tag is None or not writer_gone(tag[0], tag[1], _mtime(fs, path)):
            continue
        try:
            fs.rm(path)
        except (FileNotFoundError, OSError):
            continue  # removed meanwhile (another run cleaning up)
        removed.append(path)
        size += int(info.get("size") or 0)
    if removed:
        log.info("removed %d temporary file(s) (%s bytes) left by interrupted runs under %s", len(removed),
                 f"{size:,}", root)
    return removed


def remove_stale_work_dirs(parent: str | None = None) -> list[str]:
    """Delete textsieve work folders in `parent` (default: the system temp folder) whose writer
    is gone; returns them. Dedup's partition spill can be gigabytes, so it must not pile up."""
    parent = parent or tempfile.gettempdir()
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    removed = []
    for name in names:
        m = _WORK_RE.match(name)
        path = os.path.join(parent, name)
        if m is None or not os.path.isdir(path):
            continue
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue
        if writer_gone(int(m.group(1)), m.group(2), mtime):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        log.info("removed %d work folder(s) left by interrupted runs in %s", len(removed), parent)
    return removed
