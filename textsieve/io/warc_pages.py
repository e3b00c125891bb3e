"""WARC ``response`` records as raw pages (bytes, not text) for the `extract` stage.

`read_pages(ctx)` yields one `Page` per ``response`` record of a WARC file (every record of
an ARC file), with the HTTP payload's transfer and content encodings removed but the bytes
otherwise untouched: charset detection and main-content extraction are the caller's job.

Why not just FastWARC's `ArchiveIterator`: it is fast, but on damage it is silent or gives
up: a truncated record comes back with an empty body, a Content-Length a few bytes off passes
with the page cut or padded, a byte flipped inside a block passes, and a gzip error, a
Content-Length far too large or garbage between records end the iteration with an `OSError`
that names no record, with no way to resume. So (`_fast_pages`) FastWARC reads a record only
while the record proves itself intact: its SHA-1 ``WARC-Block-Digest`` (every Common Crawl
record has one) is checked by FastWARC in C, which catches a wrong length, a cut and a
flipped byte alike. Anything else (no digest, a mismatch, a FastWARC error, an HTTP message
that does not parse or decode, the end of the file) hands over to the checked framing of
`textsieve.io.warc_frames` from that record on (`_checked_pages`), which locates and reports
the problem, resynchronises, and hands back to FastWARC after the next intact record:

- ``.warc.gz``: each gzip member is inflated with zlib, which checks its CRC-32 and length;
  a member must hold exactly one record (the WARC recommendation, and what warc.py requires).
- plain ``.warc``: headers, then Content-Length bytes, then the ``\\r\\n\\r\\n`` end.
- every record: the block is exactly Content-Length bytes, followed by ``\\r\\n\\r\\n`` (or
  ``\\n\\n``) and then the next ``WARC/1.x`` line or the end of the member or file; and where it
  has a ``WARC-Block-Digest``, the digest matches. A record whose digest matches is intact
  whatever follows it, so bytes after it are reported as garbage rather than blamed on it.

Each problem is one `ctx.bad(f"{path}:record {row}", reason)` with the byte offset in the
file (of the record's gzip member for .gz). Skip mode resynchronises: on the next gzip member
that inflates to a ``WARC/1.x`` record (.gz), or on the next ``WARC/1.x`` line after the bad
record's start (plain: a Content-Length too large may have swallowed the next header). A
truncated file ends the reading. Garbage (bytes that are no record) is reported under the row
the next record gets and takes no row itself, so rows stay those of the clean file.

The framing lives in `textsieve.io.warc_frames`; ARC files stay on warcio
(`textsieve.io.warc.archive_records`, with its checks).
"""

from __future__ import annotations

import io
import re
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any, Literal

import fsspec

from .warc_frames import GZIP_MAGIC, MAX_HEAD, Frame, gzip_frames, plain_frames
from .warc_lenient import lenient_pages, looks_lenient, sniff
from .warc_page import Page, undo_coding

if TYPE_CHECKING:
    from .readers import ShardReader

_TYPE = re.compile(rb"(?im)^warc-type:[ \t]*([^\r\n]*?)[ \t]*\r?$")

def read_pages(ctx: ShardReader, cap: int | None = None) -> Iterator[Page]:
    """The `Page` of every response record of the WARC (every record of the ARC) `ctx.shard`. A
    record whose block is over `cap` bytes (plus room for its HTTP headers) comes as an
    `oversize` Page without its body: it is passed over, never held, however large it inflates."""
    shard = ctx.shard
    if _is_arc(shard.path):
        yield from _arc_pages(ctx)
        return
    with fsspec.open(shard.path, "rb") as raw:
        gz = raw.read(2) == GZIP_MAGIC[:2]
        lenient = looks_lenient(sniff(raw, gz))
    if lenient:  # WARC/0.18 (ClueWeb09) or bare-\n headers: `warc_lenient`
        yield from lenient_pages(ctx, gz, cap)
        return
    with fsspec.open(shard.path, "rb") as raw:
        offset: int | None = 0
        row = 0
        while offset is not None:
            offset, row, done = yield from _fast_pages(ctx, raw, offset, row, cap)
            if offset is not None:  # a record FastWARC cannot vouch for: the checked framing reads it
                offset, row = yield from _checked_pages(ctx, raw, gz, offset, row, done, cap)


def _fast_pages(ctx: ShardReader, raw: Any, offset: int, row: int,
                cap: int | None = None) -> Generator[Page, None, tuple[int | None, int, int]]:
    """FastWARC's pages from byte `offset` on, while every record proves itself intact; returns
    where the checked framing must take over: (offset, or None at the end of the file; the row
    there; how many frames there were yielded already and are to be passed over).

    A record is vouched for when its SHA-1 WARC-Block-Digest matches its block and its
    Content-Length is the block's length: a wrong Content-Length, a cut or a flipped byte all
    change the block. A record without such a digest, an HTTP message that does not parse or
    decode, and any FastWARC error hand over to the framing, which reports the problem with
    its location (or finds none: a record without a digest is checked there, then FastWARC
    goes on after it)."""
    from fastwarc.warc import ArchiveIterator, WarcHeader, WarcRecordType

    rel = ctx.shard.rel
    raw.seek(offset)
    records = iter(ArchiveIterator(raw, parse_http=False))
    last: int | None = None
    while True:
        try:
            record = next(records, None)
        except OSError:  # a gzip error, a bad header after the last good record, ...
            record = None
        if record is None:
            # FastWARC stopped (an error, or the end of what it takes for a file): the framing
            # reads on from the last record it gave, so a cut member, or garbage it gave up
            # on, is found and located there
            return (offset, row, 0) if last is None else (last, row - 1, 1)
        at = record.stream_pos
        if cap is not None and record.content_length > cap + 2 * MAX_HEAD:  # passed over, not read into memory
            if record.record_type == WarcRecordType.response:
                yield _oversize_page(record.headers.get(WarcHeader.WARC_RECORD_ID),
                                     record.headers.get(WarcHeader.WARC_TARGET_URI),
                                     record.headers.get(WarcHeader.WARC_DATE), rel, row, at)
            last = at
            _progress(ctx, raw)
            row += 1
            continue
        digest = record.headers.get(WarcHeader.WARC_BLOCK_DIGEST) or ""  # enum keys: 20x faster than str
        if digest[:5].lower() != "sha1:":
            return at, row, 0
        try:
            if not record.verify_block_digest(consume=False):
                return at, row, 0
            page = _fast_page(record, rel, row, at) if record.record_type == WarcRecordType.response else None
        except OSError:
            return at, row, 0
        if page is False:
            return at, row, 0
        last = at
        _progress(ctx, raw)
        if isinstance(page, Page):
            yield page
        row += 1


def _checked_pages(ctx: ShardReader, raw: Any, gz: bool, offset: int, row: int, done: int,
                   cap: int | None = None) -> Generator[Page, None, tuple[int | None, int]]:
    """Pages of the checked framing from byte `offset`, up to and including the first intact
    record after the `done` ones passed over; returns where FastWARC can go on (None: the end)."""
    shard = ctx.shard
    raw.seek(offset)
    for frame in gzip_frames(raw, offset, cap) if gz else plain_frames(raw, cap):
        location = f"{shard.path}:record {row}"
        if done:  # the last record FastWARC gave, framed again to find where it ends
            done -= 1
            if frame.problem is not None:  # e.g. its gzip member has no end: the file is cut after it
                ctx.bad(location, frame.problem)
                if frame.stop:
                    return None, row + 1
            row += 1
            continue
        if frame.problem is not None:
            ctx.bad(location, frame.problem)
            row += frame.is_record
            if frame.stop:
                return None, row
            continue
        page = _page(ctx, location, shard.rel, row, frame)
        _progress(ctx, raw)
        if page is not None:
            yield page
        return frame.end, row + 1
    return None, row


def _fast_page(record: Any, rel: str, row: int, offset: int) -> Page | bool:
    """The Page of a verified FastWARC response record; False: leave it to the checked framing."""
    from fastwarc.warc import WarcHeader

    headers = record.headers
    record_id = (record.record_id or "").strip().strip("<>") or f"{rel}/{row}"
    url = (headers.get(WarcHeader.WARC_TARGET_URI) or "").strip().strip("<>") or None
    date = headers.get(WarcHeader.WARC_DATE)
    warc_type = headers.get(WarcHeader.CONTENT_TYPE)
    if not _is_http(warc_type, url):
        return Page(record_id, row, url, date, warc_type, None, record.reader.read(), offset)
    record.parse_http(auto_decode="all")
    if record.http_headers is None or record.http_headers.status_code is None:  # no HTTP head FastWARC can parse
        return False
    status = record.http_headers.status_code
    content_type = record.http_headers.get("Content-Type")
    return Page(record_id, row, url, date, content_type, status, record.reader.read(), offset)


def _oversize_page(record_id: str | None, url: str | None, date: str | None, rel: str, row: int,
                   offset: int) -> Page:
    """The Page of a response over the cap: who it is, no body (extract counts it `too_large`)."""
    return Page((record_id or "").strip().strip("<>") or f"{rel}/{row}", row, (url or "").strip().strip("<>") or None,
                date, None, None, b"", offset, oversize=True)


def _header(head: str, name: str) -> str | None:
    """A WARC header's value from the header block (None when absent)."""
    found = re.search(rf"(?im)^{re.escape(name)}:[ \t]*(.*?)[ \t]*\r?$", head)
    return found.group(1) if found else None


def _is_http(warc_content_type: str | None, url: str | None) -> bool:
    """Whether a response's block is an HTTP message (dns:, whois: ... responses are not)."""
    kind = (warc_content_type or "").strip().lower()
    return kind.startswith("application/http") or not kind and (url or "").lower().startswith("http")


# ------------------------------------------------------------------ a framed record -> Page


def _page(ctx: ShardReader, location: str, rel: str, row: int, frame: Frame) -> Page | None:
    """The Page of a framed response record (None for other record types)."""
    kind = _TYPE.search(frame.head)
    if kind is None or kind.group(1).lower() != b"response":
        return None
    if frame.oversize:
        head = frame.head.decode("utf-8", "replace")
        return _oversize_page(_header(head, "WARC-Record-ID"), _header(head, "WARC-Target-URI"),
                              _header(head, "WARC-Date"), rel, row, frame.offset)
    from fastwarc.warc import ArchiveIterator

    data = frame.head + b"\r\n" + frame.block + b"\r\n\r\n"
    record = next(iter(ArchiveIterator(io.BytesIO(data), parse_http=False, stream_detect=False)), None)
    if record is None:
        ctx.bad(location, f"unreadable WARC record (at byte {frame.offset}): FastWARC cannot parse its headers")
        return None
    headers = record.headers
    record_id = (headers.get("WARC-Record-ID") or "").strip().strip("<>") or f"{rel}/{row}"
    url = (headers.get("WARC-Target-URI") or "").strip().strip("<>") or None
    date = headers.get("WARC-Date")
    if not _is_http(headers.get("Content-Type"), url):  # dns:, whois: ...: the block is the page
        return Page(record_id, row, url, date, headers.get("Content-Type"), None, frame.block, frame.offset)
    status, content_type, body, body_error = _http(data)
    if status is None:
        ctx.bad(location, f"response record (at byte {frame.offset}) whose block does not start with an HTTP "
                          f"status line (found {frame.block[:60]!r})")
        return None
    return Page(record_id, row, url, date, content_type, status, body, frame.offset, body_error)


def _http(data: bytes) -> tuple[int | None, str | None, bytes, str | None]:
    """Status, Content-Type, decoded payload and decoding problem of an HTTP response record."""
    from fastwarc.warc import ArchiveIterator

    error: str | None = None
    modes: tuple[Literal["all", "transfer", "none"], ...] = ("all", "transfer", "none")
    for mode in modes:
        record = next(iter(ArchiveIterator(io.BytesIO(data), parse_http=False, stream_detect=False)))
        try:
            record.parse_http(auto_decode=mode)
            http = record.http_headers
            if http is None or http.status_code is None:  # the block does not start with an HTTP head
                return None, None, b"", None
            status = http.status_code
            body = record.reader.read()
        except OSError as exc:
            error = error or str(exc)
            continue
        content_type = http.get("Content-Type")
        if mode == "all":
            return status, content_type, body, None
        coding = (http.get("Content-Encoding") or "").strip().lower()
        if mode == "transfer" and coding:
            decoded = undo_coding(body, coding)
            if decoded is not None:
                return status, content_type, decoded, None
            if coding not in _CODINGS:  # "Content-Encoding: utf-8" and the like: the bytes are as sent
                return status, content_type, body, None
        return status, content_type, body, f"the HTTP body cannot be decoded ({error}); body is as stored"
    return None, None, b"", None


_CODINGS = ("gzip", "x-gzip", "deflate", "br")


# ------------------------------------------------------------------ ARC (warcio) and helpers


def _arc_pages(ctx: ShardReader) -> Iterator[Page]:
    from .warc import archive_records

    rel = ctx.shard.rel
    for row, record, body, offset in archive_records(ctx, "response"):
        headers = record.rec_headers
        http = record.http_headers
        status = http.get_statuscode() if http is not None else None
        content_type = (http.get_header("Content-Type") if http is not None else None) or \
            headers.get_header("content-type")
        yield Page(f"{rel}/{row}", row, headers.get_header("uri"), headers.get_header("archive-date"), content_type,
                   int(status) if status and str(status).isdigit() else None, body, offset)


def _is_arc(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].split("?", 1)[0].lower()
    return name.endswith((".arc", ".arc.gz"))


def _progress(ctx: ShardReader, raw: Any) -> None:
    try:
        ctx.bytes_read = raw.tell()
    except (OSError, ValueError):
        pass


