"""Streaming reader of MediaWiki XML export dumps (`pages-articles`, multistream, history).

Why a reader of its own: a Wikipedia dump is tens of gigabytes of XML in bz2, so it is parsed
as a stream (`xml.etree.ElementTree.iterparse`), one `<page>` at a time, and every element is
dropped once read: the root's children after each page, and each `<revision>` as soon as its
text is taken, so a history dump's page with thousands of revisions holds two texts, not all
of them. Memory stays flat in the dump size (tested on a generated dump). The compression is
told by the file's first bytes, not its name: bz2 (also multistream: many bz2 streams one after
another, which `bz2.BZ2File` reads in sequence), gzip, or plain XML.

What it yields is what the `wikipedia` family decides on: the `<siteinfo>` (database name, base
URL, namespace names) once, then per page its title, namespace, page id, whether it has a
`<redirect>` child, and the text of its first and of its last revision (RedPajama-1T's builder
reads the first, rpv1-sources spec 4.2; a history dump's newest is the last).
"""

from __future__ import annotations

import bz2
import gzip
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, cast

import fsspec

#: a dump's file name: `{db}wiki-{YYYYMMDD}-...` (`enwiki-20230320-pages-articles-multistream1.xml-p1p41242.bz2`)
DUMP_NAME = re.compile(r"^(?P<db>[a-z][a-z0-9_]*?)wiki-(?P<date>(?:19|20)\d{6})-")
#: what a dump file is called: `.xml`, `.xml.bz2`, `.xml.gz`, or a multistream part `.xml-p1p41242.bz2`
DUMP_FILE = re.compile(r"\.xml(?:-p\d+p\d+)?(?:\.bz2|\.gz)?$", re.IGNORECASE)


class DumpFormatError(ValueError):
    """The file is not a MediaWiki export (or not one this reader understands)."""


@dataclass
class SiteInfo:
    """The dump's `<siteinfo>`: where its pages come from and what its namespaces are called."""

    dbname: str | None = None  # "enwiki", "be_x_oldwiki"
    base: str | None = None  # "https://en.wikipedia.org/wiki/Main_Page"
    namespaces: dict[int, str] = field(default_factory=dict)  # key -> name ("" for the main one)

    def language(self, prefer: str = "dbname") -> str | None:
        """The Wikipedia language code: from the database name (`be_x_oldwiki` -> `be-x-old`, the
        code of the dump's folder on dumps.wikimedia.org) or the base URL's host (`be-tarask`
        for the same wiki), whichever `prefer` names first; None when neither tells."""
        by_db = None
        if self.dbname and self.dbname.endswith("wiki") and len(self.dbname) > 4:
            by_db = self.dbname[:-4].replace("_", "-")
        by_host = None
        host = urllib.parse.urlsplit(self.base or "").hostname or ""
        if host.endswith(".wikipedia.org") and host.count(".") == 2:
            by_host = host.split(".")[0]
        return (by_db or by_host) if prefer == "dbname" else (by_host or by_db)


@dataclass
class Page:
    """One `<page>`: what the family's page decision reads."""

    index: int  # 0-based position among the dump's pages
    title: str | None
    ns: str | None  # as written ("0" is the main namespace)
    id: str | None  # the page id (not a revision id)
    redirect: bool  # a direct <redirect> child
    first_text: str | None  # text of the first revision that has a <text> (None: none, or empty)
    last_text: str | None  # text of the last revision
    revisions: int = 0

    def where(self, rel: str) -> str:
        return f"{rel}: page {self.index} (id {self.id}, {self.title!r})"


@contextmanager
def open_dump(path: str) -> Iterator[IO[bytes]]:
    """The dump's XML bytes, decompressed as its first bytes say (bz2, gzip or none)."""
    with fsspec.open(path, "rb") as raw:
        head = raw.read(3)
        raw.seek(0)
        if head == b"BZh":
            with bz2.BZ2File(raw) as fh:
                yield fh
        elif head[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw) as gz:
                yield cast(IO[bytes], gz)
        else:
            yield raw


def dump_date(name: str) -> str | None:
    """The dump date in a Wikimedia dump's file name (`enwiki-20230320-...` -> "20230320")."""
    m = DUMP_NAME.match(name.rsplit("/", 1)[-1])
    return m.group("date") if m else None


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _siteinfo(elem: ET.Element, ns: str) -> SiteInfo:
    info = SiteInfo(dbname=elem.findtext(f"{ns}dbname"), base=elem.findtext(f"{ns}base"))
    for item in elem.iterfind(f"{ns}namespaces/{ns}namespace"):
        try:
            info.namespaces[int(item.get("key", ""))] = item.text or ""
        except ValueError:
            continue
    return info


def iter_dump(stream: IO[bytes]) -> Iterator[SiteInfo | Page]:
    """The siteinfo (when the dump has one) and then every page, in file order.

    Raises `ET.ParseError` (with `.position`) for malformed XML and `DumpFormatError` when the
    root is not a MediaWiki export; decompression errors (`OSError`, `EOFError`) pass through.
    """
    root: ET.Element | None = None
    page: ET.Element | None = None
    depth = 0
    page_depth = -1
    index = 0
    first: str | None = None
    last: str | None = None
    have_first = False
    revisions = 0
    for event, elem in ET.iterparse(stream, events=("start", "end")):
        name = _local(elem.tag)
        if event == "start":
            depth += 1
            if root is None:
                root = elem
                if name != "mediawiki":
                    raise DumpFormatError(f"the root element is <{name}>, not a MediaWiki export's <mediawiki>")
            elif name == "page" and page is None:
                page, page_depth = elem, depth
                first = last = None
                have_first = False
                revisions = 0
            continue
        depth -= 1
        ns = elem.tag[: -len(name)] if isinstance(elem.tag, str) else ""
        if name == "revision" and page is not None and depth == page_depth:
            text_elem = elem.find(f"{ns}text")
            if text_elem is not None:
                if not have_first:
                    first, have_first = text_elem.text, True
                last = text_elem.text
            revisions += 1
            page.remove(elem)  # a history dump's earlier revisions are not kept
        elif name == "page" and page is not None and elem is page:
            yield Page(index, page.findtext(f"{ns}title"), page.findtext(f"{ns}ns"), page.findtext(f"{ns}id"),
                       page.find(f"{ns}redirect") is not None, first, last, revisions)
            index += 1
            page = None
            if root is not None:
                root.clear()
        elif name == "siteinfo" and page is None and root is not None:
            yield _siteinfo(elem, ns)
            root.clear()
