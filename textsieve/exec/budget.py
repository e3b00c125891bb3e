"""Memory budgets: the `--memory` / `memory:` sizes a stage may use for its working set.

It lives in `exec/` beside the executors, not in a stage or in `dedup/`, because it is a
property of how a stage runs (like workers and temporary folders), read by the dedup stages and
by the dry-run plan alike; the algorithm that turns bytes into rows per sort pass
(`dedup.partitions.rows_per_pass`) stays with the algorithm.

What `--memory` covers (`MEMORY_SEMANTICS`, also in `options.MEMORY_HELP` and docs): the working
set of the stage's whole process tree, the main process and every worker it starts, split evenly
among them (`MemoryPlan`): sort passes, partition buffers, read batches and results in flight.
It does not cover what every Python process costs before it does any work, the interpreter with
its libraries (`PROCESS_ALLOWANCE` per process, measured), nor one document's own size (that is
`--max-doc-bytes`'s job). So the peak RSS of the tree stays within `memory + processes x
process_allowance()` (100 MB, 150 MB where pandas is installed, since pyarrow then loads it into
every process); the tests measure it. Below `MIN_SHARE` per process no stage can keep its
promise (a read batch, a sort pass of `MIN_ROWS` rows and a Parquet row group being written need
about that much), so a lower setting is refused with the number, and a run that was not told how
many workers to start starts only as many as the budget affords.
"""

from __future__ import annotations

from dataclasses import dataclass

from textsieve.errors import TextsieveError
from textsieve.units import parse_size

#: Peak RSS of one process before it does any work, not counted in `--memory`. Measured on Linux
#: x86-64, CPython 3.11: 81 MB for `python -c "import numpy, pyarrow.parquet, duckdb"`; a
#: textsieve process with its stage imported is 88 MB, and a whole `dedup exact` run on 10
#: documents (every module and table a run loads, nothing of any size) peaks at 97 MB.
PROCESS_ALLOWANCE = 100 * 10**6
#: What pandas adds to a process when it is installed: pyarrow imports it on its first
#: conversion (`pa.array`, `to_numpy`), ~36-48 MB measured, whether textsieve uses it or not.
PANDAS_ALLOWANCE = 50 * 10**6


def process_allowance() -> int:
    """`PROCESS_ALLOWANCE`, plus `PANDAS_ALLOWANCE` where pandas is installed (see above)."""
    import importlib.util

    return PROCESS_ALLOWANCE + (PANDAS_ALLOWANCE if importlib.util.find_spec("pandas") is not None else 0)

#: The smallest share of `--memory` one process can work within.
MIN_SHARE = 32 * 10**6

MEMORY_SEMANTICS = (f"the working memory of the whole process tree (main process and workers, split evenly), on "
                    f"top of ~{PROCESS_ALLOWANCE // 10**6} MB per process for the interpreter (~"
                    f"{(PROCESS_ALLOWANCE + PANDAS_ALLOWANCE) // 10**6} MB where pandas is installed); at least "
                    f"{MIN_SHARE // 10**6} MB per process")


class MemoryBudgetError(TextsieveError, ValueError):
    """A `--memory` setting below what the stage can honour with the workers asked for."""


def parse_memory(text: str | int) -> int:
    """A `--memory` setting as bytes (see `parse_size`)."""
    return parse_size(text, "--memory")


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10**6 else f"{n:,} bytes"


@dataclass(frozen=True)
class MemoryPlan:
    """A `--memory` budget split over a process tree: `workers` worker processes (0: the work
    runs in the main process) and the main process each get `share` bytes."""

    total: int
    workers: int
    share: int

    @property
    def processes(self) -> int:
        return 1 + self.workers

    @property
    def usable(self) -> int:
        """What a process sizes its sorts, buffers and batches by: three quarters of its share.
        The last quarter is headroom for what Python's and glibc's allocators keep of one phase's
        freed memory into the next (measured ~15 MB at a 16 MB share), so the peak stays within
        the share and not just each phase's plan."""
        return self.share * 3 // 4

    def describe(self) -> str:
        split = f", {_mb(self.share)} per process over {self.processes}" if self.workers else ""
        return f"memory budget {_mb(self.total)}{split} (+ ~{process_allowance() // 10**6} MB interpreter each)"


def memory_plan(stage: str, memory: str | int, workers: int, asked: bool = True, floor: int = MIN_SHARE) -> MemoryPlan:
    """The one place a stage's `--memory` is read: parsed (`options.DEFAULT_MEMORY` is every
    stage's default), checked and split over the main process and `workers` worker processes
    (0 or 1 with no pool: pass 0). When the share would fall below `floor` (`MIN_SHARE`; a stage
    whose buffers shrink to any size, such as mix, passes 1): with `asked` False (the worker
    count was a default, not the user's), fewer workers are planned; otherwise
    `MemoryBudgetError` names the minimum."""
    total = parse_memory(memory)
    workers = max(0, int(workers))
    if not asked:
        workers = min(workers, max(0, total // floor - 1))
    minimum = floor * (1 + workers)
    if total < minimum:
        who = f"the main process and {workers} worker process(es)" if workers else "one process"
        fewer = " or fewer --workers" if workers else ""
        raise MemoryBudgetError(
            f"{stage}: --memory {_mb(total)} is below the {_mb(minimum)} it can honour with {who} "
            f"({_mb(MIN_SHARE)} per process, on top of ~{process_allowance() // 10**6} MB each for the interpreter); "
            f"use --memory {_mb(minimum).replace(' ', '').replace(',', '')} or more{fewer}")
    return MemoryPlan(total, workers, total // (1 + workers))
