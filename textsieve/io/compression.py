"""Stream decompression of .gz and .zst/.zstd files that notices truncation and corruption.

Why not ``fsspec.open(..., compression="infer")``: a truncated .zst stream ends silently there
(the data just stops), a truncated web-scale file must not pass for a complete one, and the
progress bar needs the compressed bytes consumed. Decompressing chunk by chunk ourselves gives
all three, and is as fast (the work happens in zlib/libzstd either way).
Concatenated members (gzip) and frames (zstd), as written by parallel compressors, are supported.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO, Protocol

import zstandard

CHUNK_SIZE = 1 << 20  # read size from storage
PIECE_SIZE = 1 << 16  # decompression step: bounds what one damaged spot can take with it
SALVAGE_STEP = 64
ZSTD_SUFFIXES = (".zst", ".zstd")  # one source for every place that matches zstd file names


class CorruptStream(Exception):
    """The compressed data is truncated or damaged; the message says which."""


class _Decompressor(Protocol):
    """What the member loop needs from zlib's and zstandard's decompress objects (they share no base class)."""

    def decompress(self, data: bytes, /) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...


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
        new, errors, name = (lambda: zlib.decompressobj(wbits=31)), (zlib.error,), "gzip"
    elif compression == "zstd":
        new, errors, name = zstandard.ZstdDecompressor().decompressobj, (zstandard.ZstdError,), "zstd"
    else:
        raise ValueError(f"unknown compression {compression!r}")
    yield from _iter_members(raw, new, errors, name, chunk_size)


def _iter_members(
    raw: BinaryIO,
    new: Callable[[], _Decompressor],
    errors: tuple[type[Exception], ...],
    name: str,
    chunk_size: int,
) -> Iterator[tuple[bytes, int]]:
    dec: _Decompressor | None = None  # decompressor of the member being read; None between members
    consumed = 0
    while data := raw.read(chunk_size):
        consumed += len(data)
        for start in range(0, len(data), PIECE_SIZE):
            piece = data[start : start + PIECE_SIZE]
            while piece:
                if dec is None:
                    piece = piece.lstrip(b"\0")  # zero padding between/after members is tolerated, like gzip does
                    if not piece:
                        break
                    dec = new()
                saved = dec.copy() if hasattr(dec, "copy") else None
                try:
                    out = dec.decompress(piece)
                except errors as exc:
                    if saved is not None:
                        yield from ((out, consumed) for out in _salvage(saved, piece, errors))
                    raise CorruptStream(f"corrupt {name} data ({exc})") from exc
                if out:
                    yield out, consumed
                if dec.eof:
                    piece = dec.unused_data
                    dec = None
                else:
                    piece = b""
    if dec is not None:
        raise CorruptStream(f"{name} stream is truncated (the file ends inside compressed data)")


def _salvage(dec: _Decompressor, piece: bytes, errors: tuple[type[Exception], ...]) -> Iterator[bytes]:
    """The output decodable from `piece` before the damage, fed in small steps.

    A decompress call that fails returns nothing, so without this the good data that shares a
    piece with the damage would be lost; skip mode promises to keep it.
    """
    for start in range(0, len(piece), SALVAGE_STEP):
        try:
            out = dec.decompress(piece[start : start + SALVAGE_STEP])
        except errors:
            return
        if out:
            yield out
        if dec.eof:
            return
