"""`textsieve report`: statistics over a real annotated slice of the dev web sample, and the page
rendered in headless Chromium (no console errors, every chart drawn, a screenshot taken)."""

from __future__ import annotations

import gzip
import html as htmllib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from _shared import SHARED

from textsieve.cli import main
from textsieve.recipes.language import Recipe
from textsieve.report.collect import collect, comparisons, locate

CHROMIUM = "/usr/bin/chromium"
N_DOCS = 1500


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A `textsieve run`-shaped folder: attrs/ (annotate with ts_lang + dedup fuzzy/exact (two
    normalizations) + DSIR) and selected/ (gopher)."""
    corpus = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not corpus.is_file():
        pytest.skip(f"dev corpus not found at {corpus} (set TEXTSIEVE_SHARED)")
    root = tmp_path_factory.mktemp("report")
    src = root / "in" / "web.jsonl.gz"
    src.parent.mkdir()
    with gzip.open(corpus, "rt", encoding="utf-8") as fin, gzip.open(src, "wt", encoding="utf-8") as fout:
        for i, line in enumerate(fin):
            if i == N_DOCS:
                break
            if i == 0:
                dup = dict(json.loads(line), id="report-test/copy-of-first")
            fout.write(line)
        fout.write(json.dumps(dup) + "\n")  # an exact duplicate, so exact dedup has a group
    run = root / "run"
    attrs = str(run / "attrs")
    res = str(SHARED / "golden" / "rpv2_resources")
    for argv in (["annotate", str(src), "-o", attrs, "--resources", res, "--lang-field", "meta.lang",
                  "--models", "lang=builtin:py3langid"],
                 ["dedup", "fuzzy", attrs, "--thresholds", "0.8", "--thresholds", "0.7"],
                 ["dedup", "exact", attrs],
                 ["dedup", "exact", attrs, "--normalize", "rpv2"],
                 ["dsir", "fit", "--targets", str(SHARED / "corpora" / "dev" / "target_wiki.jsonl.gz"),
                  "--raw", attrs, "--name", "wiki"],
                 ["select", attrs, "--recipe", "gopher", "-o", str(run / "selected")]):
        assert main([*argv, "-q"]) == 0, argv
    return run


def test_locate_both_layouts(run_dir: Path) -> None:
    ann, sel, _ = locate(str(run_dir))
    assert ann == str(run_dir / "attrs") and sel == str(run_dir / "selected")
    ann, sel, _ = locate(str(run_dir / "attrs"))
    assert ann == str(run_dir / "attrs") and sel is None
    with pytest.raises(FileNotFoundError, match="annotate.json"):
        locate(str(run_dir / "selected"))


def test_thresholds_from_rules() -> None:
    r = Recipe.from_rules({"wc": "rps_doc_word_count between 50 and 100000",
                           "n": "not rps_doc_curly_bracket > 0.1",
                           "b": "frac(rps_lines_start_with_bulletpoint == 1) <= 0.9 or rps_doc_word_count > 10"})
    got = {rule.name: [(n.__class__.__name__, t.op, t.value, t.shade) for n, t in comparisons(rule)]
           for rule in r.rules}
    assert got["wc"] == [("Col", ">=", 50.0, True), ("Col", "<=", 100000.0, True)]
    assert got["n"] == [("Col", "<=", 0.1, True)]
    assert got["b"] == [("Call", "<=", 0.9, False), ("Col", ">", 10.0, False)]


def test_collect_figures_match_the_data(run_dir: Path) -> None:
    d = collect(str(run_dir))  # recipe taken from selected/.textsieve/selection.json
    assert d.recipe is not None and d.recipe.name == "gopher"
    assert d.documents == N_DOCS + 1
    assert d.funnel is not None and d.funnel.kept == d.selection["counts"]["selected"]
    wc = next(q for q in d.signals if q.name == "rps_doc_word_count")
    assert sum(wc.hist.counts) + wc.hist.above + wc.hist.nulls == d.documents
    assert [(t.op, t.value) for t in wc.thresholds] == [(">=", 50.0), ("<=", 100000.0)]
    lines = next(q for q in d.signals if q.name == "rps_lines_num_words")
    assert lines.unit == "lines" and lines.hist.total > d.documents
    assert [q.name for q in d.derived] == ["frac(rps_lines_start_with_bulletpoint == 1)"]
    assert {q.name for q in d.dsir} == {"ts_dsir_wiki", "ts_dsir_wiki_norm"}
    assert d.dedup_exact["n_removed"] >= 1 and d.cluster_sizes["dup_exact"].counts
    # examples: removed ones fail the rule's threshold, kept ones pass it
    ex = {r.rule: r for r in d.examples}
    for e in ex["word_count"].removed:
        assert not 50 <= e.values["rps_doc_word_count"] <= 100000 and e.text
    for e in ex["word_count"].kept:
        assert 50 <= e.values["rps_doc_word_count"] <= 100000 and e.text


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
             "--enable-logging=stderr", "--v=0"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120)


def test_report_renders_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "-q", str(run_dir / "attrs"), "--recipe", "c4", "-o", str(out)]) == 0
    page = out.read_text("utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page must not load anything"
    n_svg = page.count('<svg class="chart"')
    assert n_svg >= 30 and "Selection funnel" in page and "Largest exact-duplicate groups" in page
    assert 'class="ln cut"' in page  # a line rule's example shows cut lines
    if not Path(CHROMIUM).exists():
        pytest.skip(f"headless check skipped: {CHROMIUM} not installed (apt-get install chromium)")
    url = out.resolve().as_uri()
    dom = _chromium(["--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    errors = re.search(r'data-errors="([^"]*)"', body)
    assert errors is not None and htmllib.unescape(errors.group(1)) == "", body
    assert re.search(r'data-charts="(\d+)/(\d+)"', body).groups() == (str(n_svg), str(n_svg))
    assert dom.stdout.count('data-drawn="1"') == n_svg
    console = [ln for ln in dom.stderr.splitlines() if "Uncaught" in ln or "CONSOLE" in ln and "error" in ln.lower()]
    assert not console, console
    shot = tmp_path / "report.png"
    res = _chromium([f"--screenshot={shot}", "--window-size=1280,4000", url], tmp_path)
    assert res.returncode == 0 and shot.stat().st_size > 50_000, res.stderr[-2000:]
    keep = Path(__file__).resolve().parents[1] / ".pytest_cache"
    if keep.is_dir():
        shutil.copy(shot, keep / "report.png")  # for a person to look at after the run


# ---------------------------------------------------------------- issue 10 item 14: views per source / language

def _records(run_dir: Path) -> list[dict]:
    with gzip.open(run_dir.parent / "in" / "web.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _counts(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def test_funnel_per_source_and_per_language(run_dir: Path) -> None:
    """The funnel broken down by the records' `source` (re-read from the source) and by
    `ts_lang` (an attribute column) adds up to the whole funnel, value by value."""
    from textsieve.report.breakdown import MAX_GROUPS

    d = collect(str(run_dir))  # gopher, from selected/.textsieve/selection.json
    by = {b.title: b for b in d.breakdowns}
    assert set(by) == {"source", "language"}
    src, lang = by["source"], by["language"]
    assert (src.field, src.origin, lang.field, lang.origin) == ("source", "source records", "ts_lang",
                                                                 "attribute column")
    want = _counts(r["source"] for r in _records(run_dir))
    top = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))
    assert src.n_values == len(want)
    shown = [(r.value, r.documents) for r in src.rows]
    if len(want) > MAX_GROUPS + 1:
        assert shown[:-1] == top[:MAX_GROUPS] and shown[-1] == (f"({len(want) - MAX_GROUPS:,} other values)",
                                                                sum(n for _, n in top[MAX_GROUPS:]))
    else:
        assert shown == top
    f = d.funnel
    steps = [r.removed_cumulative - (f.rules[i - 1].removed_cumulative if i else 0) for i, r in enumerate(f.rules)]
    for b in (src, lang):
        assert b.rules == [r.name for r in f.rules]
        assert sum(r.documents for r in b.rows) == d.documents and sum(r.kept for r in b.rows) == f.kept
        assert sum(r.kept_chars for r in b.rows) == f.kept_chars
        assert [sum(r.removed[i] for r in b.rows) for i in range(len(f.rules))] == steps
        for r in b.rows:
            assert r.documents == r.kept + sum(r.removed)
    assert lang.rows[0].value == "en" and lang.rows[0].documents > d.documents // 2


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_by_field_choices(run_dir: Path, tmp_path: Path, capsys) -> None:
    """--by: a dotted record field, an attribute column of another set, or a clear error."""
    from textsieve.report.breakdown import BreakdownError

    d = collect(str(run_dir), by="meta.lang")
    b = d.breakdowns[0]
    assert (b.title, b.origin) == ("meta.lang", "source records")
    want = _counts(r["meta"]["lang"] for r in _records(run_dir))
    assert {r.value: r.documents for r in b.rows if not r.value.startswith("(")}.items() <= want.items()
    d = collect(str(run_dir / "attrs"), recipe_spec="gopher", by="dup_exact_keep")  # the _dedup_exact set
    b = d.breakdowns[0]
    assert b.origin == "attribute column" and {r.value: r.documents for r in b.rows}["false"] == \
        d.dedup_exact_sets["dedup_exact"]["n_removed"]
    assert set(d.dedup_exact_sets) == {"dedup_exact", "dedup_exact_rpv2"}
    with pytest.raises(BreakdownError, match=r"--by sorce: not an attribute column .*their records have: id, meta"):
        collect(str(run_dir), by="sorce")
    assert main(["report", str(run_dir), "--by", "sorce", "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("textsieve: error: report: --by sorce") and err.count("\n") == 1


def test_language_from_the_lang_field_and_parquet_sources(shared_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Without ts_lang the language view reads annotate's --lang-field from the records; a
    Parquet source is read column by column (nested struct fields too); a large corpus is
    re-read on a process pool with the same result."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import textsieve.report.breakdown as bd
    from textsieve.report.breakdown import BreakdownError

    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for _, line in zip(range(300), fh)]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": [r["id"] for r in recs[:200]], "text": [r["text"] for r in recs[:200]],
                             "source": [r["source"] for r in recs[:200]],
                             "meta": pa.array([{"lang": r["meta"]["lang"]} for r in recs[:200]])}),
                   tmp_path / "in" / "p.parquet")
    (tmp_path / "in" / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs[200:]))
    ann = tmp_path / "ann"
    assert main(["annotate", str(tmp_path / "in"), "-o", str(ann), "--signals", "rps_doc_word_count",
                 "--lang-field", "meta.lang", "--workers", "1", "-q"]) == 0
    serial = bd.record_values(str(ann), ["source"], True)
    monkeypatch.setattr(bd, "PARALLEL_DOCS", 0)
    assert bd.record_values(str(ann), ["source"], True, workers=2).equals(serial) and serial.num_rows == 300
    assert serial.column("__lang").to_pylist() == [r["meta"]["lang"] for r in recs]
    d = collect(str(ann), recipe_spec=None)
    by = {b.title: b for b in d.breakdowns}
    assert by["language"].field == "meta.lang" and by["language"].origin == "source records"
    langs = _counts(r["meta"]["lang"] for r in recs)
    assert {r.value: r.documents for r in by["language"].rows}["en"] == langs["en"]
    assert by["source"].n_values == len(_counts(r["source"] for r in recs)) and not by["source"].rules
    assert collect(str(ann), by="meta.lang").breakdowns[0].rows[0].documents == langs["en"]
    (tmp_path / "in").rename(tmp_path / "moved")  # sources gone: the report still works, and says why
    d = collect(str(ann))
    assert not d.breakdowns and any("cannot be re-read" in n for n in d.notes)
    with pytest.raises(BreakdownError, match="--by source: not an attribute column, and the source records cannot"):
        collect(str(ann), by="source")


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_log_axis_for_heavy_tails(run_dir: Path, shared_dir: Path, tmp_path: Path) -> None:
    """Heavy-tailed signals (word and sentence counts here, perplexity always) get log10 bins;
    bounded fractions stay linear; every value is still counted somewhere."""
    from textsieve.report.scales import wants_log

    d = collect(str(run_dir))
    q = {x.name: x.hist for x in d.signals}
    assert q["rps_doc_word_count"].log and q["rps_doc_num_sentences"].log
    assert not q["rps_doc_frac_unique_words"].log and not q["rps_doc_stop_word_fraction"].log
    wc = q["rps_doc_word_count"]
    assert wc.edges[:3] == [1.0, 2.0, 3.0]  # whole-number bins at the low end, not a comb of empty ones
    assert sum(wc.counts) + wc.above + wc.below + wc.nulls == d.documents
    assert wants_log("ts_perplexity_wiki", 100, 0, 500.0, 900.0) and not wants_log("ts_perplexity_wiki_bucket", 100,
                                                                                     0, 1.0, 2.0)
    # a real perplexity signal: a small LM trained on the wiki target, scored on web + wiki text
    with gzip.open(shared_dir / "corpora" / "dev" / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        wiki = [json.loads(line)["text"] for _, line in zip(range(300), fh)]
    (tmp_path / "wiki.jsonl").write_text("".join(json.dumps({"id": f"w{i}", "text": t}) + "\n"
                                                 for i, t in enumerate(wiki[:250])))
    pool = _records(run_dir)[:150] + [{"id": f"p{i}", "text": t} for i, t in enumerate(wiki[250:])]
    (tmp_path / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
    assert main(["train", "lm", "--corpus", str(tmp_path / "wiki.jsonl"), "-o", str(tmp_path / "wiki.tsm"), "-q"]) == 0
    assert main(["annotate", str(tmp_path / "pool.jsonl"), "-o", str(tmp_path / "ann"), "--signals",
                 "rps_doc_word_count", "--models", f"wiki={tmp_path / 'wiki.tsm'}", "--workers", "1", "-q"]) == 0
    q = {x.name: x.hist for x in collect(str(tmp_path / "ann")).signals}
    assert q["ts_perplexity_wiki"].log and not q["ts_perplexity_wiki"].edges and q["ts_perplexity_wiki"].lo > 0
    assert not q["ts_perplexity_wiki_bucket"].log


def test_clusters_are_not_repeated_across_thresholds(run_dir: Path, tmp_path: Path) -> None:
    """The exact copy of the first document is one fuzzy cluster at both 0.8 and 0.7: it is
    listed once, under 0.8, marked as also at 0.7, and the 0.7 list says what it left out."""
    from textsieve.report.html import render
    from textsieve.report.html_views import distinct_clusters

    d = collect(str(run_dir))
    per = d.dedup_fuzzy["thresholds"]
    both = {c["cluster_id"] for c in per["0.8"]["largest_clusters"]} & {c["cluster_id"] for c in
                                                                      per["0.7"]["largest_clusters"]}
    assert both, "the fixture's copy of the first document clusters at both thresholds"
    lists = {t: (shown, repeated) for t, shown, repeated in distinct_clusters(d.dedup_fuzzy)}
    assert list(lists) == ["0.8", "0.7"] and lists["0.7"][1] >= 1
    assert not both & {c["cluster_id"] for c in lists["0.7"][0]}
    page = render(d)
    dedup = page[page.index('<section id="dedup">'):]
    dedup = dedup[:dedup.index("</section>")]
    for cid in both:
        assert dedup.count(f"<code>{cid}</code>") == 1
    assert "also at ≥ 0.7" in dedup and "are not repeated" in dedup
    assert "exact (dup_exact_rpv2_*)" in dedup  # both exact sets are reported


def test_views_render_in_chromium(run_dir: Path, tmp_path: Path) -> None:
    """The new sections render: every chart drawn, no JavaScript error; a screenshot of them
    is kept in .pytest_cache for a person to look at."""
    out = tmp_path / "report.html"
    assert main(["report", "-q", str(run_dir), "-o", str(out)]) == 0
    page = out.read_text("utf-8")
    for anchor in ('id="by-source"', 'id="by-language"', 'data-chart="by-language-docs"',
                   'data-chart="by-source-funnel"', "(log scale)"):
        assert anchor in page, anchor
    if not Path(CHROMIUM).exists():
        pytest.skip(f"headless check skipped: {CHROMIUM} not installed (apt-get install chromium)")
    n_svg = page.count('<svg class="chart"')
    dom = _chromium(["--dump-dom", out.resolve().as_uri()], tmp_path)
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    assert htmllib.unescape(re.search(r'data-errors="([^"]*)"', body).group(1)) == "", body
    assert re.search(r'data-charts="(\d+)/(\d+)"', body).groups() == (str(n_svg), str(n_svg))
    views = tmp_path / "views.html"  # the page with only the new sections, for the screenshot
    keep = ("by-source", "by-language", "dedup")
    views.write_text(re.sub(r'<section id="([^"]+)">.*?</section>',
                            lambda m: m.group(0) if m.group(1) in keep else "", page, flags=re.S), "utf-8")
    shot = tmp_path / "views.png"
    res = _chromium([f"--screenshot={shot}", "--window-size=1280,2600", views.resolve().as_uri()], tmp_path)
    assert res.returncode == 0 and shot.stat().st_size > 50_000, res.stderr[-2000:]
    cache = Path(__file__).resolve().parents[1] / ".pytest_cache"
    if cache.is_dir():
        shutil.copy(shot, cache / "report-views.png")
    # issue 26: the language table (a column per gopher rule) ran off the page at 1400 px; now every
    # table fits its box (rule names wrap) and nothing reaches past the window's right edge
    assert "class='n rule'" in page
    assert _overflow(out, tmp_path) == [], "tables or elements wider than the page at 1400 px"


#: measures the laid-out page: every table box narrower than its table, every element past the
#: window's right edge (outside a scrolling table box); written to <body data-overflow>
MEASURE = """<script>window.addEventListener('load',function(){var W=document.documentElement.clientWidth,bad=[];
document.querySelectorAll('.tw').forEach(function(t){var s=t.closest('section');
if(t.scrollWidth>t.clientWidth+1)bad.push((s?s.id:'-')+': table '+t.scrollWidth+'px in '+t.clientWidth+'px');});
document.querySelectorAll('main *').forEach(function(e){var r=e.getBoundingClientRect(),s=e.closest('section');
if(r.right>W+1&&!e.closest('.tw'))bad.push((s?s.id:'-')+': '+e.tagName+' reaches '+Math.round(r.right)+'px');});
document.body.setAttribute('data-overflow',bad.slice(0,20).join(' | '));});</script>"""


def _overflow(page: Path, tmp: Path, width: int = 1400) -> list[str]:
    """What does not fit at `width` px (see `MEASURE`), from the page rendered in headless Chromium."""
    probe = tmp / f"{page.stem}-measured.html"
    probe.write_text(page.read_text("utf-8").replace("</body>", MEASURE + "</body>"), "utf-8")
    dom = _chromium([f"--window-size={width},3000", "--dump-dom", probe.resolve().as_uri()], tmp)
    found = re.search(r'data-overflow="([^"]*)"', dom.stdout)
    assert found is not None, dom.stderr[-2000:]
    return [x for x in htmllib.unescape(found.group(1)).split(" | ") if x]


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_exact_set_without_duplicates_and_record_fields(tmp_path: Path) -> None:
    """A `_dedup_exact` set with no duplicate (its size histogram is over no rows) beside a
    breakdown read from the source records: the report crashed with DuckDB's "connection has an
    unfinished result from execute()" (a one-row aggregate fetched with fetchone, then
    `register`); it renders now."""
    from textsieve.sample import build_sample

    build_sample(tmp_path / "sample.jsonl.gz")
    attrs = tmp_path / "attrs"
    assert main(["annotate", str(tmp_path / "sample.jsonl.gz"), "-o", str(attrs), "--signals",
                 "rps_doc_word_count", "-q"]) == 0
    assert main(["dedup", "exact", str(attrs), "-q"]) == 0
    assert main(["report", str(attrs), "-o", str(tmp_path / "r.html"), "-q"]) == 0
    page = (tmp_path / "r.html").read_text("utf-8")
    assert "source" in page and "rps_doc_word_count" in page


# ---------------------------------------------------------------- issue 26 item 5: per source over every shard

def test_per_source_view_when_the_first_input_lacks_source(dev_dir: Path, tmp_path: Path) -> None:
    """Before: the field was looked for in the first record of the first shard only, so a folder
    whose first input has no `source` had no per-source view. Now every shard is looked at, and
    the documents without one are counted under "(no value)"."""
    from textsieve.report.breakdown import NONE_LABEL

    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for _, line in zip(range(240), fh)]
    (tmp_path / "in").mkdir()
    with gzip.open(tmp_path / "in" / "a.jsonl.gz", "wt", encoding="utf-8") as fh:  # sorts first: no `source`
        fh.writelines(json.dumps({k: v for k, v in r.items() if k != "source"}) + "\n" for r in recs[:80])
    with gzip.open(tmp_path / "in" / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs[80:])
    attrs = tmp_path / "attrs"
    assert main(["annotate", str(tmp_path / "in"), "-o", str(attrs), "--signals", "rps_doc_word_count",
                 "--workers", "1", "-q"]) == 0
    d = collect(str(attrs))
    assert not [n for n in d.notes if "No per-source view" in n]
    (src,) = [b for b in d.breakdowns if b.title == "source"]
    want = _counts(r["source"] for r in recs[80:]) | {NONE_LABEL: 80}
    assert src.n_values == len(want) and sum(r.documents for r in src.rows) == len(recs)
    assert {r.value: r.documents for r in src.rows if not r.value.startswith("(") or r.value == NONE_LABEL}.items() \
        <= want.items()


# ---------------------------------------------------------------- issue 26 item 5: the training-data sets

@pytest.fixture(scope="module")
def training_run(dev_dir: Path, tmp_path_factory) -> dict:
    """400 real web pages annotated, then every set of the training-data page: decontamination
    against a held-out set made of paragraphs of eight of the pages, personal data, CCNet line
    dedup and real token counts (a BPE trained on the pydoc topics)."""
    from pydoc_data.topics import topics

    from textsieve.tokenization.tokenizer import train_bpe

    root = tmp_path_factory.mktemp("report-training")
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for _, line in zip(range(400), fh)]
    with gzip.open(root / "web.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    held = []
    for r in recs[5::50]:
        paras = [p for p in r["text"].split("\n\n") if len(p.split()) >= 40]
        if paras:
            held.append({"id": r["id"], "text": paras[0]})
    with open(root / "heldout.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(h) + "\n" for h in held)
    train_bpe([topics[k] for k in sorted(topics)], 500, str(root / "bpe.json"))
    attrs = str(root / "attrs")
    for argv in (["annotate", str(root / "web.jsonl.gz"), "-o", attrs, "--signals", "rps_doc_word_count"],
                 ["dedup", "lines", attrs], ["pii", attrs],
                 ["decontaminate", attrs, "--against", f"heldout={root / 'heldout.jsonl'}"],
                 ["tokens", attrs, "--tokenizer", str(root / "bpe.json")]):
        assert main([*argv, "--workers", "1", "-q"] if argv[0] != "dedup" else [*argv, "-q"]) == 0, argv
    return {"attrs": root / "attrs", "records": recs, "heldout": held}


@pytest.mark.slow  # the fixture runs five stages (~6 s)
def test_training_sets_have_their_sections(training_run: dict, tmp_path: Path) -> None:
    """Decontamination, personal data, line dedup and token sections appear, with counts equal
    to the sets' own columns, the matched text of the top documents, and no personal data
    copied into the page; the page renders in Chromium and fits 1400 px."""
    import textsieve as ts

    attrs = training_run["attrs"]
    t = ts.attributes(attrs, "arrow", flat=True).to_pylist()
    out = tmp_path / "report.html"
    assert main(["report", str(attrs), "-o", str(out), "-q"]) == 0
    page = out.read_text("utf-8")
    sections = dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', page, re.S))
    assert {"decontamination", "pii", "dedup-lines", "tokens-bpe"} <= set(sections)
    for anchor in ("decontamination", "pii", "dedup-lines", "tokens-bpe"):
        assert f'href="#{anchor}"' in page  # in the navigation

    dec = htmllib.unescape(sections["decontamination"])
    hits = sorted((r for r in t if r["ts_contam_count"]), key=lambda r: (-r["ts_contam_count"], r["id"]))
    assert len(hits) >= len(training_run["heldout"]) > 0
    assert f"{len(hits):,} ({100 * len(hits) / len(t):.1f}%)" in dec
    assert f"{sum(r['ts_contam_count'] for r in t):,}" in dec
    first = min(dec.find(f"<td>{r['id']}</td>") for r in hits[:3])
    assert first > 0 and dec.find(f"<td>{hits[0]['id']}</td>") == first  # most matched n-grams first
    held = {h["id"]: h["text"] for h in training_run["heldout"]}
    if hits[0]["id"] in held:  # its matched text is the held-out paragraph
        assert " ".join(held[hits[0]["id"]].split()[:6]) in " ".join(dec.split())

    pii = htmllib.unescape(sections["pii"])
    emails = [r for r in t if r["ts_pii_email"]]
    assert f"<td>email</td><td class=\"n\">{len(emails):,}</td>" in pii
    assert f"{sum(len(r['ts_pii_email']) for r in t):,}</td></tr>" in pii
    texts = {r["id"]: r["text"] for r in training_run["records"]}
    values = {texts[r["id"]][s["start"]:s["end"]] for r in emails for s in r["ts_pii_email"]}
    assert values and not [v for v in values if v in pii]  # the section copies no address (only ids, counts)

    lines = htmllib.unescape(sections["dedup-lines"])
    dup = sum(r["dup_lines_count"] for r in t)
    assert dup > 0 and f"{dup:,} of " in lines and "duplicate lines" in lines

    tok = htmllib.unescape(sections["tokens-bpe"])
    assert f"{sum(r['ts_tokens_bpe'] for r in t):,}" in tok and "ts_tokens_bpe: tokens per document" in tok

    if not Path(CHROMIUM).exists():
        pytest.skip(f"headless check skipped: {CHROMIUM} not installed (apt-get install chromium)")
    n_svg = page.count('<svg class="chart"')
    dom = _chromium(["--dump-dom", out.resolve().as_uri()], tmp_path)
    body = re.search(r"<body([^>]*)>", dom.stdout).group(1)
    assert htmllib.unescape(re.search(r'data-errors="([^"]*)"', body).group(1)) == "", body
    assert re.search(r'data-charts="(\d+)/(\d+)"', body).groups() == (str(n_svg), str(n_svg))
    assert _overflow(out, tmp_path) == []
