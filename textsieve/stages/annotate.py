"""The `annotate` stage: for every input shard, one Parquet attribute shard of signals.

Documents are never rewritten. Each output row carries `id`, the source `shard` and `row`, so
it joins back to its document without copying text. The main process reads and batches
documents; workers compute (`annotate_worker`); results are written in input order, so the
output does not depend on the number of workers. A shard's output appears under its final name
only when complete, and a re-run skips shards whose output exists with the same configuration.
"""

from __future__ import annotations

from textsieve.errors import TextsieveError

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
from textsieve.stages.annotate_worker import (AUTO_LANG, BatchTask, WorkerSetup, annotate_batch, init_worker,
                                             load_models, output_schema, warm_up)
from textsieve.stages.progress import Progress
from textsieve.exec.memory import lean_arrow_memory

log = logging.getLogger("textsieve.annotate")

MAX_BATCH_CHARS = 4_000_000  # a batch this large keeps a worker busy ~1 s; huge docs go alone


@dataclass
class AnnotateConfig:
    """Everything `textsieve annotate` takes; the CLI and YAML both fill this."""

    inputs: list[str]
    output: str
    signals: str | list[str] | None = None  # names or groups; None = all rule signals + minhash
    lang: str | None = "en"  # language for stop words / bad words when no lang field gives one;
    # "auto": detect each document's language with the language-id model (built-in py3langid
    # unless a `langid` model is given)
    lang_field: str | None = None
    text_field: str = "text"
    id_field: str = "id"
    on_error: str = "fail"
    workers: int | None = None
    resources: str | None = None
    batch_size: int = 500
    overwrite: bool = False
    progress: bool = True
    models: dict[str, str] = field(default_factory=dict)  # --model NAME=PATH, in order
    executor: str = "local"  # "local" process pool, or "ray" (actors on a Ray cluster)
    address: str | None = None  # Ray cluster address; None = start a local Ray with all cores


@dataclass
class AnnotateResult:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    documents: int = 0
    skipped_records: int = 0
    seconds: float = 0.0


class AnnotateError(TextsieveError, RuntimeError):
    """A problem with the run itself (not with one input record)."""


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
    dropped = [name for name in signals if any(lacking[need] for need in REGISTRY[name].needs)]
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
    """Resolve `--model`s (adding the built-in language id where `--lang auto` or the
    `ts_lang` signals need it), and split `--signals` into rule signals and model signals.

    Every signal of every given model is written unless `--signals` names some model signals,
    in which case only those are."""
    items = _split_signal_spec(cfg.signals)
    models = dict(cfg.models)
    if not models and items is None and cfg.lang != AUTO_LANG:
        return cfg.signals, ModelPlan()
    from textsieve.models.registry import model_kind_of, model_fingerprint, model_header

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
    _, sigs = load_models(pairs)
    named = [i for i in items or () if i in sigs]
    spec: str | list[str] | None = None
    if items is not None:
        rule_items = [i for i in items if i not in sigs]
        spec = rule_items if rule_items else "none"  # "none": only model signals were named
    chosen = tuple(named) if named else tuple(sigs)
    chosen = tuple(n for n in sigs if n in chosen)
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
    key = {"version": __version__, "signals": signals, "minhash": with_minhash, "lang": cfg.lang,
           "lang_field": cfg.lang_field, "text_field": cfg.text_field, "id_field": cfg.id_field,
           "word_lists": h.hexdigest()}
    if plan is not None and plan.models:  # only then, so model-free fingerprints stay as they were
        key["models"] = {name: rec["fingerprint"] for name, rec in plan.records.items()}
        key["model_signals"] = plan.signals
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _lang_of(doc_lang: str | None, default: str | None) -> str | None:
    if doc_lang:
        return str(doc_lang).strip().lower()
    return default


def _batches(shard: Shard, reader: ShardReader, cfg: AnnotateConfig) -> Iterator[BatchTask]:
    """Cut a shard's documents into tasks of at most batch_size docs / MAX_BATCH_CHARS chars."""
    task = BatchTask(shard.rel, [], [], [], [], [])
    chars = 0
    for doc in reader:
        task.ids.append(doc.id)
        task.rows.append(doc.row)
        task.texts.append(doc.text)
        task.langs.append(_lang_of(doc.lang, cfg.lang))
        task.urls.append(doc.url)
        chars += len(doc.text)
        if len(task.ids) >= cfg.batch_size or chars >= MAX_BATCH_CHARS:
            task.bytes_mark = reader.bytes_read
            yield task
            task = BatchTask(shard.rel, [], [], [], [], [])
            chars = 0
    task.bytes_mark = reader.bytes_read
    task.last = True
    yield task  # possibly empty: marks the end of the shard so its file gets closed


def run_annotate(cfg: AnnotateConfig) -> AnnotateResult:
    """Annotate every input shard; returns what was written and skipped."""
    start = time.perf_counter()
    lean_arrow_memory()
    if cfg.on_error not in ("fail", "skip"):
        raise AnnotateError(f"--on-error must be 'fail' or 'skip', not {cfg.on_error!r}")
    spec, plan = _plan_models(cfg)
    signals, with_minhash = ((), ()) if spec == "none" else select_signals(spec)
    signals, lists = _word_lists(cfg, signals)
    shards = expand_inputs(cfg.inputs)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    fingerprint = _fingerprint(cfg, signals, with_minhash, lists, plan)
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
    setup = WorkerSetup(signals, with_minhash, dict(lists.stop_words), dict(lists.bad_words), plan.models,
                        plan.signals, plan.lang_model)
    schema = output_schema(signals, with_minhash, load_models(plan.models)[1], plan.signals)
    mapper, workers = _executor(cfg)
    if (workers > 1 or cfg.executor == "ray") and todo:
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
        for task, batch in mapper(annotate_batch, tasks(), workers=workers, initializer=init_worker,
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
                        "skipped": skipped[:1000], "signals": list(signals), "minhash": list(with_minhash),
                        "lang": cfg.lang, "lang_field": cfg.lang_field}
                if plan.models:
                    meta["model_signals"] = list(plan.signals)
                    meta["models"] = plan.records
                writer.add_metadata({META_KEY: json.dumps(meta).encode()})
                writer.close()
                writer = None
                done_bytes += shard_by_rel[current].size
                result.shards_written.append(current)
                log.info("%s: done, %d document(s)", current, n_docs)
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


def _executor(cfg: AnnotateConfig):
    """(ordered map function, workers) for `cfg.executor`; both keep the same ordered contract,
    so the output does not depend on the executor."""
    if cfg.executor not in ("local", "ray"):
        raise AnnotateError(f"--executor must be 'local' or 'ray', not {cfg.executor!r}")
    if cfg.executor == "local":
        if cfg.address:
            raise AnnotateError("--address is for --executor ray")
        return ordered_map, cfg.workers or default_workers()
    from functools import partial

    from textsieve.exec.ray_exec import cluster_cpus, ray_ordered_map

    workers = cfg.workers or cluster_cpus(cfg.address)
    return partial(ray_ordered_map, address=cfg.address), workers


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
