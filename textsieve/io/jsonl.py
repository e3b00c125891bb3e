"""JSON Lines reader (plain, .gz, .zst or .zstd): one JSON object per line.

Lines are split from decompressed 1 MiB chunks with ``bytes.split`` and each one is decoded and
parsed on its own, so invalid UTF-8 or a malformed line is reported with its exact line number
and, in skip mode, costs only that line. Row = physical 0-based line index: blank lines yield
nothing but keep their row, so ``path:N`` in a message is always ``Document.row == N - 1``.

`Document.meta` is the parsed record itself minus the text field: no copy is made, and a writer
can rebuild the original record from ``meta`` plus ``text``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import fsspec

from ..document import Document
from .compression import CorruptStream, compression_of, iter_chunks
from .fields import (
    MISSING,
    bad_id_reason,
    bad_text_reason,
    json_type,
    missing_text_reason,
    optional_str,
    resolve_id,
    surrogate_field_reason,
    surrogate_reason,
)
from .limits import doc_size_ok

if TYPE_CHECKING:
    from .readers import ShardReader

_BOM = "\ufeff"
#: a `\uD...` escape in a line's bytes: only these can decode to a lone surrogate. One regex
#: search over the bytes (sre scans for its literal prefix) took a third of the time of the two
#: `in` tests over the decoded line it replaced, on the dev corpus (JSON of web text is full of
#: `\n` escapes, and each backslash stopped those scans).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD]")


def read_jsonl(ctx: ShardReader) -> Iterator[Document]:
    """The documents of a JSON Lines shard. A line longer than `max_doc_bytes` is never held:
    once its start passes the limit it is only counted to its end, then reported as one oversized
    record (`io.limits`), so a huge line, or a decompression bomb, costs a bounded amount of memory."""
    shard = ctx.shard
    parse = _LineParser(ctx)
    limit = ctx.options.max_doc_bytes
    row = 0
    pieces: list[bytes] = []  # the start of a line that continues in the next chunk
    held = 0  # bytes in `pieces`
    over = 0  # > 0: the current line passed the limit; its bytes so far (none of them kept)
    with fsspec.open(shard.path, "rb") as raw:
        try:
            for chunk, consumed in iter_chunks(raw, compression_of(shard.path)):
                ctx.bytes_read = consumed
                lines = chunk.split(b"\n")
                if len(lines) == 1:
                    if over:
                        over += len(chunk)
                        continue
                    pieces.append(chunk)
                    held += len(chunk)
                    if limit is not None and held > limit:
                        pieces, over, held = [], held, 0
                    continue
                if over:  # the oversized line ends in this chunk
                    doc_size_ok(ctx, f"{shard.path}:{row + 1}", over + len(lines[0]))
                    row += 1
                    lines, over = lines[1:], 0
                elif pieces:
                    pieces.append(lines[0])
                    lines[0] = b"".join(pieces)
                    pieces, held = [], 0
                tail = lines.pop()
                if tail:
                    if limit is not None and len(tail) > limit:
                        over = len(tail)
                    else:
                        pieces, held = [tail], len(tail)
                for i in range(len(lines)):
                    # the line's bytes are let go before its document is yielded: a 30 MB line
                    # stayed held while its document was annotated
                    line, lines[i] = lines[i], b""
                    doc = parse(line, row)
                    del line
                    row += 1
                    if doc is not None:
                        yield doc
        except CorruptStream as exc:
            last = f"line {row}" if row else "none"
            ctx.bad(f"{shard.path}:{row + 1}", f"{exc}{_unverified(exc, row)}; the last complete line read is {last}")
            return
    if over:
        doc_size_ok(ctx, f"{shard.path}:{row + 1}", over)
    elif pieces:
        doc = parse(b"".join(pieces), row)
        if doc is not None:
            yield doc


def _unverified(exc: CorruptStream, row: int) -> str:
    """What a damaged member cost, for the message: the lines held back (and, for an input that
    cannot seek, those passed on before the damage showed)."""
    out = ""
    if exc.passed_lines:
        out += (f"; its lines {row + 1 - exc.passed_lines}-{row} were passed on unverified (the input "
                "cannot seek, so its checksum could not be checked first)")
    if exc.dropped_lines:
        out += (f"; its {exc.dropped_lines} decoded line(s) from line {row + 1} on are left out, as its "
                "checksum cannot vouch for them; the rest of the file is not read")
    return out


class _LineParser:
    """Turns one line into a Document, or reports it through ``ctx.bad`` and returns None."""

    def __init__(self, ctx: ShardReader):
        self.ctx = ctx
        self.path = ctx.shard.path
        self.rel = ctx.shard.rel
        self.text = ctx.fields.text
        self.id = ctx.fields.id
        self.lang = ctx.fields.lang
        self.url = ctx.fields.url

    def __call__(self, line: bytes, row: int) -> Document | None:
        if not line or line.isspace():
            return None
        if not doc_size_ok(self.ctx, f"{self.path}:{row + 1}", len(line)):  # io.limits: --max-doc-bytes
            return None
        try:
            s = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = line[exc.start : exc.start + 4].hex(" ")
            self._bad(row, f"invalid UTF-8 at byte {exc.start} of the line (bytes {bad})")
            return None
        if row == 0 and s.startswith(_BOM):
            s = s[1:]
        try:
            record = json.loads(s)
        except json.JSONDecodeError as exc:  # its own "line 1 column N" would be confusing here
            hint = ""
            if row == 0 and s.strip() in ("[", "{"):
                hint = "; the file looks like one JSON document, not JSON Lines (one object per line)"
            self._bad(row, f"malformed JSON ({exc.msg} at column {exc.colno}){hint}")
            return None
        except ValueError as exc:  # e.g. an integer too long to convert
            self._bad(row, f"malformed JSON ({exc})")
            return None
        except RecursionError:
            self._bad(row, "malformed JSON (nested too deeply to parse)")
            return None
        if type(record) is not dict:
            self._bad(row, f"line is a JSON {json_type(record)}, expected an object")
            return None

        text = self.text.take(record)
        if type(text) is not str:
            if text is MISSING:
                self._bad(row, missing_text_reason(self.text, record))
                return None
            self._bad(row, bad_text_reason(self.text, text))
            return None
        if _SURROGATE_ESCAPE.search(line):  # only escapes can produce lone surrogates; skip the check otherwise
            reason = surrogate_reason(self.text, text) or surrogate_field_reason(record)
            if reason:
                self._bad(row, reason)
                return None

        raw_id = self.id.get(record)
        doc_id = resolve_id(raw_id, self.rel, row)
        if doc_id is None:
            self._bad(row, bad_id_reason(self.id, raw_id))
            return None
        lang = url = None
        if self.lang is not None:
            lang, reason = optional_str(self.lang.get(record), self.lang)
            if reason:
                self._bad(row, reason)
                return None
        if self.url is not None:
            url, reason = optional_str(self.url.get(record), self.url)
            if reason:
                self._bad(row, reason)
                return None
        return Document(doc_id, text, row, lang, url, record)

    def _bad(self, row: int, reason: str) -> None:
        self.ctx.bad(f"{self.path}:{row + 1}", reason)
        return None
