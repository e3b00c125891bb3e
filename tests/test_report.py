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

from conftest import SHARED
from textsieve.cli import main
from textsieve.report.collect import collect, comparisons, locate
from textsieve.select.recipe import Recipe

CHROMIUM = "/usr/bin/chromium"
N_DOCS = 1500


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A `textsieve run`-shaped folder: attrs/ (annotate + dedup fuzzy/exact + DSIR) and selected/ (gopher)."""
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
    for argv in (["annotate", str(src), "-o", attrs, "--resources", res, "--lang-field", "meta.lang"],
                 ["dedup", "fuzzy", attrs, "--threshold", "0.8", "--threshold", "0.7"],
                 ["dedup", "exact", attrs],
                 ["dsir", "fit", "--target", str(SHARED / "corpora" / "dev" / "target_wiki.jsonl.gz"),
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
    got = {rule.name: [(n.__class__.__name__, t.op, t.value, t.shade) for n, t in comparisons(rule)] for rule in r.rules}
    assert got["wc"] == [("Col", ">=", 50.0, True), ("Col", "<=", 100000.0, True)]
    assert got["n"] == [("Col", "<=", 0.1, True)]
    assert got["b"] == [("Call", "<=", 0.9, False), ("Col", ">", 10.0, False)]


def test_collect_figures_match_the_data(run_dir: Path) -> None:
    d = collect(str(run_dir))  # recipe taken from selected/selection.json
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
