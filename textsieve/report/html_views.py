"""Report sections added for issue 10 item 14: the funnel per source (or `--by` field) and per
language, and the dedup section's cluster lists without repeats across thresholds.

Why a module of its own: `html.py` lays out the page; these sections each need a little logic
(folding, de-duplicating clusters) that is easier to read and test on its own.
"""

from __future__ import annotations

from html import escape
from typing import Any

from textsieve.report.charts import count_bars_svg, stacked_share_svg

MAX_CLUSTERS = 8  # clusters listed per threshold


def _pct(x: float, of: float) -> str:
    return f"{100.0 * x / of:.1f}%" if of else "–"


def view_anchor(title: str) -> str:
    return "by-" + "".join(c if c.isalnum() else "-" for c in title.lower()).strip("-")


def breakdown_sections(d: Any) -> str:
    """One section per breakdown (`ReportData.breakdowns`): a documents-per-value chart, with a
    recipe the share each rule removes per value, and the numbers as a table."""
    out = []
    for b in d.breakdowns:
        if not b.rows:
            continue
        what = "language" if b.title == "language" else f"<code>{escape(b.title)}</code>"
        src = (f"attribute column <code>{escape(b.field)}</code>" if b.origin == "attribute column"
               else f"field <code>{escape(b.field)}</code> of the source records")
        folded = f"; the {len(b.rows) - 1} largest of {b.n_values:,} values shown" if b.n_values > len(b.rows) else ""
        name = view_anchor(b.title)
        counts = count_bars_svg([(r.value, r.documents) for r in b.rows], f"{name}-docs")
        figs = [f'<figure><div class="t">documents per {what}</div>{counts}</figure>']
        if b.rules:
            rows = [(r.value, r.documents, r.kept, r.removed) for r in b.rows]
            figs.append(f'<figure><div class="t">what the recipe keeps per {what}</div>'
                        f'{stacked_share_svg(rows, b.rules, f"{name}-funnel")}</figure>')
        head = ("<tr><th>value</th><th class='n'>documents</th><th class='n'>% of corpus</th>"
                + "".join(f"<th class='n rule'>−{escape(r)}</th>" for r in b.rules)
                + "<th class='n'>kept</th><th class='n'>% kept</th><th class='n'>chars kept</th></tr>")
        total = sum(r.documents for r in b.rows)
        body = "".join(
            f"<tr><td class='v'>{escape(r.value)}</td><td class='n'>{r.documents:,}</td>"
            f"<td class='n'>{_pct(r.documents, total)}</td>"
            + "".join(f"<td class='n'>{n:,}</td>" for n in r.removed)
            + f"<td class='n'>{r.kept:,}</td><td class='n'>{_pct(r.kept, r.documents)}</td>"
              f"<td class='n'>{_pct(r.kept_chars, r.characters)}</td></tr>" for r in b.rows)
        intro = (f"From the {src}{folded}. " + ("Each rule's column: documents it removes at its step of the funnel "
                                                "(after the rules left of it)." if b.rules else
                                                "Give a recipe to see what it keeps per value."))
        out.append(f'<section id="{name}"><h2>By {what}</h2><p class="muted">{intro}</p><div class="grid">'
                   f'{"".join(figs)}</div><div class="tw"><table class="views">{head}{body}</table></div></section>')
    return "".join(out)


def breakdown_links(d: Any) -> list[tuple[str, str, int]]:
    """Navigation entries of the breakdown sections."""
    return [(view_anchor(b.title), f"By {b.title}", 1) for b in d.breakdowns if b.rows]


def distinct_clusters(fuzzy: dict) -> list[tuple[str, list[dict], int]]:
    """(threshold, clusters to list, clusters left out as already listed) per threshold, highest
    threshold first. A cluster that is identical (same id and size, so the same documents) at
    a higher threshold is listed there only, with the other thresholds it also has; so a
    lower threshold shows the clusters it adds or grows rather than the same ones again."""
    per = fuzzy.get("thresholds", {})
    order = sorted(per, key=float, reverse=True)
    seen: dict[tuple[int, int], dict] = {}
    out = []
    for t in order:
        shown: list[dict] = []
        repeated = 0
        for c in per[t].get("largest_clusters") or []:
            key = (c.get("cluster_id"), c.get("size"))
            if key[0] is not None and key in seen:
                seen[key].setdefault("_also", []).append(t)
                repeated += 1
                continue
            if len(shown) < MAX_CLUSTERS:
                c = dict(c)
                seen[key] = c
                shown.append(c)
        out.append((t, shown, repeated))
    return out
