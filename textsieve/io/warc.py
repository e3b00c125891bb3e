"""WARC, WET and legacy ARC readers (warcio).

- WET: ``conversion`` records. text = the payload decoded as UTF-8 (invalid bytes replaced),
  url = WARC-Target-URI.
- WARC / ARC: ``response`` records. text = the HTTP body (transfer and content encodings removed)
  decoded as UTF-8 with invalid bytes replaced, taken as is: no HTML extraction happens here.
- Other record types (warcinfo, request, metadata, revisit, ...) are skipped silently.
- id = the WARC-Record-ID without its angle brackets, e.g. ``urn:uuid:ba729a40-...``: lossless
  and still a valid URI. ARC records have no record id, so theirs is ``f"{rel}/{row}"``; warcio's
  ARC-to-WARC conversion is not used because it invents a random id on every read.
- row = the 0-based index of the record among *all* records of the file, so ``record N`` in a
  message and `Document.row` point at the same record.
- meta: ``warc_date`` and ``content_type`` (the HTTP Content-Type for responses), plus
  ``content_language`` from WARC-Identified-Content-Language when a WET record has it.

warcio does not raise on a truncated or damaged file: it prints to stderr and ends the record
early. We detect that by checking that each record body was read to its declared length.
(A file cut exactly between records, or inside the final gzip trailer, looks complete; the
records it holds are then all intact.)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from ..document import Document

if TYPE_CHECKING:
    from .readers import ShardReader

_WARCIO_ERRORS = (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, zlib.error, ValueError)
_DRAIN = 1 << 16


def read_warc(ctx: ShardReader) -> Iterator[Document]:
    return _read_archive(ctx, "response")


def read_wet(ctx: ShardReader) -> Iterator[Document]:
    return _read_archive(ctx, "conversion")


def _read_archive(ctx: ShardReader, wanted: str) -> Iterator[Document]:
    shard = ctx.shard
    with fsspec.open(shard.path, "rb") as raw:
        records = ArchiveIterator(raw, arc2warc=False)
        row = 0
        while True:
            location = f"{shard.path}:record {row}"
            try:
                record = next(records, None)
                if record is None:
                    break
                body = record.content_stream().read() if record.rec_type == wanted else None
                _drain(record.raw_stream)
            except _WARCIO_ERRORS as exc:
                ctx.bad(location, f"cannot parse archive record ({exc}){_after(row - 1)}")
                return
            except (AttributeError, TypeError) as exc:
                # warcio parses a response/request's HTTP headers from its target URI and fails
                # with an AttributeError when the record has no (or an empty) WARC-Target-URI
                ctx.bad(location, f"archive record without a usable WARC-Target-URI ({exc}){_after(row - 1)}")
                return
            if record.format == "arc" and not str(record.rec_headers.get_header("length") or "").isdigit():
                # warcio takes any 5-word first line for an ARC header; a real one ends in a length.
                ctx.bad(location,
                        f"not a WARC or ARC record (header line: {_header_line(record)!r}){_after(row - 1)}")
                return
            missing = getattr(record.raw_stream, "limit", 0)
            if missing > 0:
                ctx.bad(location,
                        f"record is truncated ({missing} bytes missing): the file is cut or corrupt{_after(row - 1)}")
                return
            try:
                ctx.bytes_read = raw.tell()
            except (OSError, ValueError):
                pass
            if body is not None:
                yield _document(shard.rel, row, record, body)
            row += 1


def _after(last_good_row: int) -> str:
    if last_good_row < 0:
        return "; no complete record before it"
    return f"; the last complete record is record {last_good_row}"


def _header_line(record: Any) -> str:
    headers = record.rec_headers
    return " ".join(str(v) for _, v in headers.headers)[:120]


def _drain(stream: Any) -> None:
    """Read what is left of the record, so its declared length can be checked."""
    while stream.read(_DRAIN):
        pass


def _document(rel: str, row: int, record: Any, body: bytes) -> Document:
    text = body.decode("utf-8", errors="replace")
    headers = record.rec_headers
    meta: dict[str, Any] = {}
    if record.format == "arc":
        doc_id, url = f"{rel}/{row}", headers.get_header("uri")
        meta["warc_date"] = headers.get_header("archive-date")
        meta["content_type"] = headers.get_header("content-type")
    else:
        record_id = headers.get_header("WARC-Record-ID")
        doc_id = record_id.strip().strip("<>") if record_id else f"{rel}/{row}"
        url = headers.get_header("WARC-Target-URI")
        meta["warc_date"] = headers.get_header("WARC-Date")
        http = record.http_headers
        meta["content_type"] = http.get_header("Content-Type") if http else headers.get_header("Content-Type")
        language = headers.get_header("WARC-Identified-Content-Language")
        if language:
            meta["content_language"] = language
    return Document(doc_id, text, row, None, url, meta)
