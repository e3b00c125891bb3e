"""`textsieve source wikipedia` (issue 30): MediaWiki XML dumps as RedPajama-1T's Wikipedia
builder read them.

Against the goldens (`golden/rpv1/wikipedia_dev*`, the eight shared dump excerpts in six
languages): reference mode writes all 139 final records (text and meta), and every one of the
293 page decisions with the cleaned text's SHA-256 is reproduced through the module's
functions; the default mode keeps the same pages, and the bundled `rpv1-wikipedia` recipe over
its `rpv1_wikipedia` signals selects exactly the reference's set. Each default-mode difference
has a test showing both behaviours. Beyond the reference: multistream bz2, gzip and plain XML,
folders of dump parts, history dumps, memory flat in the dump size, located errors.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import pyarrow.parquet as pq
import pytest
from _shared import SHARED, missing_reason

from textsieve.cli import main
from textsieve.dumps.family import SourceError, SourceOptions, SourceRecord, Unit, get_family
from textsieve.dumps.wiki_aliases import CATEGORY_ALIASES, MEDIA_ALIASES
from textsieve.dumps.wiki_clean import clean_wikitext, installed_max_depth, link_prefixes, page_url
from textsieve.dumps.wiki_xml import Page, SiteInfo, iter_dump, open_dump
from textsieve.dumps.wikipedia import GOLDEN_DECISIONS, clean_page, dump_context
from textsieve.io.errors import InputError
from textsieve.stages.sources.source import SourceConfig, run_source

DUMPS = SHARED / "corpora" / "sources" / "wikipedia"
GOLDEN = SHARED / "golden" / "rpv1"
REF = SourceOptions(reference="rp_v1")
DEFAULT = SourceOptions()


def _jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _records(folder: Path) -> list[dict]:
    return [r for shard in sorted(folder.glob("*.jsonl.gz")) for r in _jsonl(shard)]


def _as_reference(record: dict) -> str:
    return json.dumps({"text": record["text"], "meta": record["meta"]}, sort_keys=True, ensure_ascii=False)


def _page_xml(title: str, ns: int, pid: int, texts: list[str | None], redirect: bool = False) -> str:
    red = f'<redirect title="{escape(title)}" />' if redirect else ""
    revs = "".join(f"<revision><id>{pid * 100 + k}</id>" + ("<text />" if t is None else
                   f'<text xml:space="preserve">{escape(t)}</text>') + "</revision>" for k, t in enumerate(texts))
    return f"<page><title>{escape(title)}</title><ns>{ns}</ns><id>{pid}</id>{red}{revs}</page>\n"


def _dump_xml(pages: list[str], dbname: str | None = "enwiki", base: str = "https://en.wikipedia.org/wiki/Main_Page",
              namespaces: dict[int, str] | None = None) -> str:
    names = namespaces or {-2: "Media", 0: "", 6: "File", 14: "Category"}
    ns = "".join(f'<namespace key="{k}" case="first-letter">{escape(v)}</namespace>' for k, v in names.items())
    db = f"<dbname>{dbname}</dbname>" if dbname else ""
    site = f"<siteinfo><sitename>Wikipedia</sitename>{db}<base>{base}</base><namespaces>{ns}</namespaces></siteinfo>\n"
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">\n' + site + "".join(pages)
            + "</mediawiki>\n")


def _read(path: Path, opts: SourceOptions) -> list:
    family = get_family("wikipedia")
    return list(family.read(Unit(str(path), path.name, path.stat().st_size), opts))


@pytest.fixture(scope="module")
def golden() -> Path:
    if not (GOLDEN / "wikipedia_dev.jsonl.gz").is_file() or not DUMPS.is_dir():
        pytest.skip(missing_reason(SHARED, "the rpv1 Wikipedia goldens and dumps"))
    return GOLDEN


@pytest.fixture(scope="module")
def golden_runs(golden, tmp_path_factory) -> dict[str, Path]:
    """The eight shared dumps through the stage in both modes (reference: through the CLI)."""
    root = tmp_path_factory.mktemp("wiki")
    assert main(["source", "wikipedia", str(DUMPS), "-o", str(root / "ref"), "--reference", "rp_v1",
                 "--workers", "2", "-q"]) == 0
    run_source(SourceConfig("wikipedia", [str(DUMPS)], str(root / "default"), workers=2, progress=False))
    return {"ref": root / "ref", "default": root / "default"}


# ------------------------------------------------------------------ the goldens, whole


def test_reference_mode_writes_every_golden_record(golden_runs, golden):
    got = _records(golden_runs["ref"])
    want = _jsonl(golden / "wikipedia_dev.jsonl.gz")
    assert len(got) == len(want) == 139
    assert Counter(map(_as_reference, got)) == Counter(map(_as_reference, want))
    assert all(list(r["meta"]) == ["title", "url", "language", "timestamp"] for r in got)
    assert len({r["id"] for r in got}) == 139 and got[0]["id"].startswith("enwiki/")


def test_reference_counts_match_the_manifest(golden_runs, golden):
    manifest = json.loads((golden / "manifest.json").read_text())["results"]["wikipedia"]
    summary = json.loads((golden_runs["ref"] / ".textsieve" / "source.json").read_text())["result"]
    left = summary["left_out"]
    assert summary["documents"] == manifest["pages"]["kept"] == 139
    assert left["namespace"] == manifest["pages"]["dropped:namespace"]
    assert left.get("redirect", 0) + left.get("no_text", 0) == manifest["pages"]["dropped:redirect_or_no_text"]
    assert left.get("empty_after_cleaning", 0) + left.get("parse_error", 0) == \
        manifest["pages"]["dropped:empty_after_cleaning_or_parse_error"]
    per_lang = Counter(r["meta"]["language"] for r in _records(golden_runs["ref"]))
    assert per_lang == {lang: v["kept"] for lang, v in manifest["per_language"].items()}


def test_every_page_decision_and_cleaned_text(golden):
    """All 293 pages of `wikipedia_dev_pages`: the decision and the cleaned text's SHA-256,
    through `dump_context` and `clean_page` (what the stage runs per page)."""
    want = {(r["file"], r["id"]): r for r in _jsonl(golden / "wikipedia_dev_pages.jsonl.gz")}
    got = {}
    for name in sorted({f for f, _ in want}):
        ctx = None
        with open_dump(str(DUMPS / name)) as fh:
            for item in iter_dump(fh):
                if isinstance(item, SiteInfo):
                    ctx = dump_context(name, item, REF)
                    continue
                assert ctx is not None
                why, text = clean_page(item, ctx, rp_v1=True)
                got[(name, item.id)] = (ctx.lang, item.title, item.ns, GOLDEN_DECISIONS[why],
                                        hashlib.sha256(text.encode()).hexdigest() if not why else None)
    assert len(got) == len(want) == 293
    assert {k: (r["language"], r["title"], r["ns"], r["decision"], r.get("text_sha256"))
            for k, r in want.items()} == got


def test_default_mode_keeps_the_same_pages_and_reads_the_newest_revision(golden_runs):
    ref = {r["id"]: r for r in _records(golden_runs["ref"])}
    default = {r["id"]: r for r in _records(golden_runs["default"])}
    assert set(default) == set(ref)
    changed = {i for i in ref if default[i] != ref[i]}
    assert changed == {"enwiki/1"}  # mwxml-dump's page with two revisions
    assert (ref["enwiki/1"]["text"], default["enwiki/1"]["text"]) == ("Revision 1 text", "Revision 2 text")


def test_bundled_recipe_selects_the_reference_set_from_a_default_run(golden_runs, tmp_path):
    attrs, out = tmp_path / "attrs", tmp_path / "selected"
    assert main(["annotate", str(golden_runs["default"]), "-o", str(attrs), "--signals", "rpv1_wikipedia",
                 "--workers", "1", "-q"]) == 0
    assert main(["select", str(attrs), "-r", "rpv1-wikipedia", "-o", str(out), "--workers", "1", "-q"]) == 0
    selected = {r["id"]: r["text"] for r in _records(out)}
    assert set(selected) == {r["id"] for r in _records(golden_runs["ref"])}
    assert selected == {r["id"]: r["text"] for r in _records(golden_runs["default"])}


def test_siteinfo_names_of_every_dev_dump_are_in_the_alias_tables(golden):
    """The tables (`wiki_aliases`) hold each dump's own media (-2, 6) and category (14) names."""
    for path in sorted(DUMPS.glob("*.xml.bz2")):
        with open_dump(str(path)) as fh:
            site = next(iter_dump(fh))
        assert isinstance(site, SiteInfo)
        lang = site.language()
        assert lang in MEDIA_ALIASES and lang in CATEGORY_ALIASES, path.name
        media = {"file", "image", "media", *(n.lower() for n in MEDIA_ALIASES[lang])}
        cats = {"category", *(n.lower() for n in CATEGORY_ALIASES[lang])}
        assert {site.namespaces[k].lower() for k in (-2, 6) if k in site.namespaces} <= media, path.name
        assert {site.namespaces[k].lower() for k in (14,) if k in site.namespaces} <= cats, path.name


# ------------------------------------------------------------------ the reference's cleaning, in small


def test_cleaning_removes_media_refs_tables_and_magic_words_and_keeps_category_names():
    raw = ("'''Oslo''' is a [[city|town]].<ref>A source.</ref> [[File:Oslo.jpg|thumb|A view]]\n"
           "{| class=\"wikitable\"\n| a || b\n|}\n__NOTOC__\n== History ==\nFounded {{circa|1040}}. &amp; "
           "<math>x^2</math> <pre>kept</pre>\n\n\n\n[[Category:Cities in Norway]] [[Kategori:Byer|Byer]]")
    text = clean_wikitext(raw, link_prefixes("en", reference=True), max_depth=40)
    # magic words go after the strip: the lead's `__NOTOC__` leaves its blank line
    assert text == "Oslo is a town. \n\n\n\nHistory \nFounded . &  kept\n\nCities in Norway Byer"
    sv = clean_wikitext("[[Bild:x.png|cap]] Text [[Kategori:Byar]]", link_prefixes("sv", reference=True))
    assert sv == "Text Byar"


def test_url_quotes_like_the_reference():
    assert page_url("en", "Bernard Fisher") == "https://en.wikipedia.org/wiki/Bernard%20Fisher"
    assert page_url("en", "AC/DC") == "https://en.wikipedia.org/wiki/AC/DC"
    assert page_url("vi", "Trang Chính") == "https://vi.wikipedia.org/wiki/Trang%20Ch%C3%ADnh"


def test_nesting_deeper_than_40_parses_as_mwparserfromhell_065_did():
    """The reference's parser (0.6.5) gave up at 40 nested constructs; 0.6.6+ at 100. Reference
    mode emulates 40 (expected values computed with mwparserfromhell 0.6.5); the default mode
    keeps the installed parser's limit."""
    deep = "[[a|" * 45 + "core" + "]]" * 45
    cat = "[[Category:" + "[[a|" * 41 + "x" + "]]" * 42
    en = link_prefixes("en", reference=True)
    assert clean_wikitext(deep, en, max_depth=40) == "[[a|" * 6 + "core" + "]]" * 6
    assert clean_wikitext(cat, en, max_depth=40) == "[[Category:[[a|[[a|x]]]]]]"
    if installed_max_depth() == 100:
        assert clean_wikitext(deep, en) == "core"
        assert clean_wikitext(cat, en) == "[[Category:x]]"


def test_default_mode_escapes_alias_names_and_adds_the_dumps_own():
    """The builder joins the alias names into a regular expression unescaped: Gujarati's media
    namespace `દ્રશ્ય-શ્રાવ્ય (મિડિયા)` then matches only without its parentheses. The default mode
    escapes them, and adds the dump's siteinfo names to the table's."""
    names = {-2: "દ્રશ્ય-શ્રાવ્ય (મિડિયા)", 6: "ચિત્ર", 14: "શ્રેણી"}
    raw = "Text [[દ્રશ્ય-શ્રાવ્ય (મિડિયા):Song.ogg]] [[દ્રશ્ય-શ્રાવ્ય મિડિયા:Other.ogg]] [[ચિત્ર:x.png]]"
    ref = clean_wikitext(raw, link_prefixes("gu", names, reference=True))
    default = clean_wikitext(raw, link_prefixes("gu", names))
    assert ref == "Text દ્રશ્ય-શ્રાવ્ય (મિડિયા):Song.ogg"
    assert default == "Text  દ્રશ્ય-શ્રાવ્ય મિડિયા:Other.ogg"
    renamed = {6: "Fichier média"}  # a namespace name the table (of December 2021) does not have
    assert clean_wikitext("A [[Fichier média:x.png]] B", link_prefixes("fr", renamed)) == "A  B"
    assert clean_wikitext("A [[Fichier média:x.png]] B", link_prefixes("fr", renamed, reference=True)) == \
        "A Fichier média:x.png B"


# ------------------------------------------------------------------ reading dumps


def test_language_from_option_dbname_host_or_file_name():
    assert SiteInfo("be_x_oldwiki", "https://be-tarask.wikipedia.org/wiki/A").language() == "be-x-old"
    assert SiteInfo("be_x_oldwiki", "https://be-tarask.wikipedia.org/wiki/A").language("host") == "be-tarask"
    assert SiteInfo(None, "https://simple.wikipedia.org/wiki/Main_Page").language() == "simple"
    site = SiteInfo("samplewiki", "https://en.wikipedia.org/wiki/Main_Page")
    assert dump_context("x.xml", site, REF).lang == "sample"
    default = dump_context("x.xml", site, DEFAULT)
    assert (default.lang, default.wiki) == ("en", "samplewiki")
    assert dump_context("x.xml", site, SourceOptions(lang="fo")).lang == "fo"
    assert dump_context("dewiki-20240101-pages-articles.xml.bz2", SiteInfo(), DEFAULT).lang == "de"
    with pytest.raises(InputError, match="give it with --lang"):
        dump_context("export.xml", SiteInfo(), DEFAULT)


def test_timestamp_is_the_dump_date_in_default_mode_and_the_reference_constant_otherwise(tmp_path):
    path = tmp_path / "fowiki-20240601-pages-articles.xml.bz2"
    path.write_bytes(bz2.compress(_dump_xml([_page_xml("Tórshavn", 0, 7, ["'''Tórshavn''' er høvuðsstaður."])],
                                            dbname="fowiki", base="https://fo.wikipedia.org/wiki/A").encode()))
    (default,), (ref,) = _read(path, DEFAULT), _read(path, REF)
    assert default.meta == {"title": "Tórshavn", "url": "https://fo.wikipedia.org/wiki/T%C3%B3rshavn",
                            "language": "fo", "timestamp": "20240601"}
    assert ref.meta["timestamp"] == "20230320" and ref.id == default.id == "fowiki/7"
    assert ref.text == default.text == "Tórshavn er høvuðsstaður."


def test_history_dump_first_revision_in_reference_mode_newest_otherwise(tmp_path):
    path = tmp_path / "history.xml"
    path.write_text(_dump_xml([_page_xml("Page", 0, 1, ["Old text.", None, "New text."]),
                               _page_xml("Blanked", 0, 2, ["Some text.", None]),
                               _page_xml("Redirect", 0, 3, ["#REDIRECT [[Page]]"], redirect=True)]), "utf-8")
    ref, default = _read(path, REF), _read(path, DEFAULT)
    assert [(r.id, r.text) for r in ref if isinstance(r, SourceRecord)] == [("enwiki/1", "Old text."),
                                                                            ("enwiki/2", "Some text.")]
    assert [r.text for r in default if isinstance(r, SourceRecord)] == ["New text."]
    assert [(s.reason, s.location) for s in default if not isinstance(s, SourceRecord)] == [
        ("no_text", "history.xml: page 1 (id 2, 'Blanked')"), ("redirect", "history.xml: page 2 (id 3, 'Redirect')")]


def _multistream(xml: str, pages_per_stream: int = 2) -> bytes:
    """A multistream bz2 as Wikimedia writes it: the header, then a few pages per bz2 stream,
    then the closing tag, each stream compressed on its own and concatenated."""
    head, _, rest = xml.partition("<page>")
    body, _, _tail = ("<page>" + rest).rpartition("</mediawiki>")
    pages = [p for p in body.split("<page>") if p.strip()]
    streams = [head] + ["".join("<page>" + p for p in pages[i:i + pages_per_stream])
                        for i in range(0, len(pages), pages_per_stream)] + ["</mediawiki>\n"]
    return b"".join(bz2.compress(s.encode("utf-8")) for s in streams)


def test_multistream_gzip_and_plain_xml_read_as_the_bz2_dump(golden, tmp_path):
    """A real dump excerpt written as a multistream bz2 (6 streams), gzip and plain XML, in a
    folder with a multistream index (not a dump): the same records as the bz2 file."""
    src = DUMPS / "enwiki-articles-partial.xml.bz2"
    xml = bz2.decompress(src.read_bytes()).decode("utf-8")
    folder = tmp_path / "parts"
    folder.mkdir()
    multi = folder / "enwiki-20240601-pages-articles-multistream1.xml-p1p41242.bz2"
    multi.write_bytes(_multistream(xml))
    index = folder / "enwiki-20240601-pages-articles-multistream-index1.txt-p1p41242.bz2"
    index.write_bytes(bz2.compress(b"1:2:A\n"))
    (folder / "sub").mkdir()
    with gzip.open(folder / "sub" / "copy.xml.gz", "wt", encoding="utf-8") as fh:
        fh.write(xml)
    (folder / "plain.xml").write_text(xml, "utf-8")
    assert xml.count("<page>") == 11 and len(bz2.decompress(multi.read_bytes())) == len(xml.encode())
    res = run_source(SourceConfig("wikipedia", [str(folder)], str(tmp_path / "out"), reference="rp_v1", workers=1,
                                  progress=False))
    assert sorted(res.shards_written) == ["enwiki-20240601-pages-articles-multistream1.xml-p1p41242.bz2",
                                          "plain.xml", "sub/copy.xml.gz"]
    want = [r for r in _jsonl(golden / "wikipedia_dev.jsonl.gz")
            if r["meta"]["title"] in {p.title for p in _pages(src)}]
    assert len(want) == 4
    for shard in ("enwiki-20240601-pages-articles-multistream1.xml-p1p41242.jsonl.gz", "plain.jsonl.gz",
                  "sub/copy.jsonl.gz"):
        assert sorted(map(_as_reference, _jsonl(tmp_path / "out" / shard))) == sorted(map(_as_reference, want))


def _pages(path: Path) -> list[Page]:
    with open_dump(str(path)) as fh:
        return [p for p in iter_dump(fh) if isinstance(p, Page)]


def test_a_folder_without_dumps_and_a_file_that_is_not_one_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("not a dump")
    with pytest.raises(SourceError, match="not a MediaWiki XML dump"):
        get_family("wikipedia").units([str(tmp_path / "notes.txt")], DEFAULT)
    with pytest.raises(SourceError, match="no such file"):
        get_family("wikipedia").units([str(tmp_path / "missing.xml.bz2")], DEFAULT)
    named = tmp_path / "export"  # a dump without a dump's name is told by its content
    named.write_bytes(bz2.compress(_dump_xml([_page_xml("A", 0, 1, ["Text."])]).encode()))
    assert [u.rel for u in get_family("wikipedia").units([str(named)], DEFAULT)] == ["export"]


def test_broken_xml_fails_located_or_is_skipped_after_the_pages_before_it(tmp_path, capsys):
    good = "".join(_page_xml(f"Page {i}", 0, i, [f"Text {i}."]) for i in range(3))
    path = tmp_path / "broken.xml.bz2"
    path.write_bytes(bz2.compress(_dump_xml([good, "<page><title>Bad</title><ns>0</ns></revision>"]).encode()))
    assert main(["source", "wikipedia", str(path), "-o", str(tmp_path / "fail"), "--workers", "1", "-q"]) != 0
    err = capsys.readouterr().err
    assert f"error: {path}:6:36: malformed XML (mismatched tag" in err and "Traceback" not in err
    res = run_source(SourceConfig("wikipedia", [str(path)], str(tmp_path / "skip"), on_error="skip", workers=1,
                                  progress=False))
    assert res.documents == 3 and res.left_out == {"bad_xml": 1}  # streamed: the pages before the damage
    truncated = tmp_path / "truncated.xml.bz2"
    truncated.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(InputError, match="cannot decompress"):
        _read(truncated, DEFAULT)
    (skip,) = _read(truncated, SourceOptions(on_error="skip"))
    assert skip.reason == "bad_xml" and skip.location == str(truncated)
    not_wiki = tmp_path / "feed.xml"
    not_wiki.write_text("<rss><channel/></rss>")
    with pytest.raises(InputError, match="not a MediaWiki export"):
        _read(not_wiki, DEFAULT)


def test_a_page_without_title_is_located(tmp_path):
    path = tmp_path / "odd.xml"
    path.write_text(_dump_xml([_page_xml("A", 0, 1, ["Text."]).replace("<title>A</title>", "")]), "utf-8")
    with pytest.raises(InputError, match=r"odd\.xml: page 0 \(id 1, None\): a <page> without a <title>"):
        _read(path, DEFAULT)
    (skip,) = _read(path, SourceOptions(on_error="skip"))
    assert skip.reason == "bad_page"


def test_parquet_output_has_meta_as_a_struct(tmp_path):
    path = tmp_path / "simplewiki-20240101-pages-articles.xml"
    path.write_text(_dump_xml([_page_xml("Moon", 0, 5, ["The '''Moon''' orbits [[Earth]]."])], dbname="simplewiki",
                              base="https://simple.wikipedia.org/wiki/Main_Page"), "utf-8")
    run_source(SourceConfig("wikipedia", [str(path)], str(tmp_path / "out"), format="parquet", workers=1,
                            progress=False))
    (row,) = pq.read_table(tmp_path / "out" / "simplewiki-20240101-pages-articles.parquet").to_pylist()
    assert row == {"id": "simplewiki/5", "text": "The Moon orbits Earth.",
                   "meta": {"title": "Moon", "url": "https://simple.wikipedia.org/wiki/Moon", "language": "simple",
                            "timestamp": "20240101"}}


_MEMORY = """
import resource, sys
from textsieve.dumps.wiki_xml import Page, iter_dump, open_dump
pages = chars = 0
with open_dump(sys.argv[1]) as fh:
    for item in iter_dump(fh):
        if isinstance(item, Page):
            pages += 1
            chars += len(item.last_text or "")
print(pages, chars, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _big_dump(path: Path, pages: int, revisions: int) -> int:
    """A gzip dump of `pages` 4 kB pages and one page with `revisions` 20 kB revisions, written
    as a stream (the test process does not hold it either); returns its XML's length."""
    para = "The quick brown fox jumps over the lazy dog, again and again. " * 64
    size = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        size += fh.write(_dump_xml([]).replace("</mediawiki>\n", ""))
        for i in range(pages):
            size += fh.write(_page_xml(f"Page {i}", 0, i + 1, [f"{i} {para}"]))
        size += fh.write("<page><title>History</title><ns>0</ns><id>999999</id>")
        for k in range(revisions):
            size += fh.write(f'<revision><id>{k}</id><text xml:space="preserve">{k} {para * 5}</text></revision>')
        size += fh.write("</page></mediawiki>\n")
    return size


def test_memory_stays_flat_in_the_dump_size(tmp_path):
    """Peak memory of a subprocess reading a 0.6 MB dump and one 100x larger (a 100 MB dump whose
    history page alone holds 40 MB of revisions) differs by far less than the dump."""
    peaks = {}
    for name, pages, revisions in (("small", 100, 10), ("large", 15000, 2000)):
        path = tmp_path / f"{name}.xml.gz"
        size = _big_dump(path, pages, revisions)
        out = subprocess.run([sys.executable, "-c", _MEMORY, str(path)], capture_output=True, text=True, check=True)
        n, chars, peak_kb = map(int, out.stdout.split())
        assert n == pages + 1 and chars > pages * 3900
        peaks[name] = (size, peak_kb * 1024)
    assert peaks["large"][0] > 100 * peaks["small"][0] and peaks["large"][0] > 100_000_000
    assert peaks["large"][1] - peaks["small"][1] < 25_000_000
