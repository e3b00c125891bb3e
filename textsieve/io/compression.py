"""Stream decompression of .gz and .zst/.zstd files that notices truncation and corruption.

Why not ``fsspec.open(..., compression="infer")``: a truncated .zst stream ends silently there
(the data just stops), a truncated web-scale file must not pass for a complete one, and the
progress bar needs the compressed bytes consumed. Decompressing chunk by chunk ourselves gives
all three, and is as fast (the work happens in ISA-L or zlib, and libzstd, either way). gzip
members are inflated by ISA-L (`isal`: the same bytes, 2-2.5x zlib's speed on the dev corpus;
reading and verifying is most of annotate's read floor), or by zlib where `isal` is missing.
Concatenated members (gzip) and frames (zstd), as written by parallel compressors, are supported.

Damage: a gzip member's CRC-32 (or a zstd frame's content checksum, when the writer stored one)
is checked only at the member's end, after deflate may already have decoded garbage. So the
output of a member is held back until its end verified it; a damaged member passes on nothing
and the error says how many lines it held (`CorruptStream.dropped_lines`). Holding is bounded:
a member whose output exceeds `HOLD_BYTES` is first decompressed to its end without keeping
anything (one extra read of that member, `_verify_ahead`), then streamed. An input that cannot
seek cannot be checked ahead; its big members stream unverified and the error counts what
passed (`CorruptStream.passed_lines`). A stream cut short is not damage: what it decodes to is
exact, so everything decoded is passed on and the truncation is reported.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import IO, Any, BinaryIO, Protocol, cast

import zstandard

_inflate: ModuleType
try:  # ISA-L's inflate: the same output as zlib's, 2-2.5x faster
    from isal import isal_zlib

    _inflate = isal_zlib
    _INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, cast(type[Exception], isal_zlib.error))
except ImportError:  # pragma: no cover - a platform without an isal wheel
    _inflate = zlib
    _INFLATE_ERRORS = (zlib.error,)

try:  # ISA-L's deflate for the documents textsieve writes (`gzip_writer`)
    from isal import igzip as _igzip
except ImportError:  # pragma: no cover - a platform without an isal wheel
    _igzip = None  # type: ignore[assignment]

#: `gzip_writer`'s ISA-L level (its highest) and zlib's where ISA-L is missing
ISAL_LEVEL = 3
ZLIB_LEVEL = 6

CHUNK_SIZE = 1 << 20  # read size from storage
#: decompression step (compressed bytes): bounds what one damaged spot can take with it, and what
#: one call can inflate to, so a decompression bomb is read in bounded steps: ~2 MB for gzip (at
#: most ~1,032:1), 16 MB for zstd (an RLE block of 128 KiB costs 4 bytes). Measured on the dev
#: corpus: gzip as fast as 64 KiB steps, zstd +0.5 ms per decompressed MB (annotate: ~150 ms per MB)
PIECE_SIZE = 1 << 11
PIECE_SIZES = {"gzip": PIECE_SIZE, "zstd": 1 << 9}
HOLD_BYTES = 16 << 20  # decompressed bytes of one member/frame held back until its checksum verifies
SALVAGE_STEP = 1  # input step (bytes) where a damaged member is decoded again to count its lines
ZSTD_SUFFIXES = (".zst", ".zstd")  # one source for every place that matches zstd file names


class CorruptStream(Exception):
    """The compressed data is truncated or damaged; the message says which.

    `dropped_lines`: lines decoded from the damaged gzip member / zstd frame that were held back
    and are not passed on, since its checksum could not verify them (0 for a truncation: what a
    cut stream decodes to is exact). `passed_lines`: lines of it passed on before the damage was
    found, which only happens for an input that cannot seek (see `HOLD_BYTES`).
    """

    def __init__(self, message: str, *, dropped_lines: int = 0, passed_lines: int = 0):
        super().__init__(message)
        self.dropped_lines = dropped_lines
        self.passed_lines = passed_lines


class _Decompressor(Protocol):
    """What the member loop needs from zlib's and zstandard's decompress objects (they share no base class)."""

    def decompress(self, data: bytes, /) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...


def gzip_writer(fileobj: IO[bytes] | IO[Any]) -> BinaryIO:
    """A gzip member written into `fileobj` (which stays open), without a file name or timestamp,
    so the same records give the same bytes. Compressed by ISA-L at level 3: Python's `gzip` default,
    zlib level 9, cost ~4% of `extract`'s CPU end to end (0.59 s for the 13.7 MB a 3,001-record
    run writes) and ~9% of `source github`'s; ISA-L took 0.07 s there, for files 7% larger on web
    text (0.308 of the raw size against 0.287) and 10-13% larger on code. Where `isal` is not
    installed, zlib at level 6 (those files are the same size as level 9's, from ~2x faster on code
    to 10% on web text; the bytes then differ from ISA-L's, and readers take either). The bytes
    are the same run after run on a machine; across machines they may differ where the deflate
    does (ISA-L's pure-C path below SSE4.2, as zlib's bytes differ between zlib and zlib-ng
    builds), so compare document shards by their records, not their compressed bytes."""
    if _igzip is not None:
        return cast(BinaryIO, _igzip.IGzipFile(filename="", fileobj=fileobj, mode="wb", mtime=0,
                                               compresslevel=ISAL_LEVEL))
    return cast(BinaryIO, gzip.GzipFile(filename="", fileobj=fileobj, mode="wb", mtime=0, compresslevel=ZLIB_LEVEL))


def compression_of(path: str) -> str | None:
    """"gzip", "zstd" or None, from the file name (`.gz`; `.zst` and `.zstd`, both seen in the wild)."""
    lower = path.lower()
    if lower.endswith(".gz"):
        return "gzip"
    if lower.endswith(ZSTD_SUFFIXES):
        return "zstd"
    return None


def iter_chunks(raw: BinaryIO, compression: str | None, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple[bytes, int]]:
    """Yield ``(decompressed bytes, compressed bytes consumed so far)``.

    Raises `CorruptStream` after yielding everything that could be decoded, when the data is
    damaged or ends inside a gzip member / zstd frame.
    """
    if compression is None:
        consumed = 0
        while chunk := raw.read(chunk_size):
            consumed += len(chunk)
            yield chunk, consumed
        return
    new: Callable[[], _Decompressor]
    errors: tuple[type[Exception], ...]
    if compression == "gzip":
        new, errors, name = (lambda: _inflate.decompressobj(wbits=31)), _INFLATE_ERRORS, "gzip"
    elif compression == "zstd":
        # a fresh ZstdDecompressor per frame: decompressobjs made from one share its context, so the
        # verify-ahead pass of a frame over HOLD_BYTES reset the main pass's state ("Unknown frame
        # descriptor": every .jsonl.zst of one frame over 16 MiB lost its rest)
        new, errors, name = (lambda: zstandard.ZstdDecompressor().decompressobj()), (zstandard.ZstdError,), "zstd"
    else:
        raise ValueError(f"unknown compression {compression!r}")
    yield from _iter_members(raw, new, errors, name, chunk_size, PIECE_SIZES[name])


def _iter_members(
    raw: BinaryIO,
    new: Callable[[], _Decompressor],
    errors: tuple[type[Exception], ...],
    name: str,
    chunk_size: int,
    piece_size: int = PIECE_SIZE,
) -> Iterator[tuple[bytes, int]]:
    """Decompress member after member; a member's output is held back until its checksum
    verified (see `HOLD_BYTES`), so damage never lets unverified rows through."""
    unit = "member" if name == "gzip" else "frame"
    dec: _Decompressor | None = None  # decompressor of the member being read; None between members
    consumed = 0
    held: list[bytes] = []  # output of the current member, not yet verified
    held_size = 0
    ahead = False  # the current member was verified ahead (or cannot be): its output goes out at once
    passed = -1  # lines of the current member passed on unverified (-1: none can be, the input seeks)
    member_at = 0  # file offset of the current member
    while data := raw.read(chunk_size):
        base = consumed
        consumed += len(data)
        for start in range(0, len(data), piece_size):
            piece = data[start : start + piece_size]
            at = base + start  # file offset of piece[0]
            while piece:
                if dec is None:
                    stripped = piece.lstrip(b"\0")  # zero padding between/after members is tolerated, like gzip does
                    at += len(piece) - len(stripped)
                    piece = stripped
                    if not piece:
                        break
                    dec, member_at, ahead, passed = new(), at, False, -1
                try:
                    out = dec.decompress(piece)
                except errors as exc:
                    lines = _decoded_lines(raw, member_at, at, new, errors, chunk_size, piece_size)
                    raise _damaged(name, unit, exc, member_at, _lines(held) if lines is None else lines,
                                   passed) from exc
                if out and ahead:
                    if passed >= 0:
                        passed += out.count(b"\n")
                    yield out, consumed
                elif out:
                    held.append(out)
                    held_size += len(out)
                    if held_size > HOLD_BYTES:  # a big member: check it to its end first, then stream it
                        check = _verify_ahead(raw, member_at, consumed, new, errors, chunk_size, piece_size)
                        if isinstance(check, tuple):
                            lines = _decoded_lines(raw, member_at, check[1], new, errors, chunk_size, piece_size)
                            raise _damaged(name, unit, check[0], member_at, lines or 0, -1) from check[0]
                        ahead, passed = True, (-1 if check else _lines(held))
                        yield from _release(held, consumed)
                        held, held_size = [], 0
                if dec.eof:
                    rest = dec.unused_data
                    at += len(piece) - len(rest)
                    piece = rest
                    dec = None
                    yield from _release(held, consumed)  # verified by the member's checksum
                    held, held_size = [], 0
                else:
                    piece = b""
    if dec is not None:
        yield from _release(held, consumed)  # a cut member: what it decoded to is exact
        raise CorruptStream(f"{name} stream is truncated (the file ends inside compressed data)")


def _release(held: list[bytes], consumed: int) -> Iterator[tuple[bytes, int]]:
    """Yield the held chunks in order, letting go of each as it is yielded: iterating the list
    instead kept all of a member's first `HOLD_BYTES` alive until the last was consumed, i.e.
    for the whole time the reader's consumer annotated them (16 MB of a worker's peak)."""
    held.reverse()
    while held:
        yield held.pop(), consumed


def _lines(chunks: list[bytes]) -> int:
    return sum(c.count(b"\n") for c in chunks)


def _damaged(name: str, unit: str, exc: Exception, at: int, dropped: int, passed: int) -> CorruptStream:
    return CorruptStream(f"corrupt {name} data ({exc}) in the {name} {unit} at byte {at}",
                         dropped_lines=dropped, passed_lines=max(passed, 0))


def _verify_ahead(raw: BinaryIO, member_at: int, resume_at: int, new: Callable[[], _Decompressor],
                  errors: tuple[type[Exception], ...], chunk_size: int,
                  piece_size: int = PIECE_SIZE) -> bool | tuple[Exception, int]:
    """Decompress the member at `member_at` to its end, keeping nothing, then seek back to
    `resume_at`. True: it verified (or ends cut short, which the main pass reports); False: the
    input cannot seek, so nothing was checked; (error, file offset of the piece it failed in): damaged.

    The price of never passing on unverified rows without holding a whole big member in memory:
    one more read and decompression of each member larger than `HOLD_BYTES`.
    """
    try:
        if not raw.seekable():
            return False
        raw.seek(member_at)
    except (AttributeError, OSError, ValueError):
        return False
    dec = new()
    at = member_at
    try:
        while data := raw.read(chunk_size):
            for start in range(0, len(data), piece_size):
                try:
                    dec.decompress(data[start : start + piece_size])
                except errors as exc:
                    return exc, at + start
                if dec.eof:
                    return True
            at += len(data)
        return True
    finally:
        raw.seek(resume_at)


def _decoded_lines(raw: BinaryIO, member_at: int, fail_at: int, new: Callable[[], _Decompressor],
                   errors: tuple[type[Exception], ...], chunk_size: int, piece_size: int = PIECE_SIZE) -> int | None:
    """How many lines the damaged member at `member_at` decodes to before its damage shows, for
    the message: it is decoded again from its start, and from the piece at `fail_at` (where the
    first pass failed) on in `SALVAGE_STEP` steps, since a failing call returns none of its
    output. None when the input cannot seek."""
    try:
        if not raw.seekable():
            return None
        back = raw.tell()
        raw.seek(member_at)
    except (AttributeError, OSError, ValueError):
        return None
    dec = new()
    lines = 0
    at = member_at
    try:
        while data := raw.read(chunk_size):
            for start in range(0, len(data), piece_size):
                piece = data[start : start + piece_size]
                step = SALVAGE_STEP if at + start + len(piece) > fail_at else len(piece)
                for s in range(0, len(piece), step):
                    try:
                        out = dec.decompress(piece[s : s + step])
                    except errors:
                        return lines
                    lines += out.count(b"\n")
                    if dec.eof:
                        return lines
            at += len(data)
        return lines
    finally:
        raw.seek(back)
