"""The `dedup lines` stage: CCNet's line dedup over groups of shards, as line-level attributes.

Input: one annotate output folder (texts are re-read from its sources). Shards are taken in
corpus order (sorted by relative path) and cut into groups of `--group-shards` consecutive
shards (default: one group, the whole corpus); lines are compared within a group only, as
CCNet compares the lines of `hash_in_mem` consecutive shards. The rule and the normalisation
are CCNet's (`dedup.lines`): a line is a duplicate when its normalised text occurs in two or
more documents of its group (all occurrences, the first included) or repeats a line earlier in
its own document; blank lines never are.

Output `DIR/sets/dedup_lines/<rel>.parquet`, one per annotate shard, rows in annotate's order:
  dup_lines_seen   list<struct<start, end, score: int64>>, one span per line exactly as the
                   `rps_lines_*` signals (span i = line i); score 1 = duplicate, 0 = not
  dup_lines_count  int64: the document's duplicate lines
  dup_lines_chars  int64: characters in them (newlines included)
  dup_lines_frac   double: duplicate lines / lines (null for a document without lines)
and `summary.json` (counts). Drop the duplicates in a recipe like C4's line rules:

    rules:
      ccnet_lines: "line: dup_lines_seen == 0"

CCNet's group is `hash_in_mem` = 50 of a dump's 1600 shards (`cc_net/mine.py`): 3.1% of a dump.
For a share P of a dump whose shards you annotated one per file, pass
`--group-shards round(P * shards_in_the_dump)`, e.g. 2% of a dump's 90,000 WET files is 1800.

Memory: exact mode (default) spills every non-blank line's key (33 bytes) to partition files in
the work folder and sorts one partition at a time within `--memory`; `--bloom-fp RATE` replaces
the spill by two Bloom filters per group (sized for the group's lines, ~2 x 1.44 x log2(2/RATE)
bits per line) with every true duplicate flagged and a non-duplicate flagged with probability
<= RATE. Both keep one byte per line of a group in a mapped work file.

Settings that change the result (`normalize`, `group_shards`, `bloom_fp`) are recorded in the
set's summary; a run with other ones refuses to replace it unless `overwrite`. A run is
published as one unit (`io.publish`): a killed run publishes nothing, and its re-run with the
same settings and inputs adopts the groups it had finished. A re-run with nothing changed is a
no-op.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.dedup.lines import (
    LINE_ROW,
    check_normalize,
    doc_rows,
    flagged_lines,
    later_lines,
    line_ends,
    split_lines,
)
from textsieve.dedup.lines_group import BloomFirst, BloomGroup, ExactGroup, GroupFlags
from textsieve.dedup.partitions import as_bytes, rows_per_pass
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.budget import MemoryPlan, memory_plan
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import int64_lists, numeric_array, string_array, to_numpy
from textsieve.io.attributes import open_set, set_place
from textsieve.io.diskfull import disk_full_as_error
from textsieve.io.leftovers import finish_work, start_work
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import Publication, content_key, settings_diff
from textsieve.options import check_choices, memory_option, option, progress_option
from textsieve.signals.spans import line_spans, span_type
from textsieve.stages.dedup.exact import DocSource
from textsieve.stages.dedup.exact_out import write_tables
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, set_named
from textsieve.stages.doc_set import annotate_sources
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan


@dataclass(frozen=True)
class LineSet:
    """Which line-level set a run writes: `dedup lines` (CCNet's rule, every occurrence of a line
    in two documents) or `dedup paragraphs` (`keep_first`: dolma's rule, every occurrence after the
    first in corpus order). The passes are the same; the rule and the names differ."""

    name: str  # the attribute set
    prefix: str  # its columns' prefix
    stage: str  # as messages name it
    keep_first: bool = False

    @property
    def seen(self) -> str:
        return f"{self.prefix}_seen"

    @property
    def columns(self) -> list[str]:
        return [self.seen, f"{self.prefix}_count", f"{self.prefix}_chars", f"{self.prefix}_frac"]


LINES = LineSet("dedup_lines", "dup_lines", "dedup lines")
LINES_SET = LINES.name
SEEN = LINES.seen
COLUMNS = LINES.columns
RESULT_KEYS = ("normalize", "group_shards", "mode", "bloom_fp")
BATCH = 2048
#: working bytes per character of a read batch: the text, its lines, their normalised copies
BYTES_PER_CHAR = 16

BASE_SCHEMA = pa.schema([("id", pa.string()), ("shard", pa.string()), ("row", pa.int64()),
                         ("ends", pa.list_(pa.int64()))])


def output_schema(kind: LineSet = LINES) -> pa.Schema:
    """The schema of a `sets/dedup_lines` shard (`textsieve run --dry-run` checks recipes against it)."""
    seen, count, chars, frac = kind.columns
    spans = pa.field(seen, span_type("int")) if "_lines_" in seen else line_spans(seen)  # a line-level column
    return pa.schema([("id", pa.string()), ("shard", pa.string()), ("row", pa.int64()), spans,
                      (count, pa.int64()), (chars, pa.int64()), (frac, pa.float64())])


class DedupLinesError(TextsieveError, ValueError):
    """A `dedup lines` input or setting it cannot work with."""


@dataclass
class LinesConfig:
    """Everything `textsieve dedup lines` takes (CLI, YAML and `ts.dedup_lines`)."""

    directory: str = option(help="an annotate output folder (texts are re-read from its sources)", positional=True,
                            metavar="DIR")
    normalize: str = option("ccnet", choices=("ccnet", "punct"),
                            help="line normalisation before hashing: ccnet = CCNet's normalize_for_dedup (strip, "
                                 "lowercase, digits -> 0, CCNet's Unicode punctuation and control characters "
                                 "removed; ASCII punctuation kept); punct = also every punctuation character "
                                 "removed and whitespace collapsed")
    group_shards: int | None = option(None, help="consecutive shards (in corpus order) whose lines are compared "
                                                 "with each other, as CCNet's hash_in_mem; default: all shards "
                                                 "(one group)", metavar="N")
    bloom_fp: float | None = option(None, help="two Bloom filters per group with this false-positive rate instead "
                                               "of exact key partitions on disk (a non-duplicate line is flagged "
                                               "with probability <= RATE)", metavar="RATE")
    memory: int | str = memory_option("larger key tables are sorted on disk in several passes (same output)")
    tmp_dir: str | None = option(None, help="local folder for work files (line keys, partitions, flags); default: "
                                            ".textsieve-work in the annotate folder; a killed run's are removed by "
                                            "the next run", metavar="DIR")
    workers: int | None = option(None, help="processes reading and hashing shards, one shard each (default: all "
                                            "cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with other settings (normalize, group-shards, "
                                         "bloom-fp), and recompute even when it is up to date")


@result_display
@dataclass
class LinesResult:
    output: str
    documents: int = 0
    lines: int = 0
    duplicate_lines: int = 0
    groups: int = 0
    skipped: bool = False
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


def _check(cfg: Any, kind: LineSet) -> None:
    check_choices(cfg)
    check_normalize(cfg.normalize)
    group = _group_shards(cfg)
    if group is not None and (isinstance(group, bool) or not isinstance(group, int) or group < 1):
        raise DedupLinesError(f"{kind.stage}: --group-shards must be a whole number >= 1, not {group!r}")
    if cfg.bloom_fp is not None and not 0.0 < float(cfg.bloom_fp) < 1.0:
        raise DedupLinesError(f"{kind.stage}: --bloom-fp {cfg.bloom_fp}: must be between 0 and 1 (e.g. 0.001)")


def _group_shards(cfg: Any) -> int | None:
    """`--group-shards` (a `dedup paragraphs` run compares the whole corpus)."""
    return getattr(cfg, "group_shards", None)


def _sources(directory: str, kind: LineSet) -> list[DocSource]:
    return annotate_sources(directory, kind.stage, "the line spans are annotate's", DedupLinesError)


# ---------------------------------------------------------------- pass 1: one shard (a worker)

@dataclass
class Hashed:
    """One shard's work files: its non-blank lines' rows and its (id, shard, row, line ends)."""

    rows_path: str
    base_path: str
    n_docs: int = 0
    n_lines: int = 0
    n_rows: int = 0


def _hash_shard(task: tuple[DocSource, str, str, int]) -> Hashed:
    """Read one shard's texts in order and write its `LINE_ROW`s (shard-local line and document
    ordinals) and its base table to work files; `share` bounds a read batch's characters."""
    src, mode, prefix, share = task
    out = Hashed(f"{prefix}.rows", f"{prefix}.arrow")
    max_chars = max(1, share // BYTES_PER_CHAR)
    with open(out.rows_path, "wb") as rows_fh, open(out.base_path, "wb") as base_fh, \
            pa.ipc.new_file(base_fh, BASE_SCHEMA) as base:
        cols: tuple[list, list, list, list] = ([], [], [], [])
        pending: list[np.ndarray] = []
        chars = 0

        def flush() -> None:
            nonlocal chars
            if cols[0]:
                with disk_full_as_error(out.base_path, written=base_fh.tell, what="spilling line ends to"):
                    base.write_batch(pa.record_batch(
                        [string_array(cols[0]), string_array(cols[1]), numeric_array(cols[2], pa.int64()),
                         int64_lists(cols[3])], schema=BASE_SCHEMA))  # (from buffers: `pa.array` loads pandas)
            if pending:
                with disk_full_as_error(out.rows_path, written=rows_fh.tell, what="spilling line keys to"):
                    rows_fh.write(as_bytes(np.concatenate(pending)))
            for c in cols:
                c.clear()
            pending.clear()
            chars = 0

        for doc_id, shard, row, text in src.docs():
            lines = split_lines(text)
            rows = doc_rows(lines, mode, out.n_lines, out.n_docs)
            for c, v in zip(cols, (doc_id, shard, row, line_ends(lines))):
                c.append(v)
            pending.append(rows)
            out.n_docs += 1
            out.n_lines += len(lines)
            out.n_rows += rows.shape[0]
            chars += len(text)
            if len(cols[0]) >= BATCH or chars >= max_chars:
                flush()
        flush()
    return out


def _rows(h: Hashed, line_at: int, doc_at: int, chunk: int) -> Iterator[np.ndarray]:
    """A shard's rows, `chunk` at a time, with group ordinals (shard offsets added)."""
    for start in range(0, h.n_rows, chunk):
        rows = np.fromfile(h.rows_path, dtype=LINE_ROW, count=chunk, offset=start * LINE_ROW.itemsize)
        rows["line"] += np.uint64(line_at)
        rows["doc"] += np.uint64(doc_at)
        yield rows


# ---------------------------------------------------------------- pass 2: the output of one shard

def _tables(h: Hashed, flags: GroupFlags, line_at: int, kind: LineSet) -> Iterator[pa.Table]:
    """The output tables of one shard, one base batch at a time."""
    with pa.memory_map(h.base_path, "r") as src:
        reader = pa.ipc.open_file(src)
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)] or [BASE_SCHEMA.empty_table()]
        at = line_at
        for b in batches:
            ends_col = b.column("ends")
            if isinstance(ends_col, pa.ChunkedArray):
                ends_col = ends_col.combine_chunks()
            offsets = to_numpy(ends_col.offsets).astype(np.int64) - int(ends_col.offsets[0].as_py())
            ends = to_numpy(ends_col.values.slice(int(ends_col.offsets[0].as_py()), int(offsets[-1]))).astype(np.int64)
            n = int(offsets[-1])
            score = flags.slice(at, at + n).astype(np.int64) if n else np.zeros(0, np.int64)
            at += n
            starts = np.empty(n, dtype=np.int64)
            if n:
                starts[1:] = ends[:-1]
                starts[offsets[:-1][np.diff(offsets) > 0]] = 0
            lens = ends - starts
            spans = pa.ListArray.from_arrays(
                numeric_array(offsets, pa.int32()),
                pa.StructArray.from_arrays([numeric_array(starts, pa.int64()), numeric_array(ends, pa.int64()),
                                            numeric_array(score, pa.int64())],
                                           names=["start", "end", "score"]), type=span_type("int"))
            count = _seg_sum(score, offsets)
            chars = _seg_sum(score * lens, offsets)
            nl = np.diff(offsets)
            with np.errstate(invalid="ignore", divide="ignore"):
                frac = numeric_array(count / np.maximum(nl, 1), pa.float64(), valid=nl != 0)
            yield pa.Table.from_arrays([b.column("id"), b.column("shard"), b.column("row"), spans,
                                        numeric_array(count, pa.int64()), numeric_array(chars, pa.int64()), frac],
                                       schema=output_schema(kind))


def _seg_sum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    out = np.zeros(len(offsets) - 1, dtype=np.int64)
    has = offsets[1:] > offsets[:-1]
    if len(x):
        out[has] = np.add.reduceat(x, offsets[:-1][has], dtype=np.int64)
    return out


def _shard_counts(fs: fsspec.AbstractFileSystem, path: str, kind: LineSet) -> dict[str, int]:
    """Documents, lines, duplicate lines, characters and duplicate characters of an output shard
    (read back, so adopted shards of a killed run count the same as fresh ones)."""
    import pyarrow.compute as pc

    with fs.open(path, "rb") as fh:
        t = read_table(fh, columns=kind.columns[:3])
    seen, count, dchars = kind.columns[:3]
    flat = pc.list_flatten(t.column(seen))
    chars = pc.sum(pc.subtract(pc.struct_field(flat, "end"), pc.struct_field(flat, "start"))).as_py()
    dup_lines = pc.sum(t.column(count)).as_py()
    dup_chars = pc.sum(t.column(dchars)).as_py()
    return {"n_docs": t.num_rows, "n_lines": len(flat), "n_dup_lines": int(dup_lines or 0), "n_chars": int(chars or 0),
            "n_dup_chars": int(dup_chars or 0)}


# ---------------------------------------------------------------- the run

def _groups(n: int, size: int | None) -> list[list[int]]:
    """Shard indexes of each group: consecutive runs of `size` (all in one without it)."""
    step = size or max(1, n)
    return [list(range(i, min(i + step, n))) for i in range(0, n, step)]


def _plan(cfg: Any, n_tasks: int, stage: str) -> tuple[Any, MemoryPlan, int]:
    """Workers and the split of `--memory` over the process tree (`exec.budget`), as `dedup
    exact` does: with no worker count asked for, only as many workers as the budget affords;
    one process when the work touches memory:// (which worker processes cannot see)."""
    from textsieve.exec.local import default_workers

    planned = min(cfg.workers or default_workers(), max(1, n_tasks))
    planned = pool_workers(stage, cfg.workers, planned, [cfg.directory, *source_locations(cfg.directory)])
    plan = memory_plan(stage, cfg.memory, planned if planned > 1 else 0, asked=cfg.workers is not None)
    if plan.workers <= 1 < planned:  # the budget affords no pool: hash in the main process, with all of it
        plan = memory_plan(stage, cfg.memory, 0)
    return cfg, plan, max(1, plan.workers)


def _run_key(cfg: Any, info: dict, sources: list[DocSource]) -> str:
    """The result-changing settings and the annotate shards' published contents."""
    fs, root = fsspec.core.url_to_fs(cfg.directory)
    parts = [{k: info.get(k) for k in ("version", *RESULT_KEYS)},
             content_key(fs, root, [s.annotate_rel for s in sources])]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _check_existing(fs: fsspec.AbstractFileSystem, set_root: str, info: dict, cfg: Any, kind: LineSet) -> None:
    """Refuse to replace a set made with other result-changing settings unless `overwrite`."""
    diff = [] if cfg.overwrite else settings_diff(fs, set_root, info, list(RESULT_KEYS))
    if diff:
        raise DedupLinesError(
            f"{kind.stage}: {set_root} holds a result made with other settings: {', '.join(diff)}; re-run with those "
            f"settings to keep it, or pass --overwrite (overwrite=True) to replace it")


def _finish_group(cfg: Any, kind: LineSet, group: list[int], hashed: list[Hashed], sources: list[DocSource],
                  pub: Publication, work: str, plan: MemoryPlan, info: dict, progress: Progress) -> None:
    """Flag one group's lines (exact or Bloom) and stage its output shards."""
    line_at = np.concatenate([[0], np.cumsum([h.n_lines for h in hashed])]).astype(np.int64)
    doc_at = np.concatenate([[0], np.cumsum([h.n_docs for h in hashed])]).astype(np.int64)
    n_rows = sum(h.n_rows for h in hashed)
    max_rows = rows_per_pass(plan.usable)
    chunk = max(1024, max_rows // 4)
    flags = GroupFlags(f"{work}/flags-{group[0]}.u8", int(line_at[-1]))

    def all_rows() -> Iterator[np.ndarray]:
        for k, h in enumerate(hashed):
            for rows in _rows(h, int(line_at[k]), int(doc_at[k]), chunk):
                if kind.keep_first:  # a row's `doc` is its group line ordinal (`dedup.lines.later_lines`)
                    rows["doc"], rows["rep"] = rows["line"], 0
                yield rows

    try:
        if cfg.bloom_fp is not None:
            bloom_kind: type[BloomFirst] | type[BloomGroup] = BloomFirst if kind.keep_first else BloomGroup
            need = bloom_kind.size_bytes(n_rows, cfg.bloom_fp)
            if need > plan.usable:
                raise DedupLinesError(
                    f"{kind.stage}: the Bloom filters for {n_rows:,} lines at --bloom-fp {cfg.bloom_fp} need "
                    f"{need / 1e6:,.0f} MB, more than --memory allows ({plan.usable / 1e6:,.0f} MB); raise --memory "
                    f"or --bloom-fp, use smaller --group-shards, or leave out --bloom-fp (exact, spilled to disk)")
            bloom = bloom_kind(n_rows, cfg.bloom_fp, flags)
            for rows in all_rows():
                bloom.add(rows)
            if isinstance(bloom, BloomGroup):  # keep-first flags as it adds, in one pass
                for rows in all_rows():
                    bloom.flag(rows)
        else:
            exact = ExactGroup(f"{work}/g{group[0]}", n_rows, max_rows, flags,
                               rule=later_lines if kind.keep_first else flagged_lines)
            for rows in all_rows():
                exact.add(rows)
            exact.finish()
        fs = pub.fs
        for k, (i, h) in enumerate(zip(group, hashed)):
            write_tables(pub.staging, fs, sources[i].rel, _tables(h, flags, int(line_at[k]), kind), info)
            progress.advance(0, 1)
            for p in (h.rows_path, h.base_path):
                _remove(p)
    finally:
        flags.close()


def _remove(path: str) -> None:
    import os

    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def run_lines(cfg: LinesConfig) -> LinesResult:
    """Flag duplicate lines group by group; publish the `sets/dedup_lines` set and its summary."""
    return run_line_set(cfg, LINES)


def run_line_set(cfg: Any, kind: LineSet) -> LinesResult:
    """Flag `kind`'s duplicate lines group by group; publish its set and summary (`cfg` is a
    `LinesConfig` or `dedup paragraphs`' config, which has no `group_shards`)."""
    start = time.perf_counter()
    _check(cfg, kind)
    sources = _sources(cfg.directory, kind)
    groups = _groups(len(sources), _group_shards(cfg))
    set_dir, fs, set_root = set_place(cfg.directory, kind.name)  # stale temps of killed writers removed
    info: dict[str, Any] = {"stage": kind.name, "version": __version__, "normalize": cfg.normalize,
                            "group_shards": _group_shards(cfg),
                            "mode": "bloom" if cfg.bloom_fp is not None else "exact",
                            "bloom_fp": cfg.bloom_fp, "set": kind.name, "columns": kind.columns}
    if kind.keep_first:
        info["rule"] = "keep-first"
    _check_existing(fs, set_root, info, cfg, kind)
    key = _run_key(cfg, info, sources)
    pub = open_set(fs, set_root, kind.name, key, cfg.directory)
    rels = [s.rel for s in sources]
    result = LinesResult(output=set_dir, groups=len(groups))
    done = None if cfg.overwrite else pub.unchanged_summary(rels)  # these settings, these inputs: nothing to do
    if done is not None:
        result.summary, result.skipped = done, True
    else:
        _compute(cfg, kind, sources, groups, pub, info, result)
    s = result.summary
    result.documents, result.lines, result.duplicate_lines = s["n_docs"], s["n_lines"], s["n_dup_lines"]
    result.seconds = time.perf_counter() - start
    return result


def _compute(cfg: Any, kind: LineSet, sources: list[DocSource], groups: list[list[int]], pub: Publication,
             info: dict, result: LinesResult) -> None:
    from textsieve.exec.local import ordered_map

    todo = [g for g in groups if cfg.overwrite or not all(pub.adoptable(sources[i].rel) for i in g)]
    tasks_n = sum(len(g) for g in todo)
    cfg, plan, workers = _plan(cfg, tasks_n, kind.stage)
    n_docs = sum(s.size for g in todo for s in (sources[i] for i in g))
    if cfg.progress:
        mode = f"Bloom filters at {cfg.bloom_fp}" if cfg.bloom_fp is not None else "exact, keys spilled to disk"
        print(f"{kind.stage}: {sum(s.size for s in sources):,} docs in {len(sources)} shard(s), {len(groups)} group(s) "
              f"({len(groups) - len(todo)} finished by an earlier run), normalize={cfg.normalize}; {mode}; "
              f"{plan.describe()}", file=sys.stderr)
    progress = Progress(kind.stage, n_docs + tasks_n, enabled=cfg.progress)
    work = start_work(kind.stage.replace(" ", "-"), cfg.directory, cfg.tmp_dir)
    try:
        tasks = [(sources[i], cfg.normalize, f"{work}/s{i}", plan.usable) for g in todo for i in g]
        done = ordered_map(_hash_shard, tasks, workers=min(workers, max(1, len(tasks))))
        for g in todo:
            hashed = []
            for _ in g:
                _, h = next(done)
                progress.advance(h.n_docs, h.n_docs)
                hashed.append(h)
            _finish_group(cfg, kind, g, hashed, sources, pub, work, plan, info, progress)
    finally:
        progress.close()
        finish_work(work)
    totals = dict.fromkeys(("n_docs", "n_lines", "n_dup_lines", "n_chars", "n_dup_chars"), 0)
    per_group = []
    for g in groups:
        gsum = dict.fromkeys(totals, 0)
        for i in g:
            pub.add(sources[i].rel, pub.key)
            for k, v in _shard_counts(pub.fs, pub.staged(sources[i].rel), kind).items():
                gsum[k] += v
        per_group.append({"first_shard": sources[g[0]].rel, "last_shard": sources[g[-1]].rel, "n_shards": len(g),
                          **{k: gsum[k] for k in ("n_docs", "n_lines", "n_dup_lines")}})
        for k in totals:
            totals[k] += gsum[k]
    summary: dict[str, Any] = {**info, "n_shards": len(sources), "n_groups": len(groups), **totals,
                               "dup_line_fraction": totals["n_dup_lines"] / max(1, totals["n_lines"]),
                               "dup_char_fraction": totals["n_dup_chars"] / max(1, totals["n_chars"]),
                               "blank_lines": "never duplicates", "groups": per_group}
    pub.commit_summary(summary, pub.key)
    result.summary = summary


def _pipeline_run(c: LinesConfig) -> Outcome:
    r = run_lines(c)
    return Outcome({"documents": r.documents, "lines": r.lines, "duplicate_lines": r.duplicate_lines,
                    "groups": r.groups})


#: Characters per line of web text (dev corpus), and bytes per line key.
LINE_CHARS = 80
LINE_KEY_BYTES = 24


def _estimate(c: LinesConfig, e: Corpus) -> StagePlan:
    budget = memory_plan("dedup lines", c.memory, 0).total
    lines = e.docs * max(e.mean_chars // LINE_CHARS, 1)
    group = f"groups of {c.group_shards} shard(s)" if c.group_shards else "one group"
    return StagePlan("dedup lines", f"CCNet line hashes ({c.normalize}), {group}",
                     min(budget, lines * LINE_KEY_BYTES) + 100_000_000,
                     e.docs * SET_BYTES_PER_DOC + lines * (LINE_KEY_BYTES + 24),
                     f"~{lines:,} lines; key partitions are temporary")

def _report(res: LinesResult) -> str:
    first = (f"dedup lines: already done with these settings ({res.output}); --overwrite to redo\n"
             if res.skipped else "")
    share = res.duplicate_lines / res.lines if res.lines else 0.0
    return (f"{first}dedup lines: {res.duplicate_lines:,} of {res.lines:,} lines are duplicates ({100 * share:.1f}%) "
            f"in {res.documents:,} documents, {res.groups:,} group(s) ({res.seconds:.1f} s) -> {res.output}")


CLI = CliSpec(
    help="flag lines repeated across documents (CCNet line dedup)",
    description="CCNet's line dedup: lines are normalised (strip, lowercase, digits -> 0, CCNet's punctuation "
                "removed) and hashed; within each group of --group-shards consecutive shards, a line whose "
                "normalised text occurs in two or more documents is a duplicate (every occurrence, the first "
                "included), as is a repeat within one document; blank lines never are. Writes the line-level span "
                "column dup_lines_seen (1 = duplicate) and dup_lines_count/_chars/_frac to DIR/sets/dedup_lines/. Drop "
                "the lines in a recipe: 'line: dup_lines_seen == 0'.",
    examples=("textsieve dedup lines attrs/",
              "textsieve dedup lines attrs/ --group-shards 2 --memory 512MB --overwrite",
              "textsieve dedup lines attrs/ --normalize punct --bloom-fp 0.001 --overwrite"),
    report=_report)

STAGE = Stage("dedup_lines", LinesConfig, "dedup.lines", _pipeline_run, order=60, call=run_lines, cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named("dedup_lines"),
              estimate=_estimate, output_sets=lambda c, layout, where: [PlannedSet(LINES_SET, output_schema())])
