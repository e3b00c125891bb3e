"""The report's extraction section: what `extract` kept and left out, and what it made of pages.

An annotate folder records its input roots (`annotate.json`'s `input_roots`); when one of them
is an `extract` output (it holds an `extract.json`), the report shows that run's counts (pages,
kept, left out by reason, damaged records), a bar per reason, and a few extracted pages beside
the first lines of their raw markup, so a reader sees at a glance what the engine dropped.
"""

from __future__ import annotations

from html import escape
from typing import Any

from textsieve.io.publish import EXTRACT_JSON, PublishError, summary_of
from textsieve.report.charts import count_bars_svg


def extraction_summary(annotate_dir: str) -> dict[str, Any] | None:
    """The `extract.json` of the extract run annotate read (the first found), or None."""
    from textsieve.io.locations import annotate_summary

    summary = annotate_summary(annotate_dir)
    roots = (summary.get("input_roots") or []) if summary else []
    for root in roots:
        try:
            value = summary_of(str(root), EXTRACT_JSON)
        except PublishError:
            continue
        if value is not None and value.get("stage") == "extract":
            value["root"] = str(root)
            return value
    return None


def extraction_section(summary: dict[str, Any] | None) -> str:
    """The section's HTML ("" when the documents did not come from `extract`)."""
    if not summary:
        return ""
    res = summary.get("result", {})
    settings = summary.get("settings", {})
    skipped = res.get("skipped", {}) or {}
    rows = [("kept", int(res.get("documents", 0)))] + [(k, int(v)) for k, v in skipped.items()]
    if res.get("bad_records"):
        rows.append(("damaged records", int(res["bad_records"])))
    facts = [("extract folder", summary.get("root", "")),
             ("engine", f"{settings.get('engine', '?')} {settings.get('engine_version', '')}"),
             ("pages read", f"{int(res.get('pages', 0)):,}")]
    if res.get("fallback_pages") is not None:  # a cascade engine (`auto`, the default, or `cascade`)
        facts.append(("pages sent to the fallback engine",
                      f"{int(res['fallback_pages']):,} ({float(res.get('fallback_share') or 0):.1%})"))
    if res.get("pages_per_core_second"):
        facts.append(("pages per CPU-second", f"{float(res['pages_per_core_second']):,.0f}"))
    facts.append(("fix text (ftfy)", "on" if settings.get("fix_text") else "off"))
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts)
    table = f"<table>{cells}</table>"
    samples = []
    for s in summary.get("samples", [])[:4]:
        raw = escape("\n".join(s.get("raw_head", [])))
        samples.append(f'<div class="pair"><div class="t">{escape(str(s.get("url") or s.get("id")))}</div>'
                       f'<div class="grid"><figure><div class="t">raw page (first lines)</div><pre>{raw}</pre></figure>'
                       f'<figure><div class="t">extracted text</div><pre>{escape(s.get("text_head", ""))}</pre>'
                       "</figure></div></div>")
    return (f'<section id="extraction"><h2>Extraction</h2><p class="muted">Pages of the web archives this corpus '
            f"was extracted from: kept, and left out by reason (not HTML, redirects, HTTP errors, empty bodies, "
            f"empty extractions).</p>{table}{count_bars_svg(rows, 'extraction', unit='pages')}"
            f"<h3>Extracted pages beside their markup</h3>{''.join(samples)}</section>")
