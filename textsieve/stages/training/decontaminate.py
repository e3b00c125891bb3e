"""`textsieve decontaminate`: n-gram overlap of every document with evaluation data the user provides.

Why: a benchmark passage in the training data inflates that benchmark's score. This stage marks
documents sharing n-grams (13 by default, GPT-3's rule; words normalised as `decontam.ngrams`
says) with any benchmark given by `against` (`decontam.bench`: JSONL/Parquet/text files or
folders, `name=path`), so a recipe drops them (`ts_contam_count == 0`) or `select --redact
ts_contam_spans` cuts the matched text out at materialize.

Output: the set `sets/decontam` beside the annotate shards (rows in annotate's order), built on the
per-document scaffold `stages.doc_set` (workers, resume, publish, refusal, summary.json):

* `ts_contam_count` (int64): matched n-grams of the document (every position whose n words are
  a benchmark n-gram; a short benchmark example used whole counts as one);
* `ts_contam_spans` (annotate's int span layout): the matched text, code-point offsets into the
  document, overlapping matches merged, score = matched n-grams inside;
* `ts_contam_bench` (list<string>): the names of the benchmarks matched, sorted.

The benchmark index (`decontam.index`: an exact sorted key set, or Bloom filters) is built once
per run in a work folder (`.textsieve-work/` of the annotate folder) that every worker
memory-maps, and removed at the end; only when some shard is to be computed.

N-grams made only of single letters or digits (an `A B C ... Z` index line) are never matched
(`decontam.ngrams.LEFT_OUT`): they are page navigation, not benchmark text.

Identity (the set's info): the settings (n, the normalisation, the short-example rule, the
requested Bloom rate: result-changing, another value is refused unless `overwrite`; the fields,
the memory allowance, the n-grams left out and `unicodedata.unidata_version`, which the fold
table follows) and a
fingerprint of every benchmark's files (a changed benchmark re-runs every shard). Beside it the
info records what the index build found (`DERIVED`: the mode chosen, also refused when it
changes, the n-gram lengths looked up, the counts per benchmark). Those are a function of the
identity, so a re-run whose identity matches the published summary takes them from there and,
when the scaffold would keep every shard (`_would_skip`, the scaffold's own key), is a no-op
that reads each benchmark file once (its fingerprint) and never parses it or builds the index.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from textsieve.display import result_display
from textsieve.options import memory_option, option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, absolute, set_named
from textsieve.stages.planning import PlannedSet, doc_set_plan

STAGE_NAME = "decontaminate"
SET_NAME = "decontam"
#: result-changing settings known before the index is built (refused before building it)
SETTING_KEYS = ("ngram", "normalization", "min_words", "bloom_fp")
#: info keys the index build derives from the identity
DERIVED = ("mode", "lengths", "index")


@dataclass
class DecontamConfig:
    """Everything `textsieve decontaminate` takes (CLI, YAML `decontaminate:` and `ts.decontaminate`)."""

    directory: str = option(help="annotate output folder (its shards point at the texts)", positional=True,
                            metavar="ATTRS")
    against: list[str] = option(help="evaluation data to match: a JSONL (.gz/.zst), Parquet or text file, or a "
                                     "folder of them, as NAME=PATH or PATH (named by its stem); repeat for "
                                     "several benchmarks", repeat=True, metavar="BENCH")
    fields: list[str] = option(help="record field(s) holding an example's text, concatenated per example (e.g. "
                                    "--fields question --fields answer; dotted paths reach nested fields); text "
                                    "files: one example per line", factory=lambda: ["text"], renamed_from=("--field",),
                               repeat=True, metavar="F")
    ngram: int = option(13, help="n-gram length in normalised words (GPT-3: 13; datatrove's default: 12)",
                        metavar="N")
    min_words: int = option(8, help="a benchmark example shorter than --ngram words is matched whole when it has "
                                    "at least this many words, else left out (counted in the summary); "
                                    "--min-words N matches only full n-grams", metavar="W")
    bloom_fp: float | None = option(None, help="keep benchmark n-grams in Bloom filters with this false-positive "
                                               "rate per look-up (e.g. 1e-6) instead of an exact set; a document "
                                               "is looked up once per word, n-gram length and benchmark, so a "
                                               "1,000-word one is falsely flagged with ~1000 x lengths x benchmarks "
                                               "x RATE (the run prints it); also used, at 1e-6, when the exact set "
                                               "exceeds --memory", metavar="RATE")
    memory: int | str = memory_option("here it covers only the benchmark index (memory-mapped, so shared by all "
                                      "workers): the exact index takes 24 bytes per benchmark n-gram, else Bloom "
                                      "filters are used (reading the benchmarks adds a fixed working set of ~10-25 "
                                      "MB). Not covered: each worker's texts in flight, one batch of an annotate "
                                      "shard's documents at a time (~10x their size)")
    workers: int | None = option(None, help="processes, one annotate shard each (default: all cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with another --ngram, --min-words, mode or Bloom rate "
                                         "(without it the run refuses)")


@result_display
@dataclass
class DecontamResult:
    output: str  # the set folder DIR/sets/decontam
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
    """The schema of the set `sets/decontam`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.decontam.match import columns_schema
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, *columns_schema()])


def _setup(params: dict[str, Any]) -> Any:
    """Once per worker: memory-map the index the main process built."""
    from textsieve.decontam.match import open_matcher

    if params["work"] is None:  # only if `_would_skip` and the scaffold disagreed
        raise RuntimeError(f"{STAGE_NAME}: internal error: a shard is to be computed but the index was not built "
                           "(the no-op check disagrees with stages.doc_set); re-run with --overwrite")
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
        raise ValueError(f"--fields {cfg.fields!r}: give at least one non-empty field name")
    annotate_sources(cfg.directory, STAGE_NAME)  # not an annotate folder: say so before reading benchmarks


def identity(cfg: DecontamConfig, benches: list[Any]) -> dict[str, Any]:
    """The set's identity (see the module doc): settings and benchmark fingerprints, no data read
    but the files' bytes."""
    import unicodedata

    from textsieve.decontam.bench import fingerprint
    from textsieve.decontam.ngrams import LEFT_OUT, NORMALIZATION
    from textsieve.exec.budget import memory_plan

    prints = fingerprint(benches, list(cfg.fields))
    return {"ngram": cfg.ngram, "normalization": NORMALIZATION, "left_out": LEFT_OUT, "min_words": cfg.min_words,
            "bloom_fp": cfg.bloom_fp,
            "fields": list(cfg.fields), "memory": memory_plan(STAGE_NAME, cfg.memory, 0, floor=1).total,
            "unidata_version": unicodedata.unidata_version,
            "benchmarks": {b.name: {"files": len(b.files), "fingerprint": prints[b.name]} for b in benches}}


def derived(stats: Any) -> dict[str, Any]:
    """The info keys `DERIVED` from a built index's stats."""
    return {"mode": stats.mode, "lengths": list(stats.lengths),
            "index": {"keys": stats.keys, "size_bytes": stats.size_bytes, "reason": stats.reason,
                      "benchmarks": stats.benchmarks}}


def decontam_job(info: dict[str, Any], work: str | None) -> Any:
    """The `DocSetJob` of a run: `info` = identity + derived, the index in folder `work` (None:
    not built, for a run the scaffold skips)."""
    from textsieve.decontam.match import columns_schema
    from textsieve.stages.doc_set import DocSetJob

    params = {"work": work, "lengths": info["lengths"], "names": list(info["benchmarks"])}
    return DocSetJob(stage=STAGE_NAME, set_name=SET_NAME, setup=_setup, compute=_compute, params=params, info=info,
                     result_keys=(*SETTING_KEYS, "mode"), schema=columns_schema(), totals=("ts_contam_count",),
                     batch_docs=1000)


def _published(directory: str) -> tuple[Any, str, dict[str, Any] | None]:
    """(fs, set root, the published summary.json or None), an interrupted publish finished first."""
    import json

    import fsspec

    from textsieve.io.attributes import attribute_set_dir
    from textsieve.io.publish import SUMMARY, read_manifest

    fs, root = fsspec.core.url_to_fs(attribute_set_dir(directory, SET_NAME))
    root = root.rstrip("/")
    if not fs.isdir(root) or read_manifest(fs, root) is None or not fs.exists(f"{root}/{SUMMARY}"):
        return fs, root, None
    try:
        old = json.loads(fs.cat_file(f"{root}/{SUMMARY}"))
    except (OSError, ValueError):
        return fs, root, None
    return fs, root, old if isinstance(old, dict) else None


def _would_skip(directory: str, fs: Any, root: str, info: dict[str, Any]) -> bool:
    """Whether `run_doc_set` would keep the published set as it is: the scaffold's own test
    (stages.doc_set.run_doc_set: settings key, per-shard fingerprints, run key, files intact),
    computed without its side effects. If the scaffold's key ever changes, this says False and
    the run builds the index it did not need (tests/test_decontaminate.py checks it does not)."""
    import hashlib
    import json

    import fsspec

    from textsieve.io.publish import SUMMARY, PublishError, check_file, content_key, read_manifest
    from textsieve.stages.doc_set import annotate_sources

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    manifest = read_manifest(fs, root) if fs.isdir(root) else None
    if manifest is None:
        return False
    settings = sha(json.dumps(info, sort_keys=True, default=str))
    afs, aroot = fsspec.core.url_to_fs(directory)
    aroot = aroot.rstrip("/")
    shard_fp = {s.rel: sha(f"{settings}:{content_key(afs, aroot, [s.annotate_rel])}")
                for s in annotate_sources(directory, STAGE_NAME)}
    key = sha(json.dumps([settings, sorted(shard_fp.items())]))
    if manifest.key != key or manifest.fingerprint_of(SUMMARY) != key:
        return False
    try:
        for rel in [*shard_fp, SUMMARY]:
            if rel != SUMMARY and manifest.fingerprint_of(rel) != shard_fp[rel]:
                return False
            check_file(fs, root, manifest, rel)
    except PublishError:
        return False
    return True


def run_decontaminate(cfg: DecontamConfig) -> DecontamResult:
    """Match every document of the annotate folder against the benchmarks into DIR/sets/decontam."""
    import json

    from textsieve.decontam.bench import parse_benchmarks
    from textsieve.decontam.index import build_index
    from textsieve.exec.budget import memory_plan
    from textsieve.io.leftovers import finish_work, start_work
    from textsieve.io.publish import settings_diff
    from textsieve.stages.doc_set import DocSetError, run_doc_set

    _check(cfg)  # before the work folder: a mistyped ATTRS must not be created
    benches = parse_benchmarks(list(cfg.against))
    ident = json.loads(json.dumps(identity(cfg, benches)))  # as summary.json holds it
    fs, root, old = _published(cfg.directory)
    if old is not None and all(old.get(k) == v for k, v in ident.items()) and all(k in old for k in DERIVED):
        info = {**ident, **{k: old[k] for k in DERIVED}}
        if not cfg.overwrite and _would_skip(cfg.directory, fs, root, info):
            res = run_doc_set(cfg.directory, decontam_job(info, None), workers=cfg.workers, progress=cfg.progress)
            return _result(cfg.directory, res, info)
    diff = [] if cfg.overwrite else settings_diff(fs, root, ident, list(SETTING_KEYS))
    if diff:  # the scaffold's refusal, before the index is built
        raise DocSetError(f"{STAGE_NAME}: {root} holds a result made with other settings: {', '.join(diff)}; "
                          "re-run with those settings to keep it, or pass --overwrite (overwrite=True) to replace it")
    work = start_work(STAGE_NAME, cfg.directory)
    try:
        stats = build_index(benches, list(cfg.fields), cfg.ngram, cfg.min_words, cfg.bloom_fp,
                            memory_plan(STAGE_NAME, cfg.memory, 0, floor=1).total, work)
        if cfg.progress and stats.mode == "bloom":
            print(f"{STAGE_NAME}: Bloom filters ({stats.size_bytes / 1e6:,.1f} MB): {stats.reason}", file=sys.stderr)
        info = {**ident, **derived(stats)}
        res = run_doc_set(cfg.directory, decontam_job(info, work), workers=cfg.workers, progress=cfg.progress,
                          overwrite=cfg.overwrite)
    finally:
        finish_work(work)
    return _result(cfg.directory, res, info)


def _result(directory: str, res: Any, info: dict[str, Any]) -> DecontamResult:
    """The run's result: counts read back from the published shards."""
    from textsieve.io.arrow_arrays import to_numpy
    from textsieve.io.attributes import attribute_shards
    from textsieve.io.parquet_read import read_table

    contaminated = 0
    afs, paths = attribute_shards(directory, SET_NAME)
    for p in paths:
        with afs.open(p, "rb") as fh:  # unthreaded (io.parquet_read: else an abort at exit)
            col = read_table(fh, columns=["ts_contam_count"]).column(0)
        # (NumPy, not `pc.greater(col, 0)`: a Python scalar there loads pandas through pyarrow's shim)
        contaminated += int((to_numpy(col) > 0).sum())
    stats = info["index"]["benchmarks"]
    benchmarks = {name: {**b, **stats.get(name, {})} for name, b in info["benchmarks"].items()}
    return DecontamResult(output=res.output, documents=res.documents, contaminated=contaminated,
                          matched_ngrams=int(res.summary.get("ts_contam_count", 0)), shards=res.shards,
                          computed=res.computed, skipped=res.skipped, seconds=res.seconds, mode=info["mode"],
                          mode_reason=info["index"]["reason"], benchmarks=benchmarks, summary=res.summary)


def _pipeline_run(c: DecontamConfig) -> Outcome:
    r = run_decontaminate(c)
    return Outcome({"documents": r.documents, "contaminated": r.contaminated, "matched_ngrams": r.matched_ngrams},
                   ran=not r.skipped)


def _benchmarks(layout: Layout, name: str, c: DecontamConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The benchmark files' identities (a changed benchmark redoes the stage)."""
    paths = [v.partition("=")[2] if "=" in v and "/" not in v.partition("=")[0] else v for v in c.against]
    return [layout.identities(paths)]


def _resolve(section: dict[str, Any], base: Path) -> None:
    """`name=path` keeps its name; the path is the file's."""
    def one(value: str) -> str:
        name, sep, rest = value.partition("=")
        if sep and name and "/" not in name and "://" not in name:
            return f"{name}={absolute(rest, base)}"
        return str(absolute(value, base))

    section["against"] = [one(v) for v in section["against"]]


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    dec = data["decontaminate"]
    if dec is not None and not dec.get("against"):
        errors.append("decontaminate.against: give at least one benchmark file or folder (name=path or path)")


def _summary(res: DecontamResult) -> dict[str, Any]:
    return {"attribute_set": res.output, "documents": res.documents, "contaminated": res.contaminated,
            "matched_ngrams": res.matched_ngrams, "shards": res.shards, "computed": res.computed,
            "skipped": res.skipped, "mode": res.mode, "seconds": round(res.seconds, 3), "benchmarks": res.benchmarks}


def _examples_of(bench: dict[str, Any]) -> str:
    """"1,000 examples", and how many were left out as shorter than --min-words and how many
    n-grams as single letters or digits only, when any were (a user otherwise cannot tell that
    part of a benchmark was never matched)."""
    text = f"{bench.get('examples', 0):,} examples"
    left = bench.get("short_examples_left_out", 0)
    text = f"{text}, {left:,} left out as shorter than --min-words" if left else text
    letters = bench.get("letter_ngrams_left_out", 0)  # an A-Z index line: said, so a user sees the rule at work
    return f"{text}, {letters:,} n-grams of single letters or digits left out" if letters else text


def _report(res: DecontamResult) -> str:
    what = ("unchanged (same inputs, benchmarks and settings)" if res.skipped
            else f"{res.computed} of {res.shards} shard(s) matched")
    names = ", ".join(f"{name} ({_examples_of(b)})" for name, b in res.benchmarks.items())
    return (f"decontaminate: {res.contaminated:,} of {res.documents:,} documents share n-grams with {names} "
            f"({res.matched_ngrams:,} matched n-grams; {res.mode} index); {what} in {res.seconds:.1f} s -> "
            f"{res.output} (keep clean documents with ts_contam_count == 0)")


CLI = CliSpec(
    help="n-gram overlap of documents with benchmark data",
    description="Mark every document that shares an n-gram (13 normalised words by default: lowercase, punctuation "
                "and diacritics ignored, GPT-3's rule) with evaluation data you provide: JSONL, Parquet or text "
                "files or folders, one benchmark per --against. Writes the attribute set ATTRS/sets/decontam with "
                "ts_contam_count (matched n-grams), ts_contam_spans (the matched text, character offsets) and "
                "ts_contam_bench (benchmarks matched). Keep clean documents with a recipe rule ts_contam_count == 0, "
                "or cut the matched text out with select --redact ts_contam_spans. N-grams made only of single "
                "letters or digits (an alphabet index line such as A B C ... Z) are never matched: they are page "
                "navigation, not benchmark text. A changed benchmark file is matched again on the next run.",
    examples=("textsieve decontaminate attrs/ --against wiki=wiki.jsonl.gz",
              "textsieve decontaminate attrs/ --against wiki.jsonl.gz --fields text --bloom-fp 1e-6 --overwrite "
              "--workers 1"),
    report=_report, summary=_summary)

STAGE = Stage("decontaminate", DecontamConfig, "decontaminate", _pipeline_run, order=80, call=run_decontaminate,
              cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named(SET_NAME), upstream=_benchmarks, resolve=_resolve, check=_check_pipeline,
              output_sets=lambda c, layout, where: [PlannedSet(SET_NAME, output_schema())],
              estimate=lambda c, e: doc_set_plan("decontaminate", "n-gram overlap with the benchmarks -> sets/decontam",
                                                 e.docs, 0.1, e.mean_chars))
