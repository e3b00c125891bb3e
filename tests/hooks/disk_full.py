"""Make a folder behave like a full disk: writes to files under it fail with `ENOSPC` once a
byte budget is used up, as the kernel does when a filesystem fills. No root, no tmpfs needed.

textsieve knows nothing of this: `sitecustomize.py` (this folder, first on the PYTHONPATH that
`full_env` gives a subprocess) calls `install_from_env()` at interpreter start-up, in the CLI
process and in every worker it spawns (they inherit the environment). It wraps `open`, so it
sees every write textsieve makes through Python file objects (fsspec's local files, Parquet
and gzip writers over them, the dedup spill); each process counts its own bytes.
"""

from __future__ import annotations

import builtins
import errno
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DIR_ENV = "TEXTSIEVE_TEST_FULL_DIR"
AFTER_ENV = "TEXTSIEVE_TEST_FULL_AFTER"
HERE = Path(__file__).resolve().parent


def full_env(folder: str | os.PathLike, after_bytes: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a subprocess in which `folder` is full after `after_bytes` bytes."""
    env = dict(os.environ if base is None else base)
    env[DIR_ENV] = os.path.realpath(folder)
    env[AFTER_ENV] = str(int(after_bytes))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


class _Full:
    """Bytes written under the folder by this process so far, and the limit."""

    def __init__(self, folder: str, limit: int):
        self.folder = folder.rstrip("/") + "/"
        self.limit = limit
        self.used = 0

    def covers(self, path: Any) -> bool:
        try:
            real = os.path.realpath(os.fspath(path))
        except TypeError:  # an fd or an odd object: not ours to judge
            return False
        return real.startswith(self.folder)

    def take(self, n: int, path: str) -> None:
        if self.used + n > self.limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # like write(2): no file name
        self.used += n


class _FullFile:
    """A file object whose writes draw on the shared budget; everything else is the real file's."""

    def __init__(self, real: Any, full: _Full, path: str):
        self._real, self._full, self._path = real, full, path

    def write(self, data: Any) -> int:
        self._full.take(memoryview(data).nbytes if not isinstance(data, str) else len(data.encode()), self._path)
        return self._real.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def fileno(self) -> int:
        # a caller writing to the descriptor itself (ndarray.tofile) would bypass the budget
        raise OSError(errno.EBADF, "the disk_full test hook hides the descriptor of files it watches")

    def __enter__(self) -> _FullFile:
        self._real.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._real.__exit__(*exc)

    def __iter__(self) -> Any:
        return iter(self._real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def install(folder: str, after_bytes: int) -> None:
    """From now on, writes under `folder` fail with ENOSPC beyond `after_bytes` bytes."""
    full = _Full(folder, after_bytes)
    real_open = builtins.open

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = real_open(file, mode, *args, **kwargs)
        if any(c in mode for c in "wax+") and full.covers(file):
            return _FullFile(fh, full, os.fspath(file))
        return fh

    builtins.open = open_


def install_from_env() -> None:
    folder, after = os.environ.get(DIR_ENV), os.environ.get(AFTER_ENV)
    if folder and after:
        install(folder, int(after))
