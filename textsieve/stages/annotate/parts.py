"""Resumable annotate shards: a large shard is written as parts, published as one file.

Why parts: a killed `annotate` used to restart a large input file from zero. Now every
`part_size` documents of a shard are closed as one part, published atomically as
`DIR/.NAME.parquet.parts/part-00000.parquet`, ... with the run's config fingerprint in its
footer. A re-run with the same settings keeps the finished parts, re-reads (but does not
recompute) their documents, and computes from the first unfinished part on. When the shard
ends, its parts are merged into `DIR/NAME.parquet` and the parts folder is removed, so readers
always see exactly one file per shard; the folder's name starts with '.', like every
temporary name, so no reader lists a part as a shard.

Byte-identical output, interrupted or not: part boundaries fall at fixed document counts and
`annotate` never lets a batch straddle one, so each part's rows are computed from the same
batches in both cases; the merge re-reads the parts row group by row group and re-cuts them
into the shard's fixed-size row groups. A shard of fewer than `part_size` documents never has a
part: its one open part is published directly as the shard (no extra copy for the common case
of many small input files). Which of the two ways a shard takes depends only on its document
count, so a re-run takes the same one.

Parts made with other settings are not mixed in: without `overwrite` the run refuses (they hold
finished work); parts of a source file that changed since (other size, or other documents at the
resume point) are discarded.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.errors import TextsieveError
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import META_KEY, read_shard_meta
from textsieve.io.paths import Shard

log = logging.getLogger("textsieve.annotate")

#: rows per row group of an attribute shard. Why not the writers' 8,192: annotate's rows are large
#: (~11 KB in Arrow on the dev corpus, most of it line spans), and the main process holds a row
#: group while it fills and again while it is encoded. Measured on the dev corpus, one worker's
#: peak: 8,192 rows 330 MB, 4,096 rows 264 MB (later 235 MB), 2,048 rows (with 250-document
#: work units and the shared-piece combine of `io.arrow_combine`) 188 MB, under issue 28's 200 MB.
#: The price: the file is ~1.5% larger (more row groups, each with its own page headers and
#: statistics); select reads by column and row-group range and is as fast.
ROW_GROUP_ROWS = 2048

PARTS_SUFFIX = ".parts"
PART_STAGE = "annotate-part"  # `stage` in a part's footer


class PartsError(TextsieveError, RuntimeError):
    """Finished parts of a shard cannot be used as asked (other settings, changed source)."""


def parts_dir(final: str) -> str:
    """`DIR/.NAME.parquet.parts` for the shard `DIR/NAME.parquet` (hidden: never read as output)."""
    head, _, tail = final.rpartition("/")
    return f"{head}/.{tail}{PARTS_SUFFIX}" if head else f".{tail}{PARTS_SUFFIX}"


def part_path(final: str, index: int) -> str:
    return f"{parts_dir(final)}/part-{index:05d}.parquet"


@dataclass
class Resume:
    """Where a shard's work starts: the finished parts a re-run keeps and what they cover."""

    part_size: int  # documents per part for this shard (a resumed shard keeps its recorded size)
    parts: list[str] = field(default_factory=list)  # finished part paths, in order
    documents: int = 0  # documents in them
    last_row: int | None = None  # source row and id of their last document: checked on re-read
    last_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # the shard's running counters after them


def drop_parts(fs: fsspec.AbstractFileSystem, final: str) -> None:
    """Remove a shard's parts folder (after a merge, or one a killed merge left behind)."""
    d = parts_dir(final)
    if fs.exists(d):
        fs.rm(d, recursive=True)


def find_parts(fs: fsspec.AbstractFileSystem, final: str, fingerprint: str, shard: Shard, part_size: int,
               overwrite: bool) -> Resume:
    """The finished parts of the shard `final` that a run with `fingerprint` may keep.

    Parts are kept in order while each is readable, numbered in sequence and made from this
    source with these settings. Other settings: refuse (`PartsError`) unless `overwrite`; a
    changed source or an unreadable part: it and every later part are discarded."""
    if part_size < 1:
        raise PartsError(f"part_size (--part-size) must be at least 1 document, not {part_size}")
    d = parts_dir(final)
    if not fs.exists(d):
        return Resume(part_size)
    if overwrite:
        drop_parts(fs, final)
        return Resume(part_size)
    files = sorted(p for p in fs.ls(d, detail=False) if p.rsplit("/", 1)[-1].startswith("part-"))
    resume = Resume(part_size)
    for index, path in enumerate(files):
        try:
            meta = read_shard_meta(fs, path)
        except (OSError, ValueError, pa.ArrowException):
            meta = {}
        if (meta.get("stage") != PART_STAGE or meta.get("part") != index
                or path.rsplit("/", 1)[-1] != part_path(final, index).rsplit("/", 1)[-1]):
            break  # a gap in the numbering, or not a part: this one and the rest are recomputed
        same_settings = str(meta.get("fingerprint", "")).split(":")[0] == fingerprint.split(":")[0]
        if meta.get("fingerprint") != fingerprint and same_settings:  # `settings:input identity`
            log.warning("%s: the source changed since an interrupted run wrote %s; starting the shard again",
                        shard.path, d)
            break
        if meta.get("fingerprint") != fingerprint:
            raise PartsError(
                f"{final}: an interrupted run with other settings left {len(files)} finished part(s) in {d} "
                f"(fingerprint {meta.get('fingerprint')} != {fingerprint}); re-run with those settings to "
                "resume, or use --overwrite to discard them")
        if meta.get("source_size") != shard.size or meta.get("source") != shard.path:
            log.warning("%s: the source changed since an interrupted run wrote %s; starting the shard again",
                        shard.path, d)
            break
        resume.part_size = int(meta["part_size"])
        resume.parts.append(path)
        resume.documents = int(meta["documents_total"])
        resume.last_row, resume.last_id = meta["last_row"], meta["last_id"]
        resume.counts = meta.get("counts") or {}
    for path in files[len(resume.parts):]:  # unusable: recomputed
        fs.rm(path)
    if not resume.parts:
        drop_parts(fs, final)
    return resume


class ShardOutput:
    """The writer of one annotate shard: parts of `resume.part_size` rows, then one file.

    `write` takes the shard's batches in order (none straddling a part boundary) and closes a
    part whenever one is full; `close` publishes the shard: directly when it never filled a
    part, else by merging its parts. Same interface as `AtomicParquetWriter` otherwise."""

    def __init__(self, fs: fsspec.AbstractFileSystem, final: str, schema: pa.Schema, resume: Resume,
                 fingerprint: str, shard: Shard):
        self.fs, self.final, self.schema = fs, final, schema
        self.resume = resume
        self.parts = list(resume.parts)
        self.documents = resume.documents  # rows written so far, in finished parts and the open one
        self._part_rows = 0
        self._writer: AtomicParquetWriter | None = None
        self._meta: dict[bytes, bytes] = {}
        self._base = {"stage": PART_STAGE, "fingerprint": fingerprint, "source": shard.path,
                      "source_size": shard.size, "part_size": resume.part_size}
        self._last: tuple[int, str] | None = None
        self._counts: dict[str, int] = dict(resume.counts)

    def write(self, batch: pa.RecordBatch, counts: dict[str, int] | None = None) -> None:
        """Append a batch; `counts` are the shard's running counters including it (a part's
        footer keeps them, so a resumed shard's metadata equals an uninterrupted run's)."""
        if counts is not None:
            self._counts = counts
        if not batch.num_rows:
            return
        room = self.resume.part_size - self._part_rows
        if batch.num_rows > room:
            raise AssertionError(f"a batch of {batch.num_rows} rows straddles a part boundary ({room} left)")
        if self._writer is None:
            self._writer = AtomicParquetWriter(self.fs, self.final, self.schema, row_group_rows=ROW_GROUP_ROWS)
        self._writer.write(batch)
        self._part_rows += batch.num_rows
        self.documents += batch.num_rows
        self._last = (int(batch.column("row")[-1].as_py()), batch.column("id")[-1].as_py())
        if self._part_rows == self.resume.part_size:
            self._close_part()

    def _close_part(self) -> None:
        writer, last = self._writer, self._last
        if writer is None or last is None:  # callers close a part only after writing to it
            raise AssertionError("no open part to close")
        index = len(self.parts)
        meta = self._base | {"part": index, "documents": self._part_rows, "documents_total": self.documents,
                             "last_row": last[0], "last_id": last[1], "counts": dict(self._counts)}
        writer.add_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode()})
        path = part_path(self.final, index)
        writer.close(path)
        self._writer = None
        self._part_rows = 0
        self.parts.append(path)

    def add_metadata(self, metadata: dict[bytes, bytes]) -> None:
        """The shard's footer metadata (set before `close`)."""
        self._meta.update(metadata)

    def close(self) -> None:
        """Publish the shard as one file and remove its parts."""
        if not self.parts:  # the whole shard fit in its first, still open part
            writer = self._writer or AtomicParquetWriter(self.fs, self.final, self.schema,
                                                         row_group_rows=ROW_GROUP_ROWS)
            self._writer = None
            writer.add_metadata(self._meta)
            writer.close()
            return
        if self._writer is not None:  # the last, shorter part: merged like the others
            self._close_part()
        writer = AtomicParquetWriter(self.fs, self.final, self.schema, row_group_rows=ROW_GROUP_ROWS)
        try:
            for path in self.parts:
                with self.fs.open(path, "rb") as fh:
                    pf = pq.ParquetFile(fh)
                    for i in range(pf.num_row_groups):
                        writer.write(pf.read_row_group(i).replace_schema_metadata(None))
            writer.add_metadata(self._meta)
        except BaseException as exc:
            writer.abort(exc)
            raise
        writer.close()
        drop_parts(self.fs, self.final)

    def abort(self, exc: BaseException | None = None) -> None:
        """Drop the open part's temporary file; finished parts stay for the next run."""
        if self._writer is not None:
            self._writer.abort(exc)
            self._writer = None
