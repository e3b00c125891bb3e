"""Pages of WARC files that break the format the way old crawls do, for `warc_pages.read_pages`.

ClueWeb09 (and files like it) say ``WARC/0.18``, and every ``\\r\\n`` of theirs (WARC headers,
HTTP headers and bodies alike) became a bare ``\\n``, so each Content-Length counts bytes that
are gone; the files are one gzip stream, not a member per record. The checked framing rightly
refuses every record of such a file (the lengths are wrong), so one of them gave 0 pages and 30
"damaged" records at record 0. FastWARC's lenient mode reads most of them; here they are read
as their tools wrote them: a record starts at a ``WARC/x.y`` line that begins the file or follows
a blank line, its headers end at the first blank line, and its block runs to the blank line(s)
before the next record (Content-Length is not used: it is known to be wrong). Nothing vouches
for such a block (these files carry no block digests), which is why only a file that announces
itself this way (`looks_lenient`: a ``WARC/0.x`` version, or headers without any ``\\r``) is
read so. A record over `cap` bytes is passed over, never held.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import fsspec

from .warc_page import Page, undo_coding

if TYPE_CHECKING:
    from .readers import ShardReader

_RECORD_START = re.compile(rb"WARC/\d+\.\d+\r?\n\Z")
_STATUS = re.compile(rb"HTTP/\d(?:\.\d)?[ \t]+(\d{3})")
_SNIFF = 1 << 16
_LINE = 1 << 20  # read lines in pieces of this many bytes (a block may have no newline at all)


def looks_lenient(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) WARC file are of the kind read here."""
    if head.startswith(b"WARC/0."):
        return True
    end = head.find(b"\n\n")
    return head.startswith(b"WARC/") and end > 0 and b"\r" not in head[:end]


def sniff(raw: Any, gz: bool) -> bytes:
    """The first decompressed bytes of a file (its position is left at 0)."""
    raw.seek(0)
    data = raw.read(_SNIFF)
    raw.seek(0)
    if not gz:
        return data
    try:
        return zlib.decompressobj(31).decompress(data)
    except zlib.error:
        return b""


def _headers(lines: list[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            out.setdefault(name.strip().lower().decode("latin-1"), value.strip().decode("utf-8", "replace"))
    return out


def _records(stream: Any, cap: int | None) -> Iterator[tuple[int, list[bytes], bytes, int]]:
    """(offset in the decompressed stream, header lines, block or b"" when over `cap`, block size)."""
    pos = 0
    head: list[bytes] | None = None
    start = 0
    block: list[bytes] = []
    size = 0
    blank_before = True  # the file's start counts as one
    in_head = False
    while True:
        line = stream.readline(_LINE)
        at = pos
        pos += len(line)
        starts = bool(line) and blank_before and _RECORD_START.match(line) is not None
        if not line or starts:
            if head is not None:
                yield start, head, b"".join(block).rstrip(b"\r\n"), size
            if not line:
                return
            head, start, block, size, in_head = [line.rstrip(b"\r\n")], at, [], 0, True
            blank_before = False
            continue
        blank_before = line in (b"\n", b"\r\n")
        if head is None:
            continue  # bytes before the first record: not a record
        if in_head:
            if blank_before:
                in_head = False
            else:
                head.append(line.rstrip(b"\r\n"))
            continue
        size += len(line)
        if cap is None or size <= cap:
            block.append(line)
        elif block:
            block = []  # over the cap: counted to its end, never held


def lenient_pages(ctx: ShardReader, gz: bool, cap: int | None) -> Iterator[Page]:
    """The `Page` of every response record of a file `looks_lenient` accepts."""
    shard = ctx.shard
    with fsspec.open(shard.path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw) if gz else raw
        row = 0
        try:
            for offset, head, block, size in _records(stream, cap):
                location = f"{shard.path}:record {row}"
                h = _headers(head)
                record_id = h.get("warc-record-id", "").strip("<>") or f"{shard.rel}/{row}"
                url = h.get("warc-target-uri", "").strip("<>") or None
                date = h.get("warc-date")
                if h.get("warc-type") != "response":
                    row += 1
                    continue
                if cap is not None and size > cap:
                    yield Page(record_id, row, url, date, None, None, b"", offset, oversize=True)
                    row += 1
                    continue
                cut = re.search(rb"\r?\n\r?\n", block)
                http_head, body = (block[:cut.start()], block[cut.end():]) if cut else (block, b"")
                status = _STATUS.match(http_head)
                if status is None:
                    ctx.bad(location, f"response record (at byte {offset} of the inflated file) whose block does not "
                                      f"start with an HTTP status line (found {block[:60]!r})")
                    row += 1
                    continue
                fields = _headers([b"", *http_head.splitlines()[1:]])
                coding = fields.get("content-encoding", "").strip().lower()
                error = None
                if coding and coding != "identity":
                    decoded = undo_coding(body, coding)
                    if decoded is None:
                        error = f"its {coding} content encoding cannot be undone"
                    else:
                        body = decoded
                yield Page(record_id, row, url, date, fields.get("content-type"), int(status.group(1)), body, offset,
                           error)
                row += 1
        except (OSError, EOFError, zlib.error) as exc:  # a damaged or cut gzip stream: what came before is kept
            ctx.bad(f"{shard.path}:record {row}", f"the file's gzip stream is damaged or cut ({exc}); the rest of "
                                                  "the file is not read")
