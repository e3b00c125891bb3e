"""The `source` stage: a source dump in its native format in, document shards out.

`textsieve source FAMILY INPUT... -o DOCS` reads code repositories, arXiv source tars,
Wikipedia XML dumps, StackExchange Posts.xml files or book records (`dumps.*`, one module per
family) and writes one document shard per input unit, records `{id, text, meta}` (`meta`: the
fields RedPajama-1T's scripts write for that source), which `annotate` then reads like any
JSON Lines corpus. With `--reference rp_v1` the family runs the reference's whole recipe, its
filters and quirks included, and the shards hold exactly the reference's records.

Published as one unit (`io.publish`): the shards and `.textsieve/source.json` (settings, totals,
per-shard counts of what was left out and why, with located examples). A unit's fingerprint is
the settings plus its input's identity, or every input's identity when the family decides
across the whole input (GitHub's dedup, the books' near-duplicates), so a re-run keeps what is
unchanged and recomputes what is not; a killed run's finished units are adopted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import fsspec

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.dumps.family import REFERENCES, SourceError, SourceOptions, Unit, get_family
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.io.doc_shards import DOC_FORMATS, doc_suffix
from textsieve.io.identity import shard_identity
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.limits import DEFAULT_MAX_DOC_BYTES, parse_max_doc_bytes
from textsieve.io.locations import pool_workers
from textsieve.io.overlap import check_apart
from textsieve.io.publish import Publication, SummaryStyle, book
from textsieve.io.safe_paths import data_rel, safe_rel
from textsieve.options import address_option, check_choices, executor_option, option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, key_of
from textsieve.stages.planning import Corpus, StagePlan
from textsieve.stages.sources.source_worker import ReadTask, WriteTask, read_done, read_unit, write_unit

log = logging.getLogger("textsieve.source")

SUMMARY = book("source.json")
WORK = ".work"  # inside the staging folder: phase-1 work files, never published


class SourceStageError(SourceError):
    """A problem with the run itself (other settings in the folder, clashing output names)."""


@dataclass
class SourceConfig:
    """Everything `textsieve source` takes (CLI, YAML `sources:` items and `ts.source`)."""

    family: str = option(help="which kind of dump: github (BigQuery export JSONL, repositories), arxiv (source "
                              "tars), wikipedia (pages-articles XML), stackexchange (Posts.xml, site .7z), books "
                              "(PG-19/Books3 JSONL), or one a plugin registered", positional=True, metavar="FAMILY")
    inputs: list[str] = option(help="dump files, folders or globs; local paths or fsspec URLs", positional=True,
                               metavar="INPUT")
    output: str = option(help="folder (or URL) for the document shards", short="-o", metavar="DIR")
    reference: str | None = option(None, help="run the source's whole reference recipe, filters and quirks "
                                              "included, writing exactly the reference's records (rp_v1: "
                                              "RedPajama-1T's scripts)", choices=REFERENCES)
    format: str = option("jsonl.gz", help="output shard format (parquet: meta as a struct)", choices=DOC_FORMATS)
    lang: str | None = option(None, help="wikipedia: the dump's language code (default: from its <siteinfo>)")
    tokenizer: str | None = option(None, help="github with --reference rp_v1: the tokenizer file (tokenizer.json or "
                                              "a folder holding one) of the alpha-per-token filter; the reference "
                                              "used Pythia-6.9B's", metavar="PATH")
    on_error: str = option("fail", help="damaged record: stop with an error naming file and record (fail), or "
                                        "skip it, count it and read on (skip)", choices=("fail", "skip"))
    max_doc_bytes: int | str = option(DEFAULT_MAX_DOC_BYTES, help="skip (and count as too_large) documents "
                                      "larger than this; 0: no limit; with --reference, no limit unless set",
                                      metavar="SIZE")
    workers: int | None = option(None, help="processes, one input unit each (default: all cores)")
    executor: str = executor_option("local process pool, or Ray tasks (one per input unit; the output folder "
                                    "must be reachable from every node); same output either way")
    address: str | None = address_option()
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace shards made with other settings (without it the run refuses)")
    verify_inputs: bool = option(False, help="tell changed inputs by a SHA-256 of their bytes instead of size and "
                                             "modification time")
    name: str | None = option(None, help="pipeline `sources:` item: its folder name under OUT/sources/ (default: "
                                         "the family), so one family can appear twice", cli=False,
                              cli_reason="the CLI names the output folder with -o")


@result_display
@dataclass
class SourceResult:
    output: str
    family: str
    reference: str | None = None
    units: int = 0
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    records: int = 0  # read from the dump (before whole-input decisions and filters)
    documents: int = 0  # written
    left_out: dict[str, int] = field(default_factory=dict)  # by reason: reading, deciding, filtering
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0


def options_of(cfg: SourceConfig) -> SourceOptions:
    """What the family reads of the config. With a reference recipe the document-size limit is
    off unless given (the reference has none, so its output must not lose a long book)."""
    limit = parse_max_doc_bytes(cfg.max_doc_bytes)
    if cfg.reference and cfg.max_doc_bytes == DEFAULT_MAX_DOC_BYTES:
        limit = None
    return SourceOptions(reference=cfg.reference, lang=cfg.lang, tokenizer=cfg.tokenizer, on_error=cfg.on_error,
                         max_doc_bytes=limit)


def output_rel(unit: Unit, fmt: str) -> str:
    """`github_000.jsonl.gz` -> `github_000.jsonl.gz` in the output format; `arXiv_src_1801_001.tar`
    -> `arXiv_src_1801_001.jsonl.gz`: the input's format suffix replaced (a compound one such as
    `.xml.bz2` whole), never a part starting with `_` or `.` (`io.safe_paths.data_rel`)."""
    rel = unit.rel
    for suffix in (".jsonl.gz", ".jsonl.zst", ".json.gz", ".xml.bz2", ".xml.gz", ".tar.gz", ".txt.gz"):
        if rel.lower().endswith(suffix):
            rel = rel[: -len(suffix)]
            break
    else:
        head, dot, ext = rel.rpartition(".")
        if dot and head and "/" not in ext and ext.isalnum() and len(ext) <= 8:
            rel = head
    return data_rel(rel) + doc_suffix(fmt)


def _fingerprint(cfg: SourceConfig, family: Any, opts: SourceOptions) -> tuple[str, dict[str, Any]]:
    what = {"stage": "source", "version": __version__, "family": family.name, "family_version": family.version,
            "options": asdict(opts), "format": cfg.format, "settings": family.settings(opts)}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16], what


def run_source(cfg: SourceConfig) -> SourceResult:
    """Read every input unit of the family; returns what was written and left out."""
    start = time.perf_counter()
    check_choices(cfg)
    family = get_family(cfg.family)
    opts = options_of(cfg)
    units = family.units(list(cfg.inputs), opts)
    if not units:
        raise SourceStageError(f"source {cfg.family}: no {cfg.family} dump among {', '.join(cfg.inputs)}")
    check_apart("source", cfg.output, cfg.inputs)
    fingerprint, what = _fingerprint(cfg, family, opts)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    remove_stale_temps(fs, root)
    rels = [safe_rel(output_rel(u, cfg.format), f"input {u.path}: output name") for u in units]
    clash = [r for r, n in Counter(rels).items() if n > 1]
    if clash:
        raise SourceStageError(f"source {cfg.family}: two inputs would both write {clash[0]!r}; give them other names")
    # a unit that is a folder (a repository) lists its files in info["members"]: they are its identity
    identities = [shard_identity(u.path, tuple(u.info.get("members") or ()), cfg.verify_inputs) for u in units]
    whole = hashlib.sha256(json.dumps(identities, sort_keys=True, default=str).encode()).hexdigest()[:16]
    unit_fps = [f"{fingerprint}:{whole if family.global_decisions else ident}" for ident in identities]
    pub = Publication(fs, root, "source", hashlib.sha256(json.dumps(unit_fps).encode()).hexdigest()[:16],
                      info={"settings": fingerprint}, protect=True, overwrite=cfg.overwrite)
    result = SourceResult(output=cfg.output, family=cfg.family, reference=cfg.reference, units=len(units))
    try:
        done = None if cfg.overwrite else pub.up_to_date(dict(zip(rels, unit_fps)), SUMMARY)
        if done is not None:
            result.shards_skipped = [u.rel for u in units]
            _result_from(result, done.get("result") or {})
            result.seconds = time.perf_counter() - start
            return result
        _refuse_other_settings(pub, rels, fingerprint, cfg.overwrite, root)
        pub.claim()
        counts = _run(cfg, family, opts, units, rels, unit_fps, pub, fs, fingerprint, result)
    except BaseException:
        pub.abandon()
        raise
    result.seconds = time.perf_counter() - start
    summary = {"stage": "source", "version": __version__, "fingerprint": fingerprint, "settings": what,
               "config": asdict(cfg), "result": asdict(result), "shards": counts}
    pub.add_summary(summary, pub.key, name=SUMMARY, style=SummaryStyle(indent=2, newline=False))
    pub.commit()
    return result


def _refuse_other_settings(pub: Publication, rels: list[str], fingerprint: str, overwrite: bool, root: str) -> None:
    prev = pub.previous
    for rel, entry in sorted(prev.files.items()) if prev else []:
        if rel != SUMMARY and entry.get("settings") not in (None, fingerprint) and not overwrite:
            raise SourceStageError(f"source: {root}/{rel} was made with other settings; use --overwrite or another "
                                   "--output folder")


def _run(cfg: SourceConfig, family: Any, opts: SourceOptions, units: list[Unit], rels: list[str],
         unit_fps: list[str], pub: Publication, fs: Any, fingerprint: str,
         result: SourceResult) -> dict[str, dict[str, Any]]:
    """Both phases; returns the per-shard counts (published shards of these settings are kept)."""
    workers = _workers(cfg, len(units))
    progress = Progress(f"source {cfg.family}", total_bytes=sum(u.size for u in units), enabled=cfg.progress)
    works = [pub.staged(f"{WORK}/{i:06d}.parquet") for i in range(len(units))]
    phase1: list[dict[str, Any] | None] = [read_done(fs, w, fp) for w, fp in zip(works, unit_fps)]
    todo = [ReadTask(cfg.family, u, opts, cfg.output, w, fp)
            for u, w, fp, adopted in zip(units, works, unit_fps, phase1) if adopted is None]
    index = {w: i for i, w in enumerate(works)}
    done_bytes = sum(u.size for u, r in zip(units, phase1) if r is not None)
    try:
        for task, res in _map(cfg, read_unit, todo, workers):
            phase1[index[task.work]] = res
            done_bytes += task.unit.size
            progress.update(docs=res["records"], bytes_done=done_bytes, shard=task.unit.rel)
    finally:
        progress.close()
    keys = [list((r or {}).get("keys") or []) for r in phase1]
    decided = family.decide(keys, units, opts)
    drops: list[dict[int, str]] = [{} for _ in units]
    for (u, r), why in decided.items():
        drops[u][r] = why
    writes = [WriteTask(cfg.family, unit, opts, cfg.output, work, pub.staged(rel), cfg.format, drop)
              for unit, work, rel, drop in zip(units, works, rels, drops)]
    counts: dict[str, dict[str, Any]] = {}
    left: Counter[str] = Counter()
    for (task, res), rel, fp, first in zip(_map(cfg, write_unit, writes, workers), rels, unit_fps, phase1):
        first = first or {}
        shard = {"input": task.unit.rel, "records": first.get("records", 0), "kept": res["kept"],
                 "left_out": dict(sorted((Counter(first.get("skipped") or {}) + Counter(res["dropped"])).items())),
                 "examples": (first.get("examples") or []) + res["examples"]}
        counts[rel] = shard
        left.update(shard["left_out"])
        result.records += shard["records"]
        result.documents += shard["kept"]
        pub.add(rel, fp, settings=fingerprint, counts={k: v for k, v in shard.items() if k != "examples"})
        result.shards_written.append(task.unit.rel)
    result.left_out = dict(sorted(left.items()))
    if fs.exists(pub.staged(WORK)):  # the work files are not outputs
        fs.rm(pub.staged(WORK), recursive=True)
    return counts


def _map(cfg: SourceConfig, fn: Any, tasks: list[Any], workers: int):
    if cfg.executor == "ray":
        from textsieve.exec.ray_exec import ray_ordered_map

        yield from ray_ordered_map(fn, tasks, workers=workers, address=cfg.address)
        return
    yield from ordered_map(fn, tasks, workers=workers)


def _workers(cfg: SourceConfig, n_units: int) -> int:
    if cfg.executor == "local" and cfg.address:
        raise SourceStageError("--address is for --executor ray")
    if cfg.executor == "ray":
        from textsieve.exec.ray_exec import cluster_cpus

        planned = cfg.workers or cluster_cpus(cfg.address)
    else:
        planned = min(cfg.workers or default_workers(), max(n_units, 1))
    return pool_workers("source", cfg.workers, planned, [cfg.output, *cfg.inputs], cfg.executor)


def _result_from(result: SourceResult, recorded: dict[str, Any]) -> None:
    """A published run's totals, for a re-run that changes nothing."""
    for name in ("records", "documents", "left_out"):
        if name in recorded:
            setattr(result, name, recorded[name])


def _pipeline_run(c: SourceConfig) -> Outcome:
    res = run_source(c)
    return Outcome({"records": res.records, "documents": res.documents, "left_out": res.left_out,
                    "shards_written": len(res.shards_written), "shards_skipped": len(res.shards_skipped)},
                   ran=bool(res.shards_written), summary=_report(res))


def _report(res: SourceResult) -> str:
    left = ", ".join(f"{n:,} {why}" for why, n in res.left_out.items()) or "none"
    mode = f" ({res.reference})" if res.reference else ""
    return (f"source {res.family}{mode}: {res.documents:,} of {res.records:,} records kept in "
            f"{len(res.shards_written)} shard(s) ({res.docs_per_second:,.0f} docs/s); {len(res.shards_skipped)} "
            f"already done; left out: {left} -> {res.output}")


CLI = CliSpec(
    help="source dumps (code, arXiv, Wikipedia, StackExchange, books) to document shards",
    description="Read a source dump in its native format into document shards {id, text, meta}, one per input "
                "unit, with what was left out counted by reason in .textsieve/source.json. --reference rp_v1 "
                "runs RedPajama-1T's whole per-source recipe and writes exactly its records.",
    examples=("textsieve sample --sources rpv1-src/",
              "textsieve source github rpv1-src/github/github_*.jsonl.gz -o code/",
              "textsieve source wikipedia rpv1-src/wikipedia/ -o wiki-ref/ --reference rp_v1",
              "textsieve source arxiv rpv1-src/arxiv/ -o arxiv/ --workers 2"),
    report=_report, writes=("output", "inputs"))

#: Peak RSS of one source worker (a parser, one unit's records staged) and gzipped output bytes
#: per document; both vary with the family (an arXiv project is large, a code file small).
SOURCE_WORKER_BYTES = 300_000_000
SOURCE_BYTES_PER_DOC = 2_000


def _estimate(c: SourceConfig, e: Corpus) -> StagePlan:
    workers = c.workers or default_workers()
    mode = " (reference recipe rp_v1)" if c.reference else ""
    return StagePlan(f"source:{c.family}", f"{c.family} dump{mode} -> {c.output}", workers * SOURCE_WORKER_BYTES,
                     e.docs * SOURCE_BYTES_PER_DOC, f"{workers} worker(s); one shard per input unit")


def _label(item: dict[str, Any]) -> str:
    return str(item.get("name") or item.get("family") or "source")


#: A `sources:` item's folder name: one plain path component, so OUT/sources/NAME stays inside the
#: output folder and can be named exactly in annotate's inputs (see `Layout.sources`).
ITEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    """Every `sources:` item gets its own well-formed folder: two items of one family need names."""
    seen: dict[str, int] = {}
    for i, item in enumerate(data.get("sources") or []):
        if not isinstance(item, dict):
            continue
        label = _label(item)
        if not ITEM_NAME.fullmatch(label):
            errors.append(f"sources[{i}].name: {label!r} is not a folder name (letters, digits, '.', '_', '-'; "
                          "not starting with '.' or '-')")
        elif label in seen:
            errors.append(f"sources[{i}]: writes to sources/{label} like sources[{seen[label]}]; give one of them "
                          "a different `name:`")
        seen.setdefault(label, i)


STAGE = Stage(
    "source", SourceConfig, "sources[]", _pipeline_run, order=5, call=run_source, first="family", cli_spec=CLI,
    label=_label, shared={"overwrite": "overwrite"}, check=_check_pipeline, feeds_inputs=True,
    placed=lambda layout: {},
    placed_item=lambda layout, label: {"output": layout.source(label)},
    derived={"output": "always OUT/sources/NAME (NAME: the item's name, else its family); annotate then reads "
                       "every item's documents instead of the inputs",
             "progress": PROGRESS_REASON},
    output_key=lambda layout: key_of([layout.folder_key(p) for p in layout.sources()]), estimate=_estimate)
