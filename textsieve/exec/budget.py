"""Memory budgets: the `--memory` / `memory:` sizes a stage may use for its working set.

It lives in `exec/` beside the executors, not in a stage or in `dedup/`, because it is a
property of how a stage runs (like workers and temporary folders), read by the dedup stages and
by the dry-run plan alike; the algorithm that turns bytes into rows per sort pass
(`dedup.partitions.rows_per_pass`) stays with the algorithm.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgt]?)(i?)b?\s*")


def parse_memory(text: str | int) -> int:
    """'2GB', '512MB', '64KiB', '1e6' or plain bytes -> bytes (decimal and binary units)."""
    if isinstance(text, int):
        return text
    m = _SIZE.fullmatch(str(text).lower())
    if not m:
        raise ValueError(f"--memory: cannot read {text!r}; use e.g. 2GB, 512MB, 64KiB or bytes")
    base = 1024 if m.group(3) else 1000
    value = float(m.group(1)) * base ** " kmgt".index(m.group(2) or " ")
    if value < 1:
        raise ValueError(f"--memory: {text!r} is not a positive size")
    return int(value)
