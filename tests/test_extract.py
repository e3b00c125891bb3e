"""Issue 12 item 1: `textsieve extract` on real archives and pages.

Fixtures: the bundled sample crawl (`textsieve sample --crawl`: the sample corpus as article
pages with menus, cookie banners and footers, plus a redirect, a PDF, an image, a 404 and an
empty body per file), real pages from the extraction dev set (../shared/corpora/extraction)
and the real dev WARCs (../shared/corpora/dev/raw).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _files import read_jsonl

import textsieve as ts
from textsieve.errors import TextsieveError
from textsieve.native import langid_scores
from textsieve.sample_crawl import build_sample_crawl
from textsieve.stages.sources.extract import ExtractConfig, ExtractResult

CLI = [sys.executable, "-m", "textsieve.cli"]


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("crawl") / "crawl"
    build_sample_crawl(folder)
    return folder


@pytest.fixture(scope="module")
def extracted(crawl: Path, tmp_path_factory) -> tuple[Path, ExtractResult]:
    out = tmp_path_factory.mktemp("ext") / "docs"
    res = ts.extract([str(crawl)], output=str(out), workers=1, progress=False)
    return out, res


def _records(out: Path) -> list[dict]:
    return [r for p in sorted(out.rglob("*.jsonl.gz")) for r in read_jsonl(p)]


def test_sample_crawl_counts_every_reason(extracted, crawl):
    out, res = extracted
    files = sorted(crawl.glob("*.warc.gz"))
    assert res.pages == 120 + 5 * len(files)
    assert res.documents == 120
    assert res.skipped == {"redirect": len(files), "http_error": len(files), "not_html": 2 * len(files),
                           "empty_body": len(files)}
    summary = json.loads((out / ".textsieve" / "extract.json").read_text())
    assert summary["stage"] == "extract"
    per_shard = summary["shards"]["crawl-0000.jsonl.gz"]
    assert per_shard["kept"] == 40 and per_shard["skipped"]["not_html"] == 2
    manifest = json.loads((out / ".textsieve" / "manifest.json").read_text())
    shards = {f"crawl-{k:04d}.jsonl.gz" for k in range(len(files))}
    assert set(manifest["files"]) == shards | {".textsieve/extract.json"}
    assert manifest["files"]["crawl-0000.jsonl.gz"]["counts"]["kept"] == 40


def test_records_hold_main_text_and_metadata(extracted, crawl):
    out, _ = extracted
    recs = _records(out)
    first = recs[0]
    assert set(first) == {"id", "text", "url", "title", "date", "content_type", "charset", "lang", "lang_score",
                          "meta"}
    assert first["id"].startswith("urn:uuid:")
    assert first["url"].startswith("https://docs.example.org/")
    assert first["date"] == "2024-05-01T12:00:00Z"
    assert first["meta"]["extract"]["engine"] == ExtractConfig.__dataclass_fields__["engine"].default
    assert first["meta"]["extract"]["version"]
    assert all(r["lang"] == "en" for r in recs)
    text = "\n".join(r["text"] for r in recs)
    for boilerplate in ("Accept all cookies", "Copyright 2024 Example Docs", "Privacy policy", "Related pages"):
        assert boilerplate not in text, boilerplate
    # every page's body paragraphs survive (the sample docs are prose)
    with gzip.open(next(iter(sorted(crawl.glob("*.warc.gz")))), "rb") as fh:
        raw = fh.read()
    assert b"Accept all cookies" in raw
    assert sum(r["title"] is not None for r in recs) == len(recs)


def test_charsets_from_meta_and_detection(extracted):
    out, _ = extracted
    recs = _records(out)
    cp = [r for r in recs if r["content_type"] == "text/html" and r["meta"]["decode"]["source"] == "meta"]
    assert cp, "pages declaring windows-1252 in <meta> only"
    assert all(r["charset"] in ("cp1252", "windows-1252") for r in cp)
    assert all("\ufffd" not in r["text"] for r in recs)
    assert all(r["meta"]["decode"]["replaced"] == 0 for r in recs)


def test_rerun_keeps_changed_input_reruns_other_settings_refused(crawl, tmp_path):
    src = tmp_path / "crawl"
    shutil.copytree(crawl, src)
    out = tmp_path / "docs"
    first = ts.extract([str(src)], output=str(out), workers=1, progress=False)
    assert len(first.shards_written) == 3
    again = ts.extract([str(src)], output=str(out), workers=1, progress=False)
    assert again.shards_written == [] and len(again.shards_skipped) == 3
    assert again.documents == first.documents  # totals cover kept shards too
    # a changed input is extracted again, the others are kept
    victim = src / "crawl-0001.warc.gz"
    shutil.copy(src / "crawl-0002.warc.gz", victim)
    st = victim.stat()
    os.utime(victim, (st.st_atime, st.st_mtime + 10))
    third = ts.extract([str(src)], output=str(out), workers=1, progress=False)
    assert third.shards_written == ["crawl-0001.warc.gz"]
    ids_1 = [r["id"] for r in read_jsonl(out / "crawl-0001.jsonl.gz")]
    ids_2 = [r["id"] for r in read_jsonl(out / "crawl-0002.jsonl.gz")]
    assert ids_1 == ids_2
    # other settings into the same folder: refused, then replaced with overwrite
    with pytest.raises(TextsieveError, match="other settings"):
        ts.extract([str(src)], output=str(out), workers=1, progress=False, engine="resiliparse", fix_text=True)
    assert read_jsonl(out / "crawl-0001.jsonl.gz")[0]["meta"]["extract"]["fix_text"] is False
    ts.extract([str(src)], output=str(out), workers=1, progress=False, fix_text=True, overwrite=True)
    assert read_jsonl(out / "crawl-0001.jsonl.gz")[0]["meta"]["extract"]["fix_text"] is True


def test_workers_and_formats_give_the_same_records(crawl, extracted, tmp_path):
    out1, _ = extracted
    out2 = tmp_path / "two"
    ts.extract([str(crawl)], output=str(out2), workers=2, progress=False)
    for p in sorted(out1.glob("*.jsonl.gz")):
        assert (out2 / p.name).read_bytes() == p.read_bytes()  # byte-identical whatever the workers
    zst = tmp_path / "zst"
    ts.extract([str(crawl)], output=str(zst), workers=1, progress=False, format="jsonl.zst")
    import zstandard

    with open(zst / "crawl-0000.jsonl.zst", "rb") as fh:
        lines = zstandard.ZstdDecompressor().stream_reader(fh).read().decode().splitlines()
    assert [json.loads(x) for x in lines] == read_jsonl(out1 / "crawl-0000.jsonl.gz")
    pqt = tmp_path / "pq"
    ts.extract([str(crawl)], output=str(pqt), workers=1, progress=False, format="parquet")
    rows = pq.read_table(pqt / "crawl-0000.parquet").to_pylist()
    want = read_jsonl(out1 / "crawl-0000.jsonl.gz")
    assert [r["text"] for r in rows] == [r["text"] for r in want]
    assert json.loads(rows[0]["meta"]["extract"]["settings"]) == want[0]["meta"]["extract"]["settings"]


def test_annotate_reads_the_extracted_documents(extracted, tmp_path):
    out, res = extracted
    ann = ts.annotate([str(out)], output=str(tmp_path / "attrs"), workers=1, progress=False,
                      signals="rps_doc_word_count")
    assert ann.documents == res.documents


@pytest.mark.shared
def test_html_pages_keep_ids_and_main_content(shared_dir, tmp_path):
    pages = shared_dir / "corpora" / "extraction" / "html"
    expect = json.loads((shared_dir / "corpora" / "extraction" / "expectations.json").read_text())
    names = sorted(p.name for p in pages.glob("*.html.gz"))[:12]
    folder = tmp_path / "pages"
    folder.mkdir()
    for n in names:
        shutil.copy(pages / n, folder / n)
    out = tmp_path / "docs"
    res = ts.extract([str(folder)], output=str(out), workers=1, progress=False)
    recs = {r["id"]: r for r in read_jsonl(out / "x_html.jsonl.gz")}
    assert res.pages == 12
    ids = [n[: -len(".html.gz")] for n in names]
    assert set(recs) <= set(ids) and len(recs) + sum(res.skipped.values()) == 12
    found = sum(s in recs[i]["text"] for i in recs for s in expect[i]["with"])
    total = sum(len(expect[i]["with"]) for i in recs)
    assert found / total > 0.8
    leaked = sum(s in recs[i]["text"] for i in recs for s in expect[i]["without"])
    assert leaked / sum(len(expect[i]["without"]) for i in recs) < 0.25


@pytest.mark.shared
def test_dev_warcs_give_text_not_markup(shared_dir, tmp_path):
    raw = shared_dir / "corpora" / "dev" / "raw"
    out = tmp_path / "docs"
    res = ts.extract([str(raw / "dolma_sample-0000.warc.gz"), str(raw / "dolma_sample-0001.warc.gz")],
                     output=str(out), workers=1, progress=False)
    recs = _records(out)
    assert res.documents == len(recs) > 20
    assert not any("<div" in r["text"] or "<script" in r["text"] for r in recs)
    assert all(r["id"].startswith("urn:uuid:") and r["url"] for r in recs)


def test_extract_with_language_id_never_loads_numba(crawl, tmp_path):
    """Language id on every extracted page runs in C (`native/langid_kernels.c`): importing numba
    and loading its cached kernels cost ~0.65 s per `textsieve extract` run, and ~125 MB."""
    if langid_scores() is None:
        pytest.skip("the C library _langid is not built")
    code = ("import sys, json\nfrom textsieve.cli import main\n"
            f"rc = main(['extract', {str(crawl)!r}, '--workers', '1', '-q', '--output', {str(tmp_path / 'out')!r}])\n"
            "print(json.dumps({'rc': rc, 'numba': 'numba' in sys.modules}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"rc": 0, "numba": False}, res.stderr
    recs = _records(tmp_path / "out")
    assert recs and sum(r["lang"] == "en" for r in recs) > len(recs) / 2


def test_inputs_that_are_not_web_pages_are_refused(tmp_path):
    data = tmp_path / "a.jsonl"
    data.write_text('{"id": "1", "text": "hello"}\n')
    with pytest.raises(TextsieveError, match="annotate them directly"):
        ts.extract([str(data)], output=str(tmp_path / "out"), progress=False)


def test_a_folder_with_a_wet_file_among_its_archives_is_read_and_the_wet_named(crawl, tmp_path, caplog):
    """Issue 26 item 2: one .wet file in a crawl folder made `extract DIR` refuse the whole run.
    Now the archives are read and the WET file is left out, named with why (a warning, the
    result, extract.json)."""
    import gzip
    import json

    src = tmp_path / "crawl"
    shutil.copytree(crawl, src)
    wet = src / "texts.warc.wet.gz"
    block = b"Text that is already text."
    wet.write_bytes(gzip.compress(b"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: https://example.org/t\r\n"
                                  b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
                                  b"Content-Length: " + str(len(block)).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"))
    res = ts.extract([str(src)], output=str(tmp_path / "out"), progress=False)
    assert res.documents > 20 and list(res.inputs_left_out) == [str(wet)]
    assert "annotate them directly" in res.inputs_left_out[str(wet)] and str(wet) in caplog.text
    summary = json.loads((tmp_path / "out" / ".textsieve" / "extract.json").read_text())
    assert summary["result"]["inputs_left_out"] == {str(wet): res.inputs_left_out[str(wet)]}


def test_output_inside_the_input_is_refused(crawl, tmp_path):
    src = tmp_path / "crawl"
    shutil.copytree(crawl, src)
    with pytest.raises(TextsieveError, match="lies inside the input"):
        ts.extract([str(src)], output=str(src / "docs"), progress=False)


def test_annotate_on_a_warc_warns_and_points_at_extract(crawl, tmp_path):
    res = subprocess.run([*CLI, "annotate", str(crawl / "crawl-0000.warc.gz"), "-o", str(tmp_path / "b"),
                          "--signals", "rps_doc_word_count", "--workers", "1"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "textsieve extract" in res.stderr


def test_cli_summary_line(crawl, tmp_path):
    res = subprocess.run([*CLI, "extract", str(crawl), "-o", str(tmp_path / "d"), "--workers", "1"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "extracted 120 of 135 pages in 3 shard(s)" in res.stderr
    assert "3 redirect" in res.stderr


def test_pipeline_extracts_first_and_the_report_shows_it(crawl, tmp_path):
    """Items 4 and 7: `extract:` runs before annotate in a pipeline file (planned by --dry-run,
    resumed on a re-run), and the report shows its counts and pages beside their markup."""
    (tmp_path / "pipe.yaml").write_text(
        f"inputs: [{crawl}]\noutput: out/\nextract: {{}}\nannotate: {{signals: rps_doc_word_count}}\n"
        "dedup: {lines: {}}\n"
        "select: {recipe: {name: words, rules: {words: 'rps_doc_word_count >= 20', "
        "lines: 'line: dup_lines_seen == 0'}}}\n")
    plan = subprocess.run([*CLI, "run", "pipe.yaml", "--dry-run"], cwd=tmp_path, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    lines = [x.split()[1] for x in plan.stdout.splitlines() if x.strip()[:2].strip().isdigit()]
    assert lines == ["extract", "annotate", "dedup", "select"]  # dedup lines
    assert not (tmp_path / "out" / "docs").exists()
    first = subprocess.run([*CLI, "run", "pipe.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "extract: 120 of 135 pages kept" in first.stderr
    ann = json.loads((tmp_path / "out" / "attrs" / ".textsieve" / "annotate.json").read_text())
    assert ann["result"]["documents"] == 120
    lines_set = tmp_path / "out" / "attrs" / "sets" / "dedup_lines"
    lines_summary = json.loads((lines_set / ".textsieve" / "summary.json").read_text())
    assert lines_summary["n_docs"] == 120
    again = subprocess.run([*CLI, "run", "pipe.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert "0 shard(s) written, 3 already done" in again.stderr
    rep = subprocess.run([*CLI, "report", "out", "-o", "r.html"], cwd=tmp_path, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "r.html").read_text()
    assert '<section id="extraction">' in page
    assert "raw page (first lines)" in page and "&lt;!DOCTYPE html&gt;" in page
    assert "empty_body" in page
    assert "<th>pages sent to the fallback engine</th><td>0 (0.0%)</td>" in page  # the default, auto


def test_report_section_gives_the_fallback_share_and_the_rate_when_the_run_has_them():
    """The report's extraction table: the fallback share of a cascade engine (`auto`, `cascade`) and
    the pages per CPU-second of the run that wrote shards; neither row for a run without them."""
    from textsieve.report.extraction import extraction_section

    result = {"pages": 40, "documents": 38, "skipped": {"redirect": 2}, "fallback_pages": 3, "fallback_share": 0.075,
              "pages_per_core_second": 151.6}
    html = extraction_section({"root": "docs", "settings": {"engine": "auto"}, "result": result})
    assert "<th>pages sent to the fallback engine</th><td>3 (7.5%)</td>" in html
    assert "<th>pages per CPU-second</th><td>152</td>" in html
    plain = extraction_section({"root": "docs", "settings": {"engine": "trafilatura"},
                                "result": {"pages": 40, "documents": 40}})
    assert "fallback" not in plain and "CPU-second" not in plain and "<th>pages read</th><td>40</td>" in plain


@pytest.mark.kill
def test_killed_run_publishes_nothing_and_the_rerun_adopts_finished_shards(crawl, extracted, tmp_path):
    from hooks.slow_progress import kill_when

    out = tmp_path / "docs"

    def one_shard_staged() -> bool:
        return any(out.glob(".textsieve/staging-extract-*/.crawl-0000.jsonl.gz.done.json"))

    kill_when([*CLI, "extract", str(crawl), "-o", str(out), "--workers", "1"], one_shard_staged, 0.3,
              "the first shard was staged")
    assert not (out / ".textsieve" / "manifest.json").exists() and not list(out.glob("*.jsonl.gz"))  # nothing published
    res = subprocess.run([*CLI, "extract", str(crawl), "-o", str(out), "--workers", "1", "-v"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "finished by an interrupted run" in res.stderr
    want, _ = extracted
    for p in sorted(want.glob("*.jsonl.gz")):
        assert (out / p.name).read_bytes() == p.read_bytes()
    assert not list(out.glob(".textsieve/staging-*"))


def _members(path: Path) -> list[bytes]:
    """The gzip members of a .warc.gz written one record per member (as warcio writes them)."""
    import zlib

    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[at:])
        end = len(data) - len(d.unused_data)
        out.append(data[at:end])
        at = end
    return out


def test_damaged_record_fails_with_its_location_or_is_skipped_and_counted(crawl, extracted, tmp_path):
    """Item 2 through the stage: a corrupt gzip member stops the run naming file, record and
    offset; with --on-error skip that page alone is lost, counted, and the rest is kept."""
    members = _members(crawl / "crawl-0000.warc.gz")
    bad = bytearray(members[9])  # record 9: the 5th page's response (after its request record 8)
    bad[len(bad) // 2] ^= 0xFF
    members[9] = bytes(bad)
    folder = tmp_path / "in"
    folder.mkdir()
    damaged = folder / "crawl-0000.warc.gz"
    damaged.write_bytes(b"".join(members))
    with pytest.raises(TextsieveError, match=r"crawl-0000\.warc\.gz:record 9: .*at byte \d+"):
        ts.extract([str(damaged)], output=str(tmp_path / "fail"), workers=1, progress=False)
    assert not (tmp_path / "fail" / ".textsieve" / "manifest.json").exists()
    res = ts.extract([str(damaged)], output=str(tmp_path / "skip"), workers=1, progress=False, on_error="skip")
    assert res.bad_records == 1
    good = read_jsonl(extracted[0] / "crawl-0000.jsonl.gz")
    got = read_jsonl(tmp_path / "skip" / "crawl-0000.jsonl.gz")
    assert len(got) == len(good) - 1 and all(r in good for r in got)
    summary = json.loads((tmp_path / "skip" / ".textsieve" / "extract.json").read_text())
    assert "record 9" in summary["shards"]["crawl-0000.jsonl.gz"]["bad_examples"][0]["location"]
    # a fail-mode re-run does not serve the shard that lost a record: it reads it again, and fails
    with pytest.raises(TextsieveError, match=r"record 9"):
        ts.extract([str(damaged)], output=str(tmp_path / "skip"), workers=1, progress=False)


def test_fix_text_repairs_and_counts_mojibake(tmp_path):
    from textsieve.sample_crawl import page_html

    folder = tmp_path / "pages"
    folder.mkdir()
    good = "The club paid £30.4m for the striker, a record fee for a player from the league below."
    broken = good.encode("utf-8").decode("cp1252")  # 'Â£30.4m': UTF-8 read as Windows-1252
    (folder / "news.html").write_text(page_html("Transfer news", [broken, "A second paragraph of the report "
                                                                  "says the deal was agreed on Monday evening."]),
                                      encoding="utf-8")
    plain = ts.extract([str(folder)], output=str(tmp_path / "plain"), workers=1, progress=False)
    assert "Â£30.4m" in read_jsonl(tmp_path / "plain" / "x_html.jsonl.gz")[0]["text"] and plain.documents == 1
    ts.extract([str(folder)], output=str(tmp_path / "fixed"), workers=1, progress=False, fix_text=True)
    rec = read_jsonl(tmp_path / "fixed" / "x_html.jsonl.gz")[0]
    assert "£30.4m" in rec["text"] and "Â" not in rec["text"] and rec["meta"]["fixed_text"] is True
    summary = json.loads((tmp_path / "fixed" / ".textsieve" / "extract.json").read_text())
    assert summary["shards"]["x_html.jsonl.gz"]["fixed_text"] == 1


def test_fsspec_urls_in_and_out(crawl):
    import fsspec

    mem = fsspec.filesystem("memory")
    mem.pipe("/ext-in/crawl-0002.warc.gz", (crawl / "crawl-0002.warc.gz").read_bytes())
    res = ts.extract(["memory://ext-in/"], output="memory://ext-out", workers=1, progress=False)
    assert res.documents == 40
    with mem.open("/ext-out/crawl-0002.jsonl.gz", "rb") as fh:
        recs = [json.loads(x) for x in gzip.decompress(fh.read()).splitlines()]
    assert len(recs) == 40 and mem.exists("/ext-out/.textsieve/manifest.json")


def test_repeated_ids_fail_naming_both_or_are_suffixed(tmp_path):
    """`a.html` beside `a.htm` (or a WARC concatenated from copies) gives two documents one id:
    fail naming both files, or rename the second `a#2` (--dedupe-ids suffix / --on-error skip)."""
    from textsieve.sample_crawl import page_html

    folder = tmp_path / "pages"
    folder.mkdir()
    for name in ("a.html", "a.htm"):
        (folder / name).write_text(page_html("Page a", [f"This is the page saved as {name}, with a few words.",
                                                        "And a second paragraph, so the article has a body."]))
    with pytest.raises(TextsieveError, match=r"a\.html: duplicate id 'a': the document at .*a\.htm has it too"):
        ts.extract([str(folder)], output=str(tmp_path / "fail"), workers=1, progress=False)
    res = ts.extract([str(folder)], output=str(tmp_path / "ok"), workers=1, progress=False, dedupe_ids="suffix")
    assert [r["id"] for r in read_jsonl(tmp_path / "ok" / "x_html.jsonl.gz")] == ["a", "a#2"] and res.documents == 2
    summary = json.loads((tmp_path / "ok" / ".textsieve" / "extract.json").read_text())
    assert summary["shards"]["x_html.jsonl.gz"]["renamed_ids"] == 1


def test_memory_urls_with_default_workers_run_in_process(crawl):
    import fsspec

    mem = fsspec.filesystem("memory")
    for name in ("crawl-0000.warc.gz", "crawl-0001.warc.gz"):
        mem.pipe(f"/ext-in2/{name}", (crawl / name).read_bytes())
    res = ts.extract(["memory://ext-in2/"], output="memory://ext-out2", progress=False)  # default workers
    assert res.documents == 80
    with pytest.raises(TextsieveError, match="worker processes cannot see"):
        ts.extract(["memory://ext-in2/"], output="memory://ext-out3", workers=2, progress=False)


def test_other_inputs_kept_in_the_folder_stay_in_the_summary(crawl, tmp_path):
    out = tmp_path / "docs"
    ts.extract([str(crawl / "crawl-0000.warc.gz")], output=str(out), workers=1, progress=False)
    res = ts.extract([str(crawl / "crawl-0001.warc.gz")], output=str(out), workers=1, progress=False)
    summary = json.loads((out / ".textsieve" / "extract.json").read_text())
    assert set(summary["shards"]) == {"crawl-0000.jsonl.gz", "crawl-0001.jsonl.gz"}
    assert summary["result"]["documents"] == res.documents == 80


def test_oversized_pages_are_counted_and_a_gzip_bomb_is_not_inflated(tmp_path):
    import resource

    from textsieve.sample_crawl import page_html

    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "small.html").write_text(page_html("Small", ["A short page of two paragraphs with real words.",
                                                           "It stays under the limit and is kept."]))
    with gzip.open(folder / "bomb.html.gz", "wb", compresslevel=9) as fh:  # 400 MB of spaces in ~400 KB
        chunk = b" " * (1 << 20)
        for _ in range(400):
            fh.write(chunk)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = ts.extract([str(folder)], output=str(tmp_path / "out"), workers=1, progress=False, max_doc_bytes="1MiB")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert res.documents == 1 and res.skipped == {"too_large": 1}
    assert grown_mb < 200, f"peak RSS grew by {grown_mb:.0f} MB: the bomb was inflated"


def test_library_log_records_follow_textsieves_levels(tmp_path):
    """Issue 25: trafilatura logged `ERROR trafilatura.utils: lxml parsing failed` under `-q` for a
    page it could not parse (extract counts such pages itself). Its records are hidden by default
    and under -q, and shown with -v, in worker processes too."""
    import subprocess
    import sys

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "garbled.html").write_bytes(b"\x00\x01")
    (pages / "good.html").write_text("<html><body><p>" + "a real sentence of words. " * 30 + "</p></body></html>")

    def run(*flags: str) -> str:
        out = tmp_path / f"out{len(flags)}{'-'.join(flags)}"
        proc = subprocess.run([sys.executable, "-m", "textsieve.cli", "extract", str(pages), "-o", str(out),
                               "--engine", "trafilatura", "--workers", "2", *flags],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    assert "trafilatura" not in run("-q") and "trafilatura" not in run()
    assert "ERROR trafilatura" in run("-v", "--workers", "1")


def test_a_page_past_the_page_timeout_is_left_out_counted_and_named(tmp_path, capsys):
    """--page-timeout (issue 27): a crafted page that keeps trafilatura busy for over half a second
    (2,500 paragraphs) is cut off at 0.15 s inside the worker, counted as `timeout` and named in
    extract.json; the folder's other page is kept, the closing line gives the per-core rates, and
    with the limit off (0) the same page is extracted. The timer is gone after the run."""
    import signal

    from textsieve.cli import main
    from textsieve.sample_crawl import page_html

    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a-news.html").write_text(page_html("Transfer news", [
        "The club paid a record fee for the striker, a player from the league below, on Monday.",
        "A second paragraph of the report says the deal was agreed late in the evening."]), encoding="utf-8")
    (folder / "b-endless.html").write_text("<html><body>" + "".join(
        f"<div><p>Paragraph {i} of a page that goes on and on, with a few more words.</p></div>"
        for i in range(2500)) + "</body></html>", encoding="utf-8")
    assert main(["extract", str(folder), "-o", str(tmp_path / "cut"), "--engine", "trafilatura",
                 "--page-timeout", "0.15", "--workers", "1"]) == 0
    assert "per core" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None) and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    summary = json.loads((tmp_path / "cut" / ".textsieve" / "extract.json").read_text())
    shard = summary["shards"]["x_html.jsonl.gz"]
    assert shard["skipped"] == {"timeout": 1} and shard["kept"] == 1 and "cpu_seconds" not in shard
    assert len(shard["timeouts"]) == 1 and "b-endless" in shard["timeouts"][0]["id"]
    assert summary["result"]["skipped"] == {"timeout": 1} and summary["result"]["pages_per_core_second"] > 0
    assert summary["settings"]["page_timeout"] == 0.15
    res = ts.extract([str(folder)], output=str(tmp_path / "whole"), workers=1, progress=False, page_timeout=0,
                     engine="trafilatura")
    assert res.documents == 2 and not res.skipped
    with pytest.raises(TextsieveError, match="--page-timeout"):
        ts.extract([str(folder)], output=str(tmp_path / "bad"), workers=1, progress=False, page_timeout=-1)
