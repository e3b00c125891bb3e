"""Report sections for the sets the training-data stages add: decontamination, personal data,
CCNet line dedup and real token counts.

Why a module of its own: each is an attribute set beside the annotate shards (`decontam`,
`pii`, `dedup_lines`, `tokens_<name>`), read like every other one (DuckDB over its Parquet,
its summary through `io.publish.summary_of`), and each section is only there when its set is:
the report of a plain annotate folder is unchanged. `collect` computes `SetSection`s; `html`
renders them with the page's own card, table and chart helpers (passed in, so this module
does not import the page).

What is shown, and why:
* decontamination: documents matched per benchmark, the matched n-grams, and the documents
  with the most matched n-grams with the matched text itself (a reader judges real overlap
  from boilerplate at a glance: the A-Z index lines of issue 26 were found this way);
* personal data: documents and spans per type, and the documents with the most spans, by id
  only: the report is a file people share, and copying the e-mail addresses and phone numbers
  into it would spread what the stage exists to remove;
* line dedup: lines and characters flagged, the share of documents touched, a histogram of the
  duplicate-line fraction, and the documents with the most duplicate lines with a few of them;
* tokens: per tokenizer the total, tokens per document (histogram), characters per token and
  the tokens the recipe keeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

from textsieve.io.attributes import attribute_set_dir
from textsieve.io.publish import summary_of
from textsieve.io.texts import annotated_texts
from textsieve.recipes.schema import Schema, q
from textsieve.report.collect import Quantity, histogram

EXAMPLES = 5  # documents listed per section
SNIPPET = 220  # characters of matched or duplicate text shown per example


@dataclass
class Table:
    title: str
    head: list[str]
    rows: list[list[str]]
    numeric: set[int] = field(default_factory=set)  # column indexes aligned right


@dataclass
class SetSection:
    """One section: its anchor and title, headline cards, tables, histograms and notes."""

    anchor: str
    title: str
    intro: str
    cards: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Quantity] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _alias(schema: Schema, set_name: str) -> str | None:
    return next((a for a, n in schema.sets.items() if n == set_name), None)


def _rel(schema: Schema, alias: str) -> str:
    files = ", ".join("'" + f.replace("'", "''") + "'" for f in schema.files[alias])
    return f"read_parquet([{files}])"


def _joined(schema: Schema, alias: str) -> str:
    """The set's rows joined to annotate's (for the document id and length)."""
    return (f"{_rel(schema, alias)} AS s JOIN {_rel(schema, 'a')} AS a "
            f"ON a.shard = s.shard AND a.\"row\" = s.\"row\"")


def _pct(x: float, of: float) -> str:
    return f"{100.0 * x / of:.1f}%" if of else "–"


def _snippet(text: str, start: int, end: int) -> str:
    """`text[start:end]` (cut to `SNIPPET` characters) with a little context either side."""
    body = text[start:end]
    if len(body) > SNIPPET:
        body = body[:SNIPPET] + " …"
    before = text[max(0, start - 40):start]
    after = text[end:end + 40]
    return f"…{before}[{body}]{after}…".replace("\n", " ⏎ ")


def _texts(ann: str, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
    return annotated_texts(ann, wanted) if wanted else {}


def decontam_section(con: Any, ann: str, schema: Schema) -> SetSection | None:
    alias = _alias(schema, "decontam")
    if alias is None or "ts_contam_count" not in schema.columns:
        return None
    summary = summary_of(attribute_set_dir(ann, "decontam")) or {}
    total, hit, grams = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE ts_contam_count > 0), coalesce(sum(ts_contam_count), 0) "
        f"FROM {_rel(schema, alias)}").fetchall()[0]
    sec = SetSection("decontamination", "Decontamination",
                     f"Documents sharing {summary.get('ngram', 13)}-word n-grams with the benchmarks "
                     f"(`textsieve decontaminate`). N-grams made only of single letters or digits are never matched. "
                     f"A recipe drops matched documents with `ts_contam_count == 0`; `select --redact ts_contam_spans` "
                     f"cuts out only the matched text.",
                     [("documents matched", f"{hit:,} ({_pct(hit, total)})"), ("matched n-grams", f"{grams:,}")])
    per = dict(con.execute(f"SELECT b, count(*) FROM (SELECT unnest(ts_contam_bench) AS b FROM "
                           f"{_rel(schema, alias)}) GROUP BY b").fetchall())
    index = (summary.get("index") or {}).get("benchmarks") or {}
    rows = []
    for name in sorted(set(per) | set(index) | set(summary.get("benchmarks") or {})):
        b = index.get(name, {})
        rows.append([name, f"{b.get('examples', 0):,}", f"{b.get('ngrams', 0):,}",
                     f"{b.get('short_examples_left_out', 0):,}", f"{b.get('letter_ngrams_left_out', 0):,}",
                     f"{per.get(name, 0):,}", _pct(per.get(name, 0), total)])
    sec.tables.append(Table("Per benchmark", ["benchmark", "examples", "n-grams", "examples too short",
                                              "letter-only n-grams left out", "documents matched", "% of corpus"],
                            rows, {1, 2, 3, 4, 5, 6}))
    if hit:
        sec.figures.append(Quantity("ts_contam_count", "ts_contam_count: matched n-grams per matched document",
                                    "documents", histogram(con, f"SELECT ts_contam_count AS v FROM "
                                                                f"{_rel(schema, alias)} WHERE ts_contam_count > 0",
                                                           name="ts_contam_count", log=None)))
        top = con.execute(f"SELECT s.shard, s.\"row\", a.id, s.ts_contam_count, s.ts_contam_bench, "
                          f"s.ts_contam_spans[1].start, s.ts_contam_spans[1].\"end\" FROM {_joined(schema, alias)} "
                          f"WHERE s.ts_contam_count > 0 ORDER BY s.ts_contam_count DESC, a.id LIMIT {EXAMPLES}"
                          ).fetchall()
        texts = _texts(ann, {(r[0], int(r[1])) for r in top})
        sec.tables.append(Table("Documents with the most matched n-grams", ["id", "matched n-grams", "benchmarks",
                                                                             "first matched text"],
                                [[str(r[2]), f"{r[3]:,}", ", ".join(r[4] or []),
                                  _snippet(texts.get((r[0], int(r[1])), ""), int(r[5] or 0), int(r[6] or 0))]
                                 for r in top], {1}))
    return sec


def pii_section(con: Any, ann: str, schema: Schema) -> SetSection | None:
    alias = _alias(schema, "pii")
    if alias is None or "ts_pii_count" not in schema.columns:
        return None
    types = [c for c, col in schema.columns.items() if col.alias == alias and c.startswith("ts_pii_")
             and c != "ts_pii_count"]
    parts = ", ".join(f"count(*) FILTER (WHERE len({q(c)}) > 0), coalesce(sum(len({q(c)})), 0)" for c in types)
    row = con.execute(f"SELECT count(*), count(*) FILTER (WHERE ts_pii_count > 0), coalesce(sum(ts_pii_count), 0)"
                      f"{', ' + parts if parts else ''} FROM {_rel(schema, alias)}").fetchall()[0]
    total, docs, spans = int(row[0]), int(row[1]), int(row[2])
    sec = SetSection("pii", "Personal data",
                     "E-mail addresses, IP addresses, phone, card and IBAN numbers found per document "
                     "(`textsieve pii`). Drop documents with `ts_pii_count == 0`, or replace the spans by placeholders "
                     "with `select --redact pii`. The values themselves are not shown here: this page is meant to be "
                     "shared.", [("documents with personal data", f"{docs:,} ({_pct(docs, total)})"),
                                 ("spans found", f"{spans:,}")])
    sec.tables.append(Table("Per type", ["type", "documents", "% of corpus", "spans"],
                            [[c[len("ts_pii_"):], f"{int(row[3 + 2 * i]):,}", _pct(int(row[3 + 2 * i]), total),
                              f"{int(row[4 + 2 * i]):,}"] for i, c in enumerate(types)], {1, 2, 3}))
    if docs:
        lens = ", ".join(f"len(s.{q(c)})" for c in types)
        top = con.execute(f"SELECT a.id, s.ts_pii_count{', ' + lens if lens else ''} FROM {_joined(schema, alias)} "
                          f"WHERE s.ts_pii_count > 0 ORDER BY s.ts_pii_count DESC, a.id LIMIT {EXAMPLES}").fetchall()
        sec.tables.append(Table("Documents with the most spans (ids only)",
                                ["id", "spans", *(c[len("ts_pii_"):] for c in types)],
                                [[str(r[0]), *(f"{int(v or 0):,}" for v in r[1:])] for r in top],
                                set(range(1, len(types) + 2))))
    return sec


def lines_section(con: Any, ann: str, schema: Schema) -> SetSection | None:
    alias = _alias(schema, "dedup_lines")
    if alias is None or "dup_lines_count" not in schema.columns:
        return None
    s = summary_of(attribute_set_dir(ann, "dedup_lines")) or {}
    total, touched = con.execute(f"SELECT count(*), count(*) FILTER (WHERE dup_lines_count > 0) FROM "
                                 f"{_rel(schema, alias)}").fetchall()[0]
    lines, dup, chars, dup_chars = (int(s.get(k) or 0) for k in ("n_lines", "n_dup_lines", "n_chars", "n_dup_chars"))
    how = f"normalize {s.get('normalize', '?')}, {s.get('mode', '?')}" + (
        f", groups of {s['group_shards']} shards" if s.get("group_shards") else ", one group")
    sec = SetSection("dedup-lines", "Line deduplication",
                     f"CCNet's line dedup (`textsieve dedup lines`; {how}): a line is a duplicate when its normalised "
                     f"text is in two or more documents of its group, or repeats in its own. Drop them with the "
                     f"line rule `line: dup_lines_seen == 0`.",
                     [("duplicate lines", f"{dup:,} of {lines:,} ({_pct(dup, lines)})"),
                      ("duplicate characters", f"{dup_chars:,} ({_pct(dup_chars, chars)})"),
                      ("documents with duplicate lines", f"{touched:,} ({_pct(touched, total)})")])
    sec.figures.append(Quantity("dup_lines_frac", "dup_lines_frac: share of a document's lines that are duplicates",
                                "documents", histogram(con, f"SELECT dup_lines_frac AS v FROM {_rel(schema, alias)}",
                                                       name="dup_lines_frac")))
    if touched:
        top = con.execute(f"SELECT s.shard, s.\"row\", a.id, s.dup_lines_count, s.dup_lines_frac, "
                          f"[[x.start, x.\"end\"] for x in s.dup_lines_seen if x.score = 1][1:3] "
                          f"FROM {_joined(schema, alias)} WHERE s.dup_lines_count > 0 "
                          f"ORDER BY s.dup_lines_count DESC, a.id LIMIT {EXAMPLES}").fetchall()
        texts = _texts(ann, {(r[0], int(r[1])) for r in top})
        rows = []
        for shard, row, doc_id, n, frac, spans in top:
            text = texts.get((shard, int(row)), "")
            shown = " | ".join(text[a:b].strip()[:SNIPPET // 3] for a, b in spans or [])
            rows.append([str(doc_id), f"{n:,}", f"{100 * (frac or 0):.0f}%", shown])
        sec.tables.append(Table("Documents with the most duplicate lines", ["id", "duplicate lines", "of its lines",
                                                                             "first duplicate lines"], rows, {1, 2}))
    return sec


def tokens_sections(con: Any, ann: str, schema: Schema, totals: dict[str, dict], kept: dict[str, dict],
                    characters: int) -> list[SetSection]:
    out = []
    for col, t in totals.items():
        c = schema.columns.get(col)
        if c is None:
            continue
        tok = t.get("tokenizer") or {}
        name = col[len("ts_tokens_"):]
        cards = [("tokens", f"{t['total']:,}"), ("documents", f"{t['documents']:,}"),
                 ("characters per token", f"{characters / t['total']:.2f}" if t["total"] else "–")]
        k = kept.get(col)
        if k:
            cards.append((f"kept by the recipe{' (est.)' if k.get('estimated') else ''}",
                          f"{k['kept']:,} ({_pct(k['kept'], k['total'])})"))
        sec = SetSection(f"tokens-{name}", f"Tokens: {name}",
                         f"Real token counts per document (`textsieve tokens`, column `{col}`) with the "
                         f"{tok.get('kind', '?')} tokenizer {name} of "
                         f"{int(tok.get('vocab_size') or 0):,} ids (fingerprint {tok.get('fingerprint', '?')}); "
                         f"`mix` plans from these counts when its tokenizer is this file.", cards)
        sec.figures.append(Quantity(col, f"{col}: tokens per document", "documents",
                                    histogram(con, f"SELECT {q(col)} AS v FROM {_rel(schema, c.alias)}", name=col,
                                              log=None)))
        out.append(sec)
    return out


def set_sections(con: Any, ann: str, schema: Schema, totals: dict[str, dict], kept: dict[str, dict],
                 characters: int) -> list[SetSection]:
    """The sections of the sets present (module doc), in pipeline order."""
    found = [decontam_section(con, ann, schema), pii_section(con, ann, schema), lines_section(con, ann, schema)]
    return [s for s in found if s is not None] + tokens_sections(con, ann, schema, totals, kept, characters)


def render_sections(sections: list[SetSection], figure: Callable[[Quantity], str],
                    cards: Callable[[list[tuple[str, str]]], str]) -> str:
    """The sections as HTML, with the page's `figure` and `cards` helpers."""
    out = []
    for s in sections:
        intro = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(s.intro))  # `command` as code
        parts = [f'<section id="{s.anchor}"><h2>{escape(s.title)}</h2><p class="muted">{intro}</p>', cards(s.cards)]
        for t in s.tables:
            cls = [' class="n"' if i in t.numeric else "" for i in range(len(t.head))]
            head = "".join(f"<th{c}>{escape(h)}</th>" for c, h in zip(cls, t.head))
            body = "".join("<tr>" + "".join(f"<td{c}>{escape(v)}</td>" for c, v in zip(cls, r)) + "</tr>"
                           for r in t.rows)
            parts.append(f'<h3>{escape(t.title)}</h3><div class="tw"><table><tr>{head}</tr>{body}</table></div>')
        if s.figures:
            parts.append('<div class="grid">' + "".join(figure(f) for f in s.figures) + "</div>")
        parts += [f'<div class="note">{escape(n)}</div>' for n in s.notes]
        out.append("".join(parts) + "</section>")
    return "".join(out)


def section_links(sections: list[SetSection]) -> list[tuple[str, str, int]]:
    return [(s.anchor, s.title, 1) for s in sections]


__all__ = ["SetSection", "Table", "render_sections", "section_links", "set_sections"]

