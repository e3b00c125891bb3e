"""The report page: one self-contained HTML file (inline CSS, SVG and a few lines of JS).

Nothing is fetched when the page opens. The inline script records JavaScript errors into
`<body data-errors>` and marks every chart that rendered with `data-drawn="1"` (its SVG has a
non-empty bounding box), which is what the headless-browser test checks.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from textsieve._version import __version__
from textsieve.report.charts import fmt, funnel_svg, histogram_svg
from textsieve.report.collect import Example, Histogram, Quantity, ReportData
from textsieve.report.embeddings import embedding_links, embeddings_section, semantic_section
from textsieve.report.extraction import extraction_section
from textsieve.report.html_views import breakdown_links, breakdown_sections, distinct_clusters
from textsieve.report.sources import sources_section
from textsieve.report.training_sets import render_sections, section_links

TEXT_CHARS = 700
LINE_CHARS = 160
MAX_LINES = 14

CSS = """
:root{--fg:#1f2933;--muted:#616e7c;--line:#e4e7eb;--accent:#4c78a8;--bad:#c0392b;--good:#2e7d32;--bg:#f7f8fa}
*{box-sizing:border-box}body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1f2d3d;color:#fff;padding:22px 32px}header h1{margin:0 0 4px;font-size:24px}header .sub{color:#c7d0da}
.wrap{display:flex;align-items:flex-start}nav{position:sticky;top:0;width:230px;flex:none;padding:18px 14px;max-height:100vh;overflow:auto;font-size:13px}
nav a{display:block;color:var(--fg);text-decoration:none;padding:3px 8px;border-radius:4px}nav a:hover{background:#e8edf3}nav .l2{padding-left:20px;color:var(--muted)}
main{flex:1;min-width:0;padding:10px 32px 60px}section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:18px 22px;margin:18px 0}
h2{margin:0 0 12px;font-size:19px}h3{margin:18px 0 8px;font-size:15px}.muted{color:var(--muted)}code{font:12px ui-monospace,Menlo,Consolas,monospace;background:#f1f3f5;padding:1px 4px;border-radius:3px}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{flex:1 1 150px;border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fbfcfd}
.card .v{font-size:22px;font-weight:600}.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
table{border-collapse:collapse;width:100%;font-size:13px}.tw{overflow-x:auto}td code.cond{font-size:11px;white-space:normal;overflow-wrap:anywhere}th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f5f7f9;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px}
figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:10px 10px 6px;background:#fff}figcaption{font-size:12px;color:var(--muted);margin-top:2px}
figure .t{font-weight:600;font-size:13px;margin-bottom:2px;word-break:break-all}
svg.chart{max-width:100%;height:auto;font-family:system-ui,sans-serif}svg .tick{font-size:10px;fill:#52606d}svg .axlabel{font-size:11px;fill:#323f4b}
svg .grid{stroke:#eef0f3}svg .axis{stroke:#9aa5b1}svg .thresh{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}
svg .tlabel{font-size:10px;fill:#d62728;font-weight:600}svg .flabel{font-size:12px;fill:#323f4b}svg rect:hover{opacity:.75}
.ex{display:grid;grid-template-columns:1fr 1fr;gap:14px}.excol h4{margin:4px 0 6px;font-size:13px}.excol.rm h4{color:var(--bad)}.excol.kp h4{color:var(--good)}
.doc{border:1px solid var(--line);border-left:4px solid var(--line);border-radius:6px;padding:8px 10px;margin-bottom:10px;background:#fcfcfd}
.rm .doc{border-left-color:#e6a39b}.kp .doc{border-left-color:#9fcca1}.doc .id{font:11px ui-monospace,monospace;color:var(--muted);word-break:break-all}
.doc .vals{margin:3px 0 5px;font-size:12px}.doc .vals span{display:inline-block;background:#eef2f7;border-radius:3px;padding:0 5px;margin:1px 4px 1px 0}
.doc pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.45 ui-monospace,Menlo,Consolas,monospace;max-height:220px;overflow:auto}
.ln{display:block}.ln.cut{color:var(--bad);text-decoration:line-through;text-decoration-color:#e6a39b}.ln .lv{color:var(--muted);text-decoration:none;display:inline-block;min-width:70px}
.bar{height:8px;background:var(--accent);border-radius:2px;display:inline-block;vertical-align:middle}
.note{background:#fff8e1;border:1px solid #f3e0a2;border-radius:6px;padding:8px 12px;margin:10px 0}
details summary{cursor:pointer;color:var(--accent)}
table.views th.rule{white-space:normal;overflow-wrap:anywhere;min-width:4.5em;font-size:12px}table.views td.v{overflow-wrap:anywhere;min-width:7em}
table.views td.n,table.views th.n{padding-left:4px;padding-right:4px}.tw{max-width:100%}
"""

JS_HEAD = """<script>
(function(){var errs=[];window.__reportErrors=errs;
function rec(m){errs.push(String(m));if(document.body){document.body.setAttribute('data-errors',errs.join(' | '));}}
window.addEventListener('error',function(e){rec(e.message||'error');});
window.addEventListener('unhandledrejection',function(e){rec('unhandled rejection: '+e.reason);});
var ce=console.error;console.error=function(){rec(Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};})();
</script>"""

JS_TAIL = """<script>
(function(){var charts=document.querySelectorAll('svg.chart'),ok=0;
charts.forEach(function(svg){var b=svg.getBBox();var marks=svg.querySelectorAll('rect').length;
if(b.width>0&&b.height>0&&marks>0){svg.setAttribute('data-drawn','1');ok++;}});
document.body.setAttribute('data-charts',charts.length+'/'+ok);
if(!document.body.hasAttribute('data-errors')){document.body.setAttribute('data-errors',(window.__reportErrors||[]).join(' | '));}})();
</script>"""


def _pct(x: float, of: float) -> str:
    return f"{100.0 * x / of:.1f}%" if of else "–"


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in s.lower()).strip("-")


def _caption(h: Histogram, unit: str) -> str:
    bits = [f"{h.total - h.nulls:,} {unit}"]
    if h.nulls:
        bits.append(f"{h.nulls:,} null")
    if h.mean is not None:
        bits.append(f"mean {fmt(h.mean)}")
    if h.median is not None:
        bits.append(f"median {fmt(h.median)}")
    if h.above:
        bits.append(f"{h.above:,} above {fmt(h.hi)} not shown")
    if h.log:
        bits.append("log x axis (heavy tail)" + (f", {h.below:,} at ≤ 0 not shown" if h.below else ""))
    return " · ".join(bits)


def _figure(qn: Quantity) -> str:
    h = qn.hist
    if not h.counts:
        body = f'<p class="muted">no values ({h.nulls:,} null)</p>'
    else:
        body = histogram_svg(h, qn.thresholds, name=qn.name, x_label=qn.label.split(":")[0], y_label=qn.unit)
    rules = sorted({t.rule for t in qn.thresholds})
    used = f' · rules: {escape(", ".join(rules))}' if rules else ""
    return (f'<figure id="q-{_slug(qn.name)}"><div class="t">{escape(qn.label)}</div>{body}'
            f'<figcaption>{escape(_caption(h, qn.unit))}{used}</figcaption></figure>')


def _cards(items: list[tuple[str, str]]) -> str:
    return '<div class="cards">' + "".join(f'<div class="card"><div class="v">{escape(v)}</div>'
                                           f'<div class="k">{escape(k)}</div></div>' for k, v in items) + "</div>"


def _overview(d: ReportData) -> str:
    cards = [("documents", f"{d.documents:,}"), ("characters", f"{d.characters:,}")]
    if d.funnel:
        cards.append(("kept by recipe", f"{d.funnel.kept:,} ({_pct(d.funnel.kept, d.funnel.total)})"))
    for col, t in d.tokens.items():  # real tokens (`textsieve tokens`): the corpus's and the recipe's
        cards.append((f"tokens ({col[len('ts_tokens_'):]})", f"{t['total']:,}"))
        kept = d.funnel.tokens.get(col) if d.funnel else None
        if kept:
            cards.append((f"tokens kept by recipe{' (est.)' if kept.get('estimated') else ''}",
                          f"{kept['kept']:,} ({_pct(kept['kept'], kept['total'])})"))
    if d.dedup_fuzzy:
        for t, v in d.dedup_fuzzy.get("thresholds", {}).items():
            cards.append((f"fuzzy dups removed @{t}", f"{v.get('n_removed', 0):,}"))
    for set_name, s in (d.dedup_exact_sets or ({"dedup_exact": d.dedup_exact} if d.dedup_exact else {})).items():
        tag = "" if set_name == "dedup_exact" else f" ({set_name[len('dedup_exact_'):]})"
        cards.append((f"exact duplicates removed{tag}", f"{s.get('n_removed', 0):,}"))
    rows = [("annotate folder", d.annotate_dir), ("attribute sets", ", ".join(d.sets) or "none")]
    if d.recipe:
        rows.append(("recipe", f"{d.recipe.name} — {d.recipe.description}" if d.recipe.description else d.recipe.name))
    if d.selection:
        c = d.selection.get("counts", {})
        rows.append(("selection", f"{c.get('selected', 0):,} of {c.get('pool', 0):,} documents written "
                                  f"({d.selection.get('format', '')})"))
        drawn = d.selection.get("dsir") or {}
        if drawn.get("token_column"):  # a DSIR draw counted in real tokens
            rows.append(("selection tokens", f"{drawn.get('tokens', 0):,} {drawn['token_column']}"))
    table = "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows) + "</table>"
    notes = "".join(f'<div class="note">{escape(n)}</div>' for n in d.notes)
    pipe = (f"<details><summary>resolved pipeline file</summary><pre>{escape(d.pipeline)}</pre></details>"
            if d.pipeline else "")
    return f'<section id="overview"><h2>Overview</h2>{_cards(cards)}<h3>Run</h3>{table}{notes}{pipe}</section>'


def _funnel(d: ReportData) -> str:
    f = d.funnel
    if f is None:
        return ('<section id="funnel"><h2>Selection funnel</h2><p class="muted">No recipe given (use '
                '<code>--recipe NAME|PATH</code>).</p></section>')
    steps, remaining = [], f.total
    for r in f.rules:
        now = f.total - r.removed_cumulative
        steps.append((r.name, now, remaining - now))
        remaining = now
    head = ('<tr><th>rule</th><th>kind</th><th>condition</th><th class="n">removed alone</th><th class="n">%</th>'
            '<th class="n">removed cumulative</th><th class="n">%</th><th class="n">chars removed (cum.)</th>'
            '<th class="n">%</th></tr>')
    body = "".join(
        f"<tr><td><a href='#ex-{_slug(r.name)}'>{escape(r.name)}</a></td><td>{r.kind}</td>"
        f"<td><code class='cond'>{escape(r.condition)}"
        f"</code></td><td class='n'>{r.removed_alone:,}</td><td class='n'>{_pct(r.removed_alone, f.total)}</td>"
        f"<td class='n'>{r.removed_cumulative:,}</td><td class='n'>{_pct(r.removed_cumulative, f.total)}</td>"
        f"<td class='n'>{r.chars_removed_cumulative:,}</td>"
        f"<td class='n'>{_pct(r.chars_removed_cumulative, f.total_chars)}"
        f"</td></tr>" for r in f.rules)
    body += (f"<tr><th>kept</th><th></th><th></th><th></th><th></th><th class='n'>{f.kept:,}</th>"
             f"<th class='n'>{_pct(f.kept, f.total)}</th><th class='n'>{f.kept_chars:,}</th>"
             f"<th class='n'>{_pct(f.kept_chars, f.total_chars)}</th></tr>")
    return (f'<section id="funnel"><h2>Selection funnel: recipe <code>{escape(f.recipe)}</code></h2>'
            f'<p class="muted">{f.total:,} documents, {f.total_chars:,} characters. "Alone": what the rule removes '
            f'by itself; "cumulative": after it and every rule above it. Line rules remove lines; a document '
            f'counts as removed when no line is left.</p><figure>{funnel_svg(f.total, steps)}</figure>'
            f'<h3>Per rule</h3><div class="tw"><table>{head}{body}</table></div></section>')


def _signals(d: ReportData) -> str:
    doc = [q for q in d.signals if q.unit == "documents"]
    line = [q for q in d.signals if q.unit == "lines"]
    key = ('<p class="muted">Bars: how many documents (or lines) fall in each bin; pale bars are bins the '
           'recipe\'s threshold (red dashed line) rejects. Hover a bar for its range and count.</p>')
    out = [f'<section id="signals"><h2>Signals</h2>{key}']
    if d.derived:
        out.append('<h3 id="derived">Rule quantities (reductions over lines, per document)</h3><div class="grid">'
                   + "".join(_figure(q) for q in d.derived) + "</div>")
    out.append('<h3 id="doc-signals">Document-level signals</h3><div class="grid">'
               + "".join(_figure(q) for q in doc) + "</div>")
    if line:
        out.append('<h3 id="line-signals">Line-level signals (one value per line)</h3><div class="grid">'
                   + "".join(_figure(q) for q in line) + "</div>")
    return "".join(out) + "</section>"


def _members(members: list[dict], samples: list[str] | None) -> str:
    rows = []
    for i, m in enumerate(members[:6]):
        s = samples[i] if samples and i < len(samples) else ""
        rows.append(f"<div><code>{escape(str(m.get('id', '')))}</code> <span class='muted'>row {m.get('row', '')}"
                    f"</span>{' — ' + escape(s[:140]) if s else ''}</div>")
    if len(members) > 6:
        rows.append(f"<div class='muted'>… {len(members) - 6:,} more</div>")
    return "".join(rows)


def _dedup(d: ReportData) -> str:
    if not d.dedup_fuzzy and not d.dedup_exact and not d.dedup_exact_sets:
        return ('<section id="dedup"><h2>Deduplication</h2><p class="muted">No dedup attribute sets (run '
                '<code>textsieve dedup fuzzy|exact DIR</code>).</p></section>')
    rows, parts = [], []
    exact_sets = d.dedup_exact_sets or ({"dedup_exact": d.dedup_exact} if d.dedup_exact else {})
    for set_name, s in exact_sets.items():  # one set per result-changing setting
        bloom = f", Bloom fp {s.get('bloom_fp')}" if s.get("mode") == "bloom" else ""
        how = f"normalize {s.get('normalize', '')}" + bloom
        rows.append((f"exact ({set_name.replace('dedup_', 'dup_')}_*)", how, s.get("n_groups", 0),
                     s.get("n_docs_in_groups", 0), s.get("n_removed", 0), s.get("n_docs", 0)))
    if d.dedup_fuzzy:
        for t, v in d.dedup_fuzzy.get("thresholds", {}).items():
            settings = f"bands {d.dedup_fuzzy.get('bands', '')}, verify {d.dedup_fuzzy.get('verify', '')}"
            rows.append((f"fuzzy ≥ {t}", settings, v.get("n_clusters", 0), v.get("n_docs_in_clusters", 0),
                         v.get("n_removed", 0), d.dedup_fuzzy.get("n_docs", 0)))
    table = ("<table><tr><th>method</th><th>settings</th><th class='n'>clusters</th><th class='n'>documents in "
             "clusters</th><th class='n'>removed</th><th class='n'>% of corpus</th></tr>"
             + "".join(f"<tr><td>{escape(m)}</td><td>{escape(str(st))}</td><td class='n'>{c:,}</td><td class='n'>{n:,}"
                       f"</td><td class='n'>{r:,}</td><td class='n'>{_pct(r, tot)}</td></tr>"
                       for m, st, c, n, r, tot in rows)
             + "</table>")
    figs = []
    for key, h in d.cluster_sizes.items():
        label = (f"exact duplicate group size ({key})" if key.startswith("dup_exact")
                 else f"fuzzy cluster size ({key[-3:].replace('t', '0.')})")
        figs.append(_figure(Quantity(key, label, "clusters", h)))
    parts.append(f'<section id="dedup"><h2>Deduplication</h2>{table}')
    if figs:
        parts.append('<h3>Cluster sizes</h3><div class="grid">' + "".join(figs) + "</div>")
    if d.dedup_fuzzy:  # each cluster once: identical clusters at several thresholds are listed at the highest
        for t, shown, repeated in distinct_clusters(d.dedup_fuzzy):
            note = (f"<p class='muted'>{repeated:,} of its largest clusters are the same as clusters listed above "
                    f"at a higher threshold and are not repeated.</p>" if repeated else "")
            if not shown and not repeated:
                continue
            parts.append(f"<h3>Largest fuzzy clusters at ≥ {escape(t)}</h3>{note}")
            if shown:
                parts.append("<table><tr><th class='n'>size</th><th>cluster id</th><th>members (first line of text)"
                             "</th></tr>" + "".join(
                                 f"<tr><td class='n'>{c.get('size', 0):,}</td>"
                                 f"<td><code>{c.get('cluster_id', '')}</code>"
                                 + (f"<div class='muted'>also at ≥ {escape(', '.join(c['_also']))}</div>"
                                    if c.get("_also") else "")
                                 + f"</td><td>{_members(c.get('members', []), c.get('samples'))}</td></tr>"
                                 for c in shown) + "</table>")
    listed: set[tuple] = set()
    for set_name, s in exact_sets.items():
        groups = [g for g in s.get("largest_groups") or [] if (g.get("group"), g.get("size")) not in listed][:8]
        listed |= {(g.get("group"), g.get("size")) for g in groups}
        if groups:
            label = "" if set_name == "dedup_exact" else f" ({set_name.replace('dedup_', 'dup_')}_*)"
            parts.append(f"<h3>Largest exact-duplicate groups{escape(label)}</h3><table><tr><th class='n'>size</th>"
                         "<th>sample</th><th>members</th></tr>" + "".join(
                             f"<tr><td class='n'>{g.get('size', 0):,}</td>"
                             f"<td>{escape(str(g.get('sample', ''))[:160])}</td>"
                             f"<td>{_members(g.get('members', []), None)}</td></tr>" for g in groups) + "</table>")
    return "".join(parts) + "</section>"


def _dsir(d: ReportData) -> str:
    if not d.dsir:
        return ('<section id="dsir"><h2>DSIR importance weights</h2><p class="muted">No <code>_dsir_*</code> '
                'attribute set (run <code>textsieve dsir fit</code>).</p></section>')
    extra = ""
    if d.selection and d.selection.get("dsir"):
        info = d.selection["dsir"]
        extra = "<table>" + "".join(
            f"<tr><th>{escape(str(k))}</th><td>{escape(fmt(v) if isinstance(v, (int, float)) else str(v))}</td></tr>"
            for k, v in info.items() if not isinstance(v, (list, dict))) + "</table>"
    return ('<section id="dsir"><h2>DSIR importance weights</h2><p class="muted">Log importance weight log p_target(x) '
            '− log p_raw(x) of each document: higher means more like the target.</p><div class="grid">'
            + "".join(_figure(q) for q in d.dsir) + f"</div>{extra}</section>")


def _value(v: Any) -> str:
    if isinstance(v, float):
        return fmt(v) if not math.isnan(v) else "NaN"
    if v is None:
        return "null"
    return fmt(v) if isinstance(v, int) and not isinstance(v, bool) else str(v)


def _doc(e: Example) -> str:
    vals = "".join(f"<span>{escape(k)} = <b>{escape(_value(v))}</b></span>" for k, v in e.values.items())
    if e.lines is None:
        cut = f" … [{len(e.text) - TEXT_CHARS:,} more characters]"
        t = e.text if len(e.text) <= TEXT_CHARS else e.text[:TEXT_CHARS] + cut
        body = escape(t)
    else:
        shown = e.lines[:MAX_LINES]
        if any(not k for _, k, _ in e.lines) and all(k for _, k, _ in shown):  # make sure a cut line shows
            first = next(i for i, (_, k, _) in enumerate(e.lines) if not k)
            shown = e.lines[max(0, first - 3): first - 3 + MAX_LINES]
        rows = []
        for text, kept, lv in shown:
            line = text.rstrip("\n")
            line = line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " …"
            tag = ",".join(_value(v) for v in lv.values())
            rows.append(f'<span class="ln{"" if kept else " cut"}"><span class="lv">[{escape(tag)}]</span> '
                        f'{escape(line) or "&nbsp;"}</span>')
        more = len(e.lines) - len(shown)
        body = "".join(rows) + (f'<span class="ln muted">… {more:,} more lines</span>' if more > 0 else "")
        names = ", ".join(next(iter(e.lines))[2].keys()) if e.lines else ""
        vals += f"<span class='muted'>[{escape(names)}] per line; struck-through lines are cut</span>"
    return f'<div class="doc"><div class="id">{escape(e.id)}</div><div class="vals">{vals}</div><pre>{body}</pre></div>'


def _examples(d: ReportData) -> str:
    if not d.examples:
        return ""
    out = ['<section id="examples"><h2>Examples per rule</h2><p class="muted">A few documents each rule removes '
           'and keeps (judged by that rule alone), with the values it compares. Texts are truncated.</p>']
    for r in d.examples:
        what = ("documents where it cuts lines", "documents where it keeps every line") if r.kind == "line" \
            else ("removed", "kept")
        cols = []
        for cls, title, exs in (("rm", what[0], r.removed), ("kp", what[1], r.kept)):
            inner = "".join(_doc(e) for e in exs) or '<p class="muted">none</p>'
            cols.append(f'<div class="excol {cls}"><h4>{escape(title)} ({len(exs)})</h4>{inner}</div>')
        out.append(f'<h3 id="ex-{_slug(r.rule)}">{escape(r.rule)} <code>{escape(r.condition)}</code></h3>'
                   f'<div class="ex">{"".join(cols)}</div>')
    return "".join(out) + "</section>"


def _nav(d: ReportData) -> str:
    links = [("overview", "Overview", 1), *([("sources", "Sources", 1)] if d.sources else []),
             *([("extraction", "Extraction", 1)] if d.extraction else []),
             ("funnel", "Selection funnel", 1), *breakdown_links(d),
             ("signals", "Signals", 1)]
    if d.derived:
        links.append(("derived", "Rule quantities", 2))
    links.append(("doc-signals", "Document-level", 2))
    if any(q.unit == "lines" for q in d.signals):
        links.append(("line-signals", "Line-level", 2))
    links += [("dedup", "Deduplication", 1), *section_links(d.training_sets),
              *embedding_links(d.embeddings, d.dedup_semantic), ("dsir", "DSIR weights", 1)]
    if d.examples:
        links.append(("examples", "Examples per rule", 1))
        links += [(f"ex-{_slug(r.rule)}", r.rule, 2) for r in d.examples]
    return "<nav>" + "".join(f'<a class="l{lvl}" href="#{a}">{escape(t)}</a>' for a, t, lvl in links) + "</nav>"


def render(d: ReportData) -> str:
    """The whole page as one string."""
    title = f"textsieve report — {d.recipe.name if d.recipe else 'corpus'}"
    sub = f"{d.documents:,} documents · {escape(d.run_dir)} · textsieve {__version__}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{escape(title)}</title>{JS_HEAD}<style>{CSS}</style>'
            f'</head><body><header><h1>{escape(title)}</h1><div class="sub">{sub}</div></header><div class="wrap">'
            f'{_nav(d)}<main>{_overview(d)}{sources_section(d.sources)}{extraction_section(d.extraction)}{_funnel(d)}{breakdown_sections(d)}{_signals(d)}{_dedup(d)}{render_sections(d.training_sets, _figure, _cards)}{embeddings_section(d.embeddings)}{semantic_section(d.dedup_semantic)}{_dsir(d)}{_examples(d)}</main></div>'
            f'{JS_TAIL}</body></html>')
