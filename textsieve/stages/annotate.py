"""The `annotate` stage: for every input shard, one Parquet attribute shard of signals.

Documents are never rewritten. Each output row carries `id`, the source `shard` and `row`, so
it joins back to its document without copying text. The main process reads and batches
documents; workers compute (`annotate_worker`); results are written in input order, so the
output does not depend on the number of workers. A shard's output appears under its final name
only when complete, and a re-run skips shards whose output exists with the same configuration.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Iterator

import fsspec

from textsieve import __version__
from textsieve.exec.local import default_workers, ordered_map
from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.attributes import META_KEY, read_shard_meta
from textsieve.io.paths import _SUFFIX_FORMATS, Shard, expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.signals.registry import REGISTRY
from textsieve.signals.resources import (RPV2_LANGS, WordLists, bad_words_relpath, load_word_lists, missing_message,
                                         resolve_resources_dir, stop_words_relpath)
from textsieve.signals.selection import select_signals
from textsieve.stages.annotate_worker import (BatchTask, WorkerSetup, annotate_batch, init_worker, output_schema,
                                             warm_up)
from textsieve.stages.progress import Progress

log = logging.getLogger("textsieve.annotate")

MAX_BATCH_CHARS = 4_000_000  # a batch this large keeps a worker busy ~1 s; huge docs go alone


@dataclass
class AnnotateConfig:
    """Everything `textsieve annotate` takes; the CLI and YAML both fill this."""

    inputs: list[str]
    output: str
    signals: str | list[str] | None = None  # names or groups; None = all rule signals + minhash
    lang: str | None = "en"  # language for stop words / bad words when no lang field gives one
    lang_field: str | None = None
    text_field: str = "text"
    id_field: str = "id"
    on_error: str = "fail"
    workers: int | None = None
    resources: str | None = None
    batch_size: int = 500
    overwrite: bool = False
    progress: bool = True


@dataclass
class AnnotateResult:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    documents: int = 0
    skipped_records: int = 0
    seconds: float = 0.0


class AnnotateError(RuntimeError):
    """A problem with the run itself (not with one input record)."""


def _word_lists(cfg: AnnotateConfig, signals: tuple[str, ...]) -> tuple[tuple[str, ...], WordLists]:
    """Load the word lists. A signal whose list is missing for a language the run needs (the
    `--lang` language, or all five RPv2 languages with `--lang-field`) is skipped, with one
    warning that says what to provide and where it comes from."""
    lists = load_word_lists(resolve_resources_dir(cfg.resources))
    langs = RPV2_LANGS if cfg.lang_field else ((cfg.lang,) if cfg.lang in RPV2_LANGS else ())
    missing = [rel for rel in lists.missing if any(rel in (stop_words_relpath(g), bad_words_relpath(g))
                                                   for g in langs)]
    lacking = {"stop_words": any(r.startswith("stopwords/") for r in missing),
               "bad_words": any(r.startswith("ldnoobw/") for r in missing)}
    dropped = [name for name in signals if any(lacking[need] for need in REGISTRY[name].needs)]
    if dropped:
        log.warning("%s\nSkipping signal(s): %s", missing_message(missing), ", ".join(dropped))
        signals = tuple(name for name in signals if name not in dropped)
    return signals, lists


def _fingerprint(cfg: AnnotateConfig, signals: tuple[str, ...], with_minhash: bool, lists: WordLists) -> str:
    """What determines a shard's content; a finished shard is reused only if this matches."""
    h = hashlib.sha256()
    for lang in sorted(set(lists.stop_words) | set(lists.bad_words)):
        for word in sorted(lists.stop_words.get(lang, ())):
            h.update(f"s:{lang}:{word}\n".encode("utf-8", "surrogatepass"))
        for word in sorted(lists.bad_words.get(lang, ())):
            h.update(f"b:{lang}:{word}\n".encode("utf-8", "surrogatepass"))
    key = {"version": __version__, "signals": signals, "minhash": with_minhash, "lang": cfg.lang,
           "lang_field": cfg.lang_field, "text_field": cfg.text_field, "id_field": cfg.id_field,
           "word_lists": h.hexdigest()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _lang_of(doc_lang: str | None, default: str | None) -> str | None:
    if doc_lang:
        return str(doc_lang).strip().lower()
    return default


def _batches(shard: Shard, reader: ShardReader, cfg: AnnotateConfig) -> Iterator[BatchTask]:
    """Cut a shard's documents into tasks of at most batch_size docs / MAX_BATCH_CHARS chars."""
    task = BatchTask(shard.rel, [], [], [], [])
    chars = 0
    for doc in reader:
        task.ids.append(doc.id)
        task.rows.append(doc.row)
        task.texts.append(doc.text)
        task.langs.append(_lang_of(doc.lang, cfg.lang))
        chars += len(doc.text)
        if len(task.ids) >= cfg.batch_size or chars >= MAX_BATCH_CHARS:
            task.bytes_mark = reader.bytes_read
            yield task
            task = BatchTask(shard.rel, [], [], [], [])
            chars = 0
    task.bytes_mark = reader.bytes_read
    task.last = True
    yield task  # possibly empty: marks the end of the shard so its file gets closed


def run_annotate(cfg: AnnotateConfig) -> AnnotateResult:
    """Annotate every input shard; returns what was written and skipped."""
    start = time.perf_counter()
    if cfg.on_error not in ("fail", "skip"):
        raise AnnotateError(f"--on-error must be 'fail' or 'skip', not {cfg.on_error!r}")
    signals, with_minhash = select_signals(cfg.signals)
    signals, lists = _word_lists(cfg, signals)
    shards = expand_inputs(cfg.inputs)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    fingerprint = _fingerprint(cfg, signals, with_minhash, lists)
    result = AnnotateResult(output=cfg.output)

    targets: dict[str, str] = {}
    todo: list[Shard] = []
    for shard in shards:
        rel = output_rel(shard.rel)
        if rel in targets:
            raise AnnotateError(f"inputs {targets[rel]!r} and {shard.rel!r} would both write {rel!r}")
        targets[rel] = shard.rel
        final = f"{root}/{rel}"
        if fs.exists(final) and not cfg.overwrite:
            found = read_shard_meta(fs, final).get("fingerprint")
            if found != fingerprint:
                raise AnnotateError(
                    f"{final} exists but was made with other settings (fingerprint {found} != {fingerprint}); "
                    "use --overwrite or another --output folder")
            log.info("skip %s: already annotated", shard.rel)
            result.shards_skipped.append(shard.rel)
            continue
        todo.append(shard)

    options = ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field, lang_field=cfg.lang_field,
                          on_error=cfg.on_error)
    setup = WorkerSetup(signals, with_minhash, dict(lists.stop_words), dict(lists.bad_words))
    schema = output_schema(signals, with_minhash)
    workers = cfg.workers or default_workers()
    if workers > 1 and todo:
        warm_up(setup)
    progress = Progress("annotate", total_bytes=sum(s.size for s in todo), enabled=cfg.progress)
    readers: dict[str, ShardReader] = {}

    def tasks() -> Iterator[BatchTask]:
        for shard in todo:
            reader = ShardReader(shard, options)
            readers[shard.rel] = reader
            yield from _batches(shard, reader, cfg)

    writer: AtomicParquetWriter | None = None
    current: str | None = None
    n_docs = 0
    done_bytes = 0
    shard_by_rel = {s.rel: s for s in todo}
    try:
        for task, batch in ordered_map(annotate_batch, tasks(), workers=workers, initializer=init_worker,
                                       initargs=(setup,)):
            if task.shard != current:
                current = task.shard
                writer = AtomicParquetWriter(fs, f"{root}/{output_rel(current)}", schema)
                n_docs = 0
            if batch.num_rows:
                writer.write(batch)
            n_docs += batch.num_rows
            progress.update(docs=batch.num_rows, bytes_done=done_bytes + task.bytes_mark)
            reader = readers[current]
            if task.last:
                skipped = [asdict(s) for s in reader.skipped]
                meta = {"version": __version__, "fingerprint": fingerprint, "source": shard_by_rel[current].path,
                        "source_shard": asdict(shard_by_rel[current]), "read_options": asdict(options),
                        "shard": current, "documents": n_docs, "skipped_records": len(skipped),
                        "skipped": skipped[:1000], "signals": list(signals), "minhash": with_minhash,
                        "lang": cfg.lang, "lang_field": cfg.lang_field}
                writer.add_metadata({META_KEY: json.dumps(meta).encode()})
                writer.close()
                writer = None
                done_bytes += shard_by_rel[current].size
                result.shards_written.append(current)
                result.documents += n_docs
                result.skipped_records += len(skipped)
                if skipped:
                    log.warning("%s: skipped %d bad record(s), first: %s: %s", current, len(skipped),
                                skipped[0]["location"], skipped[0]["reason"])
                current = None
    except BaseException as exc:
        if writer is not None:
            writer.abort(exc)
        raise
    finally:
        progress.close()
    result.seconds = time.perf_counter() - start
    _write_summary(fs, root, cfg, result, fingerprint)
    return result


def output_rel(shard_rel: str) -> str:
    """The attribute shard's path under --output: the input's rel with its format suffix
    replaced by `.parquet` (`sub/a.jsonl.gz` -> `sub/a.parquet`)."""
    low = shard_rel.lower()
    for suffix, _ in _SUFFIX_FORMATS:
        if low.endswith(suffix):
            return shard_rel[: -len(suffix)] + ".parquet"
    return shard_rel + ".parquet"


def _write_summary(fs: fsspec.AbstractFileSystem, root: str, cfg: AnnotateConfig, result: AnnotateResult,
                   fingerprint: str) -> None:
    summary = {"stage": "annotate", "version": __version__, "fingerprint": fingerprint,
               "config": asdict(cfg), "result": asdict(result)}
    with atomic_open(fs, f"{root}/annotate.json", "wb") as fh:
        fh.write(json.dumps(summary, indent=2).encode())
