"""The `wikipedia` source family: MediaWiki XML dumps to articles as plain text.

RedPajama-1T took Wikipedia through the Hugging Face `wikipedia` builder (rpv1-sources spec, 4):
every page of the main namespace that is not a redirect and has text, its wikitext cleaned with
mwparserfromhell (`wiki_clean`), written as `{text, meta: {title, url, language, timestamp}}`.
This family reads the dumps as they come from dumps.wikimedia.org, `pages-articles` in any
language, bz2 (multistream too), gzip or plain XML, streaming (`wiki_xml`), and makes the same
page decisions in both modes; the reference has no per-record filter beyond them.

With `--reference rp_v1` the records are the reference's: the first revision's text, the media
and category names of the builder's tables, mwparserfromhell 0.6.5's nesting limit, the dump
date the reference ran (`20230320`) as timestamp. The default mode differs where the reference
was wrong for what users read (docs/sources.md, Wikipedia): a history dump's newest revision,
the dump's own date, the dump's own namespace names besides the table's. Both modes keep the
page id in the record id (`enwiki/12345`), which the reference dropped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import fsspec
import pyarrow as pa

from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.dumps.wiki_clean import (
    REFERENCE_MAX_DEPTH,
    LinkPrefixes,
    ParserError,
    clean_wikitext,
    installed_max_depth,
    link_prefixes,
    page_url,
)
from textsieve.dumps.wiki_xml import (
    DUMP_FILE,
    DUMP_NAME,
    DumpFormatError,
    Page,
    SiteInfo,
    dump_date,
    iter_dump,
    open_dump,
)
from textsieve.io.errors import InputError

#: the dump date RedPajama-1T ran (`load_dataset("wikipedia", date="20230320")`), its timestamp
REFERENCE_DATE = "20230320"
#: the meta fields, in the reference's order
META_FIELDS = ("title", "url", "language", "timestamp")
META_SCHEMA = pa.struct([(name, pa.string()) for name in META_FIELDS])
#: page decisions as the golden `wikipedia_dev_pages` names them (rpv1-sources spec, 4.2-4.3)
GOLDEN_DECISIONS = {None: "kept", "namespace": "dropped:namespace", "redirect": "dropped:redirect_or_no_text",
                    "no_text": "dropped:redirect_or_no_text",
                    "empty_after_cleaning": "dropped:empty_after_cleaning_or_parse_error",
                    "parse_error": "dropped:empty_after_cleaning_or_parse_error"}
_SNIFF = 4096  # decompressed bytes read to tell a MediaWiki export by its content


@dataclass(frozen=True)
class DumpContext:
    """What every page of one dump is cleaned and labelled with."""

    lang: str
    prefixes: LinkPrefixes
    timestamp: str
    wiki: str  # the wiki's database name (`enwiki`, `be_x_oldwiki`): the record ids' prefix


def dump_context(unit_name: str, site: SiteInfo, opts: SourceOptions) -> DumpContext:
    """The language (`--lang`, else the siteinfo, else the file name), link prefixes, timestamp
    and database name of a dump. Reference mode names a wiki by its database name, as the builder's
    language codes do (`be-x-old`); the default mode by its site's host (`be-tarask`)."""
    lang = opts.lang or site.language(prefer="dbname" if opts.rp_v1 else "host")
    if not lang:
        m = DUMP_NAME.match(unit_name.rsplit("/", 1)[-1])
        lang = m.group("db").replace("_", "-") if m else None
    if not lang:
        raise InputError.at(unit_name, "cannot tell the wiki's language (no <dbname> or Wikipedia <base> in its "
                                       "<siteinfo>, no `{lang}wiki-` file name); give it with --lang")
    stamp = REFERENCE_DATE if opts.rp_v1 else (dump_date(unit_name) or REFERENCE_DATE)
    wiki = site.dbname or lang.replace("-", "_") + "wiki"
    return DumpContext(lang, link_prefixes(lang, site.namespaces, reference=opts.rp_v1), stamp, wiki)


def page_reason(page: Page, rp_v1: bool) -> str | None:
    """Why the page is not an article (None: it is one): not the main namespace, a redirect, or
    no text in the revision read (the first in reference mode, the newest otherwise)."""
    if page.ns != "0":
        return "namespace"
    if page.redirect:
        return "redirect"
    if (page.first_text if rp_v1 else page.last_text) is None:
        return "no_text"
    return None


def clean_page(page: Page, ctx: DumpContext, rp_v1: bool) -> tuple[str | None, str]:
    """(reason the page is left out, or None; its cleaned text)."""
    why = page_reason(page, rp_v1)
    if why:
        return why, ""
    raw = page.first_text if rp_v1 else page.last_text
    try:
        text = clean_wikitext(raw or "", ctx.prefixes, max_depth=REFERENCE_MAX_DEPTH if rp_v1 else None)
    except ParserError:
        return "parse_error", ""
    return (None, text) if text else ("empty_after_cleaning", "")


def page_record(page: Page, text: str, ctx: DumpContext, unit_name: str) -> SourceRecord:
    """The record of a kept page: id `{wiki}/{page id}`, the reference's meta fields."""
    title = page.title or ""
    rid = f"{ctx.wiki}/{page.id}" if page.id else f"{ctx.wiki}/{unit_name}#{page.index}"
    return SourceRecord(rid, text, {"title": title, "url": page_url(ctx.lang, title), "language": ctx.lang,
                                    "timestamp": ctx.timestamp})


def _url(fs: Any, path: str) -> str:
    """What the worker opens: a local path as the user gave it (errors name it so), else a URL."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return path if "file" in protocols else fs.unstrip_protocol(path)


def _is_dump(fs: Any, path: str) -> bool:
    if DUMP_FILE.search(path):
        return True
    try:
        with open_dump(_url(fs, path)) as fh:
            return b"<mediawiki" in fh.read(_SNIFF)
    except (OSError, EOFError, ValueError):
        return False


class WikipediaFamily(SourceFamily):
    name = "wikipedia"
    help = "MediaWiki XML dumps (pages-articles, multistream; .xml, .xml.bz2, .xml.gz) in any language"
    reasons = ("namespace", "redirect", "no_text", "empty_after_cleaning", "parse_error", "bad_page", "bad_xml")
    reference_reasons = ()
    meta_schema = META_SCHEMA
    version = "1"

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        """Dump files in the order given; a folder's dump files (`*.xml`, `*.xml.bz2`,
        `*.xml.gz`, multistream parts), sorted; globs expanded and sorted."""
        out: list[Unit] = []
        for raw in inputs:
            fs, path = fsspec.core.url_to_fs(raw)
            path = path.rstrip("/") or path
            if fs.isdir(path):
                files = sorted(p for p in fs.find(path) if DUMP_FILE.search(p))
                out += [Unit(_url(fs, p), p[len(path):].lstrip("/"), int(fs.size(p))) for p in files]
                continue
            files = sorted(fs.glob(path)) if any(c in path for c in "*?[") else [path]
            if not files or not all(fs.isfile(p) for p in files):
                raise SourceError(f"wikipedia: {raw}: no such file or folder")
            for p in files:
                if not _is_dump(fs, p):
                    raise SourceError(f"wikipedia: {p}: not a MediaWiki XML dump (.xml, .xml.bz2 or .xml.gz "
                                      "holding <mediawiki>)")
                out.append(Unit(_url(fs, p), p.rsplit("/", 1)[-1], int(fs.size(p))))
        return out

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        ctx: DumpContext | None = None
        try:
            with open_dump(unit.path) as fh:
                for item in iter_dump(fh):
                    if isinstance(item, SiteInfo):
                        ctx = dump_context(unit.rel, item, opts)
                        continue
                    ctx = ctx or dump_context(unit.rel, SiteInfo(), opts)
                    yield from self._page(item, ctx, unit, opts)
        except ET.ParseError as exc:
            line, col = getattr(exc, "position", (0, 0))
            yield from self._broken(unit, opts, f"{unit.path}:{line}:{col}", f"malformed XML ({exc})")
        except DumpFormatError as exc:
            yield from self._broken(unit, opts, unit.path, str(exc))
        except (OSError, EOFError) as exc:  # a damaged or truncated bz2/gzip file
            yield from self._broken(unit, opts, unit.path, f"cannot decompress ({exc})")

    def _page(self, page: Page, ctx: DumpContext, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        if page.title is None and page.ns == "0":
            if opts.on_error == "fail":
                raise InputError.at(page.where(unit.path), "a <page> without a <title>")
            yield Skip("bad_page", page.where(unit.rel), "no <title>")
            return
        why, text = clean_page(page, ctx, opts.rp_v1)
        if why:
            yield Skip(why, page.where(unit.rel))
            return
        yield page_record(page, text, ctx, unit.rel)

    @staticmethod
    def _broken(unit: Unit, opts: SourceOptions, where: str, reason: str) -> Iterator[Skip]:
        """The rest of a dump that cannot be read: an error naming the place, or one counted skip."""
        if opts.on_error == "fail":
            raise InputError.at(where, reason)
        yield Skip("bad_xml", where, reason + "; the rest of the file is not read")

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        """The parser's version: its tree decides the text."""
        try:
            parser = version("mwparserfromhell")
        except PackageNotFoundError:  # pragma: no cover - an unpackaged checkout
            parser = "unknown"
        return {"mwparserfromhell": parser, "max_depth": installed_max_depth()}


register_family(WikipediaFamily())
