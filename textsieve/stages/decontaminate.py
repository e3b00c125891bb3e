"""`textsieve decontaminate`: n-gram overlap of every document with evaluation data the user provides.

Why: a benchmark passage in the training data inflates that benchmark's score. This stage marks
documents sharing n-grams (13 by default, GPT-3's rule; words normalised as `decontam.ngrams`
says) with any benchmark given by `against` (`decontam.bench`: JSONL/Parquet/text files or
folders, `name=path`), so a recipe drops them (`ts_contam_count == 0`) or `select --redact
ts_contam_spans` cuts the matched text out at materialize.

Output: the set `_decontam` beside the annotate shards (rows in annotate's order), built on the
per-document scaffold `stages.doc_set` (workers, resume, publish, refusal, summary.json):

* `ts_contam_count` (int64): matched n-grams of the document (every position whose n words are
  a benchmark n-gram; a short benchmark example used whole counts as one);
* `ts_contam_spans` (annotate's int span layout): the matched text, code-point offsets into the
  document, overlapping matches merged, score = matched n-grams inside;
* `ts_contam_bench` (list<string>): the names of the benchmarks matched, sorted.

The benchmark index (`decontam.index`: an exact sorted key set, or Bloom filters) is built once
per run in a work folder (`.textsieve-work/` of the annotate folder) that every worker
memory-maps, and removed at the end. Identity: info holds n, the normalisation, the short-example
rule, the mode and rate (result-changing: another value is refused unless `overwrite`) and the
fields and a fingerprint of every benchmark's files (a changed benchmark re-runs every shard).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from textsieve.options import option, progress_option

STAGE = "decontaminate"
SET_NAME = "decontam"


@dataclass
class DecontamConfig:
    """Everything `textsieve decontaminate` takes (CLI, YAML `decontaminate:` and `ts.decontaminate`)."""

    directory: str = option(help="annotate output folder (its shards point at the texts)", positional=True,
                            metavar="ATTRS")
    against: list[str] = option(help="evaluation data to match: a JSONL (.gz/.zst), Parquet or text file, or a "
                                     "folder of them, as NAME=PATH or PATH (named by its stem); repeat for "
                                     "several benchmarks", repeat=True, metavar="BENCH")
    fields: list[str] = option(help="record field(s) holding an example's text, concatenated per example (e.g. "
                                    "--field question --field answer; dotted paths reach nested fields); text "
                                    "files: one example per line", factory=lambda: ["text"], flag="--field",
                               repeat=True, metavar="F")
    ngram: int = option(13, help="n-gram length in normalised words (GPT-3: 13; datatrove's default: 12)",
                        metavar="N")
    min_words: int = option(8, help="a benchmark example shorter than --ngram words is matched whole when it has "
                                    "at least this many words, else left out (counted in the summary); "
                                    "--min-words N matches only full n-grams", metavar="W")
    bloom_fp: float | None = option(None, help="keep benchmark n-grams in Bloom filters with this false-positive "
                                               "rate per n-gram look-up (e.g. 1e-6) instead of an exact set; also "
                                               "used, at 1e-6, when the exact set exceeds --memory", metavar="RATE")
    memory: int | str = option("1GB", help="memory for the benchmark index (memory-mapped, so shared by all "
                                           "workers), e.g. 1GB, 512MB", metavar="SIZE")
    workers: int | None = option(None, help="processes, one annotate shard each (default: all cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with another --ngram, --min-words, mode or Bloom rate "
                                         "(without it the run refuses)")


@dataclass
class DecontamResult:
    output: str  # the set folder DIR/_decontam
    documents: int = 0
    contaminated: int = 0  # documents with at least one matched n-gram
    matched_ngrams: int = 0
    shards: int = 0
    computed: int = 0  # shards matched by this run (the others unchanged or finished by a killed run)
    skipped: bool = False  # nothing to do: published from these inputs, benchmarks and settings
    seconds: float = 0.0
    mode: str = "exact"
    mode_reason: str = ""
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def output_schema() -> pa.Schema:
    """The schema of the set `_decontam`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.decontam.match import columns_schema
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, *columns_schema()])


def _setup(params: dict[str, Any]) -> Any:
    """Once per worker: memory-map the index the main process built."""
    from textsieve.decontam.match import open_matcher

    return open_matcher(params["work"], params["lengths"], params["names"])


def _compute(matcher: Any, texts: list[str]) -> dict[str, pa.Array]:
    from textsieve.decontam.match import match_texts

    return match_texts(matcher, texts)


def _check(cfg: DecontamConfig) -> None:
    """Settings errors before any work (the API and YAML get the CLI's checks); a single string
    for `against` or `fields` (API, YAML) is taken as a list of one."""
    from textsieve.stages.doc_set import annotate_sources

    if isinstance(cfg.against, str):
        cfg.against = [cfg.against]
    if isinstance(cfg.fields, str):
        cfg.fields = [cfg.fields]
    if isinstance(cfg.ngram, bool) or not isinstance(cfg.ngram, int) or cfg.ngram < 1:
        raise ValueError(f"--ngram {cfg.ngram}: must be a whole number >= 1 (13: GPT-3's rule)")
    if not cfg.fields or any(not isinstance(f, str) or not f for f in cfg.fields):
        raise ValueError(f"--field {cfg.fields!r}: give at least one non-empty field name")
    annotate_sources(cfg.directory, STAGE)  # not an annotate folder: say so before reading benchmarks


def decontam_job(cfg: DecontamConfig, work: str) -> tuple[Any, Any]:
    """The `DocSetJob` of a run and the index stats, the index built into folder `work`."""
    from textsieve.decontam.bench import fingerprint, parse_benchmarks
    from textsieve.decontam.index import build_index
    from textsieve.decontam.match import columns_schema
    from textsieve.decontam.ngrams import NORMALIZATION
    from textsieve.exec.budget import parse_memory
    from textsieve.stages.doc_set import DocSetJob

    _check(cfg)
    benches = parse_benchmarks(list(cfg.against))
    prints = fingerprint(benches, list(cfg.fields))
    stats = build_index(benches, list(cfg.fields), cfg.ngram, cfg.min_words, cfg.bloom_fp,
                        parse_memory(cfg.memory), work)
    bench_info = {b.name: {"files": len(b.files), "fingerprint": prints[b.name],
                           **stats.benchmarks[b.name]} for b in benches}
    info = {"ngram": cfg.ngram, "normalization": NORMALIZATION, "min_words": cfg.min_words, "mode": stats.mode,
            "bloom_fp": stats.bloom_fp, "fields": list(cfg.fields), "benchmarks": bench_info,
            "lengths": stats.lengths, "index_keys": stats.keys}
    params = {"work": work, "lengths": stats.lengths, "names": [b.name for b in benches]}
    job = DocSetJob(stage=STAGE, set_name=SET_NAME, setup=_setup, compute=_compute, params=params, info=info,
                    result_keys=("ngram", "normalization", "min_words", "mode", "bloom_fp"),
                    schema=columns_schema(), totals=("ts_contam_count",), batch_docs=1000)
    return job, stats


def run_decontaminate(cfg: DecontamConfig) -> DecontamResult:
    """Match every document of the annotate folder against the benchmarks into DIR/_decontam."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from textsieve.io.attributes import attribute_shards
    from textsieve.io.leftovers import finish_work, start_work
    from textsieve.stages.doc_set import run_doc_set

    _check(cfg)  # before the work folder: a mistyped ATTRS must not be created
    work = start_work(STAGE, cfg.directory)
    try:
        job, stats = decontam_job(cfg, work)
        if cfg.progress and stats.mode == "bloom":
            print(f"{STAGE}: Bloom filters ({stats.size_bytes / 1e6:,.1f} MB): {stats.reason}", file=sys.stderr)
        res = run_doc_set(cfg.directory, job, workers=cfg.workers, progress=cfg.progress, overwrite=cfg.overwrite)
    finally:
        finish_work(work)
    contaminated = 0
    fs, paths = attribute_shards(cfg.directory, SET_NAME)
    for p in paths:
        with fs.open(p, "rb") as fh:
            col = pq.read_table(fh, columns=["ts_contam_count"]).column(0)
        contaminated += int(pc.sum(pc.greater(col, 0)).as_py() or 0)
    return DecontamResult(output=res.output, documents=res.documents, contaminated=contaminated,
                          matched_ngrams=int(res.summary.get("ts_contam_count", 0)), shards=res.shards,
                          computed=res.computed, skipped=res.skipped, seconds=res.seconds, mode=stats.mode,
                          mode_reason=stats.reason, benchmarks=job.info["benchmarks"], summary=res.summary)
