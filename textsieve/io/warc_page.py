"""`Page`, one archived HTTP response as bytes, and undoing its content coding: shared by the
WARC page readers (`warc_pages`, `warc_lenient`), which `extract` reads pages through."""

from __future__ import annotations

import zlib
from dataclasses import dataclass


@dataclass
class Page:
    """One archived HTTP response, as bytes.

    `body` is the HTTP payload with its transfer and content encodings removed. When a
    declared content encoding cannot be undone (a broken gzip stream from the server, say),
    `body` holds the payload as stored and `body_error` says why: the record itself is intact,
    so it is not a bad record, but its bytes are not the page's."""

    id: str  # WARC-Record-ID without <>; ARC: f"{rel}/{row}"
    row: int  # index of the record among all records of the file
    url: str | None
    date: str | None  # WARC-Date (ARC: its archive date)
    content_type: str | None  # the HTTP Content-Type header, charset parameter included
    status: int | None  # the HTTP status; None for a non-HTTP response (dns:, ...)
    body: bytes
    record_offset: int  # byte offset of the record (for .gz: of its gzip member) in the file
    body_error: str | None = None
    oversize: bool = False  # its block is over the reader's cap: passed over, never held (`body` is empty)


def undo_coding(body: bytes, coding: str) -> bytes | None:
    """Undo one content coding FastWARC refused (x-gzip, a truncated stream); None: cannot."""
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(47).decompress(body)
        if coding == "deflate":
            try:
                return zlib.decompressobj(15).decompress(body)
            except zlib.error:
                return zlib.decompressobj(-15).decompress(body)
        if coding == "br":
            import brotli  # type: ignore[import-not-found, import-untyped, unused-ignore]

            return bytes(brotli.decompress(body))
    except Exception:  # noqa: BLE001 - zlib.error, ImportError, brotli's own error type
        return None
    return None


__all__ = ["Page", "undo_coding"]
