"""The per-document size limit (`--max-doc-bytes`): one oversized record is a located bad
record, not an out-of-memory kill.

Why a limit rather than a bound: computing the signals of one document takes up to 10x its text
in memory (measured for issue 25 on a 30 MB document of real web text, with one worker or two:
7-8x when every character is Latin-1, ~9x for other BMP text, 9.5-9.7x when a few emoji make
CPython store the text 4 bytes a character; before the long-document paths, 13-24x, and 31-47x
with two workers). The text, its raw-scan lines, its normalized UTF-8 and the word tables are
held at once, and its attribute row (line spans: ~3x the text) is written in one piece, so a
document cannot be annotated in less than a few times its size; instead a document
whose stored size exceeds the limit is reported through the reader's error policy before it is
decoded: `on_error="fail"` stops with `FILE:LINE: ...` and the size, `"skip"` leaves it out and
counts it like any bad record (annotate's `skipped_records`, the shard footer's `skipped`).
Re-reading stages apply the limit recorded in the shard footer, so they skip exactly the same
documents.

The size checked is what the reader holds before decoding: the JSON line's bytes (text plus
the other fields and escapes), a .txt file's bytes, the UTF-8 bytes of a Parquet text value.
The default, `DEFAULT_MAX_DOC_BYTES` (32 MiB), is 32 times the largest record Common Crawl stores
(1 MiB) and above nearly any natural document (whole books are a few MB); it keeps one
document's cost near 1 GB per process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textsieve.units import parse_size

if TYPE_CHECKING:
    from .readers import ShardReader

DEFAULT_MAX_DOC_BYTES = 32 * 2**20
#: measured peak memory of annotating one document, per byte of its text (see the module doc)
ANNOTATE_BYTES_PER_TEXT_BYTE = 10
MAX_DOC_BYTES_HELP = ("skip (--on-error skip) or stop at (fail) any document larger than this, e.g. 32MiB, 64MB; 0: "
                      "no limit. Annotating one document takes up to 10x its size in memory, with any number of "
                      "workers (default: 32 MiB)")


def too_large_reason(nbytes: int, limit: int) -> str:
    """Why a record of `nbytes` is refused under `limit`, with what to do about it."""
    return (f"document of {nbytes:,} bytes is larger than max_doc_bytes {limit:,} (--max-doc-bytes); annotating it "
            f"would take ~{ANNOTATE_BYTES_PER_TEXT_BYTE * nbytes / 1e9:,.1f} GB of memory: raise the limit to keep it, "
            "or use --on-error skip to leave it out")


def doc_size_ok(ctx: ShardReader, location: str, nbytes: int) -> bool:
    """False (after reporting it through `ctx.bad`, which raises in fail mode) when a record of
    `nbytes` bytes at `location` is over the shard's `max_doc_bytes`; True otherwise."""
    limit = ctx.options.max_doc_bytes
    if limit is None or nbytes <= limit:
        return True
    ctx.bad(location, too_large_reason(nbytes, limit))
    return False


def text_size_ok(ctx: ShardReader, location: str, text: str) -> bool:
    """`doc_size_ok` for a decoded text (Parquet values), by its UTF-8 size; encodes only texts
    whose character count leaves the answer open (UTF-8 takes 1 to 4 bytes a character)."""
    limit = ctx.options.max_doc_bytes
    if limit is None or 4 * len(text) <= limit:
        return True
    return doc_size_ok(ctx, location, len(text.encode("utf-8", "surrogatepass")))


def parse_max_doc_bytes(value: int | str | None) -> int | None:
    """A `max_doc_bytes` setting ('32MiB', '64MB', bytes; None or 0: no limit) as bytes or None."""
    if value is None or value == 0 or (isinstance(value, str) and value.strip().lower() in ("0", "none", "")):
        return None
    return parse_size(value, "--max-doc-bytes")
