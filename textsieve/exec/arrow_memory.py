"""Process-wide memory settings shared by the stages."""

from __future__ import annotations

import os

import pyarrow as pa


def lean_arrow_memory() -> None:
    """Use the system allocator for Arrow buffers in this process, unless the user chose one
    (ARROW_DEFAULT_MEMORY_POOL). Arrow's default mimalloc keeps freed pages in per-thread heaps;
    our stages allocate a few large buffers per batch, which glibc hands back, so the process
    peak stays near its live data. Measured on the dev corpus: annotate 420 -> 351 MB peak,
    dedup fuzzy ~35 MB less, at the same speed."""
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        pa.set_memory_pool(pa.system_memory_pool())
