"""The `annotate` stage: for every input shard, one Parquet attribute shard of signals.

Documents are never rewritten. Each output row carries `id`, the source `shard` and `row`, so
it joins back to its document without copying text. The main process reads and batches
documents; workers compute (`annotate_worker`); results are written in input order, so the
output does not depend on the number of workers. A shard's output appears under its final name
only when complete, and a re-run skips shards whose output exists with the same configuration.

Interrupted runs resume. A shard is written in parts of `part_size` documents, each published
atomically as `DIR/.NAME.parquet.parts/part-NNNNN.parquet` with the settings fingerprint in its
footer; a re-run with the same settings keeps the finished parts and computes from the first
unfinished one, and the finished shard is the parts merged into one `DIR/NAME.parquet` (the parts
folder is then removed), byte-identical to an uninterrupted run. Readers therefore always see one
file per shard; a shard smaller than one part is written directly (`annotate_parts`). Temporary
files whose writer process is gone (a killed run's) are removed at the start of the next run
(`io.leftovers`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.exec.arrow_memory import lean_arrow_memory
from textsieve.exec.budget import memory_plan
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.interop.hf import dataset_inputs
from textsieve.io.attributes import add_store_readme
from textsieve.io.ids import UniqueIdReader, effective_mode
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.limits import DEFAULT_MAX_DOC_BYTES, MAX_DOC_BYTES_HELP, parse_max_doc_bytes
from textsieve.io.overlap import check_apart
from textsieve.io.paths import expand_inputs
from textsieve.io.publish import FOLDER_SUMMARY, Publication
from textsieve.io.readers import ReadOptions
from textsieve.io.safe_paths import safe_rel
from textsieve.options import (
    address_option,
    check_choices,
    executor_option,
    memory_option,
    option,
    progress_option,
)
from textsieve.signals.registry import REGISTRY
from textsieve.signals.resources import (
    RPV2_LANGS,
    WordLists,
    bad_words_relpath,
    load_word_lists,
    missing_message,
    resolve_resources_dir,
    stop_words_relpath,
)
from textsieve.signals.selection import select_signals
from textsieve.stages.annotate.kernel_timing import timed
from textsieve.stages.annotate.lang import (
    FALLBACK_RULE,
    FALLBACK_SHARE,
    LangTally,
    check_lang,
    no_lists_warning,
    pop_counts,
    pop_lang_auto,
)
from textsieve.stages.annotate.parts import ShardOutput
from textsieve.stages.annotate.plan import SUMMARY, AnnotateError, output_rel, plan_shards, warn_markup
from textsieve.stages.annotate.shards import (
    MAX_BATCH_CHARS,
    ShardContext,
    ShardDone,
    ShardJob,
    annotate_shard,
    batches,
    by_whole_shards,
    finish_shard,
    init_shard_worker,
)
from textsieve.stages.annotate.worker import (
    AUTO_LANG,
    BatchTask,
    WorkerSetup,
    annotate_batch,
    init_worker,
    load_models,
    output_schema,
    warm_up,
    warm_up_here,
)
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, absolute, key_of
from textsieve.stages.planning import Corpus, PlannedSet, StagePlan

if TYPE_CHECKING:  # pyarrow is only named in annotations here; the workers and writers import it
    import pyarrow as pa

log = logging.getLogger("textsieve.annotate")


#: Peak memory per character of a batch while a worker computes it (the texts, their views and the
#: kernels' tables), measured: a 30M-character document adds 388 MB to an idle worker's RSS.
WORKER_BYTES_PER_CHAR = 13
#: Memory per character of a batch waiting for a worker (its texts in the main process, pickled
#: on the way): up to 4 bytes per character of a Python str, twice. Two batches wait per worker.
PENDING_BYTES_PER_CHAR = 8
PENDING_PER_WORKER = 2
MEMORY_SPENT_ON = (f"annotate sizes its batches by it: a batch costs ~{WORKER_BYTES_PER_CHAR} bytes per character "
                   f"in its worker and ~{PENDING_BYTES_PER_CHAR} while one of the {PENDING_PER_WORKER} per worker "
                   "waits, so more workers get smaller batches (never fewer workers); one document larger than a "
                   "batch is annotated alone (bound it with --max-doc-bytes)")


@dataclass
class AnnotateConfig:
    """Everything `textsieve annotate` takes; the CLI, the YAML pipeline and `ts.annotate` fill
    this, and each field's `option()` is the one place its default and help text live."""

    inputs: list[str] = option(help="files, folders or globs; local paths or fsspec URLs", positional=True,
                               metavar="INPUT")
    output: str = option(help="folder (or URL) for attribute shards", short="-o", metavar="DIR")
    signals: str | list[str] | None = option(
        None, help="comma list of signal names or groups (default: all, i.e. the 28 RPv2 rule signals + "
                   "minhash); see `textsieve signals`")
    lang: str | None = option(
        None, help="language for stop words and bad words (en, de, fr, es, it; default en, or with "
                   "--lang-field no fallback: documents without a language get null word-list signals). "
                   "'auto': detect each document's language (built-in py3langid, or a language-id --models "
                   "such as lid.176.bin) and also write ts_lang, ts_lang_score")
    lang_field: str | None = option(None, help="record field holding each document's language (dotted path, "
                                               "e.g. meta.lang)", metavar="FIELD")
    text_field: str = option("text", help="record field holding the text", metavar="FIELD")
    id_field: str = option("id", help="id field; records without one get '<shard>/<row>'", metavar="FIELD")
    on_error: str = option("fail", help="bad record: stop with an error naming file and line (fail), or skip "
                                        "and report it (skip)", choices=("fail", "skip"))
    workers: int | None = option(None, help="processes (default: all cores)")
    resources: str | None = option(None, help="word-list folder laid over the bundled RPv2 lists (else "
                                              "$TEXTSIEVE_RESOURCES, else the one `textsieve resources add` "
                                              "filled)", metavar="DIR")
    batch_size: int = option(250, help="documents per work unit")
    memory: str = memory_option(MEMORY_SPENT_ON)
    overwrite: bool = option(False, help="recompute shards that already exist")
    progress: bool = progress_option()
    models: dict[str, str] = option(
        help="add the signals of a model (repeatable): a textsieve .tsm file (`textsieve train ...`), a "
             "fastText .bin (classifier -> rps_doc_ml_NAME_score, or language id), a KenLM file, a UT1 "
             "blacklists folder, or builtin:py3langid. See `textsieve models show PATH`",
        factory=dict, renamed_from=("--model",), metavar="NAME=PATH")
    executor: str = executor_option("local process pool, or Ray actors (pip install 'textsieve[ray]'); "
                                         "same output either way")
    address: str | None = address_option()
    # documents per resumable part of a shard: a killed run resumes from the last finished part
    part_size: int = option(50_000, help="documents per part of a large shard; a re-run after an interruption "
                                         "resumes from the last finished part (output is the same)")
    # repeated ids within a shard (dedup would merge those documents): None = fail, or suffix with --on-error skip
    dedupe_ids: str | None = option(
        None, help="a shard with a repeated id: fail (default) naming both records, or suffix: rename the 2nd, "
                   "3rd, ... to ID#2, ID#3 in document order, counted as renamed_ids (default with --on-error "
                   "skip)", choices=("fail", "suffix"))
    # a shard's input identity: size + mtime/ETag (cheap), or a SHA-256 of its bytes
    verify_inputs: bool = option(False, help="tell changed inputs by a SHA-256 of their bytes instead of size and "
                                             "modification time (for copies that keep times); a changed input "
                                             "re-runs its shard either way")
    # one document's memory is up to 10x its size (io.limits): larger records are bad records; 0 = no limit
    max_doc_bytes: int | str = option(DEFAULT_MAX_DOC_BYTES, help=MAX_DOC_BYTES_HELP, metavar="SIZE")
    # `--signals embed`: after the signals, the `embed` stage writes sets/embed_MODEL with this model
    embed_model: str | None = option(None, help="with --signals embed: the embedding model (default: `textsieve "
                                                "embed`'s default, wordllama), a builtin name or a model folder",
                                     metavar="MODEL")


@result_display
@dataclass
class AnnotateResult:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    documents: int = 0
    skipped_records: int = 0
    seconds: float = 0.0
    compile_seconds: float = 0.0  # kernel warm-up before the first batch (part of `seconds`)
    kernels_compiled: int = 0  # numba kernels compiled (not loaded from cache) by that warm-up
    langs_without_word_lists: dict[str, int] = field(default_factory=dict)  # docs with null word-list signals
    # --lang auto: {"pcm->en": documents} that took a language with word lists (stages.annotate.lang)
    lang_fallbacks: dict[str, int] = field(default_factory=dict)
    lang_confidence: dict[str, dict] = field(default_factory=dict)  # detected language -> {docs, mean_score}
    parts_resumed: int = 0  # finished parts of interrupted runs that were kept, not recomputed
    documents_resumed: int = 0  # documents in them (part of `documents`)
    renamed_ids: int = 0  # documents whose repeated id got a #N suffix (--dedupe-ids suffix)
    embed: Any = None  # `--signals embed`: the embed stage's EmbedResult

    @property
    def docs_per_second(self) -> float:
        """The compute rate: documents over the run time *without* the one-time kernel warm-up,
        which a first run spends compiling and which says nothing about throughput."""
        busy = self.seconds - self.compile_seconds
        computed = self.documents - self.documents_resumed  # resumed parts were only re-read
        return computed / busy if busy > 0 else 0.0

    def rate_text(self) -> str:
        """`290 docs/s`, plus `; 5.2 s one-time kernel compile` when this run compiled kernels."""
        text = f"{self.docs_per_second:,.0f} docs/s"
        if self.kernels_compiled:
            text += f"; {self.compile_seconds:.1f} s one-time kernel compile"
        return text

    def _headline(self) -> str:
        """Jupyter's caption of this result (`textsieve.display`)."""
        return (f"{self.documents:,} documents annotated into {self.output} ({len(self.shards_written)} shard(s) "
                f"written, {len(self.shards_skipped)} already done); {self.rate_text()}")


def _word_lists(cfg: AnnotateConfig, signals: tuple[str, ...]) -> tuple[tuple[str, ...], WordLists]:
    """Load the word lists. A signal whose list is missing for a language the run needs (the
    `--lang` language, or all five RPv2 languages with `--lang-field`) is skipped, with one
    warning that says what to provide and where it comes from."""
    lists = load_word_lists(resolve_resources_dir(cfg.resources))
    langs = RPV2_LANGS if cfg.lang_field or cfg.lang == AUTO_LANG else ((cfg.lang,) if cfg.lang in RPV2_LANGS else ())
    missing = [rel for rel in lists.missing if any(rel in (stop_words_relpath(g), bad_words_relpath(g))
                                                   for g in langs)]
    lacking = {"stop_words": any(r.startswith("stopwords/") for r in missing),
               "bad_words": any(r.startswith("ldnoobw/") for r in missing)}
    dropped = [name for name in signals if any(lacking[need] for need in REGISTRY[name].word_lists)]
    if dropped:
        log.warning("%s\nSkipping signal(s): %s", missing_message(missing), ", ".join(dropped))
        signals = tuple(name for name in signals if name not in dropped)
    return signals, lists


@dataclass
class ModelPlan:
    """The run's models: what workers load, which of their signals are written, and the record
    of each model (kind, fingerprint, header) for shard metadata and the config fingerprint."""

    models: tuple[tuple[str, str], ...] = ()
    signals: tuple[str, ...] = ()
    lang_model: str | None = None
    records: dict[str, dict] = field(default_factory=dict)


LANGID_SIGNALS = ("ts_lang", "ts_lang_score")
BUILTIN_LANGID = "builtin:py3langid"


def _split_signal_spec(spec: str | list[str] | None) -> list[str] | None:
    if spec is None:
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    return [item.strip() for item in items if item.strip()]


def _plan_models(cfg: AnnotateConfig) -> tuple[str | list[str] | None, ModelPlan]:
    """Resolve `--models` (adding the built-in language id where `--lang auto` or the
    `ts_lang` signals need it), and split `--signals` into rule signals and model signals.

    Asking for a model means computing it, whatever `--signals` says: every model contributes
    the signals of its own that `--signals` names, or all of them when it names none (so
    `--signals ts_lang --models wikiref=M` writes ts_lang *and* wikiref's score; before, naming
    any model signal silently dropped the other models' columns)."""
    items = _split_signal_spec(cfg.signals)
    models = dict(cfg.models)
    if not models and items is None and cfg.lang != AUTO_LANG:
        return cfg.signals, ModelPlan()
    from textsieve.models.registry import model_fingerprint, model_header, model_kind_of, model_signals

    kinds = {name: model_kind_of(path) for name, path in models.items()}
    lang_models = [name for name, kind in kinds.items() if kind == "langid"]
    wants_lang = cfg.lang == AUTO_LANG or any(i in LANGID_SIGNALS for i in items or ())
    if wants_lang and not lang_models:
        models["lang"] = BUILTIN_LANGID
        kinds["lang"] = "langid"
        lang_models = ["lang"]
    if not models:
        return cfg.signals, ModelPlan()
    pairs = tuple(models.items())
    loaded, sigs = load_models(pairs)
    named = {i for i in items or () if i in sigs}
    spec: str | list[str] | None = None
    if items is not None:
        rule_items = [i for i in items if i not in sigs]
        spec = rule_items if rule_items else "none"  # "none": only model signals were named
    wanted: set[str] = set()
    for name, _ in pairs:  # per model: the signals named, else all of them
        own = [sig.name for sig in model_signals(kinds[name], name, loaded[name])]
        wanted.update([n for n in own if n in named] or own)
    chosen = tuple(n for n in sigs if n in wanted)
    records = {name: {"path": path, "kind": kinds[name], "fingerprint": model_fingerprint(path),
                      "header": model_header(path, kinds[name])} for name, path in pairs}
    lang_model = lang_models[0] if cfg.lang == AUTO_LANG else None
    return spec, ModelPlan(pairs, chosen, lang_model, records)


def _fingerprint(cfg: AnnotateConfig, signals: tuple[str, ...], with_minhash: tuple[str, ...], lists: WordLists,
                 plan: ModelPlan | None = None) -> str:
    """What determines a shard's content; a finished shard is reused only if this matches."""
    h = hashlib.sha256()
    for lang in sorted(set(lists.stop_words) | set(lists.bad_words)):
        for word in sorted(lists.stop_words.get(lang, ())):
            h.update(f"s:{lang}:{word}\n".encode("utf-8", "surrogatepass"))
        for word in sorted(lists.bad_words.get(lang, ())):
            h.update(f"b:{lang}:{word}\n".encode("utf-8", "surrogatepass"))
    key: dict[str, Any] = {"version": __version__, "signals": signals, "minhash": with_minhash, "lang": cfg.lang,
                           "lang_field": cfg.lang_field, "text_field": cfg.text_field, "id_field": cfg.id_field,
                           "word_lists": h.hexdigest()}
    if cfg.lang == AUTO_LANG:  # which language a document's word-list signals use
        key["lang_fallback"] = FALLBACK_RULE
    if parse_max_doc_bytes(cfg.max_doc_bytes) != DEFAULT_MAX_DOC_BYTES:  # which records are skipped
        key["max_doc_bytes"] = parse_max_doc_bytes(cfg.max_doc_bytes)
    if plan is not None and plan.models:  # only then, so model-free fingerprints stay as they were
        key["models"] = {name: rec["fingerprint"] for name, rec in plan.records.items()}
        key["model_signals"] = plan.signals
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def batch_chars(memory: str | int, workers: int) -> int:
    """The most characters of text one batch holds under `--memory` with `workers` workers
    (`MEMORY_SPENT_ON`): every worker computing a batch and two more waiting for each, within
    the usable three quarters of the budget; never above MAX_BATCH_CHARS, at least 1."""
    usable = memory_plan("annotate", memory, 0, floor=1).usable
    per_char = WORKER_BYTES_PER_CHAR + PENDING_PER_WORKER * PENDING_BYTES_PER_CHAR
    return max(1, min(MAX_BATCH_CHARS, usable // (per_char * max(1, workers))))


def holds_huge_document(task: BatchTask, max_chars: int) -> bool:
    """Does `task` hold a document over a whole batch's budget of characters? Such a task is
    annotated in the main process (`exec.local.InlineRunner`): shipped to a worker, the document
    and its ~3x larger attribute row were copied both ways, and with 2 workers a 30 MB document
    cost 37x its size across the process tree."""
    return any(len(t) > max_chars for t in task.texts)


EMBED_SIGNAL = "embed"


def _without_embed(cfg: AnnotateConfig) -> tuple[AnnotateConfig, bool]:
    """`--signals ...,embed`: the signals without `embed` (which the embed stage writes to a set
    of its own), and whether it was asked for. `--signals embed` alone computes no signals."""
    items = _split_signal_spec(cfg.signals)
    if items is None or EMBED_SIGNAL not in items:
        return cfg, False
    rest = [i for i in items if i != EMBED_SIGNAL]
    return replace(cfg, signals=",".join(rest) if rest else "none"), True


def _embed_after(cfg: AnnotateConfig) -> Any:
    """Run the embed stage on the annotate folder just written (same workers, executor, overwrite)."""
    from textsieve.stages.annotate.embed import EmbedConfig, run_embed

    extra = {"model": cfg.embed_model} if cfg.embed_model else {}
    return run_embed(EmbedConfig(directory=cfg.output, workers=cfg.workers, executor=cfg.executor,
                                 address=cfg.address, progress=cfg.progress, overwrite=cfg.overwrite, **extra))


def _resolve_defaults(cfg: AnnotateConfig) -> AnnotateConfig:
    """Fill the defaults that depend on other fields: `lang` None means English, or no
    fallback language when a `lang_field` gives each document's language. Values are checked
    against their choices here, so the API and YAML get the CLI's errors."""
    check_choices(cfg)
    if cfg.lang is None and not cfg.lang_field:
        cfg = replace(cfg, lang="en")
    return cfg


def run_annotate(cfg: AnnotateConfig) -> AnnotateResult:
    """Annotate every input shard; returns what was written and skipped."""
    cfg, embed = _without_embed(_resolve_defaults(cfg))
    if embed:  # the model is loaded before any work, so a bad --embed-model fails at once
        from textsieve.embedding.models import load_embedder

        load_embedder(cfg.embed_model)
        result = _run_annotate(cfg)
        result.embed = _embed_after(cfg)
        return result
    return _run_annotate(cfg)


def _run_annotate(cfg: AnnotateConfig) -> AnnotateResult:
    start = time.perf_counter()
    check_lang(cfg.lang, cfg.resources)
    lean_arrow_memory()
    if cfg.on_error not in ("fail", "skip"):
        raise AnnotateError(f"--on-error must be 'fail' or 'skip', not {cfg.on_error!r}")
    spec, plan = _plan_models(cfg)
    signals, with_minhash = ((), ()) if spec == "none" else select_signals(spec)
    signals, lists = _word_lists(cfg, signals)
    shards = expand_inputs(cfg.inputs)
    check_apart("annotate", cfg.output, cfg.inputs)
    warn_markup(shards)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    fingerprint = _fingerprint(cfg, signals, with_minhash, lists, plan)
    result = AnnotateResult(output=cfg.output)
    remove_stale_temps(fs, root)  # a killed run's temporary files (never a live run's)
    pub = Publication(fs, root, "annotate", fingerprint, info={"fingerprint": fingerprint, "settings": fingerprint},
                      protect=True, overwrite=cfg.overwrite)

    todo, resumes, shard_fps = plan_shards(shards, pub, fingerprint, cfg.overwrite, cfg.verify_inputs,
                                           cfg.part_size, result)
    if todo:
        pub.claim()  # refuses to discard a killed run's work of other settings (unless --overwrite)

    with_meta = any(REGISTRY[name].needs_meta for name in signals)  # documents' meta to the workers, if needed
    options = ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field, lang_field=cfg.lang_field,
                          on_error=cfg.on_error, max_doc_bytes=parse_max_doc_bytes(cfg.max_doc_bytes),
                          read_meta=with_meta)
    setup = WorkerSetup(signals, with_minhash, dict(lists.stop_words), dict(lists.bad_words), plan.models,
                        plan.signals, plan.lang_model)
    schema = output_schema(signals, with_minhash, load_models(plan.models)[1], plan.signals)
    mapper, workers = _executor(cfg)
    max_chars = batch_chars(cfg.memory, workers)
    if todo and warm_up_here(setup, workers):  # compile (or load) the kernels before the first batch's clock
        result.compile_seconds, result.kernels_compiled = timed(lambda: warm_up(setup))
    progress = Progress("annotate", total_bytes=sum(s.size for s in todo), enabled=cfg.progress)
    id_mode = effective_mode(cfg.dedupe_ids, cfg.on_error)  # repeated ids in a shard: fail or rename
    list_signals = tuple(name for name in signals if REGISTRY[name].word_lists)
    run_meta = {"signals": list(signals), "minhash": list(with_minhash), "lang": cfg.lang, "lang_field": cfg.lang_field}
    models_meta = {"model_signals": list(plan.signals), "models": plan.records} if plan.models else {}
    ctx = ShardContext(cfg, fs, schema, options, id_mode, max_chars, with_meta, fingerprint, run_meta, models_meta,
                       list_signals)
    jobs = {s.rel: ShardJob(ctx, s, pub.staged(safe_rel(output_rel(s.rel))), resumes[s.rel],
                            shard_fps[s.rel]) for s in todo}
    run_langs = LangTally()  # --lang auto: fallbacks and confidence
    done_bytes = 0

    def account(done: ShardDone) -> None:
        """A finished shard: published with the run, counted in the result."""
        nonlocal done_bytes
        rel = done.rel
        pub.add(safe_rel(output_rel(rel)), shard_fps[rel], settings=fingerprint)
        done_bytes += jobs[rel].shard.size
        result.shards_written.append(rel)
        result.renamed_ids += done.renamed
        if done.first_rename is not None:
            log.warning("%s: renamed %d repeated id(s), first: %s: %r -> %r", rel, done.renamed,
                        *done.first_rename.values())
        if list_signals:
            for lang, n in done.no_lists.items():
                result.langs_without_word_lists[lang] = result.langs_without_word_lists.get(lang, 0) + n
        if cfg.lang == AUTO_LANG:
            run_langs.merge(done.langs)
        log.info("%s: done, %d document(s)", rel, done.documents)
        result.documents += done.documents
        result.skipped_records += done.skipped
        if done.first_skip is not None:
            log.warning("%s: skipped %d bad record(s), first: %s: %s", rel, done.skipped,
                        done.first_skip["location"], done.first_skip["reason"])

    try:
        if by_whole_shards(todo, cfg.output, workers, cfg.executor):
            # each worker reads, annotates and writes whole shards; nothing passes through here
            # (settle: after an error, the other workers finish their shard before the run gives up,
            # so nothing writes into the staging folder once the error is out)
            for job, done in mapper(annotate_shard, list(jobs.values()), workers=workers,
                                    initializer=init_shard_worker, initargs=(setup, os.getpid()), settle=True):
                account(done)
                progress.update(docs=done.documents - job.resume.documents, bytes_done=done_bytes, shard=job.shard.rel)
        else:
            _by_batches(ctx, jobs, mapper, workers, setup, progress, account)
    except BaseException:
        pub.abandon()  # keeps the staging folder when it holds finished work for a re-run
        raise
    finally:
        progress.close()
    result.seconds = time.perf_counter() - start
    if cfg.lang == AUTO_LANG:
        record = run_langs.record()
        result.lang_fallbacks, result.lang_confidence = record["lang_fallbacks"], record["lang_confidence"]
        if result.lang_fallbacks:
            log.info("--lang auto: %d document(s) whose detected language has no word lists took the closest one "
                     "that has (its probability >= %.0f%% of the detected one's): %s",
                     sum(result.lang_fallbacks.values()), 100 * FALLBACK_SHARE,
                     ", ".join(f"{k} {v}" for k, v in list(result.lang_fallbacks.items())[:10]))
    if result.langs_without_word_lists:
        result.langs_without_word_lists = dict(sorted(result.langs_without_word_lists.items()))
        log.warning(no_lists_warning(result.langs_without_word_lists, list(list_signals), lists))
    _write_summary(fs, pub, cfg, result, fingerprint)
    add_store_readme(pub)
    pub.commit()
    return result


def _by_batches(ctx: ShardContext, jobs: dict[str, ShardJob], mapper: Any, workers: int, setup: WorkerSetup,
                progress: Progress, account: Any) -> None:
    """Annotate the shards batch by batch (`shards` says when and why): this process reads and
    cuts them, the mapper's workers compute, and the results are written here in input order."""
    readers: dict[str, UniqueIdReader] = {}

    def tasks() -> Iterator[BatchTask]:
        for job in jobs.values():
            reader = UniqueIdReader(job.shard, ctx.options, ctx.id_mode)
            readers[job.shard.rel] = reader
            yield from batches(job.shard, reader, ctx.cfg, job.resume, ctx.max_chars, ctx.with_meta)

    writer: ShardOutput | None = None
    current: str | None = None
    n_docs = 0
    done_bytes = 0
    no_lists: Counter[str] = Counter()  # the current shard's documents without their word lists
    shard_langs = LangTally()
    try:
        # a document over a batch's budget is annotated here, not shipped to a worker (InlineRunner)
        for task, batch in mapper(annotate_batch, tasks(), workers=workers, initializer=init_worker,
                                  initargs=(setup,), inline=partial(holds_huge_document, max_chars=ctx.max_chars)):
            batch, lacking = pop_counts(batch)
            batch, auto = pop_lang_auto(batch)
            rel = task.shard
            job = jobs[rel]
            if writer is None or rel != current:  # a shard's first batch (the writer is None between shards)
                current = rel
                writer = ShardOutput(ctx.fs, job.staged, ctx.schema, job.resume, job.shard_fp, job.shard)
                n_docs = writer.resume.documents  # those of finished parts, which are not recomputed
                no_lists = Counter(writer.resume.counts)
                shard_langs = LangTally()
            no_lists.update(lacking)
            shard_langs.add(auto)
            if batch.num_rows:
                writer.write(batch, no_lists)
            n_docs += batch.num_rows
            progress.update(docs=batch.num_rows, bytes_done=done_bytes + task.bytes_mark,
                            shard=rel if task.last else None)
            if task.last:
                reader = readers.pop(rel)  # its id table is one shard's: held for every shard, it grew with the corpus
                done = finish_shard(job, writer, reader, n_docs, no_lists, shard_langs)
                writer = None
                done_bytes += job.shard.size
                account(done)
                current = None
    except BaseException as exc:
        if writer is not None:
            writer.abort(exc)
        raise


def _executor(cfg: AnnotateConfig):
    """(ordered map function, workers) for `cfg.executor`; both keep the same ordered contract,
    so the output does not depend on the executor."""
    if cfg.executor not in ("local", "ray"):
        raise AnnotateError(f"--executor must be 'local' or 'ray', not {cfg.executor!r}")
    if cfg.executor == "local":
        if cfg.address:
            raise AnnotateError("--address is for --executor ray")
        return ordered_map, cfg.workers or default_workers()
    from textsieve.exec.ray_exec import cluster_cpus, ray_ordered_map

    workers = cfg.workers or cluster_cpus(cfg.address)
    return partial(ray_ordered_map, address=cfg.address), workers


def _earlier_roots(fs: fsspec.AbstractFileSystem, pub: Publication) -> list[str]:
    """The input roots the published annotate.json recorded (for shards this run keeps)."""
    from textsieve.io.source_roots import absolute_root

    try:
        with fs.open(f"{pub.root}/{SUMMARY}", "rb") as fh:
            old = json.loads(fh.read())
    except (OSError, ValueError):
        return []
    return [str(r) for r in old.get("input_roots") or [absolute_root(str(i)) for i in
                                                         old.get("config", {}).get("inputs") or []]]


def _write_summary(fs: fsspec.AbstractFileSystem, pub: Publication, cfg: AnnotateConfig, result: AnnotateResult,
                   fingerprint: str) -> None:
    from textsieve.io.source_roots import absolute_root

    roots = [absolute_root(str(i)) for i in cfg.inputs]
    if any(rel not in {output_rel(s) for s in result.shards_written + result.shards_skipped}
           for rel in pub.kept if rel.endswith(".parquet")):  # shards of earlier runs stay published: their roots too
        roots += [r for r in _earlier_roots(fs, pub) if r not in roots]
    summary = {"stage": "annotate", "version": __version__, "fingerprint": fingerprint,
               "config": asdict(cfg), "input_roots": roots, "result": asdict(result)}
    pub.add_summary(summary, name=SUMMARY, style=FOLDER_SUMMARY)


def planned_schema(cfg: AnnotateConfig) -> pa.Schema:
    """The attribute shard schema `run_annotate(cfg)` will write, from the config alone (no
    input is read; models are loaded to learn their signals). Why: `textsieve run --dry-run`
    checks every recipe rule against the columns the stages will produce, so a typo or a
    signal that will be skipped (e.g. word lists missing) fails before hours of annotate.
    It follows run_annotate's planning steps; tests compare it with a real run's schema."""
    cfg, _ = _without_embed(_resolve_defaults(cfg))
    spec, plan = _plan_models(cfg)
    signals, with_minhash = ((), ()) if spec == "none" else select_signals(spec)
    quiet, log.disabled = log.disabled, True  # the run itself warns about missing word lists
    try:
        signals, _ = _word_lists(cfg, signals)
    finally:
        log.disabled = quiet
    return output_schema(signals, with_minhash, load_models(plan.models)[1], plan.signals)


def _pipeline_run(c: AnnotateConfig) -> Outcome:
    res = run_annotate(c)
    for rel in res.shards_skipped:
        log.info("annotate: skipped %s (already annotated)", rel)
    return Outcome({"documents_this_run": res.documents, "shards_written": len(res.shards_written),
                    "shards_skipped": len(res.shards_skipped)}, ran=bool(res.shards_written),
                   summary=f"annotate: {len(res.shards_written)} shard(s) written ({res.documents:,} docs), "
                           f"{len(res.shards_skipped)} already done")


def _resolve(section: dict[str, Any], base: Path) -> None:
    section["models"] = {name: absolute(path, base) for name, path in (section.get("models") or {}).items()}


def _finish(kw: dict[str, Any], base: Path, where: str) -> None:
    kw["models"] = dict(kw["models"] or {})


#: Attribute bytes per document of a full annotate (28 rule signals + 4 MinHash band sets),
#: measured on the dev corpus: 63.3 MB of Parquet for 15,263 documents.
ATTR_BYTES_PER_DOC = 4_150
#: Peak RSS of one annotate worker process (word lists, kernels, a batch), measured on the dev
#: corpus with --workers 1: ~310 MB.
WORKER_BYTES = 310_000_000


def _record(section: dict[str, Any]) -> None:
    """The word lists actually found, for an exact repeat of the run."""
    if section.get("resources") is None:
        from textsieve.signals.resources import resolve_resources_dir

        found = resolve_resources_dir(None)
        section["resources"] = str(found) if found else None


def _estimate(c: AnnotateConfig, e: Corpus) -> StagePlan:
    from textsieve.exec.local import default_workers
    from textsieve.stages.annotate.lang import check_lang

    check_lang(c.lang, c.resources)  # an unknown `annotate.lang` fails the dry run, not stage 1
    workers = c.workers or default_workers()
    chars = min(c.batch_size * max(e.mean_chars, 1), batch_chars(c.memory, workers))  # one batch's text
    batch = chars * (WORKER_BYTES_PER_CHAR + PENDING_PER_WORKER * PENDING_BYTES_PER_CHAR) * workers  # in flight
    return StagePlan("annotate", f"signals -> {e.layout.attrs}", workers * WORKER_BYTES + batch,
                     e.docs * ATTR_BYTES_PER_DOC, f"{workers} worker(s)")


def _output_sets(c: AnnotateConfig, layout: Layout, where: str) -> list[PlannedSet]:
    return [PlannedSet("", planned_schema(c))]

def _report(res: AnnotateResult) -> str:
    return (f"annotated {res.documents:,} documents in {len(res.shards_written)} shard(s) ({res.rate_text()}); "
            f"{len(res.shards_skipped)} shard(s) already done; {res.skipped_records} bad record(s) skipped -> "
            f"{res.output}")


def _prepare(inputs: Any, options: dict[str, Any]) -> Any:
    """`ts.annotate(a datasets.Dataset or save_to_disk folder)`: its Arrow files, read in place
    (a dataset not backed by files is written once beside `output`; `textsieve.interop.hf`)."""
    out = options.get("output")
    return dataset_inputs(inputs, os.fspath(out) if out is not None else None)


CLI = CliSpec(
    help="compute quality signals into attribute shards",
    description="Write one Parquet attribute shard per input shard: id, shard, row and one column of RPv2 spans "
                "[start, end, score] per signal. Documents are not copied.",
    examples=("textsieve annotate data/*.jsonl.gz -o attrs-all/",
              "textsieve annotate data/ -o attrs-lines/ --signals lines,repetition --workers 1"),
    report=_report, writes=("output", "inputs", "resources", "models"))

STAGE = Stage(
    "annotate", AnnotateConfig, "annotate", _pipeline_run, order=20, always=True, call=run_annotate,
    first="inputs", prepare=_prepare, cli_spec=CLI,
    shared={"inputs": "inputs", "text_field": "read.text_field", "id_field": "read.id_field",
            "lang_field": "read.lang_field", "on_error": "read.on_error", "overwrite": "overwrite"},
    # after extract (or `sources:`), annotate reads their documents instead of the inputs
    placed=lambda layout: {"output": layout.attrs} | ({"inputs": [layout.docs]} if layout.data.get("extract")
                                                       is not None else {})
    | ({"inputs": layout.source_inputs()} if layout.data.get("sources") else {}),
    derived={"output": "always OUT/attrs", "progress": PROGRESS_REASON},
    output_key=lambda layout: key_of(layout.folder_key(layout.attrs)), resolve=_resolve, finish=_finish,
              record=_record, estimate=_estimate, output_sets=_output_sets)
