"""Where DuckDB spills when a query outgrows memory: a work folder textsieve owns and cleans.

Why: an in-memory DuckDB connection spills to `./.tmp` in whatever folder the user ran the
command from, and a killed query leaves it there for good. Every connection textsieve opens
points DuckDB at one work folder per process instead (`textsieve-duckdb-PID@HOST.RAND` in the
system temp folder, `$TMPDIR`), removed when the process exits; a killed process's folder is
removed by the next run (`leftovers.remove_stale_work_dirs`, which knows the name). It sits in
`io/` beside `leftovers`, which names and cleans every work folder textsieve makes.
"""

from __future__ import annotations

import atexit
import shutil
import threading

from textsieve.io.leftovers import remove_stale_work_dirs, work_dir

_lock = threading.Lock()
_dir: str | None = None


def spill_dir() -> str:
    """This process's DuckDB spill folder, created on first use."""
    global _dir
    with _lock:
        if _dir is None:
            remove_stale_work_dirs(None)
            _dir = work_dir("duckdb")
            atexit.register(shutil.rmtree, _dir, True)
        return _dir


def point_spill(con):
    """Make connection `con` spill into `spill_dir()`; returns `con`."""
    path = spill_dir().replace("'", "''")
    con.execute(f"SET temp_directory = '{path}'")
    return con
