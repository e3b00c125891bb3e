"""The checked framing of WARC records, for `textsieve.io.warc_pages`.

FastWARC parses records fast but cannot say where a damaged one ends; here the records are
cut out of the file by hand, with every check (see `warc_pages`' docstring): ``.warc.gz``
one gzip member per record, inflated with zlib (CRC-32 and length checked); plain files by
headers, Content-Length and the ``\r\n\r\n`` end; the block digest where there is one. A
problem is a `Frame` with `problem` set; after one, the framing resynchronises on the next
gzip member that inflates to a ``WARC/1.x`` line, or the next ``WARC/1.x`` line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_CHUNK = 1 << 16  # small reads: zlib copies what follows a member's end once per member
MAX_HEAD = 1 << 16  # WARC headers longer than this are not headers (nor HTTP ones: room allowed over a cap)
_SLACK = 1 << 20  # how far a gzip member may run past its record before we stop keeping it
GZIP_MAGIC = b"\x1f\x8b\x08"
_VERSION = re.compile(rb"\nWARC/1\.[01]\r?\n")
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")
_BLOCK_DIGEST = re.compile(rb"(?im)^warc-block-digest:[ \t]*([^\r\n]*?)[ \t]*\r?$")
_ENDS = (b"\r\n\r\n", b"\n\n")


@dataclass
class Frame:
    """A record cut out of the file, or a problem where one should have been."""

    offset: int
    head: bytes = b""  # WARC headers, up to and without the blank line
    block: bytes = b""
    problem: str | None = None
    is_record: bool = True  # False: garbage, it takes no row
    stop: bool = False  # nothing after it can be read (truncated file)
    checked: bool = False  # the block digest matched
    end: int | None = None  # where the next record starts (None: the end of the file)
    oversize: bool = False  # its block is over the reader's cap: read to its end, not kept (`block` is empty)


# ------------------------------------------------------------------ framing: .warc.gz


def gzip_frames(raw: Any, pos: int, cap: int | None = None) -> Iterator[Frame]:
    """One frame per gzip member (each must hold one whole record) from byte `pos` on (where
    `raw` stands), resyncing after damage. A record whose Content-Length is over `cap` (plus
    room for HTTP headers) is inflated to its member's end but not kept: an `oversize` frame."""
    buf = b""
    while True:
        if len(buf) < len(GZIP_MAGIC):
            buf += raw.read(_CHUNK)
            if not buf:
                return
        start = pos
        if not buf.startswith(GZIP_MAGIC):
            found = _next_member(raw, start + 1)
            end = found if found is not None else _size(raw)
            tail = f"reading goes on at byte {end}" if found is not None else "no WARC record follows"
            yield Frame(start, problem=f"{end - start} bytes at byte {start} are not a gzip member of a WARC record "
                                        f"(garbage between records?); {tail}", is_record=False, stop=found is None)
            raw.seek(pos := end)
            buf = b""
            continue
        inflate = zlib.decompressobj(31)
        parts: list[bytes] = []
        kept = 0
        total = 0  # bytes the member inflated to (kept or not)
        limit: int | None = None
        oversize = False
        error: str | None = None
        while True:
            try:
                out = inflate.decompress(buf)
            except zlib.error as exc:
                error = str(exc)
                break
            total += len(out)
            if not oversize and kept <= (limit if limit is not None else MAX_HEAD) + _SLACK:  # bounded memory
                parts.append(out)
                kept += len(out)
            if limit is None and kept:
                limit = _expected_size(b"".join(parts))
                if limit is not None and cap is not None and limit > cap + 2 * MAX_HEAD:
                    oversize = True  # its headers are kept (they are in `parts`), the rest only counted
            if inflate.eof:
                buf = inflate.unused_data
                pos = raw.tell() - len(buf)
                break
            buf = raw.read(_CHUNK)
            if not buf:
                yield Frame(start, problem=f"record is truncated: the file ends inside its gzip member (at byte "
                                            f"{start}), before the member's end and CRC-32; the file is cut",
                             stop=True)
                return
        data = b"".join(parts)
        if error is not None:
            found = _next_member(raw, start + 1)
            then = (f"reading goes on at the next gzip member (byte {found})" if found is not None
                    else "no gzip member follows, the rest of the file is not read")
            yield Frame(start, problem=f"corrupt gzip data in this record's gzip member (at byte {start}) "
                                        f"({error}); {then}", stop=found is None,
                         is_record=not data or data.startswith(b"WARC/"))
            if found is None:
                return
            raw.seek(pos := found)
            buf = b""
            continue
        if not data.startswith(b"WARC/1."):
            yield Frame(start, problem=f"the gzip member at byte {start} does not hold a WARC record (it starts "
                                        f"with {data[:40]!r}); reading goes on with the next member", is_record=False)
            continue
        if limit is not None and max(kept, total if oversize else 0) > limit + _SLACK:
            yield Frame(start, problem=f"the gzip member of this record (at byte {start}) goes on more than {_SLACK} "
                                        "bytes after the record (a .gz that is not one member per record, or a "
                                        "wrong Content-Length)")
            continue
        if oversize and limit is not None:
            head = data[: data.find(b"\r\n\r\n") + 2]
            if total < limit:
                yield Frame(start, problem=_length_problem(head, start, f"its gzip member ends {limit - total} bytes "
                                                                        "early"))
                continue
            yield Frame(start, head, b"", oversize=True, end=pos)
            continue
        frame = _split(data, start)
        frame.end = pos
        yield frame


def _expected_size(data: bytes) -> int | None:
    """Header + block + end size that a record's headers declare (None: headers not complete)."""
    head_end = data.find(b"\r\n\r\n", 0, MAX_HEAD)
    if head_end < 0:
        return None
    length = _CONTENT_LENGTH.search(data, 0, head_end + 2)
    return head_end + 8 + int(length.group(1)) if length else None


def _next_member(raw: Any, start: int) -> int | None:
    """Offset of the first gzip member at or after `start` that inflates to a ``WARC/1.x`` line."""
    at = start
    while True:
        raw.seek(at)
        data = raw.read(_CHUNK * 16)
        hit = data.find(GZIP_MAGIC)
        if hit < 0:
            if len(data) < _CHUNK * 16:
                return None
            at += len(data) - 2
            continue
        raw.seek(at + hit)
        try:
            head = zlib.decompressobj(31).decompress(raw.read(_CHUNK), 16)
        except zlib.error:
            head = b""
        if head.startswith(b"WARC/1."):
            return at + hit
        at += hit + 1


# ------------------------------------------------------------------ framing: plain .warc


def plain_frames(raw: Any, cap: int | None = None) -> Iterator[Frame]:
    """One frame per record of an uncompressed WARC, resyncing on the next ``WARC/1.x`` line. A
    record whose Content-Length is over `cap` (plus room for HTTP headers) is passed over, not
    read: an `oversize` frame."""
    pending: bytes | None = None
    while True:
        start = raw.tell() - (len(pending) if pending is not None else 0)
        line = pending if pending is not None else raw.readline()
        pending = None
        while line in (b"\r\n", b"\n"):  # blank lines after a record its digest vouches for
            start = raw.tell()
            line = raw.readline()
        if not line:
            return
        if not line.startswith(b"WARC/1."):
            found = _next_version(raw, start)
            end = found if found is not None else _size(raw)
            then = f"reading goes on at byte {end}" if found is not None else "no WARC record follows"
            yield Frame(start, problem=f"{end - start} bytes at byte {start} are not a WARC record (garbage between "
                                        f"records? they start with {line[:40]!r}); {then}", is_record=False,
                         stop=found is None)
            raw.seek(end)
            continue
        head = [line]
        size = len(line)
        while (line := raw.readline()) not in (b"\r\n", b"\n", b""):
            head.append(line)
            size += len(line)
            if size > MAX_HEAD:
                break
        head_bytes = b"".join(head)
        length = _CONTENT_LENGTH.search(head_bytes)
        if not line:
            yield Frame(start, problem=f"record is truncated (at byte {start}): the file ends inside its WARC "
                                        "headers; the file is cut", stop=True)
            return
        if size > MAX_HEAD or length is None:
            why = f"its WARC headers run over {MAX_HEAD} bytes" if size > MAX_HEAD else "it has no Content-Length"
            yield _bad_and_resync(raw, start, f"unreadable WARC record (at byte {start}): {why}")
            continue
        declared = int(length.group(1))
        oversize = cap is not None and declared > cap + 2 * MAX_HEAD
        if oversize:  # passed over: the block is never held
            here = raw.tell()
            got = min(declared, max(0, _size(raw) - here))
            raw.seek(here + got)
            block = b""
        else:
            block = raw.read(declared)
            got = len(block)
        if got < declared:
            yield Frame(start, problem=f"record is truncated (at byte {start}): {declared - got} bytes of its "
                                        f"block (Content-Length {declared}) missing; the file is cut", stop=True)
            return
        block_end = raw.tell()
        tail = raw.read(4)
        if tail[:2] == b"\n\n":
            tail = b"\n\n"
            raw.seek(block_end + 2)
        frame = Frame(start, head_bytes, b"", oversize=True) if oversize else _checked(head_bytes, block, start)
        seen = f"found {tail!r} after the block"
        if tail in _ENDS:
            after = raw.tell()
            nxt = raw.readline()
            blank = False
            while nxt in (b"\r\n", b"\n"):  # more blank lines: fine only at the end of the file
                blank = True
                nxt = raw.readline()
            if not nxt or (nxt.startswith(b"WARC/1.") and not blank):
                pending = nxt or None
                frame.end = raw.tell() - len(nxt) if nxt else None
                yield frame
                continue
            seen = f"found {(tail + b'...' + nxt)[:40]!r} after the block"
        else:
            after = block_end
        if frame.checked:  # the digest vouches for the record: what follows is garbage, not its fault
            raw.seek(after)
            frame.end = after
            yield frame
            continue
        yield _bad_and_resync(raw, start, frame.problem or _length_problem(head_bytes, start, seen))


def _bad_and_resync(raw: Any, start: int, problem: str) -> Frame:
    """The frame of a bad record; the file is left at the next ``WARC/1.x`` line after `start`."""
    found = _next_version(raw, start)
    if found is None:
        return Frame(start, problem=f"{problem}; no WARC record follows it", stop=True)
    raw.seek(found)
    return Frame(start, problem=problem)


def _next_version(raw: Any, start: int) -> int | None:
    """Offset of the first ``WARC/1.x`` line that starts after byte `start` of a plain file (the
    damaged record's own start: a Content-Length too large may have swallowed the next header)."""
    at = start
    tail = b""
    raw.seek(at)
    while chunk := raw.read(_CHUNK * 16):
        data = tail + chunk
        found = _VERSION.search(data)
        if found is not None:
            return at - len(tail) + found.start() + 1
        tail = data[-16:]
        at += len(chunk)
    return None


# ------------------------------------------------------------------ checks shared by both framings


def _split(data: bytes, start: int) -> Frame:
    """A gzip member's record: headers, a block of exactly Content-Length bytes, the end lines."""
    head_end = data.find(b"\r\n\r\n", 0, MAX_HEAD)
    if head_end < 0:
        return Frame(start, problem=f"unreadable WARC record (at byte {start}): no end of its WARC headers")
    head = data[: head_end + 2]
    length = _CONTENT_LENGTH.search(head)
    if length is None:
        return Frame(start, problem=f"unreadable WARC record (at byte {start}): it has no Content-Length")
    block_end = head_end + 4 + int(length.group(1))
    if len(data) < block_end:
        return Frame(start, problem=_length_problem(head, start, f"its gzip member ends {block_end - len(data)} "
                                                                  "bytes early"))
    frame = _checked(head, data[head_end + 4 : block_end], start)
    end = data[block_end:]
    if end not in _ENDS and not frame.checked:
        return Frame(start, problem=frame.problem or _length_problem(head, start, f"found {end[:40]!r} after the "
                                                                                   "block before the member's end"))
    return frame


def _length_problem(head: bytes, start: int, found: str) -> str:
    length = _CONTENT_LENGTH.search(head)
    declared = length.group(1).decode() if length else "?"
    return (f"the block of this record (at byte {start}) does not end where its Content-Length ({declared}) says: "
            f"{found}; the Content-Length is wrong or the record is corrupt")


def _checked(head: bytes, block: bytes, start: int) -> Frame:
    """The frame, with the block digest checked where the record has one (`checked`: it matched)."""
    digest = _BLOCK_DIGEST.search(head)
    if digest is None:
        return Frame(start, head, block)
    spec = digest.group(1).decode("ascii", "replace")
    ok = digest_ok(spec, block)
    if ok is False:
        return Frame(start, head, block, problem=f"the block of this record (at byte {start}) does not match its "
                                                  f"WARC-Block-Digest ({spec}): the record is corrupt")
    return Frame(start, head, block, checked=bool(ok))


def digest_ok(spec: str, block: bytes) -> bool | None:
    """Whether `block` matches a ``algo:value`` digest (base32 or hex); None: cannot tell."""
    algo, _, value = spec.partition(":")
    name = {"sha1": "sha1", "sha-1": "sha1", "sha256": "sha256", "sha-256": "sha256", "sha512": "sha512",
            "sha-512": "sha512", "md5": "md5"}.get(algo.strip().lower())
    value = value.strip()
    if name is None or not value:
        return None
    digest = hashlib.new(name, block).digest()
    try:
        if len(value) == 2 * len(digest):
            return binascii.unhexlify(value) == digest
        return base64.b32decode(value.upper() + "=" * (-len(value) % 8)) == digest
    except (binascii.Error, ValueError):
        return None


def _size(raw: Any) -> int:
    here = raw.tell()
    size = int(raw.seek(0, io.SEEK_END))
    raw.seek(here)
    return size
