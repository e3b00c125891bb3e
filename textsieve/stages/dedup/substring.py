"""The `dedup substring` stage: exact-substring dedup (Lee et al. 2022) as span attributes.

Input: one annotate output folder (texts are re-read from its sources). Every token covered by a
substring of at least `--min-len` tokens that occurs twice or more in the corpus is marked, every
occurrence included (the paper's `collect`, datatrove's range remover); how, and what a token
is, in `dedup.substring`.

Output `DIR/sets/dedup_substring/<rel>.parquet`, one per annotate shard, rows in annotate's order:
  dup_substring_spans   list<struct<start, end, score: int64>>: the repeated text, code-point
                        offsets (first marked token's start to last one's end), score = its
                        tokens; any number per document (a free span column)
  dup_substring_count   int64: spans
  dup_substring_tokens  int64: marked tokens
  dup_substring_chars   int64: characters inside the spans
  dup_substring_frac    double: dup_substring_chars / the document's characters (null when empty)
and `summary.json`. Cut the repeats out when writing (`select --redact dup_substring_spans`, or
`redact: [dup_substring_spans]` in a recipe), or drop documents mostly made of them
(`dup_substring_frac < 0.5`).

Partitions (`--memory`): pass 1 writes each shard's tokens to work files (workers, one shard
each). When the corpus's tokens fit one suffix-array pass (`BYTES_PER_TOKEN` each, within the
budget) it is one pass. Otherwise the documents, in corpus order, are cut into P partitions of at
most half a pass, and every pair of partitions is sorted together: P(P-1)/2 passes. A repeat
between any two documents lies in some pair, so the result is the same as one pass (a test
forces many partitions and compares); the cost grows with P^2, so give the stage the memory of
your corpus's tokens where you can (~56 bytes per token, e.g. 1 GB per 18M tokens).

Settings that change the result (`min_len`, the tokens: words or the tokenizer file's
fingerprint) are recorded in the set's summary; a run with other ones refuses to replace it
unless `overwrite`. Published as one unit (`io.publish`); a re-run with nothing changed is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.dedup.lines_group import GroupFlags
from textsieve.dedup.substring import BYTES_PER_TOKEN, DEFAULT_MIN_LEN, repeated, runs
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.budget import MemoryPlan, memory_plan
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import numeric_array, to_numpy
from textsieve.io.attributes import open_set, set_place
from textsieve.io.leftovers import finish_work, start_work
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import Publication, content_key, settings_diff
from textsieve.options import memory_option, option, progress_option
from textsieve.signals.spans import free_spans
from textsieve.stages.dedup.exact import DocSource
from textsieve.stages.dedup.exact_out import write_tables
from textsieve.stages.dedup.substring_spill import BASE_SCHEMA, Spilled, spill_shard
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, set_named
from textsieve.stages.doc_set import annotate_sources
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan
from textsieve.tokenization.tokenizer import load_tokenizer

SUBSTRING_SET = "dedup_substring"
SPANS = "dup_substring_spans"
COLUMNS = [SPANS, "dup_substring_count", "dup_substring_tokens", "dup_substring_chars", "dup_substring_frac"]
RESULT_KEYS = ("min_len", "unit", "tokenizer_fingerprint")


def output_schema() -> pa.Schema:
    """The schema of a `sets/dedup_substring` shard (`textsieve run --dry-run` checks recipes against it)."""
    return pa.schema([("id", pa.string()), ("shard", pa.string()), ("row", pa.int64()), free_spans(SPANS),
                      ("dup_substring_count", pa.int64()), ("dup_substring_tokens", pa.int64()),
                      ("dup_substring_chars", pa.int64()), ("dup_substring_frac", pa.float64())])


class DedupSubstringError(TextsieveError, ValueError):
    """A `dedup substring` input or setting it cannot work with."""


@dataclass
class SubstringConfig:
    """Everything `textsieve dedup substring` takes (CLI, YAML and `ts.dedup_substring`)."""

    directory: str = option(help="an annotate output folder (texts are re-read from its sources)", positional=True,
                            metavar="DIR")
    min_len: int = option(DEFAULT_MIN_LEN, help="the shortest repeat marked, in tokens (Lee et al. 2022: 50)",
                          metavar="N")
    tokenizer: str | None = option(None, help="a Hugging Face tokenizer.json (or a folder holding one) or a tiktoken "
                                              "file whose tokens are counted (the paper: GPT-2's); default: word "
                                              "tokens, runs of word characters or of other non-space characters",
                                   metavar="PATH")
    memory: int | str = memory_option("a corpus whose tokens need more (~56 bytes each) is cut into partitions, "
                                      "sorted pair by pair (same output, more passes)")
    tmp_dir: str | None = option(None, help="local folder for work files (tokens, offsets, marks); default: "
                                            ".textsieve-work in the annotate folder; a killed run's are removed by "
                                            "the next run", metavar="DIR")
    workers: int | None = option(None, help="processes reading and tokenizing shards, one shard each (default: all "
                                            "cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with other settings (min-len, tokenizer), and "
                                         "recompute even when it is up to date")


@result_display
@dataclass
class SubstringResult:
    output: str
    documents: int = 0
    tokens: int = 0
    duplicate_tokens: int = 0
    spans: int = 0
    partitions: int = 0
    passes: int = 0
    skipped: bool = False
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


def _check(cfg: SubstringConfig) -> None:
    if isinstance(cfg.min_len, bool) or not isinstance(cfg.min_len, int) or cfg.min_len < 1:
        raise DedupSubstringError(f"dedup substring: --min-len must be a whole number >= 1, not {cfg.min_len!r}")


def _tokens_info(cfg: SubstringConfig) -> dict[str, Any]:
    """What the tokens are (loaded once here, so a bad tokenizer path fails before any work)."""
    if cfg.tokenizer is None:
        return {"unit": "words", "tokenizer": None, "tokenizer_fingerprint": None}
    tok = load_tokenizer(cfg.tokenizer)
    return {"unit": "tokens", "tokenizer": os.path.abspath(tok.path) if "://" not in tok.path else tok.path,
            "tokenizer_fingerprint": tok.fingerprint}


# ---------------------------------------------------------------- pass 2: partitions and their pairs

@dataclass
class TokenCorpus:
    """Pass 1's shards laid end to end: global token and document ordinals."""

    spilled: list[Spilled]
    doc_len: np.ndarray  # tokens per document, corpus order
    tok_at: np.ndarray  # first global token of each shard (+ the total)
    doc_at: np.ndarray  # first global document of each shard (+ the total)

    @classmethod
    def of(cls, spilled: list[Spilled]) -> TokenCorpus:
        lens = [np.concatenate([to_numpy(b.column("tokens")) for b in s.base_batches()] or [np.zeros(0, np.int64)])
                for s in spilled]
        doc_len = np.concatenate(lens or [np.zeros(0, np.int64)]).astype(np.int64)
        tok_at = np.concatenate([[0], np.cumsum([s.n_tokens for s in spilled])]).astype(np.int64)
        doc_at = np.concatenate([[0], np.cumsum([s.n_docs for s in spilled])]).astype(np.int64)
        return cls(spilled, doc_len, tok_at, doc_at)

    def partitions(self, max_tokens: int) -> list[tuple[int, int]]:
        """Document ranges `[d0, d1)`: all in one when they fit `max_tokens`, else of at most half
        of it each (a pair must fit), a larger document alone."""
        n = self.doc_len.shape[0]
        if int(self.doc_len.sum()) <= max_tokens or n == 0:
            return [(0, n)]
        cap = max(1, max_tokens // 2)
        cum = np.cumsum(self.doc_len)
        out, d0 = [], 0
        while d0 < n:
            before = int(cum[d0 - 1]) if d0 else 0
            d1 = max(d0 + 1, int(np.searchsorted(cum, before + cap, side="right")))
            out.append((d0, min(d1, n)))
            d0 = d1
        return out

    def token_range(self, d0: int, d1: int) -> tuple[int, int]:
        cum = np.concatenate([[0], np.cumsum(self.doc_len)])
        return int(cum[d0]), int(cum[d1])

    def load(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """The token ids (one id space) and document lengths of the document ranges, end to end."""
        pieces: list[tuple[int, np.ndarray]] = []
        for d0, d1 in ranges:
            lo, hi = self.token_range(d0, d1)
            for k, s in enumerate(self.spilled):
                a, b = max(lo, int(self.tok_at[k])), min(hi, int(self.tok_at[k + 1]))
                if b > a:
                    pieces.append((k, s.ids(a - int(self.tok_at[k]), b - int(self.tok_at[k]))))
        lens = np.concatenate([self.doc_len[d0:d1] for d0, d1 in ranges])
        if not pieces:
            return np.zeros(0, np.uint32), lens
        if self.spilled[0].words:  # shard-local word ids -> one dictionary over the shards involved
            shards = list(dict.fromkeys(k for k, _ in pieces))
            vocabs = [self.spilled[k].vocab() for k in shards]
            codes = to_numpy(pa.concat_arrays(vocabs).dictionary_encode().indices).astype(np.uint32)
            at = np.concatenate([[0], np.cumsum([len(v) for v in vocabs])])
            mapping = {k: codes[at[i]:at[i + 1]] for i, k in enumerate(shards)}
            pieces = [(k, mapping[k][ids]) for k, ids in pieces]
        return np.concatenate([ids for _, ids in pieces]), lens


def _passes(parts: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The document ranges sorted together in each pass: the one partition, or every pair."""
    if len(parts) == 1:
        return [parts]
    return [[parts[i], parts[j]] for i in range(len(parts)) for j in range(i + 1, len(parts))]


def _mark(corpus: TokenCorpus, marks: GroupFlags, min_len: int, max_tokens: int) -> tuple[int, int]:
    """Run every pass; (partitions, passes)."""
    parts = corpus.partitions(max_tokens)
    passes = _passes(parts)
    for group in passes:
        ids, lens = corpus.load(group)
        marked = repeated(ids, lens, min_len)
        del ids
        marks.merge([corpus.token_range(d0, d1) for d0, d1 in group], marked)
    return len(parts), len(passes)


# ---------------------------------------------------------------- the output of one shard

def _tables(s: Spilled, marks: GroupFlags, tok_at: int) -> Iterator[pa.Table]:
    """The output tables of one shard, one base batch at a time."""
    at = 0
    batches = list(s.base_batches())
    if not batches:
        batches = [pa.RecordBatch.from_pylist([], schema=BASE_SCHEMA)]
    for b in batches:
        lens = to_numpy(b.column("tokens")).astype(np.int64)
        n = int(lens.sum())
        m = marks.slice(tok_at + at, tok_at + at + n) if n else np.zeros(0, np.uint8)
        doc_off, start, end, toks = runs(m, s.offsets(at, at + n), lens)
        at += n
        spans = pa.ListArray.from_arrays(
            numeric_array(doc_off, pa.int32()),  # (from buffers: `pa.array` loads pandas)
            pa.StructArray.from_arrays([numeric_array(start, pa.int64()), numeric_array(end, pa.int64()),
                                        numeric_array(toks, pa.int64())], names=["start", "end", "score"]),
            type=free_spans(SPANS).type)
        count = np.diff(doc_off).astype(np.int64)
        chars = _seg_sum(end - start, doc_off)
        tokens = _seg_sum(toks, doc_off)
        doc_chars = to_numpy(b.column("chars")).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = numeric_array(chars / np.maximum(doc_chars, 1), pa.float64(), valid=doc_chars != 0)
        yield pa.Table.from_arrays(
            [b.column("id"), b.column("shard"), b.column("row"), spans, numeric_array(count, pa.int64()),
             numeric_array(tokens, pa.int64()), numeric_array(chars, pa.int64()), frac], schema=output_schema())


def _seg_sum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    cum = np.concatenate([[0], np.cumsum(x, dtype=np.int64)])
    return (cum[offsets[1:]] - cum[offsets[:-1]]).astype(np.int64)


def _shard_counts(fs: fsspec.AbstractFileSystem, path: str) -> dict[str, int]:
    """Counts of an output shard, read back (adopted shards of a killed run count the same)."""
    import pyarrow.compute as pc

    with fs.open(path, "rb") as fh:
        t = read_table(fh, columns=["dup_substring_count", "dup_substring_tokens", "dup_substring_chars"])
    return {"n_docs": t.num_rows, **{f"n_{k}": int(pc.sum(t.column(f"dup_substring_{k}")).as_py() or 0)
                                     for k in ("count", "tokens", "chars")}}


# ---------------------------------------------------------------- the run

def _plan(cfg: SubstringConfig, n_tasks: int) -> tuple[MemoryPlan, int]:
    """Workers and the split of `--memory` (`exec.budget`), as `dedup lines` does."""
    planned = min(cfg.workers or default_workers(), max(1, n_tasks))
    planned = pool_workers("dedup substring", cfg.workers, planned, [cfg.directory, *source_locations(cfg.directory)])
    plan = memory_plan("dedup substring", cfg.memory, planned if planned > 1 else 0, asked=cfg.workers is not None)
    if plan.workers <= 1 < planned:
        plan = memory_plan("dedup substring", cfg.memory, 0)
    return plan, max(1, plan.workers)


def _run_key(cfg: SubstringConfig, info: dict, sources: list[DocSource]) -> str:
    fs, root = fsspec.core.url_to_fs(cfg.directory)
    parts = [{k: info.get(k) for k in ("version", *RESULT_KEYS)},
             content_key(fs, root, [s.annotate_rel for s in sources])]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_substring(cfg: SubstringConfig) -> SubstringResult:
    """Mark repeated substrings; publish the `sets/dedup_substring` set and its summary."""
    start = time.perf_counter()
    _check(cfg)
    sources = annotate_sources(cfg.directory, "dedup substring", "the documents are annotate's", DedupSubstringError)
    info: dict[str, Any] = {"stage": SUBSTRING_SET, "version": __version__, "min_len": cfg.min_len,
                            **_tokens_info(cfg), "set": SUBSTRING_SET, "columns": COLUMNS}
    set_dir, fs, set_root = set_place(cfg.directory, SUBSTRING_SET)
    diff = [] if cfg.overwrite else settings_diff(fs, set_root, info, list(RESULT_KEYS))
    if diff:
        raise DedupSubstringError(
            f"dedup substring: {set_root} holds a result made with other settings: {', '.join(diff)}; re-run with "
            "those settings to keep it, or pass --overwrite (overwrite=True) to replace it")
    pub = open_set(fs, set_root, SUBSTRING_SET, _run_key(cfg, info, sources), cfg.directory)
    result = SubstringResult(output=set_dir)
    done = None if cfg.overwrite else pub.unchanged_summary([s.rel for s in sources])
    if done is not None:
        result.summary, result.skipped = done, True
    else:
        _compute(cfg, sources, pub, info, result)
    s = result.summary
    result.documents, result.tokens, result.duplicate_tokens = s["n_docs"], s["n_tokens"], s["n_dup_tokens"]
    result.spans, result.partitions, result.passes = s["n_spans"], s["partitions"], s["passes"]
    result.seconds = time.perf_counter() - start
    return result


def _compute(cfg: SubstringConfig, sources: list[DocSource], pub: Publication, info: dict,
             result: SubstringResult) -> None:
    plan, workers = _plan(cfg, len(sources))
    n_docs = sum(s.size for s in sources)
    if cfg.progress:
        print(f"dedup substring: {n_docs:,} docs in {len(sources)} shard(s), repeats of >= {cfg.min_len} "
              f"{info['unit']}; {plan.describe()}", file=sys.stderr)
    progress = Progress("dedup substring", n_docs, enabled=cfg.progress)
    work = start_work("dedup-substring", cfg.directory, cfg.tmp_dir)
    marks: GroupFlags | None = None
    try:
        tasks = [(src, f"{work}/s{i}", info["tokenizer"], plan.usable) for i, src in enumerate(sources)]
        spilled = []
        for _, s in ordered_map(spill_shard, tasks, workers=min(workers, max(1, len(tasks)))):
            progress.advance(s.n_docs, s.n_docs)
            spilled.append(s)
        progress.close()
        corpus = TokenCorpus.of(spilled)
        marks = GroupFlags(f"{work}/marks.u8", int(corpus.tok_at[-1]))
        n_parts, n_passes = _mark(corpus, marks, cfg.min_len, max(1, plan.usable // BYTES_PER_TOKEN))
        # the output shards, one at a time, as a phase of its own (as `dedup exact [write]`)
        progress = Progress("dedup substring [write]", n_docs, enabled=cfg.progress)
        for k, (src, s) in enumerate(zip(sources, spilled)):
            write_tables(pub.staging, pub.fs, src.rel, _tables(s, marks, int(corpus.tok_at[k])), info)
            progress.advance(s.n_docs, s.n_docs, src.rel)
    finally:
        progress.close()
        if marks is not None:
            marks.close()
        finish_work(work)
    totals = {"n_docs": 0, "n_spans": 0, "n_dup_tokens": 0, "n_dup_chars": 0}
    for src in sources:
        pub.add(src.rel, pub.key)
        c = _shard_counts(pub.fs, pub.staged(src.rel))
        for name, v in zip(totals, (c["n_docs"], c["n_count"], c["n_tokens"], c["n_chars"])):
            totals[name] += v
    n_tokens = int(corpus.tok_at[-1])
    summary = {**info, "n_shards": len(sources), **totals, "n_tokens": n_tokens,
               "dup_token_fraction": totals["n_dup_tokens"] / max(1, n_tokens), "partitions": n_parts,
               "passes": n_passes, "first_occurrence": "marked too (every occurrence of a repeat is)"}
    pub.commit_summary(summary, pub.key)
    result.summary = summary


def _pipeline_run(c: SubstringConfig) -> Outcome:
    r = run_substring(c)
    return Outcome({"documents": r.documents, "tokens": r.tokens, "duplicate_tokens": r.duplicate_tokens,
                    "spans": r.spans})


#: characters per word token of web text (dev corpus)
TOKEN_CHARS = 5


def _estimate(c: SubstringConfig, e: Corpus) -> StagePlan:
    budget = memory_plan("dedup substring", c.memory, 0).total
    tokens = e.docs * max(e.mean_chars // TOKEN_CHARS, 1)
    return StagePlan("dedup substring", f"suffix array over tokens, repeats >= {c.min_len}",
                     min(budget, tokens * BYTES_PER_TOKEN) + 100_000_000,
                     e.docs * SET_BYTES_PER_DOC + tokens * 13,
                     f"~{tokens:,} tokens; token files are temporary")


def _report(res: SubstringResult) -> str:
    first = (f"dedup substring: already done with these settings ({res.output}); --overwrite to redo\n"
             if res.skipped else "")
    share = res.duplicate_tokens / res.tokens if res.tokens else 0.0
    return (f"{first}dedup substring: {res.duplicate_tokens:,} of {res.tokens:,} tokens are in repeats "
            f"({100 * share:.1f}%), {res.spans:,} span(s) in {res.documents:,} documents; {res.partitions} "
            f"partition(s), {res.passes} pass(es) ({res.seconds:.1f} s) -> {res.output}")


CLI = CliSpec(
    help="mark substrings repeated in the corpus (exact-substring dedup, Lee et al. 2022)",
    description="Exact-substring dedup: a suffix array over the corpus's tokens marks every substring of at least "
                "--min-len tokens (default 50, as the paper) that occurs twice or more, every occurrence included. "
                "Writes the span column dup_substring_spans (the repeated text, character offsets) and "
                "dup_substring_count/_tokens/_chars/_frac to DIR/sets/dedup_substring/. Cut the repeats out with "
                "select --redact dup_substring_spans, or drop documents with 'dup_substring_frac < 0.5'.",
    examples=("textsieve dedup substring attrs/",
              "textsieve dedup substring attrs/ --min-len 20 --memory 512MB --overwrite"),
    report=_report)

STAGE = Stage("dedup_substring", SubstringConfig, "dedup.substring", _pipeline_run, order=62, call=run_substring,
              cli_spec=CLI, placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named(SUBSTRING_SET), estimate=_estimate,
              output_sets=lambda c, layout, where: [PlannedSet(SUBSTRING_SET, output_schema())])
