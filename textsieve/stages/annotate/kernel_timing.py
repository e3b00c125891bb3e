"""Time the one-time numba kernel compile apart from the compute it precedes.

A first run compiles textsieve's numba kernels (several seconds; later runs load them from
numba's on-disk cache in well under a second). Folding that into a stage's docs/s made the
sample quick start report 71 docs/s for a run that computed at ~290 docs/s. The stage therefore
warms the kernels up before its first batch, times the warm-up, and reports the compute rate
with the compile time beside it (`AnnotateResult.compile_seconds`).

Whether anything was *compiled* (rather than loaded from the cache) is read from numba's own
per-dispatcher counters, and only when numba is already imported: a run that never needs numba
(e.g. `annotate --signals minhash`, whose kernels are C) must not load it just to ask.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["compiled_kernels", "timed"]


def compiled_kernels(prefixes: tuple[str, ...] = ("textsieve.",)) -> int:
    """Kernel signatures compiled (cache misses, not cache loads) so far in this process, over
    the numba dispatchers defined in modules whose name starts with one of `prefixes`."""
    if "numba" not in sys.modules:
        return 0
    from numba.core.dispatcher import Dispatcher

    seen: set[int] = set()
    total = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefixes):
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, Dispatcher) and id(obj) not in seen:
                seen.add(id(obj))
                total += sum(obj.stats.cache_misses.values())
    return total


def timed(fn: Callable[[], object]) -> tuple[float, int]:
    """Run `fn` (a kernel warm-up); return (seconds it took, kernels it compiled)."""
    before = compiled_kernels()
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    return seconds, compiled_kernels() - before
