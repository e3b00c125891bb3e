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
    oversize: bool = False  # larger than the caller's cap: `body` is empty (never fully inflated)


def page_id(rel: str) -> str:
    """The document id of page file `rel`: its rel path without the HTML suffix."""
    low = rel.lower()
    for suffix in HTML_SUFFIXES:
        if low.endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def html_pages(ctx: ShardReader, cap: int | None = None) -> Iterator[HtmlFile]:
    """The page files of html shard `ctx.shard`, in name order; a damaged `.gz` is a bad record.
    A page larger than `cap` bytes (after decompression, which stops there: a gzip bomb is never
    inflated whole) comes as an `oversize` HtmlFile without its body."""
    shard: Shard = ctx.shard
    for row, member in enumerate(shard.members):
        with fsspec.open(member, "rb") as fh:
            data = fh.read()
        ctx.bytes_read += len(data)
        pid = page_id(shard.member_rel(row))
        if member.lower().endswith(".gz"):
            try:
                data, over = _gunzip(data, cap)
            except (OSError, EOFError, zlib.error) as exc:
                ctx.bad(member, f"cannot decompress the gzip file ({exc})")
                continue
            if over:
                yield HtmlFile(pid, row, member, b"", oversize=True)
                continue
        if cap is not None and len(data) > cap:
            yield HtmlFile(pid, row, member, b"", oversize=True)
            continue
        if not doc_size_ok(ctx, member, len(data)):  # io.limits: --max-doc-bytes
            continue
        yield HtmlFile(pid, row, member, data)


def _gunzip(data: bytes, cap: int | None) -> tuple[bytes, bool]:
    """(the file's bytes, whether they exceed `cap`), inflating no more than `cap` + 1 bytes;
    concatenated members are read in turn, and a cut or damaged file raises."""
    if cap is None:
        return gzip.decompress(data), False
    out: list[bytes] = []
    size = 0
    while data:
        d = zlib.decompressobj(31)
        chunk = d.decompress(data, cap + 1 - size)
        size += len(chunk)
        out.append(chunk)
        if size > cap:
            return b"", True
        if not d.eof:
            if d.unconsumed_tail:  # output limit reached exactly at cap: one more byte means oversize
                return b"", True
            raise EOFError("the gzip file is cut (its last member has no end)")
        data = d.unused_data
    return b"".join(out), False


def read_html(ctx: ShardReader) -> Iterator[Document]:
    """An html shard as documents of markup (see the module doc)."""
    for page in html_pages(ctx):
        yield Document(page.id, page.body.decode("utf-8", errors="replace"), page.row,
                       meta={"content_type": "text/html"})
