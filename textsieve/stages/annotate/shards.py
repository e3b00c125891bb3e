"""Cutting a shard into work units, and annotating whole shards in workers.

Two ways to spread annotate over a local pool:
- **batches** (`batches`): the main process reads every shard, cuts it into batches of
  `batch_size` documents, workers compute them, and the main process writes the results in input
  order. Any input, one shard included, is spread over every worker, but the main process reads,
  parses, (un)pickles and encodes Parquet for all of them: on the dev corpus that is ~35% of a
  2-worker run's CPU, so the workers wait on it and more cores help less and less.
- **whole shards** (`annotate_shard`): each worker reads one shard, annotates it batch by batch
  and writes its attribute file itself; the main process only hands out shards and publishes
  what comes back. Nothing goes through the main process, so the run scales with the workers.
  It is used when the input has enough shards to keep every worker busy (`by_whole_shards`).

Both cut a shard into the same batches and write it through the same `ShardOutput`, so the files
are byte for byte the same either way, and an interrupted run resumes from the same parts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import pyarrow as pa
from fsspec.core import split_protocol

from textsieve._version import __version__
from textsieve.exec.warm_start import end_with_parent, run_alive
from textsieve.io.attributes import META_KEY
from textsieve.io.ids import UniqueIdReader
from textsieve.io.paths import Shard
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.stages.annotate.lang import LangTally, pop_counts, pop_lang_auto
from textsieve.stages.annotate.parts import Resume, ShardOutput
from textsieve.stages.annotate.plan import AnnotateError
from textsieve.stages.annotate.worker import AUTO_LANG, BatchTask, WorkerSetup, annotate_batch, init_worker

MAX_BATCH_CHARS = 4_000_000  # a batch this large keeps a worker busy ~1 s; huge docs go alone


class BatchSettings(Protocol):
    """The settings `batches` reads (an `AnnotateConfig`)."""

    batch_size: int
    part_size: int
    lang: str | None


def lang_of(doc_lang: str | None, default: str | None) -> str | None:
    """A document's language as the word lists name it (lower case), else the run's default."""
    if doc_lang:
        return str(doc_lang).strip().lower()
    return default



def batches(shard: Shard, reader: ShardReader, cfg: BatchSettings,
            resume: Resume | None = None, max_chars: int = MAX_BATCH_CHARS,
            with_meta: bool = False) -> Iterator[BatchTask]:
    """Cut a shard's documents into tasks of at most batch_size docs / `max_chars` chars
    (`with_meta`: each document's meta goes along, for a signal that needs it).

    A task never straddles a part boundary (every `part_size` documents), so each part is
    computed from the same batches whether or not the run was interrupted before it. The
    documents of `resume`'s finished parts are read (for the bad-record list and the reader
    position) but not sent out; the last of them must be the one the parts end with."""
    resume = resume or Resume(cfg.part_size)
    part_size, skip = resume.part_size, resume.documents
    task = BatchTask(shard.rel, [], [], [], [], [])
    chars = 0
    index = 0  # documents of the shard read so far
    for doc in reader:
        index += 1
        if index <= skip:
            if index == skip and (doc.row, doc.id) != (resume.last_row, resume.last_id):
                raise AnnotateError(
                    f"{shard.path}: row {doc.row} is {doc.id!r}, but the finished parts of an interrupted run end "
                    f"with row {resume.last_row} {resume.last_id!r}: the source changed; delete "
                    f"{resume.parts[-1].rpartition('/')[0]} (or use --overwrite) to start the shard again")
            continue
        task.ids.append(doc.id)
        task.rows.append(doc.row)
        task.texts.append(doc.text)
        task.langs.append(lang_of(doc.lang, cfg.lang))
        task.urls.append(doc.url)
        if with_meta:
            task.metas.append(doc.meta)
        chars += len(doc.text)
        if len(task.ids) >= cfg.batch_size or chars >= max_chars or index % part_size == 0:
            task.bytes_mark = reader.bytes_read
            yield task
            task = BatchTask(shard.rel, [], [], [], [], [])
            chars = 0
    if index < skip:
        raise AnnotateError(f"{shard.path} has {index} document(s), but the finished parts of an interrupted run "
                            f"hold {skip}: the source changed; delete {resume.parts[-1].rpartition('/')[0]} (or "
                            "use --overwrite) to start the shard again")
    task.bytes_mark = reader.bytes_read
    task.last = True
    yield task  # possibly empty: marks the end of the shard so its file gets closed


def by_whole_shards(shards: list[Shard], output: str, workers: int, executor: str) -> bool:
    """Whether a local pool should annotate whole shards (see the module docstring): several
    workers, and no shard larger than an even share of the input, so that handing out whole
    shards keeps every worker busy to the end. A single shard, or one dominating the input, is
    cut into batches instead; so is a run reading or writing an in-memory fsspec filesystem,
    which other processes do not see."""
    if executor != "local" or workers <= 1 or len(shards) < workers:
        return False
    if any(split_protocol(path)[0] == "memory" for path in [output, *(s.path for s in shards)]):
        return False
    sizes = [s.size for s in shards]
    return max(sizes) * workers <= sum(sizes)


@dataclass(frozen=True)
class ShardContext:
    """What every shard of a run shares: settings, schema and the footer fields (picklable: it
    goes to the workers with each `ShardJob`)."""

    cfg: Any  # the AnnotateConfig
    fs: Any  # the output's fsspec filesystem
    schema: pa.Schema
    options: ReadOptions
    id_mode: str
    max_chars: int
    with_meta: bool
    fingerprint: str  # the run's settings
    meta: dict[str, Any]  # the run's fields of every shard's footer: signals, minhash, lang, lang_field
    models_meta: dict[str, Any]  # with --models: model_signals and models (after the ids' fields)
    list_signals: tuple[str, ...]


@dataclass(frozen=True)
class ShardJob:
    """One shard to annotate: where its attribute file is staged, and its resume state."""

    ctx: ShardContext
    shard: Shard
    staged: str
    resume: Resume
    shard_fp: str
    parent: int = field(default_factory=os.getpid)  # the run's process: the worker ends with it


@dataclass
class ShardDone:
    """What the main process needs of a finished shard (its file is written and closed)."""

    rel: str
    documents: int
    skipped: int
    first_skip: dict[str, Any] | None
    renamed: int
    first_rename: dict[str, Any] | None
    no_lists: dict[str, int]
    langs: LangTally = field(default_factory=LangTally)


def finish_shard(job: ShardJob, writer: ShardOutput, reader: UniqueIdReader, documents: int,
                 no_lists: Counter[str], langs: LangTally) -> ShardDone:
    """Write the shard's footer and close its file (its parts merged); one code path for both ways."""
    ctx, rel = job.ctx, job.shard.rel
    skipped = [asdict(s) for s in reader.skipped]
    meta = {"version": __version__, "fingerprint": ctx.fingerprint, "shard_fingerprint": job.shard_fp,
            "source": job.shard.path, "source_shard": asdict(job.shard), "read_options": asdict(ctx.options),
            "shard": rel, "documents": documents, "skipped_records": len(skipped), "skipped": skipped[:1000],
            **ctx.meta, **reader.ids.meta(), **ctx.models_meta}
    if ctx.list_signals:  # {lang: documents} whose word-list signals are null
        meta["langs_without_word_lists"] = dict(sorted(no_lists.items()))
    if ctx.cfg.lang == AUTO_LANG:  # per shard; a resumed shard counts its new parts only
        meta.update(langs.record())
    writer.add_metadata({META_KEY: json.dumps(meta).encode()})
    writer.close()
    return ShardDone(rel, documents, len(skipped), skipped[0] if skipped else None, reader.ids.renamed,
                     reader.ids.examples[0] if reader.ids.renamed else None, dict(no_lists), langs)


class RunEnded(Exception):
    """The process that started this worker's run is gone."""


def exit_with_parent(parent: int) -> None:
    """Make this worker end with the run that handed it a shard. A worker that outlived a killed
    run would go on writing and merging parts in the run's staging folder while a re-run (the
    local lock goes with the killed process) resumes from the same folder. On Linux the kernel
    kills the worker when its parent exits (PR_SET_PDEATHSIG); everywhere, `annotate_shard` also
    checks between batches."""
    end_with_parent()  # its parent: the run itself when spawned, the run's fork server when forked
    if not run_alive():  # it ended before the signal was armed
        raise RunEnded(f"the annotate run (process {parent}) has ended")


def init_shard_worker(setup: WorkerSetup, parent: int) -> None:
    """A whole-shard worker's set-up: it ends with the run (`exit_with_parent`), then `init_worker`."""
    exit_with_parent(parent)
    init_worker(setup)


def annotate_shard(job: ShardJob) -> ShardDone:
    """Annotate one whole shard in this process (a pool worker, set up by `init_shard_worker`)."""
    ctx = job.ctx
    reader = UniqueIdReader(job.shard, ctx.options, ctx.id_mode)
    writer = ShardOutput(ctx.fs, job.staged, ctx.schema, job.resume, job.shard_fp, job.shard)
    documents = writer.resume.documents  # those of finished parts, which are not recomputed
    no_lists: Counter[str] = Counter(writer.resume.counts)
    langs = LangTally()
    try:
        for task in batches(job.shard, reader, ctx.cfg, job.resume, ctx.max_chars, ctx.with_meta):
            if not run_alive():
                raise RunEnded(f"the annotate run (process {job.parent}) has ended")
            batch, lacking = pop_counts(annotate_batch(task))
            batch, auto = pop_lang_auto(batch)
            no_lists.update(lacking)
            langs.add(auto)
            if batch.num_rows:
                writer.write(batch, no_lists)
            documents += batch.num_rows
        return finish_shard(job, writer, reader, documents, no_lists, langs)
    except BaseException as exc:
        writer.abort(exc)
        raise
