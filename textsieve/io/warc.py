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
early. We detect that by checking that each record body was read to its declared length, that
``\r\n\r\n`` follows it (a wrong Content-Length; skip mode reads on from the next record),
that no gzip error was swallowed and that a record's gzip member ends with its CRC-32
(`_CheckedRecords`). (A plain file cut exactly between records looks complete; the records it
holds are then all intact.)
"""

from __future__ import annotations

import io
import logging
import re
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from ..document import Document
from .limits import doc_size_ok

if TYPE_CHECKING:
    from .readers import ShardReader

_WARCIO_ERRORS = (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError, zlib.error, ValueError)
_DRAIN = 1 << 16
log = logging.getLogger("textsieve.io")


def read_warc(ctx: ShardReader) -> Iterator[Document]:
    return _read_archive(ctx, "response")


def read_wet(ctx: ShardReader) -> Iterator[Document]:
    return _read_archive(ctx, "conversion")


def _read_archive(ctx: ShardReader, wanted: str) -> Iterator[Document]:
    rel = ctx.shard.rel
    for row, record, body, _ in archive_records(ctx, wanted):
        # io.limits: --max-doc-bytes, checked on the record's block before it becomes a document
        # (the block was read once; annotating it would take up to 10x its size)
        if doc_size_ok(ctx, f"{ctx.shard.path}:record {row}", len(body)):
            yield _document(rel, row, record, body)


def archive_records(ctx: ShardReader, wanted: str) -> Iterator[tuple[int, Any, bytes, int]]:
    """(row, warcio record, decoded body, byte offset) of each checked `wanted` record of the
    shard; problems go to `ctx.bad`. `textsieve.io.warc_pages` reads ARC files through it."""
    shard = ctx.shard
    with fsspec.open(shard.path, "rb") as raw:
        records = _CheckedRecords(raw)
        row = 0
        while True:
            location = f"{shard.path}:record {row}"
            start = records.offset  # where this record starts (for .gz: its member's offset)
            try:
                records.no_uri = False
                record = next(records, None)
                if record is None:
                    break
                body, oversized = _read_block(record, ctx.options.max_doc_bytes) if record.rec_type == wanted \
                    else (None, 0)
                _drain(record.raw_stream)
                records.read_to_end()  # reads the end-of-record lines now, so they are checked before the yield
            except _WARCIO_ERRORS as exc:
                ctx.bad(location, f"cannot parse archive record ({exc}){_after(row - 1)}")
                return
            except (AttributeError, TypeError) as exc:
                # warcio parses a response/request's HTTP headers from its target URI and fails
                # with an AttributeError when the record has no (or an empty) WARC-Target-URI
                ctx.bad(location, f"archive record without a usable WARC-Target-URI ({exc}){_after(row - 1)}")
                return
            if records.damage is not None:  # a bad CRC or deflate data inside this record's gzip member
                ctx.bad(location, f"corrupt gzip data in this record's gzip member (at byte {start}) "
                                  f"({records.damage}); the rest of the file is not read{_after(row - 1)}")
                return
            if record.format == "arc" and not str(record.rec_headers.get_header("length") or "").isdigit():
                # warcio takes any 5-word first line for an ARC header; a real one ends in a length.
                ctx.bad(location,
                        f"not a WARC or ARC record (header line: {_header_line(record)!r}){_after(row - 1)}")
                return
            missing = getattr(record.raw_stream, "limit", 0)
            if wanted == "conversion" and (missing > 0 or records.bad_end is not None):
                if records.reader.decompressor is not None:  # warcio read on across members: start over here
                    yield from _wet_members(ctx, raw, start, row)
                    return
                recovered = _recover_wet(raw, start, ambiguous_ok=ctx.options.on_error == "skip")
                if recovered is not None:  # a malformed separator or Content-Length: the record is kept
                    block, boundary, note = recovered
                    if note:
                        log.warning("%s: %s", location, note)
                    if record.rec_type == wanted:
                        yield row, record, block, start
                    row += 1
                    if boundary is None:
                        return
                    raw.seek(boundary)  # plain file: go on at the next header
                    records = _CheckedRecords(raw)
                    continue
            if records.cut is not None and missing <= 0:
                ctx.bad(location, f"the gzip member of this record (at byte {start}) {records.cut}, so its content "
                                  f"cannot be verified; the rest of the file is not read{_after(row - 1)}")
                return
            if missing > 0 and not records.more_members(shard.size):
                ctx.bad(location,
                        f"record is truncated ({missing} bytes missing): the file is cut or corrupt{_after(row - 1)}")
                return
            if missing > 0 or records.bad_end is not None:
                found = f"its gzip member ends {missing} bytes early" if missing > 0 else records.bad_end
                ctx.bad(location, f"the block of this record (at byte {start}) does not end where its Content-Length "
                                  f"({record.rec_headers.get_header('Content-Length')}) says: {found}; the "
                                  "Content-Length is wrong or the record is corrupt")
                row += 1  # skip mode: the record is left out, reading goes on at the next record
                if records.reader.decompressor is None:  # plain file: find the next record header
                    resynced = _resync(raw, start)
                    if resynced is None:
                        return
                    records = resynced
                continue
            try:
                ctx.bytes_read = raw.tell()
            except (OSError, ValueError):
                pass
            if oversized:  # over --max-doc-bytes: counted to its end, never held (io.limits)
                doc_size_ok(ctx, location, oversized)
                row += 1
                continue
            if records.no_uri and body is not None:  # a wanted record without a WARC-Target-URI: left out
                ctx.bad(location, f"{record.rec_type} record without a WARC-Target-URI (a required header)")
                row += 1
                continue
            http = record.http_headers if body is not None else None
            if http is not None and not str(http.protocol).upper().startswith("HTTP/"):
                # warcio takes any first line for the status line; a block whose HTTP head was
                # lost (say, a header edit that merged it into the WARC headers) would pass
                ctx.bad(location, f"response record whose block does not start with an HTTP status line "
                                  f"(found {str(http.statusline)[:60]!r})")
                row += 1
                continue
            if body is not None:
                yield row, record, body, start
            row += 1


class _CheckedRecords(ArchiveIterator):
    """warcio's record iterator, plus a check that every WARC record ends with its ``\r\n\r\n``.

    warcio reads a block by its Content-Length and only writes a warning on stderr when what
    follows is not blank: a length a few bytes off passes with truncated or padded text, and a
    larger error is blamed on the next record. Here the end-of-record lines are checked for each
    record (`bad_end` says what was found instead); for a .gz file the rest of the damaged
    record's gzip member is passed over, so the next record is the next member's.
    """

    def __init__(self, fh: Any):
        super().__init__(fh, arc2warc=False)
        self.bad_end: str | None = None
        self.damage: str | None = None  # a gzip error warcio swallowed (it prints it and drops the block)
        self.cut: str | None = None  # how the record's gzip member fails to end right after the record
        reader = self.reader
        swallowing = reader._decompress

        def decompress(data: bytes) -> bytes:
            # warcio takes a failing first block of a member for "not gzip at all"; that test is
            # only meant for the start of the file (num_read counts output across members)
            if reader.decompressor is not None and data and (reader.num_block_read or reader.num_read):
                try:
                    return reader.decompressor.decompress(data)
                except zlib.error as exc:  # warcio: stderr and b"", i.e. a record cut or left corrupt
                    self.damage = str(exc)
                    return b""
            return swallowing(data)  # the file's first block: warcio's test for "not gzip at all" stays

        reader._decompress = decompress
        # warcio parses a response/request/revisit block's HTTP head by its WARC-Target-URI and
        # fails on a record without one (AttributeError), losing its place in the file. Such a
        # record is parsed as the HTTP response it says it is, flagged (`no_uri`) and then skipped
        # by the reader, which goes on at the next record.
        self.no_uri = False
        loader = self.loader
        load_http_headers = loader.load_http_headers

        def load_http_headers_without_uri(rec_type: str, uri: str | None, stream: Any, length: int) -> Any:
            if not uri:
                self.no_uri = True
                uri = "http://"
            return load_http_headers(rec_type, uri, stream, length)

        loader.load_http_headers = load_http_headers_without_uri

    def _consume_blanklines(self) -> tuple[bytes | None, int]:
        self.bad_end = None
        # ARC records end with one newline or none: nothing to check there
        line, size = self._arc_blank_lines() if self.known_format == "arc" else self._warc_end()
        dec = self.reader.decompressor
        self.cut = None
        if dec is not None and not getattr(dec, "eof", True):  # one member per record, ending in its CRC-32
            self.cut = ("goes on after the record (a damaged member, or a .gz that is not one member per record)"
                        if line else "ends without its end marker and CRC-32 (the file is cut or corrupt)")
        return line, size

    def _warc_end(self) -> tuple[bytes | None, int]:
        ends: list[bytes] = []
        size = 0
        while True:
            line = self.reader.readline()
            if not line or line.strip():
                break
            ends.append(line)
            size += len(line)
        # The block ends in exactly \r\n\r\n, then comes the next record's version line (or the
        # end of the gzip member or file; a plain file may end in more blank lines): a block that
        # a too-small Content-Length cut at a blank line of its own content shows more blank
        # lines, or a content line, before the next record.
        if len(ends) < 2 or ends[0] != ends[1] or ends[0] not in (b"\r\n", b"\n") \
                or (len(ends) > 2 and (line or self.reader.decompressor is not None)) \
                or (line and not line.startswith(b"WARC/")):
            seen = b"".join(ends) + (line or b"")
            end = "the end of its gzip member" if self.reader.decompressor is not None else "the end of the file"
            self.bad_end = (f"expected \\r\\n\\r\\n and the next record's WARC/1.x line after the block, found "
                            f"{repr(seen[:40]) if seen else end}")
            if line and self.reader.decompressor is not None:
                while line:  # pass over the rest of this gzip member
                    line = self.reader.readline()
        return (line or None), size

    def _arc_blank_lines(self) -> tuple[bytes | None, int]:
        """warcio's own loop for ARC (the first line after a record is passed over, blank or
        not), without its warning on stderr: the checks here report problems with a location."""
        size = 0
        first = True
        while True:
            line = self.reader.readline()
            if not line:
                return None, size
            if first or not line.strip():
                size += len(line)
                first = False
                continue
            return line, size

    def more_members(self, size: int) -> bool:
        """Whether data follows the gzip member just read (so a short block is not the file's end)."""
        if self.reader.decompressor is None:
            return False
        if self.reader.rem_length() > 0:
            return True
        try:
            return bool(size) and self.fh.tell() < size
        except (OSError, ValueError):
            return False


_NEXT_HEADER = re.compile(rb"\r?\n\r?\nWARC/1\.[01]\r?\n")


def _resync(raw: Any, start: int) -> _CheckedRecords | None:
    """Records from the first ``WARC/1.x`` header after the one at byte `start` of a plain file
    (None when there is none): searched from the damaged record's start, so the next record is
    found even when a too-long Content-Length swallowed its header."""
    raw.seek(start + 1)
    tail = b""
    base = start + 1
    while chunk := raw.read(_DRAIN * 16):
        data = tail + chunk
        found = _NEXT_HEADER.search(data)
        if found is not None:
            raw.seek(base - len(tail) + found.start() + found.group().index(b"WARC/"))
            return _CheckedRecords(raw)
        tail = data[-16:]
        base += len(chunk)
    return None


_WET_NEXT = re.compile(rb"\nWARC/1\.[01]\r?\n")
_SEPARATORS = (b"\r\n\r\n", b"\n\n", b"\r\n", b"\n", b"")


def _recover_wet(raw: Any, start: int, *, ambiguous_ok: bool) -> tuple[bytes, int | None, str] | None:
    """The block of a plain WET file's record at byte `start` whose end is not where its
    Content-Length says, taken up to the next ``WARC/1.x`` line: (block, where the next record
    starts or None, a note when the block is a guess), or None (not recoverable)."""
    raw.seek(start)
    region, boundary = b"", None
    while chunk := raw.read(_DRAIN * 16):
        region += chunk
        found = _WET_NEXT.search(region, 1)
        if found is not None:
            boundary = start + found.start() + 1
            region = region[: found.start() + 1]
            break
    block = _wet_block(region, bounded=boundary is not None, ambiguous_ok=ambiguous_ok)
    return None if block is None else (block[0], boundary, block[1])


def _wet_block(region: bytes, *, bounded: bool, ambiguous_ok: bool) -> tuple[bytes, str] | None:
    """The block of the WET record `region` (headers to the next record), and a note if it is a guess.

    cc_net-era tools wrote WET files with ``\n\n``, ``\r\n`` or no blank line between records,
    or a Content-Length counted for other newlines. The record is unambiguous (kept in fail
    mode too) when its WARC-Block-Digest matches one reading of the block, or, without a
    digest, when only the separator is off (Content-Length bytes, then nothing but newlines
    before the next record). Otherwise the block is the text up to the next record minus one
    separator: kept in skip mode only (`ambiguous_ok`), with a note, and only when a next
    record (or a clean separator at the end of the file) bounds it, never for a cut file."""
    if not region.startswith(b"WARC/1."):
        return None
    head, body, lf_only = _wet_head(region)
    if head is None:
        return None
    length = re.search(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$", head)
    digest = re.search(rb"(?im)^warc-block-digest:[ \t]*(\S+)[ \t]*\r?$", head)
    if length is None:  # no length to check the block against: nothing to recover it by
        return None
    declared = int(length.group(1))
    exact = 0 <= declared <= len(body) and not body[declared:].strip(b"\r\n") and len(body) - declared <= 8
    readings = ([body[:declared]] if exact else []) + [body[: len(body) - len(sep)] for sep in _SEPARATORS
                                                        if body.endswith(sep)]
    if digest is not None:
        from .warc_frames import digest_ok

        spec = digest.group(1).decode("ascii", "replace")
        # a file whose every newline became a bare \n (cc_net's own test WET) keeps the digests of
        # the \r\n original: a block that matches with its newlines restored is the record's
        checks = [(block, digest_ok(spec, block) or (lf_only and digest_ok(spec, block.replace(b"\n", b"\r\n"))))
                  for block in readings]
        if any(ok is not None for _, ok in checks):
            matched = [block for block, ok in checks if ok]
            if matched:
                return matched[0], ""
            if not lf_only:
                return None
    if exact:
        return body[:declared], ""
    if not ambiguous_ok or not (bounded or body.endswith((b"\r\n\r\n", b"\n\n"))) or not readings:
        return None
    return readings[0], (f"the block does not end where its Content-Length ({declared}) says; its text was taken "
                         f"up to the next record ({len(readings[0])} bytes) and kept")


def _wet_head(region: bytes) -> tuple[bytes | None, bytes, bool]:
    """(WARC headers, the rest, whether the record's newlines are bare \n) of a WET record: its
    headers end at the first blank line, ``\r\n\r\n``, or ``\n\n`` where the headers hold no
    ``\r`` at all (cc_net's own test file has no ``\r`` anywhere). (None, b"", False): no end."""
    crlf = region.find(b"\r\n\r\n", 0, _MAX_WET_HEAD)
    lf = region.find(b"\n\n", 0, _MAX_WET_HEAD)
    if lf >= 0 and (crlf < 0 or lf < crlf) and b"\r" not in region[:lf]:
        return region[:lf], region[lf + 2:], True
    if crlf < 0:
        return None, b"", False
    return region[:crlf], region[crlf + 4:], False


_MAX_WET_HEAD = 1 << 16


def _wet_members(ctx: ShardReader, raw: Any, start: int, row: int) -> Iterator[tuple[int, Any, bytes, int]]:
    """The conversion records of a .wet.gz from the member at byte `start` on, one record per
    member, each recovered with `_wet_block` (warcio cannot read on after a malformed end)."""
    ambiguous_ok = ctx.options.on_error == "skip"
    raw.seek(start)
    pos, buf = start, b""
    while True:
        if not buf and not (buf := raw.read(_DRAIN)):
            return
        at, inflate, parts = pos, zlib.decompressobj(31), []
        while True:
            try:
                parts.append(inflate.decompress(buf))
            except zlib.error as exc:
                ctx.bad(f"{ctx.shard.path}:record {row}", f"corrupt gzip data in this record's gzip member (at byte "
                                                          f"{at}) ({exc}); the rest of the file is not read")
                return
            if inflate.eof:
                buf = inflate.unused_data
                pos = raw.tell() - len(buf)
                break
            if not (buf := raw.read(_DRAIN)):
                ctx.bad(f"{ctx.shard.path}:record {row}", f"record is truncated: the file ends inside its gzip "
                                                          f"member (at byte {at}); the file is cut")
                return
        region = b"".join(parts)
        location = f"{ctx.shard.path}:record {row}"
        recovered = _wet_block(region, bounded=True, ambiguous_ok=ambiguous_ok)
        if not region.startswith(b"WARC/1."):
            ctx.bad(location, f"the gzip member at byte {at} does not hold a WARC record (it starts with "
                              f"{region[:20]!r})")
        elif recovered is None:
            ctx.bad(location, f"the block of this record (at byte {at}) does not end where its Content-Length says, "
                              "and its end cannot be told (no matching WARC-Block-Digest)")
        else:
            block, note = recovered
            if note:
                log.warning("%s: %s", location, note)
            head = _wet_head(region)[0] or b""
            head = head.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")  # warcio wants \r\n
            size = str(len(block)).encode()
            head = re.sub(rb"(?im)^(content-length:[ \t]*)\d+", rb"\g<1>" + size, head)
            try:
                record = next(ArchiveIterator(io.BytesIO(head + b"\r\n\r\n" + block + b"\r\n\r\n"),
                                              arc2warc=False))
            except (*_WARCIO_ERRORS, StopIteration) as exc:
                ctx.bad(location, f"cannot parse the record in the gzip member at byte {at} ({exc})")
                record = None
            if record is not None and record.rec_type == "conversion":
                yield row, record, block, at
        row += 1
        ctx.bytes_read = pos


def _after(last_good_row: int) -> str:
    if last_good_row < 0:
        return "; no complete record before it"
    return f"; the last complete record is record {last_good_row}"


def _header_line(record: Any) -> str:
    headers = record.rec_headers
    return " ".join(str(v) for _, v in headers.headers)[:120]


def _drain(stream: Any) -> int:
    """Read what is left of the record, so its declared length can be checked; its byte count."""
    n = 0
    while chunk := stream.read(_DRAIN):
        n += len(chunk)
    return n


def _read_block(record: Any, limit: int | None) -> tuple[bytes | None, int]:
    """(the record's decoded block, 0), or (None, its size) when it is larger than `limit`: such
    a block is read only to its end, never held, however far it inflates."""
    stream = record.content_stream()
    if limit is None:
        return stream.read(), 0
    body = stream.read(limit + 1)
    if len(body) <= limit:
        return body, 0
    return None, len(body) + _drain(stream)


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
