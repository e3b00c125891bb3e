"""Texts of documents, read back by the stages that need words rather than signals.

Two jobs, one home each, both built on `ShardReader` so every caller reads a record exactly as
`annotate` did (same field paths, same error policy, same `Document.row`):

* **input files** (`input_shards`, `shard_documents`, `input_texts`): the documents of files,
  folders and globs, shard by shard, in the sorted order of `expand_inputs`. Callers that
  fingerprint their inputs or show progress get a hook per shard and a progress callback rather
  than a list, so nothing is held that the caller does not keep. `skip_metadata` leaves out the
  JSON files stages write beside documents (``selection.json``, ``annotate.json``), so a
  `select` output folder reads as its documents.
* **an annotated folder** (`is_annotated`, `annotated_documents`, `source_texts`,
  `aligned_source_texts`, `shard_texts`, `annotated_texts`): attribute shards hold no text;
  the footer of an annotate shard names its source shard and reader options
  (`textsieve.io.attributes`), so texts are re-read from the sources. A row is found by
  `Document.row`, which increases through a file in every reader, so a source is read only up to
  the last row wanted: three examples near the head of a large shard cost its head only.

`corpus_documents` picks between the two for commands that accept either (the pool of an
evaluation).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

import fsspec
import pyarrow as pa

from textsieve.document import Document
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents
from textsieve.io.errors import InputError
from textsieve.io.paths import Shard, expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.io.source_roots import trusted

from .parquet_read import read_table

METADATA_FILES = frozenset({"selection.json", "annotate.json"})  # written beside documents, not documents
KEY_COLUMNS = ("id", "shard", "row")  # the columns every attribute shard starts with
PROGRESS_EVERY = 1000  # documents between two progress callbacks within a shard

ProgressFn = Callable[[int, int], None]
"""Called as ``progress(documents since the last call, storage bytes consumed so far)``; the
signature of `textsieve.exec.progress.Progress.update`, so a bar's bound method fits."""


class MissingSourceText(InputError):
    """The source of an annotate shard no longer yields a row the shard has: the source file was
    changed (or moved to other contents) after `annotate`, so its signals describe other texts."""


# ---------------------------------------------------------------- input files

def input_shards(inputs: list[str], *, skip_metadata: bool = False) -> list[Shard]:
    """The shards of files, folders and globs (`expand_inputs`), minus stage metadata files
    (`METADATA_FILES`, by file name) with `skip_metadata`."""
    shards = expand_inputs(inputs)
    if skip_metadata:
        shards = [s for s in shards if posixpath.basename(s.rel) not in METADATA_FILES]
    return shards


def shard_documents(shards: Iterable[Shard], text_field: str = "text", *, progress: ProgressFn | None = None,
                    on_shard: Callable[[Shard], None] | None = None) -> Iterator[Document]:
    """The documents of `shards`, in order, one at a time.

    `on_shard(shard)` runs before a shard's first document (also for a shard without any), for
    callers whose fingerprint names every shard. `progress` is called every `PROGRESS_EVERY`
    documents of a shard and once at its end, with the bytes of the finished shards plus the
    reader's position in the current one, so a bar moves within a large shard too.
    """
    opts = ReadOptions(text_field=text_field)
    done = 0  # storage bytes of the finished shards
    for shard in shards:
        if on_shard is not None:
            on_shard(shard)
        reader = ShardReader(shard, opts)
        n = 0
        for doc in reader:
            yield doc
            n += 1
            if progress is not None and n % PROGRESS_EVERY == 0:
                progress(PROGRESS_EVERY, done + reader.bytes_read)
        done += shard.size
        if progress is not None:
            progress(n % PROGRESS_EVERY, done)


def input_texts(inputs: list[str], text_field: str = "text", *, skip_metadata: bool = False) -> Iterator[str]:
    """Texts of all documents of the inputs (files, folders, globs), in order, one at a time."""
    for doc in shard_documents(input_shards(inputs, skip_metadata=skip_metadata), text_field):
        yield doc.text


# ---------------------------------------------------------------- annotated folders

def _has_source(meta: dict) -> bool:
    return "source_shard" in meta and "read_options" in meta


def is_annotated(path: str) -> bool:
    """Whether `path` is an annotate output folder whose every shard can re-open its source
    (False for input files and folders, and for a folder of other Parquet files)."""
    try:
        fs, shards = attribute_shards(path)
        return all(_has_source(read_shard_meta(fs, p)) for p in shards)
    except (FileNotFoundError, NotADirectoryError, OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return False


def source_meta(fs: fsspec.AbstractFileSystem, path: str) -> dict:
    """The footer metadata of the annotate shard `path`; ValueError when it cannot re-open its
    source (a shard of another stage's attribute set, or of another tool)."""
    meta = read_shard_meta(fs, path)
    if not _has_source(meta):
        raise ValueError(f"{path}: not an annotate shard (no source_shard in its metadata); cannot re-read its texts")
    return trusted(meta, fs, path)  # its source must lie inside the folder's recorded inputs


def annotated_documents(directory: str, on_error: str = "skip") -> Iterator[Document]:
    """Every document of the sources of an annotate output folder, shard by shard in sorted
    order, one at a time. `on_error` applies to the source records; "skip" (the default) leaves
    out the same records annotate left out in skip mode."""
    fs, shards = attribute_shards(directory)
    for path in shards:
        yield from source_documents(trusted(read_shard_meta(fs, path), fs, path), on_error=on_error)


def source_texts(meta: dict, rows: Collection[int], on_error: str = "skip") -> dict[int, str]:
    """Texts of `rows` of one annotate shard's source (`meta`: its footer), by row, read in one
    pass that stops at the last wanted row; a row the source no longer has is absent."""
    want = set(rows)
    out: dict[int, str] = {}
    if not want:
        return out
    last = max(want)
    for doc in source_documents(meta, on_error=on_error):
        if doc.row in want:
            out[doc.row] = doc.text
        if doc.row >= last:
            break
    return out


def missing_rows(where: str, meta: dict, rows: Sequence[int]) -> MissingSourceText:
    """The error for `rows` of the annotate shard `where` that its source no longer yields."""
    src = meta.get("source_shard", {}).get("path")
    reason = (f"the source documents of rows {list(rows[:5])}{' and more' if len(rows) > 5 else ''} could not be "
              f"read from {src}; was it changed after annotate? (annotate it again)")
    return MissingSourceText(f"{where}: {reason}", location=where, reason=reason)


def aligned_source_texts(meta: dict, rows: Sequence[int], where: str) -> list[str]:
    """Texts of `rows` of one annotate shard's source, in the order of `rows` (repeats allowed);
    `MissingSourceText` naming `where` (the annotate shard) when the source lacks one."""
    by_row = source_texts(meta, rows)
    missing = [r for r in rows if r not in by_row]
    if missing:
        raise missing_rows(where, meta, missing)
    return [by_row[r] for r in rows]


def shard_texts(fs: fsspec.AbstractFileSystem, path: str) -> tuple[pa.Table, list[str]]:
    """The key columns (`KEY_COLUMNS`) of the annotate shard `path` and the text of each of its
    rows, row-aligned: for a stage that computes one value per document from its text."""
    with fs.open(path, "rb") as fh:
        keys = read_table(fh, columns=list(KEY_COLUMNS))
    rows = [int(r) for r in to_numpy(keys.column("row"))]
    return keys, aligned_source_texts(source_meta(fs, path), rows, path)


def annotated_texts(directory: str, wanted: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Texts of the documents `wanted` as (shard rel, row) pairs of an annotate output folder,
    keyed the same way; only the shards holding some are read, each up to its last wanted row.
    A document whose source no longer has it is absent (for display, where a gap is harmless)."""
    fs, files = attribute_shards(directory)
    by_shard: dict[str, set[int]] = {}
    for shard, row in wanted:
        by_shard.setdefault(shard, set()).add(row)
    out: dict[tuple[str, int], str] = {}
    for path in files:
        meta = read_shard_meta(fs, path)
        rel = meta.get("shard") or meta.get("source_shard", {}).get("rel")
        rows = by_shard.get(rel) if rel else None
        if not rows:
            continue
        for row, text in source_texts(meta, rows).items():
            out[(rel, row)] = text
    return out


# ---------------------------------------------------------------- either

def corpus_documents(paths: list[str], text_field: str = "text", *, on_error: str = "skip") -> Iterator[Document]:
    """The documents of one annotate output folder (re-read from its sources, `on_error` for
    their records) or else of input files, folders and globs (`text_field`; stage metadata files
    skipped, so a `select` output folder reads as its documents)."""
    if len(paths) == 1 and is_annotated(paths[0]):
        yield from annotated_documents(paths[0], on_error=on_error)
    else:
        yield from shard_documents(input_shards(paths, skip_metadata=True), text_field)
