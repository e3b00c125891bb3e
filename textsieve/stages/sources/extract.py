"""The `extract` stage: web archives and HTML pages in, document shards of main-content text out.

Where Common Crawl users start. Inputs are WARC/ARC files (their `response` records) and
folders or globs of raw HTML pages (`.html`, `.htm`, `.html.gz`; a folder's pages are one
shard, id = the file name without the suffix). Every input shard becomes one document shard at
its mirrored path with the format suffix replaced (`crawl/a.warc.gz` -> `OUT/crawl/a.jsonl.gz`),
which `annotate` then reads like any JSON Lines corpus. A record holds `id` (the WARC-Record-ID),
`text`, `url`, `title`, `date` (WARC-Date), `content_type`, `charset`, `lang`, `lang_score` and
`meta.extract` (engine, version, settings); what each page goes through, and the reasons a page
is left out, are in `stages.extract_worker`.

Published as one unit like every stage (`io.publish`): shards and `extract.json` (settings,
totals, per-shard counts by reason, sample pages for the report) appear together in
`manifest.json`. A shard's fingerprint is the settings (engine and its version and options,
--fix-text, format, language-id model) plus its input's identity (`io.identity`), so a re-run
keeps finished shards, adopts what a killed run finished, re-extracts a changed input, and
refuses to mix shards of other settings into one folder (unless --overwrite).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import fsspec

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.extraction.engines import DEFAULT_ENGINE, ENGINE_NAMES
from textsieve.io.doc_shards import DOC_FORMATS, doc_suffix
from textsieve.io.identity import shard_identity
from textsieve.io.ids import effective_mode
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.limits import DEFAULT_MAX_DOC_BYTES, parse_max_doc_bytes
from textsieve.io.locations import pool_workers
from textsieve.io.overlap import check_apart
from textsieve.io.paths import SUFFIX_FORMATS, Shard, expand_inputs
from textsieve.io.publish import EXTRACT_JSON, Publication, SummaryStyle
from textsieve.io.safe_paths import data_rel, safe_rel
from textsieve.options import address_option, check_choices, executor_option, option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, key_of
from textsieve.stages.planning import Corpus, StagePlan
from textsieve.stages.sources.extract_worker import REASONS, ExtractTask, extract_shard, read_done

log = logging.getLogger("textsieve.extract")

SUMMARY = EXTRACT_JSON
EXTRACT_FORMATS = ("warc", "html")  # the shard formats extract reads


#: --page-timeout's default: trafilatura averages ~30 ms a page; a 1.4 MB page of 20,000 paragraphs
#: takes ~5 s on the dev machine
DEFAULT_PAGE_TIMEOUT = 5.0
#: what the workers import on their first page (lazily, to keep this module light): a fork server
#: imports them once for all its workers (`exec.warm_preload`)
WORKER_IMPORTS = ("trafilatura", "ftfy", "textsieve.extraction.engines", "textsieve.extraction.sieve",
                  "textsieve.models.langid", "textsieve.io.warc_pages", "textsieve.extraction.decode",
                  "textsieve.extraction.fixtext")


class ExtractError(TextsieveError, RuntimeError):
    """A problem with the run itself (inputs of the wrong kind, other settings in the folder)."""


@dataclass
class ExtractConfig:
    """Everything `textsieve extract` takes (CLI, YAML `extract:` and `ts.extract`)."""

    inputs: list[str] = option(help="WARC/ARC files, HTML pages (.html, .htm, .html.gz), folders or globs; "
                                    "local paths or fsspec URLs", positional=True, metavar="INPUT")
    output: str = option(help="folder (or URL) for the document shards", short="-o", metavar="DIR")
    engine: str = option(DEFAULT_ENGINE, help="main-content extractor (see docs/extraction.md for how they "
                                              "compare)", choices=ENGINE_NAMES)
    fix_text: bool = option(False, help="repair mojibake such as 'Â£30.4m' with ftfy (counted as fixed_text)")
    format: str = option("jsonl.gz", help="output shard format", choices=DOC_FORMATS)
    on_error: str = option("fail", help="damaged archive record: stop with an error naming file, record and "
                                        "offset (fail), or skip it, count it and read on (skip)",
                           choices=("fail", "skip"))
    workers: int | None = option(None, help="processes, one input shard each (default: all cores)")
    executor: str = executor_option("local process pool, or Ray tasks (one per input shard; the output "
                                         "folder must be reachable from every node); same output either way")
    address: str | None = address_option()
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace shards made with other settings (without it the run refuses)")
    # a page body larger than this is skipped and counted as too_large; 0 = no limit
    max_doc_bytes: int | str = option(DEFAULT_MAX_DOC_BYTES, help="skip (and count as too_large) page bodies "
                                      "larger than this, e.g. 8MiB, 64MB; 0: no limit (default: "
                                      f"{DEFAULT_MAX_DOC_BYTES >> 20} MiB)", metavar="SIZE")
    page_timeout: float = option(DEFAULT_PAGE_TIMEOUT, help="seconds one page may take to decode and extract; a "
                                 "slower page is left out, counted as timeout and named in extract.json (0: no "
                                 "limit)", metavar="SECONDS")
    verify_inputs: bool = option(False, help="tell changed inputs by a SHA-256 of their bytes instead of size and "
                                             "modification time")
    # repeated ids among a shard's documents (a WARC concatenated from copies; a.html beside a.htm)
    dedupe_ids: str | None = option(
        None, help="a repeated id among a shard's documents: fail (default) naming both records, or suffix: "
                   "rename the 2nd, 3rd, ... to ID#2, ID#3, counted as renamed_ids (default with --on-error skip)",
        choices=("fail", "suffix"))


@result_display
@dataclass
class ExtractResult:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    pages: int = 0
    documents: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # pages left out, by reason
    bad_records: int = 0  # damaged archive records left out (--on-error skip)
    seconds: float = 0.0
    inputs_left_out: dict[str, str] = field(default_factory=dict)  # input file -> why extract does not read it
    # this run's shards per CPU-second of the processes that extracted them (the cost per core)
    pages_per_core_second: float = 0.0
    mb_per_core_second: float = 0.0  # MB of input files
    # a cascade engine (`auto`, the default, or `cascade`): pages it sent to its fallback, and their share
    # it extracted (None for other engines, and then not in extract.json)
    fallback_pages: int | None = None
    fallback_share: float | None = None

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0


def output_rel(shard_rel: str, fmt: str) -> str:
    """`crawl/a.warc.gz` -> `crawl/a.jsonl.gz` (the input's format suffix replaced; no part
    starting with `_` or `.`, `io.safe_paths.data_rel`: a folder's pages `_html` -> `x_html.jsonl.gz`)."""
    low = shard_rel.lower()
    for suffix, _ in SUFFIX_FORMATS:
        if low.endswith(suffix):
            return data_rel(shard_rel[: -len(suffix)]) + doc_suffix(fmt)
    return data_rel(shard_rel) + doc_suffix(fmt)


def settings_fingerprint(cfg: ExtractConfig) -> tuple[str, dict[str, Any]]:
    """(fingerprint, what it covers): everything that changes a shard's bytes except its input."""
    from textsieve.extraction.engines import get_engine

    engine = get_engine(cfg.engine)
    what: dict[str, Any] = {"stage": "extract", "version": __version__, "engine": engine.name,
                            "engine_version": engine.version, "engine_settings": engine.settings,
                            "fix_text": cfg.fix_text, "format": cfg.format, "lang_model": _langid_version(),
                            "max_doc_bytes": parse_max_doc_bytes(cfg.max_doc_bytes),
                            "page_timeout": _page_timeout(cfg.page_timeout)}
    if cfg.fix_text:
        import ftfy

        what["ftfy"] = getattr(ftfy, "__version__", "?")
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16], what


def _page_timeout(value: float) -> float:
    """--page-timeout as seconds (0 = no limit), refusing what is not a number >= 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ExtractError(f"--page-timeout: {value!r} is not a number of seconds") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise ExtractError(f"--page-timeout: {value!r} must be a number of seconds >= 0 (0: no limit)")
    return seconds


def _langid_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"builtin:py3langid {version('py3langid')}"
    except PackageNotFoundError:
        return "builtin:py3langid"


def _not_pages(shard: Shard) -> str:
    text_formats = ("wet", "jsonl", "parquet", "txt")
    hint = " (WET and JSON Lines are text already: annotate them directly)" if shard.format in text_formats else ""
    return f"a {shard.format} file; extract reads WARC/ARC archives and HTML pages (.html, .htm, .html.gz){hint}"


def _check_inputs(shards: list[Shard]) -> tuple[list[Shard], dict[str, str]]:
    """The inputs extract reads, and those it leaves out with why: a folder of crawl files that
    also holds a WET or JSONL file is read, the others named (in the result and a warning);
    only inputs none of which extract reads are refused."""
    wrong = {s.path: _not_pages(s) for s in shards if s.format not in EXTRACT_FORMATS}
    if wrong and len(wrong) == len(shards):
        path, why = next(iter(wrong.items()))
        raise ExtractError(f"extract: {path} is {why}")
    for path, why in wrong.items():
        log.warning("extract: leaving out %s: %s", path, why)
    return [s for s in shards if s.path not in wrong], wrong


def run_extract(cfg: ExtractConfig) -> ExtractResult:
    """Extract every input shard; returns what was written, kept and left out."""
    start = time.perf_counter()
    check_choices(cfg)
    shards, left_out = _check_inputs(expand_inputs(cfg.inputs))
    check_apart("extract", cfg.output, cfg.inputs)
    fingerprint, what = settings_fingerprint(cfg)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    remove_stale_temps(fs, root)
    pub = Publication(fs, root, "extract", fingerprint, info={"settings": fingerprint}, protect=True,
                      overwrite=cfg.overwrite)
    result = ExtractResult(output=cfg.output, inputs_left_out=left_out)
    limit = parse_max_doc_bytes(cfg.max_doc_bytes)
    id_mode = effective_mode(cfg.dedupe_ids, cfg.on_error)
    counts: dict[str, dict[str, Any]] = {}
    earlier = _earlier_samples(fs, root) if pub.previous else {}
    todo: list[ExtractTask] = []
    targets: dict[str, str] = {}
    for shard in shards:
        rel = safe_rel(output_rel(shard.rel, cfg.format), f"input {shard.path}: output name")
        if rel in targets:
            pub.abandon()
            raise ExtractError(f"extract: inputs {targets[rel]!r} and {shard.rel!r} would both write {rel!r}")
        targets[rel] = shard.rel
        shard_fp = f"{fingerprint}:{shard_identity(shard.path, shard.members, cfg.verify_inputs)}"
        old = pub.previous.files.get(rel) if pub.previous else None
        if old is not None and old.get("settings") != fingerprint and not cfg.overwrite:
            pub.abandon()
            raise ExtractError(f"extract: {root}/{rel} exists but was made with other settings; use --overwrite or "
                               "another --output folder")
        # a shard that lost damaged records under --on-error skip is not what a fail run promises
        lossy = old is not None and cfg.on_error == "fail" and bool((old.get("counts") or {}).get("bad_records"))
        if not cfg.overwrite and not lossy and pub.unchanged(rel, shard_fp) and old is not None and "counts" in old:
            pub.keep(rel)
            counts[rel] = dict(old["counts"], samples=earlier.get(rel, []))
            result.shards_skipped.append(shard.rel)
            continue
        staged = pub.staged(rel)
        done = read_done(fs, staged)
        if done is not None and done.get("fingerprint") == shard_fp and not (
                cfg.on_error == "fail" and done["counts"].get("bad_records")):
            log.info("skip %s: finished by an interrupted run", shard.rel)
            pub.add(rel, shard_fp, settings=fingerprint, counts=_lean(done["counts"]))
            counts[rel] = done["counts"]
            result.shards_skipped.append(shard.rel)
            continue
        todo.append(ExtractTask(shard, cfg.output, staged, cfg.format, cfg.engine, cfg.fix_text, cfg.on_error,
                                limit, shard_fp, id_mode, what["page_timeout"]))
    _keep_others(pub, targets, fingerprint, cfg.overwrite, root, counts, earlier)
    if todo:
        pub.claim()
    progress = Progress("extract", total_bytes=sum(t.shard.size for t in todo), enabled=cfg.progress)
    workers = _workers(cfg, todo)
    in_process = cfg.executor == "local" and workers == 1
    cpu, run_pages = 0.0, 0
    try:
        done_bytes = 0
        for task, shard_counts in _run(cfg, todo, progress, workers):
            cpu += shard_counts.pop("cpu_seconds", 0.0)
            run_pages += shard_counts["pages"]
            rel = safe_rel(output_rel(task.shard.rel, cfg.format), "output name")
            pub.add(rel, task.fingerprint, settings=fingerprint, counts=_lean(shard_counts))
            counts[rel] = shard_counts
            result.shards_written.append(task.shard.rel)
            done_bytes += task.shard.size
            # the in-process path moved the line page by page already
            progress.update(docs=0 if in_process else shard_counts["kept"], bytes_done=done_bytes, shard=rel)
            for page in shard_counts.get("timeouts", [])[:1]:
                log.warning("%s: %d page(s) took longer than --page-timeout %g s and were left out, first: %s (%s)",
                            task.shard.rel, shard_counts["skipped"]["timeout"], what["page_timeout"], page["id"],
                            page["url"])
            if shard_counts["bad_records"]:
                first = shard_counts["bad_examples"][0]
                log.warning("%s: skipped %d damaged record(s), first: %s: %s", task.shard.rel,
                            shard_counts["bad_records"], first["location"], first["reason"])
    except BaseException:
        pub.abandon()
        raise
    finally:
        progress.close()
    _totals(result, counts)
    result.seconds = time.perf_counter() - start
    if cpu > 0:
        result.pages_per_core_second = round(run_pages / cpu, 1)
        result.mb_per_core_second = round(done_bytes / 1e6 / cpu, 3)
    _write_summary(fs, pub, cfg, result, fingerprint, what, counts)
    pub.commit()
    return result


def _workers(cfg: ExtractConfig, todo: list[ExtractTask]) -> int:
    """Processes (or Ray actors) for `todo`: one shard each, never more than there are shards;
    one, in this process, when an input or the output lives in this process's memory."""
    if cfg.executor not in ("local", "ray"):
        raise ExtractError(f"--executor must be 'local' or 'ray', not {cfg.executor!r}")
    if cfg.executor == "local" and cfg.address:
        raise ExtractError("--address is for --executor ray")
    if cfg.executor == "ray":
        from textsieve.exec.ray_exec import cluster_cpus

        planned = cfg.workers or cluster_cpus(cfg.address)
    else:
        planned = min(cfg.workers or default_workers(), max(len(todo), 1))
    return pool_workers("extract", cfg.workers, planned, [cfg.output, *cfg.inputs], cfg.executor)


def _run(cfg: ExtractConfig, todo: list[ExtractTask], progress: Progress, workers: int):
    """(task, counts) per shard in input order, on the chosen executor."""
    if cfg.executor == "ray":
        from textsieve.exec.ray_exec import ray_ordered_map

        yield from ray_ordered_map(extract_shard, todo, workers=workers, address=cfg.address)
        return
    if workers == 1:  # in-process: progress page by page
        base = 0
        for task in todo:
            yield task, extract_shard(task, on_page=partial(_page_progress, progress, base))
            base += task.shard.size
        return
    yield from ordered_map(extract_shard, todo, workers=workers)


def _page_progress(progress: Progress, base: int, docs: int, bytes_read: int) -> None:
    progress.update(docs=docs, bytes_done=base + bytes_read)


def _earlier_samples(fs: fsspec.AbstractFileSystem, root: str) -> dict[str, list[dict[str, Any]]]:
    """The report's sample pages of the published summary, by shard (for the shards a run keeps)."""
    try:
        with fs.open(f"{root}/{SUMMARY}", "rb") as fh:
            old = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for s in old.get("samples") or []:
        if isinstance(s, dict) and isinstance(s.get("shard"), str):
            out.setdefault(s["shard"], []).append({k: v for k, v in s.items() if k != "shard"})
    return out


def _lean(counts: dict[str, Any]) -> dict[str, Any]:
    """A shard's counts without the sample pages and the CPU time (for the manifest entry: the
    same bytes however the shard was run)."""
    return {k: v for k, v in counts.items() if k not in ("samples", "cpu_seconds")}


def _keep_others(pub: Publication, targets: dict[str, str], fingerprint: str, overwrite: bool, root: str,
                 counts: dict[str, dict[str, Any]], earlier: dict[str, list[dict[str, Any]]]) -> None:
    """Published shards of inputs this run was not given stay when made with these settings (and
    stay in the summary's counts)."""
    prev = pub.previous
    for rel, entry in sorted(prev.files.items()) if prev else []:
        if rel in targets or rel == SUMMARY:
            continue
        if entry.get("settings") == fingerprint:
            pub.keep(rel)
            if "counts" in entry:
                counts[rel] = dict(entry["counts"], samples=earlier.get(rel, []))
        elif not overwrite:
            pub.abandon()
            raise ExtractError(f"extract: {root}/{rel} (from an earlier run) was made with other settings; use "
                               "--overwrite or another --output folder")


def _totals(result: ExtractResult, counts: dict[str, dict[str, Any]]) -> None:
    skipped: Counter[str] = Counter()
    for c in counts.values():
        result.pages += c["pages"]
        result.documents += c["kept"]
        result.bad_records += c["bad_records"]
        skipped.update(c.get("skipped", {}))
    result.skipped = {r: skipped[r] for r in REASONS if skipped[r]}
    cascade = [c for c in counts.values() if "fallback" in c]
    if cascade:
        result.fallback_pages = sum(c["fallback"] for c in cascade)
        result.fallback_share = round(result.fallback_pages / max(1, sum(c["engine_pages"] for c in cascade)), 4)


def _write_summary(fs: fsspec.AbstractFileSystem, pub: Publication, cfg: ExtractConfig, result: ExtractResult,
                   fingerprint: str, what: dict[str, Any], counts: dict[str, dict[str, Any]]) -> None:
    samples = [dict(s, shard=rel) for rel, c in sorted(counts.items()) for s in c.get("samples", [])][:12]
    summary = {"stage": "extract", "version": __version__, "fingerprint": fingerprint, "settings": what,
               "config": asdict(cfg), "result": _result_record(result),
               "shards": {rel: _lean(c) for rel, c in sorted(counts.items())}, "samples": samples}
    pub.add_summary(summary, name=SUMMARY, style=SummaryStyle(indent=2, newline=False))


def _pipeline_run(c: ExtractConfig) -> Outcome:
    res = run_extract(c)
    left = ", ".join(f"{n:,} {r}" for r, n in res.skipped.items()) or "none left out"
    return Outcome({"pages": res.pages, "documents": res.documents, "skipped": res.skipped,
                    "bad_records": res.bad_records, "shards_written": len(res.shards_written),
                    "shards_skipped": len(res.shards_skipped)}, ran=bool(res.shards_written),
                   summary=f"extract: {res.documents:,} of {res.pages:,} pages kept ({left}); "
                           f"{len(res.shards_written)} shard(s) written, {len(res.shards_skipped)} already done")


#: Peak RSS of one extract worker (the extraction engine, the language-id model, one page) and
#: gzipped output bytes per kept page, measured on the dev WARCs with --workers 1.
EXTRACT_WORKER_BYTES = 250_000_000
EXTRACT_BYTES_PER_DOC = 1_500


def _estimate(c: ExtractConfig, e: Corpus) -> StagePlan:
    from textsieve.exec.local import default_workers

    workers = c.workers or default_workers()
    return StagePlan("extract", f"engine {c.engine}: main-content text -> {e.layout.docs}",
                     workers * EXTRACT_WORKER_BYTES, e.docs * EXTRACT_BYTES_PER_DOC,
                     f"{workers} worker(s); ~{e.docs:,} response records, pages that are not HTML are left out")

def _result_record(result: ExtractResult) -> dict[str, Any]:
    """The result as extract.json records it: `inputs_left_out` only when some were (so a run
    that left none out writes the same file as before the field existed)."""
    out = asdict(result)
    if not out["inputs_left_out"]:
        del out["inputs_left_out"]
    for key in ("fallback_pages", "fallback_share"):
        if out[key] is None:
            del out[key]
    return out


def _per_core(res: ExtractResult) -> str:
    fallback = "" if res.fallback_share is None else \
        f"; {res.fallback_pages:,} page(s) ({res.fallback_share:.1%}) sent to the fallback engine"
    if not res.pages_per_core_second:
        return fallback
    return f"; per core {res.pages_per_core_second:,.0f} pages/s, {res.mb_per_core_second:,.2f} MB/s{fallback}"


def _report(res: ExtractResult) -> str:
    left = ", ".join(f"{n:,} {reason}" for reason, n in res.skipped.items()) or "none"
    inputs = (f"; {len(res.inputs_left_out)} input(s) left out, not web archives or pages: "
              + ", ".join(p.rsplit("/", 1)[-1] for p in res.inputs_left_out)) if res.inputs_left_out else ""
    return (f"extracted {res.documents:,} of {res.pages:,} pages in {len(res.shards_written)} shard(s) "
            f"({res.docs_per_second:,.0f} docs/s{_per_core(res)}); {len(res.shards_skipped)} shard(s) already done; "
            "left out: "
            f"{left}; {res.bad_records} damaged record(s) skipped{inputs} -> {res.output}")


CLI = CliSpec(
    help="WARC/ARC archives and HTML pages to document shards",
    description="Main-content text of every HTML response record (WARC/ARC) or page file (.html, .htm, .html.gz; a "
                "folder's pages are one shard), one document shard per input shard with id, text, url, title, "
                "date, content_type, charset, lang, lang_score and meta.extract. Pages that are not HTML, redirects, "
                "empty bodies and empty extractions are left out and counted by reason in extract.json.",
    examples=("textsieve extract crawl/*.warc.gz -o docs/",
              "textsieve extract pages/ -o docs-html/ --engine trafilatura --fix-text",
              "textsieve extract crawl/ -o docs-skip/ --on-error skip --workers 2"),
    report=_report, writes=("output", "inputs"))

STAGE = Stage(
    "extract", ExtractConfig, "extract", _pipeline_run, order=10, call=run_extract, first="inputs", cli_spec=CLI,
    shared={"inputs": "inputs", "on_error": "read.on_error", "overwrite": "overwrite"},
    placed=lambda layout: {"output": layout.docs},
    derived={"output": "always OUT/docs (annotate then reads OUT/docs instead of the inputs)",
             "progress": PROGRESS_REASON},
    output_key=lambda layout: key_of(layout.folder_key(layout.docs)),
    estimate=_estimate)  # resumes shard by shard by itself
