"""Inline SVG charts for the report, drawn in Python.

Why SVG from Python: the page must open offline and look the same everywhere, with no
JavaScript library to ship; SVG text is small, scales, and hovering a bar shows its `<title>`.
Every chart is an `<svg class="chart">` so the page's check script can confirm it drew.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from textsieve.report.collect import Histogram, Threshold
from textsieve.report.scales import log_ticks

W, H = 560, 220
ML, MR, MT, MB = 58, 16, 26, 44  # margins: left (y labels), right, top (threshold labels), bottom (x labels)
BAR = "#4c78a8"
BAR_OUT = "#b8c4d4"  # bins a threshold removes
THRESH = "#d62728"


def fmt(x: float) -> str:
    """A short, readable number: 12,345 / 0.153 / 1.2e-05."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 0.01:
        return f"{x:.3g}"
    return f"{x:.2g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    out, t = [], start
    while t <= hi + step * 1e-6:
        out.append(round(t, 12))
        t += step
    return out


def _svg_open(name: str, w: int = W, h: int = H, label: str = "") -> str:
    return (f'<svg class="chart" data-chart="{escape(name)}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
            f'role="img" aria-label="{escape(label or name)}" xmlns="http://www.w3.org/2000/svg">')


def histogram_svg(h: Histogram, thresholds: Sequence[Threshold] = (), name: str = "", x_label: str = "",
                  y_label: str = "documents") -> str:
    """Bars of `h` with y ticks, x ticks and the thresholds as red dashed lines. Bins a threshold
    rejects are drawn pale, so the cut is visible at a glance."""
    pw, ph = W - ML - MR, H - MT - MB
    parts = [_svg_open(name, label=f"histogram of {x_label}")]
    top = max(h.counts) if h.counts else 0
    ranked = sorted(h.counts, reverse=True)
    log = len(ranked) > 1 and ranked[0] > 10 * max(ranked[1], 1)  # one bar dwarfs the rest: log scale
    if log:
        y_label += " (log scale)"
        ymax = 10 ** math.ceil(math.log10(top + 1))
        ticks = [10 ** k for k in range(int(math.log10(ymax)) + 1)]

        def yv(c: float) -> float:
            return ph * math.log10(1 + c) / math.log10(1 + ymax)
    else:
        ymax = nice_ticks(0, top or 1, 4)[-1] if top else 1
        ymax = max(ymax, top)
        ticks = nice_ticks(0, ymax, 4)

        def yv(c: float) -> float:
            return ph * c / ymax
    for t in ticks:
        y = MT + ph - yv(t)
        parts.append(f'<line x1="{ML}" x2="{ML + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{ML - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{fmt(t)}</text>')
    n = len(h.counts)
    if h.categorical:
        slot = pw / max(n, 1)
        for i, (v, c) in enumerate(zip(h.values, h.counts)):
            x, bh = ML + i * slot, yv(c)
            fill = BAR_OUT if any(not th.passes(v) for th in thresholds) else BAR
            parts.append(f'<rect x="{x + slot * 0.12:.1f}" y="{MT + ph - bh:.1f}" width="{slot * 0.76:.1f}" '
                         f'height="{bh:.1f}" fill="{fill}"><title>{escape(fmt(v))}: {c:,} {y_label}</title></rect>')
            if n <= 24 or i % math.ceil(n / 12) == 0:
                parts.append(f'<text x="{x + slot / 2:.1f}" y="{MT + ph + 15}" class="tick" '
                             f'text-anchor="middle">{escape(fmt(v))}</text>')
        pos = {v: ML + (i + 0.5) * slot for i, v in enumerate(h.values)}

        def xpos(v: float) -> float | None:
            if v in pos:
                return pos[v]
            below = [k for k in h.values if k < v]
            above = [k for k in h.values if k > v]
            if below and above:
                return (pos[below[-1]] + pos[above[0]]) / 2
            return None
    else:
        lo, hi = h.lo, h.hi
        if h.log:  # bins and ticks equal in log10(v)
            t0, span = math.log10(lo), (math.log10(hi / lo) or 1.0)

            def tr(v: float) -> float:
                return math.log10(v) if v > 0 else -math.inf

            def edge(f: float) -> float:
                return 10 ** (t0 + span * f)
        else:
            t0, span = lo, (hi - lo) or 1.0

            def tr(v: float) -> float:
                return v

            def edge(f: float) -> float:
                return lo + span * f

        def xpos(v: float) -> float | None:
            return ML + pw * (tr(v) - t0) / span if lo <= v <= hi else None

        for i, c in enumerate(h.counts):
            if h.edges:  # whole-number bins [a, b): a..b-1
                a, b = h.edges[i], h.edges[i + 1]
                mid, what = a, fmt(a) if b == a + 1 else f"{fmt(a)}–{fmt(b - 1)}"
            else:
                a, b = edge(i / n), edge((i + 1) / n)
                mid, what = (math.sqrt(a * b) if h.log else (a + b) / 2), f"[{fmt(a)}, {fmt(b)})"
            x0, x1 = (ML + pw * (tr(v) - t0) / span for v in (a, b))
            bh = yv(c)
            fill = BAR_OUT if any(not th.passes(mid) for th in thresholds) else BAR
            parts.append(f'<rect x="{x0:.1f}" y="{MT + ph - bh:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}" '
                         f'height="{bh:.1f}" fill="{fill}"><title>{what}: {c:,} {y_label}</title></rect>')
        for t in (log_ticks(lo, hi) if h.log else nice_ticks(lo, hi, 6)):
            tx = xpos(t)
            if tx is not None:
                parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{MT + ph}" y2="{MT + ph + 4}" class="axis"/>')
                parts.append(f'<text x="{tx:.1f}" y="{MT + ph + 15}" class="tick" text-anchor="middle">'
                             f'{fmt(t)}</text>')
    parts.append(f'<line x1="{ML}" x2="{ML + pw}" y1="{MT + ph}" y2="{MT + ph}" class="axis"/>')
    parts.append(f'<line x1="{ML}" x2="{ML}" y1="{MT}" y2="{MT + ph}" class="axis"/>')
    edge_notes: list[str] = []
    for th in thresholds:
        tx = xpos(th.value)
        label = f"{th.op} {fmt(th.value)}"
        if tx is None:
            edge_notes.append(label)
            continue
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{MT - 4}" y2="{MT + ph}" class="thresh"/>')
        anchor = "end" if tx > ML + pw * 0.8 else "start"
        dx = -4 if anchor == "end" else 4
        parts.append(f'<text x="{tx + dx:.1f}" y="{MT + 6}" class="tlabel" text-anchor="{anchor}">'
                     f'{escape(th.rule)}: {escape(label)}</text>')
    if edge_notes:
        parts.append(f'<text x="{ML + pw}" y="{MT - 10}" class="tlabel" text-anchor="end">'
                     f'off-scale: {escape(", ".join(edge_notes))}</text>')
    x_label += " (log scale)" if h.log and not h.categorical else ""
    parts.append(f'<text x="{ML + pw / 2:.1f}" y="{H - 6}" class="axlabel" text-anchor="middle">'
                 f'{escape(x_label)}</text>')
    parts.append(f'<text transform="translate(13,{MT + ph / 2:.1f}) rotate(-90)" class="axlabel" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def funnel_svg(total: int, steps: Sequence[tuple[str, int, int]], name: str = "funnel") -> str:
    """Horizontal bars: documents remaining after each rule (cumulative), with what it removed.
    `steps` = (rule, remaining, removed_by_this_step)."""
    row, lw, bw = 30, 190, 300
    h = row * (len(steps) + 1) + 30
    w = lw + bw + 200
    parts = [_svg_open(name, w, h, "selection funnel")]
    rows = [("all documents", total, 0)] + list(steps)
    for i, (label, remaining, removed) in enumerate(rows):
        y = 10 + i * row
        frac = remaining / total if total else 0.0
        parts.append(f'<text x="{lw - 8}" y="{y + 17}" class="flabel" text-anchor="end">{escape(label)}</text>')
        parts.append(f'<rect x="{lw}" y="{y + 3}" width="{bw}" height="{row - 8}" fill="#eef1f5"/>')
        parts.append(f'<rect x="{lw}" y="{y + 3}" width="{bw * frac:.1f}" height="{row - 8}" '
                     f'fill="{BAR if i else "#7f8c9d"}">'
                     f'<title>{escape(label)}: {remaining:,} documents remain ({100 * frac:.1f}%)</title></rect>')
        note = f"{remaining:,} ({100 * frac:.1f}%)" + (f"  −{removed:,}" if i else "")
        parts.append(f'<text x="{lw + bw + 8}" y="{y + 17}" class="tick">{escape(note)}</text>')
    parts.append(f'<text x="{lw + bw / 2}" y="{h - 6}" class="axlabel" text-anchor="middle">'
                 f'documents remaining after each rule (cumulative, recipe order)</text>')
    parts.append("</svg>")
    return "".join(parts)


#: Colours of the rules in a stacked bar (kept is BAR); cycled when a recipe has more rules.
RULE_COLOURS = ("#e45756", "#f58518", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#72b7b2", "#54a24b",
                "#bab0ac", "#d67195", "#79706e", "#d37295")


def _short(label: str, n: int = 28) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def count_bars_svg(rows: Sequence[tuple[str, int]], name: str, unit: str = "documents") -> str:
    """Horizontal bars, one per (label, count), proportional to the largest count."""
    row, lw, bw = 22, 200, 260
    h = row * len(rows) + 34
    top = max((c for _, c in rows), default=0) or 1
    total = sum(c for _, c in rows) or 1
    parts = [_svg_open(name, lw + bw + 130, h, f"{unit} per value")]
    for i, (label, c) in enumerate(rows):
        y = 8 + i * row
        parts.append(f'<text x="{lw - 8}" y="{y + 14}" class="flabel" text-anchor="end">{escape(_short(label))}'
                     f'<title>{escape(label)}</title></text>')
        parts.append(f'<rect x="{lw}" y="{y + 3}" width="{max(bw * c / top, 0.5):.1f}" height="{row - 7}" fill="{BAR}">'
                     f'<title>{escape(label)}: {c:,} {unit} ({100 * c / total:.1f}%)</title></rect>')
        parts.append(f'<text x="{lw + bw * c / top + 6:.1f}" y="{y + 14}" class="tick">{c:,} ({100 * c / total:.1f}%)'
                     f'</text>')
    parts.append(f'<text x="{lw + bw / 2}" y="{h - 6}" class="axlabel" text-anchor="middle">{escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stacked_share_svg(rows: Sequence[tuple[str, int, int, Sequence[int]]], rules: Sequence[str], name: str) -> str:
    """One 100% bar per group: the share the recipe keeps (blue), then the share each rule
    removes at its step (recipe order, one colour per rule, legend on top).
    `rows` = (label, documents, kept, removed per rule)."""
    row, lw, bw = 22, 200, 300
    per_line = 4
    legend = [("kept", BAR)] + [(r, RULE_COLOURS[i % len(RULE_COLOURS)]) for i, r in enumerate(rules)]
    lh = 16 * math.ceil(len(legend) / per_line) + 6
    h = lh + row * len(rows) + 30
    w = lw + bw + 110
    parts = [_svg_open(name, w, h, "kept and removed share per value")]
    for k, (label, colour) in enumerate(legend):
        x, y = 8 + (k % per_line) * ((w - 16) / per_line), 4 + 16 * (k // per_line)
        parts.append(f'<rect x="{x:.1f}" y="{y + 2}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14:.1f}" y="{y + 11}" class="tick">{escape(_short(label, 24))}</text>')
    for i, (label, docs, kept, removed) in enumerate(rows):
        y = lh + i * row
        parts.append(f'<text x="{lw - 8}" y="{y + 14}" class="flabel" text-anchor="end">{escape(_short(label))}'
                     f'<title>{escape(label)}</title></text>')
        parts.append(f'<rect x="{lw}" y="{y + 3}" width="{bw}" height="{row - 7}" fill="#eef1f5"/>')
        x = float(lw)
        for (what, colour), n in zip(legend, [kept, *removed]):
            if n <= 0 or not docs:
                continue
            seg = bw * n / docs
            verb = "kept" if what == "kept" else f"removed by {what}"
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{max(seg, 0.5):.1f}" height="{row - 7}" '
                         f'fill="{colour}">'
                         f'<title>{escape(label)}: {n:,} of {docs:,} {verb} ({100 * n / docs:.1f}%)</title></rect>')
            x += seg
        share = f"{100 * kept / docs:.1f}% kept" if docs else "–"
        parts.append(f'<text x="{lw + bw + 8}" y="{y + 14}" class="tick">{escape(share)}</text>')
    parts.append(f'<text x="{lw + bw / 2}" y="{h - 6}" class="axlabel" text-anchor="middle">share of the value\'s '
                 f'documents: kept, or removed at each rule (recipe order)</text>')
    parts.append("</svg>")
    return "".join(parts)
