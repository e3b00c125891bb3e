"""Log-scaled histograms for heavy-tailed quantities (perplexity, word and sentence counts).

Why: on a linear axis a heavy-tailed distribution is one tall bar at the left and a long,
nearly empty tail, so a cut such as `rps_doc_word_count >= 50` falls inside the first bin and
cannot be seen. Equal bins in log10(v) spread such a distribution over the chart. A quantity
gets a log axis when it is positive (at most 1% of values <= 0, which are then counted as not
shown) and its 99th percentile is at least `LOG_RATIO` times its median, or when it is a
perplexity (`ts_perplexity_*`), which is log-normal by construction.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from textsieve.report.collect import Histogram

LOG_RATIO = 10.0  # p99 / median from which a positive quantity is drawn on a log axis
LOG_PREFIXES = ("ts_perplexity_",)  # always on a log axis (when positive); not their `_bucket`
MAX_NONPOSITIVE = 0.01  # share of values <= 0 a log axis may leave out
MAX_INT_VALUES = 200_000  # integer quantities with more distinct values get plain log bins


def wants_log(name: str, n: int, nonpositive: int, median: float | None, p99: float | None) -> bool:
    """Whether a quantity of `n` non-null values should be drawn on a log x axis."""
    if not n or median is None or median <= 0 or nonpositive > MAX_NONPOSITIVE * n:
        return False
    if name.startswith(LOG_PREFIXES) and not name.endswith("_bucket"):
        return True
    return p99 is not None and p99 / median >= LOG_RATIO


def fill_log(con: duckdb.DuckDBPyConnection, src: str, h: Histogram, lo: float, p_hi: float | None, hi: float,
             n: int, nonpositive: int, cuts: list[float], bins: int, ints: bool = False,
             distinct: int = 0) -> Histogram:
    """Fill `h` with `bins` equal bins in log10(v) over [lo, 99.5th percentile] (`lo` = the
    smallest positive value), extended to a cut within reach as the linear histogram does.
    Integer quantities get whole-number edges (`h.edges`), so that at the low end, where a bin
    would be narrower than 1, each value has one bar instead of a comb of empty bins."""
    top = p_hi if p_hi is not None and p_hi > lo else hi
    span = math.log10(top / lo) if top > lo else 0.0
    for c in cuts:
        if top < c <= hi and math.log10(c / lo) <= 3 * span:
            top = c * 1.05
    if top <= lo:
        top = lo * 10
    l0 = math.log10(lo)
    width = (math.log10(top) - l0) / bins
    if ints and distinct <= MAX_INT_VALUES:
        import numpy as np

        top = float(math.floor(top)) + 1.0  # edges [e_k, e_k+1): the last bin holds floor(top)
        edges = [float(lo)]
        for k in range(1, bins + 1):
            e = max(edges[-1] + 1.0, float(round(10 ** (l0 + k * (math.log10(top) - l0) / bins))))
            if e >= top:
                break
            edges.append(e)
        edges.append(top)
        rows = con.execute(f"SELECT v, count(*) FROM {src} WHERE v > 0 AND v < {top!r} GROUP BY v").fetchall()
        vals = np.asarray([r[0] for r in rows], dtype=np.float64)
        weights = np.asarray([r[1] for r in rows], dtype=np.float64)
        counts = [int(c) for c in np.histogram(vals, bins=np.asarray(edges), weights=weights)[0]]
        h.edges = edges
    else:
        rows = con.execute(
            f"SELECT greatest(0, least(CAST(floor((log10(v) - {l0!r}) / {width!r}) AS BIGINT), {bins - 1})) AS b, "
            f"count(*) FROM {src} WHERE v > 0 AND v <= {top!r} GROUP BY b").fetchall()
        counts = [0] * bins
        for b, c in rows:
            counts[int(b)] += int(c)
    h.counts, h.lo, h.hi, h.log = counts, float(lo), float(top), True
    h.below = int(nonpositive)
    h.above = int(n - nonpositive - sum(counts))
    return h


def log_ticks(lo: float, hi: float) -> list[float]:
    """Tick values on a log axis over [lo, hi]: powers of ten, with 2x and 5x when that leaves
    fewer than three ticks."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1,) if k1 - k0 >= 3 else (1, 2, 5)
    return [m * 10.0 ** k for k in range(k0, k1 + 1) for m in steps if lo <= m * 10.0 ** k <= hi]
