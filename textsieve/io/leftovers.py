"""Leftovers of interrupted runs: temporary files and work folders whose writer is gone.

A killed run cannot clean up after itself, so the next run does. To tell a dead run's leftovers
from a live run's files (two runs may share a folder: `dedup exact` may write `sets/dedup_exact`
while `annotate` adds shards), every temporary name records its writer:

* files (`io.atomic`): `.NAME.tmp-PID@HOST-RAND`, beside the final file;
* local work folders (dedup's partition spill, its id table, the shingle files of `--verify
  exact`): `textsieve-STAGE-PID@HOST.RAND` in `--tmp-dir`, else in the hidden folder
  `.textsieve-work/` of the (local) output folder, else (a remote output) in the system's temp
  folder (`work_parent`). Why the output folder: the system temp folder is often a small tmpfs
  (spilling there costs RAM) or is cleaned by nobody, while the output folder has room for
  the output anyway, and the next run on it finds and removes a killed run's work folders
  (`start_work`).

A leftover is removed when its writer is provably gone: on this host, no process has that pid,
the process is a zombie, or the pid now belongs to a process started after the leftover was
last written (pid reuse). A leftover from another host (a Ray worker writing to a shared
bucket) cannot be checked, so it is removed only after `STALE_AFTER` seconds untouched.
Temporary names start with '.', so readers never list them as output. Work folders of older
textsieve versions (`textsieve-verify-RAND`, `textsieve-reduce-RAND`, no writer tag) are removed
after `STALE_AFTER` seconds untouched.
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
# untagged work folders of older versions (`tempfile.mkdtemp(prefix="textsieve-verify-")`)
_LEGACY_WORK_RE = re.compile(re.escape(WORK_PREFIX) + r"(?:verify|reduce)-[a-z0-9_]{8}$")
WORK_FOLDER = ".textsieve-work"  # the hidden parent of work folders inside an output folder


def writer_tag() -> str:
    """`PID@HOST` of this process, the part of a temporary name that says who writes it."""
    return f"{os.getpid()}@{_HOST}"


def work_dir(stage: str, parent: str | None = None) -> str:
    """A new local work folder for `stage` (e.g. "dedup-exact"), tagged with its writer so a
    later run can remove it if this one is killed (`remove_stale_work_dirs`). `parent` is
    created if missing (a `--tmp-dir` that does not exist yet)."""
    if parent:
        os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{stage}-{writer_tag()}.", dir=parent)


def work_parent(output: str | None, tmp_dir: str | None = None) -> str | None:
    """Where a stage writing to `output` puts its local work folders: `tmp_dir` when given,
    else `OUTPUT/.textsieve-work` when `output` is on the local disk, else None (the system
    temp folder: a bucket cannot hold a local spill)."""
    if tmp_dir:
        return tmp_dir
    if not output:
        return None
    fs, path = fsspec.core.url_to_fs(output)
    if "file" not in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
        return None
    return os.path.join(path.rstrip("/") or "/", WORK_FOLDER)


def start_work(stage: str, output: str | None, tmp_dir: str | None = None) -> str:
    """A new work folder for `stage` (see `work_parent`), after removing the work folders of
    dead runs there and in the system temp folder (where older versions and remote outputs
    put them). Pair it with `finish_work`."""
    parent = work_parent(output, tmp_dir)
    remove_stale_work_dirs(parent)
    if parent is not None:
        remove_stale_work_dirs(None)
    return work_dir(stage, parent)


def finish_work(work: str) -> None:
    """Remove a work folder, and its `.textsieve-work` parent when nothing else is left there
    (another run's folder keeps it)."""
    shutil.rmtree(work, ignore_errors=True)
    parent = os.path.dirname(work.rstrip("/"))
    if os.path.basename(parent) == WORK_FOLDER:
        try:
            os.rmdir(parent)
        except OSError:
            pass  # not empty: another run works there


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
        if (m is None and not _LEGACY_WORK_RE.match(name)) or not os.path.isdir(path):
            continue
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue
        # an untagged folder of an older version: only its age can tell (as another host's)
        pid, host = (int(m.group(1)), m.group(2)) if m is not None else (0, "")
        if writer_gone(pid, host, mtime):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        log.info("removed %d work folder(s) left by interrupted runs in %s", len(removed), parent)
    return removed


def remove_stale_siblings(fs: fsspec.AbstractFileSystem, final: str) -> list[str]:
    """Delete the temporary files of one output file (`.NAME.tmp-...` beside `final`) whose
    writer is gone. For files outside every stage's output folder (a `dsir fit --model-path PATH`), which no
    folder-wide `remove_stale_temps` would visit; lists one folder, never recursively."""
    head, _, tail = final.rstrip("/").rpartition("/")
    try:
        names = fs.ls(head or ".", detail=False) if fs.isdir(head or ".") else []
    except (OSError, ValueError):
        return []
    removed = []
    for path in names:
        name = path.rsplit("/", 1)[-1]
        tag = parse_temp_name(name) if name.startswith(f".{tail}{TMP_MARK}") else None
        if tag is None or not writer_gone(tag[0], tag[1], _mtime(fs, path)):
            continue
        try:
            fs.rm(path)
        except (FileNotFoundError, OSError):
            continue
        removed.append(path)
    if removed:
        log.info("removed %d temporary file(s) of %s left by interrupted runs", len(removed), final)
    return removed
