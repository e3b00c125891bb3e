"""The report's source-dumps section: what `textsieve source` kept and left out, per family.

An annotate folder records its input roots (`annotate.json`'s `input_roots`); each one that is a
`source` output (it holds `.textsieve/source.json`) gets a row: the family, whether the
reference recipe ran, records read, documents kept and every reason records were left out
(reading, the whole-input decision such as dedup, the reference's filters), with a bar chart of
the reasons, so RedPajama-1T-style runs show at a glance what each source lost and why.
"""

from __future__ import annotations

from html import escape
from typing import Any

from textsieve.io.locations import annotate_summary
from textsieve.io.publish import PublishError, book, summary_of

SOURCE_JSON = book("source.json")  # stages.sources.source.SUMMARY (the stages layer is above this one)


def source_summaries(annotate_dir: str) -> list[dict[str, Any]]:
    """The `source.json` of every `source` run annotate read, in input order ([] when none)."""
    summary = annotate_summary(annotate_dir)
    out = []
    for root in (summary.get("input_roots") or []) if summary else []:
        try:
            value = summary_of(str(root), SOURCE_JSON)
        except PublishError:
            continue
        if value is not None and value.get("stage") == "source":
            out.append(dict(value, root=str(root)))
    return out


def sources_section(summaries: list[dict[str, Any]]) -> str:
    """The section's HTML ("" when the documents did not come from `source`)."""
    if not summaries:
        return ""
    from textsieve.report.charts import count_bars_svg  # charts imports the collector, which imports this module

    rows, charts = [], []
    for s in summaries:
        res = s.get("result", {})
        family = str(res.get("family", "?"))
        mode = str(res.get("reference") or "default")
        left = res.get("left_out") or {}
        rows.append(f"<tr><td>{escape(family)}</td><td>{escape(mode)}</td><td class='n'>{int(res.get('records', 0)):,}"
                    f"</td><td class='n'>{int(res.get('documents', 0)):,}</td><td>"
                    + escape(", ".join(f"{k} {int(v):,}" for k, v in left.items()) or "none") + "</td></tr>")
        bars = [("kept", int(res.get("documents", 0)))] + [(str(k), int(v)) for k, v in left.items()]
        charts.append(f"<h3>{escape(family)} <span class='muted'>{escape(s['root'])}</span></h3>"
                      + count_bars_svg(bars, f"source-{family}", unit="records"))
    table = ("<table><tr><th>family</th><th>recipe</th><th>records read</th><th>kept</th><th>left out, by reason"
             "</th></tr>" + "".join(rows) + "</table>")
    return (f'<section id="sources"><h2>Sources</h2><p class="muted">The source dumps these documents were read '
            f"from (<code>textsieve source</code>): records read, documents kept, and what was left out by reason, "
            f"while reading (undecodable, redirects, damaged), across the whole input (duplicates) and by the "
            f"reference recipe's filters.</p>{table}{''.join(charts)}</section>")
