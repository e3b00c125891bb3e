"""Raw HTML pages, one per file (`.html`, `.htm`, `.html.gz`): a folder's pages form one shard.

`textsieve extract` reads these pages (`html_pages`) and turns them into documents; the id of a
page is its file's rel path without the HTML suffix (`news/a.html.gz` -> `news/a`), which for the
pages of one folder is the file name, as extraction benchmarks key their pages. `read_html` is the
plain document reader of the format: the page's markup as text (UTF-8, invalid bytes replaced),
for stages that are given HTML files directly. It is there so that no input is refused, but
signals on markup mean little: `annotate` warns and points at `extract`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fsspec

from ..document import Document
from .limits import doc_size_ok

if TYPE_CHECKING:
    from .paths import Shard
    from .readers import ShardReader

HTML_SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")  # longest first


@dataclass(frozen=True)
class HtmlFile:
    """One page file: its document id, row (index in the shard), location and bytes as stored."""

    id: str
    row: int
    path: str
    body: bytes


def page_id(rel: str) -> str:
    """The document id of page file `rel`: its rel path without the HTML suffix."""
    low = rel.lower()
    for suffix in HTML_SUFFIXES:
        if low.endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def html_pages(ctx: ShardReader) -> Iterator[HtmlFile]:
    """The page files of html shard `ctx.shard`, in name order; a damaged `.gz` is a bad record."""
    shard: Shard = ctx.shard
    for row, member in enumerate(shard.members):
        with fsspec.open(member, "rb") as fh:
            data = fh.read()
        ctx.bytes_read += len(data)
        if member.lower().endswith(".gz"):
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError, zlib.error) as exc:
                ctx.bad(member, f"cannot decompress the gzip file ({exc})")
                continue
        if not doc_size_ok(ctx, member, len(data)):  # io.limits: --max-doc-bytes
            continue
        yield HtmlFile(page_id(shard.member_rel(row)), row, member, data)


def read_html(ctx: ShardReader) -> Iterator[Document]:
    """An html shard as documents of markup (see the module doc)."""
    for page in html_pages(ctx):
        yield Document(page.id, page.body.decode("utf-8", errors="replace"), page.row,
                       meta={"content_type": "text/html"})
