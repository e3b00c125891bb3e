"""Issue 26 item 4: results, previews and progress as a notebook or a log file shows them.

Results have a compact repr and an HTML table (the funnel one row per rule, a selection its
counts); DuckDB previews of the attributes hide the MinHash bytes and long span lists without
changing the data; progress is a tqdm bar on a terminal, tqdm's notebook widget in Jupyter
with ipywidgets, and one plain line per shard anywhere else; `dir(ts)` lists the API only; an
unknown signal name gets a "did you mean". All on the bundled sample corpus (real text).
The kernel itself runs in `test_python_api.py::test_python_api_notebook_runs`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import textsieve as ts
from textsieve.exec import progress as progress_mod
from textsieve.sample import build_sample
from textsieve.stages.annotate.annotate import AnnotateResult


@dataclass
class Annotated:
    attrs: Path
    result: AnnotateResult
    stderr: str  # what annotate wrote there with progress on, stderr being no terminal


@pytest.fixture(scope="module")
def annotated(tmp_path_factory) -> Annotated:
    """The first 90 sample documents in three shards of 30, annotated with progress on and
    stderr a StringIO (as a pipe or a log file: no terminal)."""
    root = tmp_path_factory.mktemp("display")
    build_sample(root / "sample.jsonl.gz", max_docs=90)
    data = root / "data"
    data.mkdir()
    with gzip.open(root / "sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = fh.readlines()
    for i in range(3):
        with gzip.open(data / f"part-{i}.jsonl.gz", "wt", encoding="utf-8") as out:
            out.writelines(lines[30 * i:30 * (i + 1)])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert progress_mod.display_mode() == "lines"
        res = ts.annotate(data, output=root / "attrs", workers=1)
    return Annotated(root / "attrs", res, err.getvalue())


def test_progress_piped_is_one_plain_line_per_shard(annotated, capsys):
    """No `\\r` bar: one line per finished shard with the running count, the rate and the ETA,
    and no closing line repeating the last one."""
    err = annotated.stderr
    assert "\r" not in err and annotated.result.documents == 90
    lines = [ln for ln in err.splitlines() if ln.startswith("annotate:")]
    pattern = r"annotate: (part-\d\.jsonl\.gz) done; ([\d,]+) docs so far, [\d,]+ docs/s, (\d+)%, ETA \d\d:\d\d"
    found = [re.fullmatch(pattern, ln) for ln in lines]
    assert all(found), lines
    assert [m.group(1) for m in found if m] == ["part-0.jsonl.gz", "part-1.jsonl.gz", "part-2.jsonl.gz"]
    assert [m.group(2) for m in found if m] == ["30", "60", "90"]
    assert [int(m.group(3)) for m in found if m][-1] == 100
    ts.annotate(annotated.attrs.parent / "data", output=annotated.attrs, workers=1)  # all finished: nothing to tell
    assert "annotate:" not in capsys.readouterr().err


def test_progress_mode_follows_where_it_is_drawn(monkeypatch):
    """A terminal gets tqdm's bar, Jupyter tqdm's notebook widget when ipywidgets is there (else
    the plain lines: a `\\r` bar is a stream of outputs there), `progress=False` nothing."""
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", Tty())
    assert progress_mod.display_mode() == "bar" and progress_mod.display_mode(False) == "off"
    monkeypatch.setattr(progress_mod, "in_jupyter", lambda: True)
    monkeypatch.setattr(progress_mod, "widgets_available", lambda: True)
    assert progress_mod.display_mode() == "widget"
    monkeypatch.setattr(progress_mod, "widgets_available", lambda: False)
    assert progress_mod.display_mode() == "lines"
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed: `import ipywidgets` fails
    assert progress_mod.widgets_available() is False


def test_progress_lines_without_shards_say_the_total_once(capsys, monkeypatch):
    """A pass that names no shard (a dedup's group pass) writes one line when it closes, and a
    line every LINE_EVERY_S seconds while it runs."""
    bar = progress_mod.Progress("dedup exact [group]", 1000, unit="keys")
    for _ in range(4):
        bar.advance(250, 250)
    bar.close()
    assert re.fullmatch(r"dedup exact \[group\]: 1,000 keys in \d+\.\d s, [\d,]+ keys/s\n", capsys.readouterr().err)
    monkeypatch.setattr(progress_mod, "LINE_EVERY_S", 0.0)
    bar = progress_mod.Progress("dedup fuzzy [scan]", 100)
    bar.update(40, 40)
    assert re.fullmatch(r"dedup fuzzy \[scan\]: 40 docs so far, [\d,]+ docs/s, 40%, ETA \d\d:\d\d\n",
                        capsys.readouterr().err)


def test_results_repr_and_html(annotated, tmp_path):
    attrs, res = annotated.attrs, annotated.result
    text = repr(res)
    assert text.startswith(f"AnnotateResult(output={str(attrs)!r}, shards_written=['part-0.jsonl.gz', "
                           "'part-1.jsonl.gz', 'part-2.jsonl.gz'], shards_skipped=[], "
                           "documents=90, skipped_records=0, seconds=")
    assert "lang_fallbacks={}" in text and len(text) < 400 + len(str(attrs))  # short: no field dumped whole
    html = res._repr_html_()
    assert html.startswith('<table class="textsieve">')
    assert f"AnnotateResult: 90 documents annotated into {attrs} (3 shard(s) written, 0 already done); " in html
    assert "<td style=\"text-align:left\">documents</td><td style=\"text-align:left\">90</td>" in html
    assert "lang_fallbacks" not in html  # empty fields are left out of the table, not of the repr

    funnel = ts.funnel(attrs, "gopher")
    assert repr(funnel) == funnel.table()  # at the prompt: the table `select --dry-run` prints
    html = funnel._repr_html_()
    rows = re.findall(r"<tr><td[^>]*>([^<]+)</td>", html)
    assert rows == [r.name for r in funnel.rules]
    assert f"kept: {funnel.kept:,} (" in html and f"recipe gopher: 90 documents, {funnel.total_chars:,}" in html

    sel = ts.select(attrs, recipe="gopher", output=tmp_path / "selected", workers=1, progress=False)
    share = f"{100 * funnel.kept / 90:.1f}%"
    assert f"SelectResult: selected {funnel.kept} of 90 documents ({share})" in sel._repr_html_()
    assert f"documents={funnel.kept}, characters={sel.characters}, pool=90" in repr(sel)


def test_long_values_are_summarised():
    import numpy as np

    from textsieve.display import short

    assert short(b"\x00" * 128) == "<128 bytes>"
    assert short(np.zeros(100)) == "<array of 100>"
    assert short([f"shard-{i}.jsonl.gz" for i in range(12)]) == "[12 items]"
    assert short(["a.jsonl.gz"]) == "['a.jsonl.gz']" and short(("x", "y")) == "('x', 'y')"
    assert short({f"k{i}": i for i in range(7)}) == "{7 keys}" and short({"ess": 85.25}) == "{'ess': 85.25}"
    assert short("x" * 200).endswith("…'") and len(short("x" * 200)) <= 62


def test_attribute_preview_hides_bytes_but_not_from_queries(annotated):
    from textsieve.display import hide_bytes_in_previews, preview_html, preview_text

    attrs = annotated.attrs
    rel = ts.attributes(attrs).limit(3)
    raw = rel.query("v", 'SELECT "signature_sim0.8" FROM v').fetchall()
    assert isinstance(raw[0][0][0], bytes)  # the data keeps its bytes
    html = preview_html(rel)
    assert html.count("<tr>") == 4 and "\\x" not in html and len(html) < 20_000
    assert len(re.findall(r"<td>&lt;\d+ x \d+ bytes&gt;</td>", html)) == 3 * 4  # four signature columns (bands x size)
    assert re.search(r"signature_sim0\.8<br><small>BLOB\[\]</small>", html)  # headed by the stored type
    assert re.search(r"<td>&lt;\d+ spans&gt;</td>", html)  # a line signal's span list, one span per line
    text = preview_text(ts.attributes(attrs, columns=["id", "signature_sim0.8"]).limit(3))
    assert "bytes>" in text and "\\x" not in text and max(map(len, text.splitlines())) <= 120
    assert hide_bytes_in_previews() is False  # no IPython shell in this process: nothing registered

    shell_mod = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_mod.InteractiveShell.instance()
    try:
        assert hide_bytes_in_previews() is True
        data, _ = shell.display_formatter.format(rel)
        assert data["text/html"] == preview_html(rel) and data["text/plain"] == preview_text(rel)
        assert "bytes&gt;" in data["text/html"] and "\\x" not in data["text/plain"]
    finally:
        shell_mod.InteractiveShell.clear_instance()


def test_dir_lists_the_api_only():
    names = dir(ts)
    assert {"annotate", "select", "funnel", "attributes", "__version__"} <= set(names)
    for internal in ("Any", "Path", "TYPE_CHECKING", "importlib", "annotations", "api", "api_stages", "io"):
        assert internal not in names, internal
    assert all(callable(getattr(ts, n)) for n in names if not n.startswith("_"))


def test_unknown_signal_name_suggests_the_nearest(tmp_path):
    src = tmp_path / "doc.jsonl"
    src.write_text(json.dumps({"id": "textsieve", "text": ts.__doc__}) + "\n")  # real prose: the package's
    with pytest.raises(ValueError, match=r"unknown signal or group 'rps_doc_word_cnt' \(did you mean "
                                         r"'rps_doc_word_count'\?\)\. Groups: "):
        ts.annotate(src, output=tmp_path / "typo", signals="rps_doc_word_cnt", progress=False)
    from textsieve.signals.selection import select_signals

    with pytest.raises(ValueError, match=r"'word_count' \(did you mean 'rps_doc_word_count'\?\)"):
        select_signals("word_count")  # RPv2's prefix left off
    with pytest.raises(ValueError, match=r"'minhsh' \(did you mean 'minhash'\?\)"):
        select_signals(["rpv2", "minhsh"])
    with pytest.raises(ValueError, match=r"unknown signal or group 'xyzzy'\. Groups"):
        select_signals("xyzzy")
    assert not (tmp_path / "typo").exists()
