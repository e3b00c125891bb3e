"""Read the documents of one shard, whatever its format.

`ShardReader` is the one entry point: it picks the format reader, owns the error policy
(``on_error="fail"`` raises `InputError` at the first bad record, ``"skip"`` records a
`SkippedRecord` and goes on with the next record), and exposes the progress counter
(`bytes_read`). The format readers are generator functions in sibling modules that receive the
`ShardReader` and call `bad()` for every problem, so the policy lives in one place.

An empty document (``""``) is valid and is yielded: the pipeline annotates every document and
only `select` drops any.

A format from outside the package: `register_reader(format, read, suffixes=...)`, where
`read(ctx: ShardReader) -> Iterator[Document]` follows the same contract as the built-in
readers (open `ctx.shard.path` with fsspec, advance `ctx.bytes_read`, report bad records with
`ctx.bad(location, reason)`), or an entry point of the `textsieve.readers` group naming a
module that makes that call at import (docs/architecture.md, "Add a reader").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import fsspec

from textsieve import extensions

from ..document import Document
from .arrow_ipc import read_arrow
from .errors import InputError, SkippedRecord
from .fields import FieldPath
from .html_files import read_html
from .jsonl import read_jsonl
from .limits import doc_size_ok
from .parquet import read_parquet
from .paths import FORMATS, Shard, register_suffixes, unregister_suffixes
from .warc import read_warc, read_wet

ON_ERROR = ("fail", "skip")


@dataclass
class ReadOptions:
    """How to map records to Documents; field names may be dotted paths (``meta.lang``).

    Field options apply to JSON Lines and Parquet. WARC/WET/ARC and .txt files have fixed
    mappings (see `textsieve.io.warc` and `read_txt`).
    """

    text_field: str = "text"
    id_field: str = "id"
    lang_field: str | None = None
    url_field: str | None = "url"
    on_error: str = "fail"  # "fail": InputError at the first bad record; "skip": record a SkippedRecord, go on
    max_doc_bytes: int | None = None  # a larger record is a bad record (`io.limits`); None: no limit
    read_meta: bool = False  # Parquet: every other column into `Document.meta` too (a signal reads it)

    def __post_init__(self) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {self.on_error!r}")
        if not self.text_field or not self.id_field:
            raise ValueError("text_field and id_field must be non-empty")
        if self.max_doc_bytes is not None and self.max_doc_bytes < 1:
            raise ValueError(f"max_doc_bytes must be a positive number of bytes or None, not {self.max_doc_bytes!r}")


@dataclass(frozen=True)
class Fields:
    """The options' field names, split once per shard rather than once per record."""

    text: FieldPath
    id: FieldPath
    lang: FieldPath | None
    url: FieldPath | None

    @classmethod
    def of(cls, options: ReadOptions) -> Fields:
        return cls(
            FieldPath(options.text_field),
            FieldPath(options.id_field),
            FieldPath(options.lang_field) if options.lang_field else None,
            FieldPath(options.url_field) if options.url_field else None,
        )


class ShardReader:
    """Iterate the Documents of one shard.

    `bytes_read` counts storage (compressed) bytes consumed so far and is updated while
    iterating, for progress/ETA; it is approximate within a read chunk. `skipped` lists the
    records left out in skip mode. Iterating again starts over and resets both.
    """

    def __init__(self, shard: Shard, options: ReadOptions | None = None):
        extensions.load_entry_points(extensions.READERS)
        if shard.format not in _READERS:
            raise ValueError(f"{shard.path}: unknown shard format {shard.format!r} (readers: "
                             f"{', '.join(_READERS)})" + extensions.missing_reason(_label(shard.format)))
        self.shard = shard
        self.options = options if options is not None else ReadOptions()
        self.fields = Fields.of(self.options)
        self.bytes_read = 0
        self.skipped: list[SkippedRecord] = []

    def __iter__(self) -> Iterator[Document]:
        self.bytes_read = 0
        self.skipped = []
        try:
            yield from _READERS[self.shard.format](self)
        except FileNotFoundError as exc:
            raise InputError.at(self.shard.path, f"file not found ({exc})") from exc
        except OSError as exc:  # I/O failures, not bad records: never skipped
            raise InputError.at(self.shard.path, f"cannot read the file ({exc})") from exc

    def bad(self, location: str, reason: str) -> None:
        """Report a bad record (or the unreadable rest of a file) according to `on_error`."""
        if self.options.on_error == "fail":
            raise InputError.at(location, reason)
        self.skipped.append(SkippedRecord(location, reason))


def read_documents(shard: Shard, options: ReadOptions | None = None) -> Iterator[Document]:
    """Convenience: the Documents of `shard` (use `ShardReader` to see skips and progress)."""
    return iter(ShardReader(shard, options))


def read_txt(ctx: ShardReader) -> Iterator[Document]:
    """A txt shard: one document per file, id = the file's rel path, row = its index.

    Files must be UTF-8 (a leading byte-order mark is dropped); the text is otherwise kept as is.
    """
    shard = ctx.shard
    for row, member in enumerate(shard.members):
        with fsspec.open(member, "rb") as f:
            data = f.read()
        ctx.bytes_read += len(data)
        if not doc_size_ok(ctx, f"{member}:1", len(data)):  # io.limits: --max-doc-bytes
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
            ctx.bad(f"{member}:{line}",
                    f"invalid UTF-8 at byte {column} of the line (byte offset {exc.start} in the file)")
            continue
        yield Document(shard.member_rel(row), text, row)


Read = Callable[[ShardReader], Iterator[Document]]

_READERS: dict[str, Read] = {
    "jsonl": read_jsonl,
    "parquet": read_parquet,
    "warc": read_warc,
    "wet": read_wet,
    "txt": read_txt,
    "html": read_html,
    "arrow": read_arrow,
}


def register_reader(fmt: str, read: Read, *, suffixes: tuple[str, ...]) -> None:
    """Read files ending in one of `suffixes` (e.g. `(".tsv", ".tsv.gz")`) with `read`, as format `fmt`.

    `read(ctx)` yields the `Document`s of the shard `ctx.shard` (see the module doc); the shard's
    `format` is `fmt`, which `select` and the re-reading stages keep in their metadata. Every
    file found under a folder or glob with such a suffix becomes one shard. Repeating an
    identical registration is a no-op (worker processes repeat the parent's); a taken format or
    suffix is a `ValueError`.
    """
    existing = _READERS.get(fmt)
    if existing is not None and existing is not read:
        raise ValueError(f"reader format {fmt!r} registered twice")
    register_suffixes(fmt, suffixes)
    if existing is None:
        _READERS[fmt] = read
        extensions.remember(_label(fmt), register_reader, fmt, read, suffixes=tuple(suffixes))


def unregister_reader(fmt: str) -> None:
    """Remove the extension reader of `fmt` and its suffixes (for tests and notebooks)."""
    if fmt in FORMATS:
        raise ValueError(f"reader {fmt!r} is built in and cannot be removed")
    if _READERS.pop(fmt, None) is None:
        raise KeyError(f"reader format {fmt!r} is not registered")
    unregister_suffixes(fmt)
    extensions.forget(_label(fmt))


def _label(fmt: str) -> str:
    return f"reader {fmt!r}"
