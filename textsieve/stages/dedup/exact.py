"""The exact `dedup` stage: documents with identical (normalized) text form duplicate groups.

Input is an annotate output folder (texts are re-read from its sources) or raw input shards.
Corpus order is shards sorted by relative path, then record order; the first occurrence of a
text in that order is kept. Two modes:

* exact (default): content keys (`dedup.exact`) go through the same memory-bounded on-disk
  partitions as LSH (`dedup.partitions`); per document `dup_exact_group` is the RPv2 `id_int`
  of the group's first document (null when the text is unique), `dup_exact_size` the group
  size and `dup_exact_keep` true for the first occurrence;
* Bloom (`--bloom-fp RATE`): one streaming pass through a Bloom filter sized for the corpus;
  a document whose key was (probably) seen before gets `dup_exact_keep = false`. Unique
  documents are wrongly flagged with probability <= RATE; group and size are null (unknown in
  one pass).
Output: `OUT/sets/dedup_exact/<rel>.parquet` (OUT = --output, else the annotate folder) and
`OUT/sets/dedup_exact/summary.json`.

Settings that change the result name their own set (`exact_names`), so a re-run with other
settings keeps the earlier result beside it (nothing is thrown away): `--normalize rpv2` writes
`sets/dedup_exact_rpv2` with `dup_exact_rpv2_group/_size/_keep`, Bloom mode adds `_bloom`. The
default settings keep the plain `sets/dedup_exact` / `dup_exact_*` names that recipes use. A set
made with other Bloom settings (rate, capacity) is not replaced silently: the run refuses
unless `overwrite` is set.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.dedup.components import components, components_chunked, edge_rows
from textsieve.dedup.corpus import ShardTable, first_lines, id_ints
from textsieve.dedup.exact import check_normalize, content_keys
from textsieve.dedup.hashed import HashedShard, HashedWriter, hashed_batch
from textsieve.dedup.id_table import SourceIds, check_unique_ids
from textsieve.dedup.partitions import (
    EDGE_BYTES,
    ROW,
    WORK_BYTES_PER_ROW,
    EdgeStore,
    Grouper,
    PartitionWriter,
    rows_per_pass,
)
from textsieve.dedup.ray_components import ray_components
from textsieve.dedup.ray_shuffle import RayKeyShuffle
from textsieve.display import result_display
from textsieve.exec.budget import MemoryPlan, memory_plan
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import numeric_array, to_numpy
from textsieve.io.attributes import DOCS, attribute_shards, read_shard_meta, set_place, shard_rel, source_documents
from textsieve.io.leftovers import finish_work, start_work, work_parent
from textsieve.io.limits import DEFAULT_MAX_DOC_BYTES, parse_max_doc_bytes
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.paths import Shard, expand_inputs
from textsieve.io.publish import ANNOTATE_JSON, Publication, holds
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.io.source_roots import trusted
from textsieve.options import address_option, check_choices, executor_option, memory_option, option, progress_option
from textsieve.stages.dedup.exact_out import bloom_tables, member_records, out_table, with_empty, write_tables
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan, human, set_schema

EXACT_SET = "dedup_exact"
BATCH = 4096


@dataclass
class ExactConfig:
    """Everything `textsieve dedup exact` takes (CLI, YAML and `ts.dedup_exact`)."""

    inputs: list[str] = option(help="one annotate output folder (texts are re-read from its sources), or input "
                                    "files/folders", positional=True, metavar="ANNOTATED_OR_INPUT")
    output: str | None = option(None, help="where _dedup_exact/ goes (required for raw inputs; default: the "
                                           "annotate folder)", short="-o", metavar="DIR")
    normalize: str = option("none", help="none: hash the raw text; rpv2: hash RPv2-normalized text "
                                         "(punctuation removed, lowercase, whitespace collapsed, NFD)",
                            choices=("none", "rpv2"))
    bloom_fp: float | None = option(None, help="stream through a Bloom filter with this false-positive rate "
                                               "instead of exact grouping", metavar="RATE")
    bloom_capacity: int | None = option(None, help="documents the Bloom filter is sized for (default: the "
                                                   "corpus size, when known)", metavar="N")
    memory: int | str = memory_option("larger key tables are sorted on disk in several passes (same output)")
    text_field: str = option("text", help="record field holding the text", metavar="FIELD")
    id_field: str = option("id", help="record field holding the id", metavar="FIELD")
    tmp_dir: str | None = option(None, help="local folder for work files (key partitions, id table, shingle files); "
                                            "default: .textsieve-work in the output folder (the system's temp folder "
                                            "for a remote output); a killed run's are removed by the next run",
                                 metavar="DIR")
    workers: int | None = option(None, help="processes reading and hashing shards, one shard each (default: "
                                            "all cores)")
    executor: str = executor_option("hash shards on the local pool or as Ray tasks, and group the keys there "
                                    "(Ray: a shuffle of reduce tasks; same output)")
    address: str | None = address_option()
    progress: bool = progress_option()
    # replace an existing set of the same name that other Bloom settings made (else refuse)
    overwrite: bool = option(False, help="replace an existing set of the same name made with other Bloom "
                                         "settings (without it the run refuses)")
    # raw inputs: a larger record stops the run (`io.limits`); 0 = no limit
    max_doc_bytes: int | str = option(DEFAULT_MAX_DOC_BYTES, help="raw inputs: stop at any document larger than "
                                      "this, e.g. 32MiB, 64MB (default: 32 MiB; 0: no limit)", metavar="SIZE")


def exact_names(normalize: str = "none", bloom: bool = False) -> tuple[str, str]:
    """(attribute set name, column prefix) of a `dedup exact` run with these settings.

    Why settings are in the name: two runs with different normalizations (or exact vs Bloom)
    answer different questions, and the project's rule is that nothing is thrown away, so each
    gets its own set instead of the second silently replacing the first. The default settings
    keep the plain names (`sets/dedup_exact`, `dup_exact_keep`)."""
    check_normalize(normalize)
    tag = ("" if normalize == "none" else f"_{normalize}") + ("_bloom" if bloom else "")
    return EXACT_SET + tag, "dup_exact" + tag


def exact_columns(prefix: str) -> list[str]:
    """The three columns of an exact-dedup set with column prefix `prefix`."""
    return [f"{prefix}_group", f"{prefix}_size", f"{prefix}_keep"]


def is_exact_set(name: str) -> bool:
    """Whether attribute set `name` (without the `_`) is one `dedup exact` wrote."""
    return name == EXACT_SET or name.startswith(EXACT_SET + "_")


class ExactSettingsError(ValueError):
    """An existing exact-dedup set was made with other settings that change its result."""


def _check_existing(fs: fsspec.AbstractFileSystem, set_root: str, info: dict, cfg: ExactConfig) -> None:
    """Refuse to replace a set made with other result-changing settings (see module doc): a
    set of this name from an older textsieve (other normalization), or other Bloom settings."""
    from textsieve.io.publish import settings_diff

    keys = ["normalize", "mode", "bloom_fp"] + (["bloom_capacity"] if cfg.bloom_capacity is not None else [])
    diff = [] if cfg.overwrite else settings_diff(fs, set_root, info, keys)
    if diff:
        raise ExactSettingsError(
            f"dedup exact: {set_root} holds a result made with other settings: {', '.join(diff)}; re-run with "
            f"those settings to keep it, or pass --overwrite (overwrite=True) to replace it")


@result_display
@dataclass
class ExactResult:
    output: str
    documents: int = 0
    removed: int = 0
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


@dataclass
class DocSource:
    """One shard of the corpus: where its output goes and how to read (id, shard, row, text)."""

    rel: str  # output rel (`.parquet`) in an attribute set: the annotate shard's `shard_rel`
    size: int
    annotate_path: str | None = None
    fs: fsspec.AbstractFileSystem | None = None
    shard: Shard | None = None  # raw inputs: the shard, read with `options`
    options: ReadOptions | None = None
    annotate_rel: str = ""  # annotate shards: the name annotate's manifest lists (`docs/...`), for content keys

    def docs(self) -> Iterator[tuple[str, str, int, str]]:
        if self.annotate_path is None:
            if self.shard is None:
                raise ValueError(f"{self.rel}: a source needs an annotate shard or a raw shard")
            shard = self.shard
            for d in ShardReader(shard, self.options):
                yield d.id, shard.rel, d.row, d.text
            return
        if self.fs is None:
            raise ValueError(f"{self.annotate_path}: an annotate shard needs its filesystem")
        meta = trusted(read_shard_meta(self.fs, self.annotate_path), self.fs, self.annotate_path)
        if "source_shard" not in meta:
            raise ValueError(f"{self.annotate_path}: no source metadata; cannot re-read texts")
        base = _base_rows(self.fs, self.annotate_path)  # streamed: one row group in memory, not the shard
        want = next(base, None)
        for d in source_documents(meta):
            if want is not None and d.row == want[2]:
                yield want[0], want[1], want[2], d.text
                want = next(base, None)
        if want is not None:
            raise ValueError(f"{self.annotate_path}: its source {meta.get('source')!r} changed since annotate")


def _base_rows(fs: fsspec.AbstractFileSystem, path: str) -> Iterator[tuple[str, str, int]]:
    """(id, shard, row) of an attribute shard's rows, read one batch at a time."""
    from textsieve.io.parquet_read import row_group_batches

    with fs.open(path, "rb") as fh:
        for b in row_group_batches(fh, ["id", "shard", "row"], BATCH):  # nothing left pending at exit
            yield from zip(*(b.column(c).to_pylist() for c in ("id", "shard", "row")))


def _sources(cfg: ExactConfig) -> tuple[list[DocSource], str, bool]:
    """The corpus shards in corpus order, the output folder and whether sizes are doc counts."""
    if len(cfg.inputs) == 1:
        fs, root = fsspec.core.url_to_fs(cfg.inputs[0])

        if holds(fs, root, ANNOTATE_JSON):  # an interrupted annotate publish is finished before looking
            fs, paths = attribute_shards(cfg.inputs[0])
            root = root.rstrip("/")
            import pyarrow.parquet as pq
            out = []
            for p in paths:
                with fs.open(p, "rb") as fh:
                    n = pq.ParquetFile(fh).metadata.num_rows
                out.append(DocSource(shard_rel(root, p), n, annotate_path=p, fs=fs, annotate_rel=p[len(root) + 1:]))
            return out, cfg.output or cfg.inputs[0], True
    if not cfg.output:
        raise ValueError("dedup exact: --output DIR is required unless the input is one annotate output folder")
    from textsieve.stages.annotate.annotate import output_rel
    opts = ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field,
                       max_doc_bytes=parse_max_doc_bytes(cfg.max_doc_bytes))
    shards = sorted(expand_inputs(cfg.inputs), key=lambda s: s.rel)
    # the set's file names are annotate's shard names without `docs/` (`io.attributes.shard_rel`)
    return ([DocSource(output_rel(s.rel).removeprefix(f"{DOCS}/"), s.size, shard=s, options=opts) for s in shards],
            cfg.output, False)


def _batches(src: DocSource, max_chars: int = 1 << 62) -> Iterator[tuple[list, list, list, list]]:
    """The shard's (ids, shards, rows, texts) in batches of at most BATCH documents and, after
    the first document, `max_chars` characters (the process's share of `--memory`)."""
    cols: tuple[list, list, list, list] = ([], [], [], [])
    chars = 0
    for rec in src.docs():
        for c, v in zip(cols, rec):
            c.append(v)
        chars += len(rec[3])
        if len(cols[0]) >= BATCH or chars >= max_chars:
            yield cols
            cols = ([], [], [], [])
            chars = 0
    yield cols


#: bytes of working memory per character of a batch's texts while hashing: the str (1-4 B a
#: character), its normalized copy and the UTF-8 bytes hashed, and what the allocators keep of
#: them afterwards (measured: 8 left ~17 MB behind at a 48 MB budget, 16 about half of that)
HASH_BYTES_PER_CHAR = 16


def _hash_shard(task: tuple[DocSource, str, str | None, int],
                on_batch: Callable[[int], None] | None = None) -> HashedShard:
    """The hashed documents of one shard (`dedup.hashed`), in record order, with their content
    keys: appended batch by batch to the IPC file `spill` (a local worker or the main process),
    or held and returned (`spill` None: a Ray task, which cannot write to the main process's
    disk). Runs in a worker, or in-process calling `on_batch(n_docs)`."""
    src, normalize, spill, share = task
    writer = HashedWriter(spill) if spill is not None else None
    held, n = [], 0
    for b_ids, b_shards, b_rows, texts in _batches(src, max(1, share // HASH_BYTES_PER_CHAR)):
        if not b_ids:
            continue
        h1, h2 = content_keys(texts, normalize)
        batch = hashed_batch(b_ids, b_shards, b_rows, h1, h2)
        if writer is not None:
            writer.add(batch)
        else:
            held.append(batch)
        n += batch.num_rows
        if on_batch is not None:
            on_batch(len(b_ids))
    return writer.close() if writer is not None else HashedShard(n, held=held)


def _in_process(cfg: ExactConfig, sources: list[DocSource], counted: bool) -> ExactConfig:
    """`cfg` with one worker when the work touches memory:// (which worker processes and Ray
    cannot see) and no worker count was asked for; `LocationError` when one was."""
    from textsieve.exec.local import default_workers

    planned = cfg.workers or default_workers()
    planned = min(planned, len(sources)) if cfg.executor == "local" else planned
    held = itertools.chain(cfg.inputs, [cfg.output or ""],
                           source_locations(cfg.inputs[0]) if counted
                           else (s.shard.path for s in sources if s.shard is not None))
    return replace(cfg, workers=1) if pool_workers("dedup exact", cfg.workers, planned, held,
                                                   cfg.executor) < planned else cfg


def _hashed_shards(cfg: ExactConfig, sources: list[DocSource], progress: Progress, counted: bool, work: str,
                   share: int) -> Iterator[HashedShard]:
    """Yield `_hash_shard` results in corpus order, each spilled to `work` (`dedup.hashed`):
    in-process with one worker (progress per batch), otherwise on the local pool or Ray
    (progress per finished shard). `share`: each process's part of `--memory`."""
    from textsieve.exec.local import default_workers, ordered_map

    local = cfg.executor == "local"
    tasks = [(src, cfg.normalize, f"{work}/hashed-{i}.arrow" if local else None, share)
             for i, src in enumerate(sources)]
    if cfg.executor not in ("local", "ray"):
        raise ValueError(f"dedup exact: executor must be local or ray, not {cfg.executor!r}")
    mapper: Callable[..., Iterator[tuple[Any, Any]]]
    if cfg.executor == "ray":
        from textsieve.exec.ray_exec import cluster_cpus, ray_ordered_map

        mapper, workers = partial(ray_ordered_map, address=cfg.address), cfg.workers or cluster_cpus(cfg.address)
    else:
        mapper, workers = ordered_map, cfg.workers or default_workers()
    workers = min(workers, len(tasks)) if cfg.executor == "local" else workers
    # progress totals are documents when annotate counted them, else input bytes
    if workers <= 1 and cfg.executor == "local":
        for task in tasks:
            yield _hash_shard(task, lambda n: progress.advance(n, n if counted else 0))
            if not counted:
                progress.advance(0, task[0].size)
        return
    for i, ((src, *_), result) in enumerate(mapper(_hash_shard, tasks, workers=workers)):
        progress.advance(result.n, result.n if counted else src.size)
        yield result.spilled(f"{work}/hashed-{i}.arrow")  # a Ray result is held in memory until here


def _run_key(cfg: ExactConfig, info: dict, sources: list[DocSource]) -> str:
    """The settings and the inputs' identities: annotate shards by their published hashes, raw
    shards by size and modification time."""
    parts: list[Any] = [info]
    if sources and sources[0].annotate_path is not None:
        from textsieve.io.publish import content_key

        fs, root = fsspec.core.url_to_fs(cfg.inputs[0])
        parts.append(content_key(fs, root, [s.annotate_rel for s in sources]))
    else:
        from textsieve.io.identity import shard_identity

        parts.append([(s.rel, shard_identity(s.shard.path, s.shard.members)) for s in sources if s.shard])
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _built_from(cfg: ExactConfig, annotated: bool) -> dict[str, str]:
    """For a set inside an annotate folder: the annotate contents it was made from, so readers
    can tell when the documents were annotated again since (`io.attributes`)."""
    if not annotated or (cfg.output and cfg.output.rstrip("/") != cfg.inputs[0].rstrip("/")):
        return {}  # raw inputs, or a set written outside the annotate folder
    from textsieve.io.publish import content_key

    fs, root = fsspec.core.url_to_fs(cfg.inputs[0])
    return {"built_from": content_key(fs, root)}


def _check_apart(cfg: ExactConfig, out: str, annotated: bool) -> None:
    """The set must not land among the documents it flags: the raw inputs, or the sources an
    annotate folder was made from."""
    from textsieve.io.locations import source_locations
    from textsieve.io.overlap import check_apart

    check_apart("dedup exact", out, source_locations(cfg.inputs[0]) if annotated else cfg.inputs)


def _memory_plan(cfg: ExactConfig, n_sources: int) -> tuple[ExactConfig, MemoryPlan]:
    """Split `--memory` over the processes the run starts (`exec.budget`): the main process and,
    on the local pool, its workers (Ray's workers are not on this machine). With no worker count
    asked for, the run starts only as many workers as the budget affords."""
    from textsieve.exec.local import default_workers

    pool = min(cfg.workers or default_workers(), n_sources) if cfg.executor == "local" else 0
    plan = memory_plan("dedup exact", cfg.memory, pool if pool > 1 else 0, asked=cfg.workers is not None)
    if plan.workers <= 1 < pool:  # the budget affords no pool: hash in the main process, with all of it
        plan = memory_plan("dedup exact", cfg.memory, 0)
    if plan.workers < pool:
        cfg = replace(cfg, workers=max(1, plan.workers))
    return cfg, plan


def run_exact(cfg: ExactConfig) -> ExactResult:
    """Flag exact duplicates; write the `sets/dedup_exact` set and its summary."""
    start = time.perf_counter()
    check_choices(cfg)
    check_normalize(cfg.normalize)
    sources, out, counted = _sources(cfg)
    cfg = _in_process(cfg, sources, counted)
    cfg, plan = _memory_plan(cfg, len(sources))  # --memory covers the process tree (exec.budget)
    budget = plan.total
    set_name, prefix = exact_names(cfg.normalize, cfg.bloom_fp is not None)
    set_dir, fs, set_root = set_place(out, set_name)  # stale temps of killed writers removed
    n_known = sum(s.size for s in sources) if counted else None
    info: dict[str, Any] = {"stage": EXACT_SET, "version": __version__, "normalize": cfg.normalize,
                            "mode": "bloom" if cfg.bloom_fp is not None else "exact", "set": set_name,
                            "columns": exact_columns(prefix)}
    bloom = None
    if cfg.bloom_fp is not None:
        cap = cfg.bloom_capacity or n_known
        if not cap:
            raise ValueError("--bloom-fp with raw inputs needs --bloom-capacity N (at least the number of documents)")
        from textsieve.dedup.bloom import BloomFilter  # numba: loaded only in Bloom mode

        bloom = BloomFilter(cap, cfg.bloom_fp)
        info.update(bloom_fp=cfg.bloom_fp, bloom_capacity=cap, bloom_bits=bloom.m, bloom_hashes=bloom.k)
    _check_existing(fs, set_root, info, cfg)
    _check_apart(cfg, out, counted)
    if counted:  # results are keyed by id: repeated ids fail before any work (`dedup.id_table`)
        check_unique_ids(ShardTable.open(cfg.inputs[0]), budget, work_parent(out, cfg.tmp_dir), "dedup exact")
    pub = Publication(fs, set_root, set_name, _run_key(cfg, info, sources),  # published as one unit
                      info=_built_from(cfg, counted))
    if cfg.progress:
        docs = f"{n_known:,} docs" if n_known is not None else "documents"
        disk = (f"~{n_known * ROW.itemsize / 1e6:,.1f} MB" if n_known is not None else "24 MB per million docs")
        need = (f"Bloom filter {bloom.m / 8e6:,.1f} MB in memory, no disk" if bloom else
                f"disk {disk} of key partitions + ids; {plan.describe()}")
        print(f"dedup exact: {docs} in {len(sources)} shard(s), normalize={cfg.normalize}; {need}", file=sys.stderr)

    progress = Progress("dedup exact [hash]", sum(s.size for s in sources) if not counted else n_known or 1,
                        enabled=cfg.progress)
    work = start_work("dedup-exact", out, cfg.tmp_dir)  # in OUT/.textsieve-work; killed runs' are removed
    result = ExactResult(output=set_dir)
    try:
        max_rows = rows_per_pass(plan.usable)
        raw_ids = None if counted else SourceIds(work, plan.usable, [s.shard for s in sources if s.shard is not None],
                                                 ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field,
                                                             max_doc_bytes=parse_max_doc_bytes(cfg.max_doc_bytes)),
                                                 "dedup exact")
        bits = 0 if not counted else max(0, int(np.ceil(np.log2(max(1, 2 * (n_known or 0) // max_rows)))))
        writer = _key_writer(cfg, work, min(bits, 16), max_rows) if bloom is None else None
        ordinal, removed = 0, 0
        hashed: list[HashedShard] = []  # (id, shard, row, keys) of each shard on local disk (`dedup.hashed`)
        for si, (src, shard_keys) in enumerate(zip(sources, _hashed_shards(cfg, sources, progress, counted, work,
                                                                             plan.usable))):
            hashed.append(shard_keys)
            if raw_ids is not None:  # repeats within a batch fail here, the others at `check` below
                at = ordinal
                for b in shard_keys.batches(["id"]):
                    raw_ids.add(si, b.column(0).to_pylist(), at)
                    at += b.num_rows
            if bloom is not None:
                bloom_out = bloom_tables(bloom, shard_keys, exact_columns(prefix))
                write_tables(pub.staging, fs, src.rel, bloom_out, info)
                removed += bloom_out.removed
                pub.add(src.rel, pub.key)
            elif writer is not None:  # exact mode: the writer exists exactly when there is no Bloom filter
                at = ordinal
                for b in shard_keys.batches(["h1", "h2"]):
                    rec = np.empty(b.num_rows, dtype=ROW)
                    rec["h1"], rec["h2"] = to_numpy(b.column(0)), to_numpy(b.column(1))
                    rec["doc"] = np.arange(at, at + b.num_rows, dtype=np.uint64)
                    writer.add(rec)
                    at += b.num_rows
            ordinal += shard_keys.n
        progress.close()
        if raw_ids is not None:  # repeats across shards
            raw_ids.check()
        summary: dict[str, Any] = {"stage": EXACT_SET, "version": __version__, "n_docs": ordinal,
                                   "n_shards": len(sources),
                                   **{k: v for k, v in info.items() if k not in ("stage", "version")}}
        if bloom is not None:
            if bloom.count > bloom.capacity:
                print(f"dedup exact: warning: {bloom.count:,} documents exceed --bloom-capacity {bloom.capacity:,}; "
                      f"the false-positive rate is above {cfg.bloom_fp}", file=sys.stderr)
            summary.update(n_removed=removed, duplicate_fraction=removed / ordinal if ordinal else 0.0)
        else:
            removed = _finish_exact(cfg, sources, work, writer, max_rows, pub.staging, fs, info, ordinal, summary,
                                    prefix, hashed)
            for src in sources:
                pub.add(src.rel, pub.key)
    finally:
        progress.close()
        finish_work(work)
    pub.commit_summary(summary, pub.key)
    result.documents, result.removed, result.summary = ordinal, removed, summary
    result.seconds = time.perf_counter() - start
    return result


#: 1 / the share of the budget the duplicate groups' edges hold before they spill to disk
EDGE_SHARE = 4


def _key_writer(cfg: ExactConfig, work: str, bits: int, max_rows: int) -> Any:
    """Where exact mode's key rows go: partition files grouped here, or a Ray shuffle."""
    if cfg.executor == "ray":
        return RayKeyShuffle(bits, max_rows, address=cfg.address, tmp_dir=cfg.tmp_dir, workers=cfg.workers)
    return PartitionWriter(f"{work}/keys", bits, max_rows // 2)


def _finish_exact(cfg, sources, work, writer, max_rows, set_root, fs, info, n_docs, summary,
                  prefix: str, hashed: list[HashedShard]) -> int:
    """Group the keys, then write each shard's output from its hashed file, one batch at a time
    (`dedup.hashed`), so memory holds the groups (~40 B per duplicate document) and one batch."""
    budget = max_rows * WORK_BYTES_PER_ROW
    max_edges = budget // (EDGE_SHARE * EDGE_BYTES)  # edges past it spill
    if isinstance(writer, PartitionWriter):
        grouper = Grouper(f"{work}/keys", max_rows, max_edges)
        parts = writer.close()
        progress = Progress("dedup exact [group]", sum(n for _, n in parts), enabled=cfg.progress, unit="keys")
        for part in parts:  # one partition at a time, so the line shows the pass moving
            grouper.group_partitions([part])
            progress.advance(part[1], part[1])
        progress.close()
        store = grouper.edge_store()
    else:  # a Ray shuffle: reduce groups grouped as Ray tasks
        store, _ = writer.finish(EdgeStore(f"{work}/keys/edges", max_rows, max_edges))
    if cfg.executor == "ray":  # the components as Ray tasks too
        nodes, label = ray_components(store, budget, address=cfg.address)
    else:
        nodes, label = (components_chunked(store.chunks) if store.spilled
                        else components(store.array(), max_rows=edge_rows(budget)))
    store.remove()
    nodes = nodes.astype(np.int64)
    rep = nodes[label]  # union by smaller index: the label is the group's first (smallest) ordinal
    size = np.bincount(label, minlength=nodes.shape[0])[label].astype(np.int64)
    starts = np.concatenate([[0], np.cumsum([h.n for h in hashed])]).astype(np.int64)
    reps = np.unique(rep)
    rep_ii = np.zeros(reps.shape[0], dtype=np.uint64)
    for i, h in enumerate(hashed):  # id_int of every group's first document
        lo, hi = np.searchsorted(reps, [starts[i], starts[i + 1]])
        if hi > lo:
            rep_ii[lo:hi] = id_ints(h.rows(reps[lo:hi] - starts[i], ["id"]).column("id"))
    group = rep_ii[np.searchsorted(reps, rep)]
    progress = Progress("dedup exact [write]", n_docs, enabled=cfg.progress)

    def tables(i: int) -> Iterator[pa.Table]:
        at = int(starts[i])
        for b in with_empty(hashed[i].batches(["id", "shard", "row"])):
            n = b.num_rows
            lo, hi = np.searchsorted(nodes, [at, at + n])
            g = np.zeros(n, dtype=np.uint64)
            s = np.ones(n, dtype=np.int64)
            hit = np.zeros(n, dtype=bool)
            local = nodes[lo:hi] - at
            g[local], s[local], hit[local] = group[lo:hi], size[lo:hi], True
            keep = np.ones(n, dtype=bool)
            keep[local] = nodes[lo:hi] == rep[lo:hi]
            at += n
            progress.advance(n, n)
            yield out_table(b, exact_columns(prefix), numeric_array(g, pa.uint64(), valid=hit),
                            numeric_array(s, pa.int64()), keep)  # (from buffers: `pa.array` loads pandas)

    for i in range(len(hashed)):
        write_tables(set_root, fs, sources[i].rel, tables(i), info)
    progress.close()
    removed = int((nodes != rep).sum())
    summary.update(n_groups=int(reps.shape[0]), n_docs_in_groups=int(nodes.shape[0]), n_removed=removed,
                   duplicate_fraction=removed / n_docs if n_docs else 0.0)
    # the 20 largest groups, with the first document's id and text
    gsize = np.bincount(np.searchsorted(reps, rep), minlength=reps.shape[0])
    top = np.lexsort((rep_ii, -gsize))[:20]
    largest: list[dict[str, Any]] = []
    want: dict[int, dict[int, int]] = {}  # {shard index: {document index in it: index in largest}}
    members = {int(k): nodes[rep == int(reps[k])][:10] for k in top}  # ordinals of each top group's first 10
    records = member_records(hashed, starts, np.unique(np.concatenate([*members.values(), np.zeros(0, np.int64)])))
    for k in top:
        r = int(reps[k])
        i = int(np.searchsorted(starts, r, side="right") - 1)
        want.setdefault(i, {})[int(r - starts[i])] = len(largest)
        recs = [records[int(m)] for m in members[int(k)]]
        largest.append({"group": int(rep_ii[k]), "size": int(gsize[k]), "members": recs, "sample": ""})
    for i, wanted in want.items():  # one re-read per shard that holds a sample
        for k, (_, _, _, text) in enumerate(sources[i].docs()):
            if k in wanted:
                largest[wanted[k]]["sample"] = first_lines(text, 3)
    summary["largest_groups"] = largest
    return removed


def _pipeline_run(c: ExactConfig) -> Outcome:
    r = run_exact(c)
    return Outcome({"documents": r.documents, "duplicates": r.removed})


def _complete(layout: Layout, name: str, c: ExactConfig) -> bool:
    return layout.set_complete(exact_names(c.normalize, c.bloom_fp is not None)[0])  # named by its settings


def _estimate(c: ExactConfig, e: Corpus) -> StagePlan:
    if c.bloom_fp:
        cap = c.bloom_capacity or e.docs
        bits = int(-cap * math.log(c.bloom_fp) / (math.log(2) ** 2))
        return StagePlan("dedup exact", "Bloom filter, one pass", bits // 8, e.docs * SET_BYTES_PER_DOC,
                         f"fp rate {c.bloom_fp}")
    budget = memory_plan("dedup exact", c.memory, 0).total
    return StagePlan("dedup exact", f"normalize={c.normalize}: content keys, on-disk groups",
                     min(budget, e.docs * WORK_BYTES_PER_ROW), e.docs * (ROW.itemsize + 2 * SET_BYTES_PER_DOC),
                     f"memory budget {human(budget)}; key partitions are temporary")


def _output_sets(c: ExactConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """One set named by the settings (`sets/dedup_exact_rpv2`, ...): group, size and keep columns."""
    name, prefix = exact_names(c.normalize, c.bloom_fp is not None)
    return [PlannedSet(name, set_schema([(f"{prefix}_group", pa.uint64()), (f"{prefix}_size", pa.int64()),
                                         (f"{prefix}_keep", pa.bool_())]))]

CLI = CliSpec(
    help="flag documents with identical (normalized) text",
    description="Documents with identical text form duplicate groups; the first in corpus order (shards sorted by "
                "path, then record order) is kept. Writes dup_exact_group, dup_exact_size, dup_exact_keep to "
                "OUT/sets/dedup_exact/; other settings get a set of their own (--normalize rpv2: "
                "sets/dedup_exact_rpv2/ with dup_exact_rpv2_*; Bloom mode adds _bloom), so earlier results are kept.",
    examples=("textsieve dedup exact attrs/", "textsieve dedup exact attrs/ --normalize rpv2",
              "textsieve dedup exact data/*.jsonl.gz -o exact-out/"),
    report=lambda res: (f"dedup exact: {res.removed:,} of {res.documents:,} documents are duplicates "
                        f"({res.seconds:.1f} s) -> {res.output}"),
    writes=("output", "inputs"))

STAGE = Stage(
    "dedup_exact", ExactConfig, "dedup.exact", _pipeline_run, order=40, call=run_exact, first="inputs", cli_spec=CLI,
    shared={"text_field": "read.text_field", "id_field": "read.id_field", "overwrite": "overwrite"},
    placed=lambda layout: {"inputs": [layout.attrs], "output": layout.attrs},
    derived={"inputs": "always the annotate folder OUT/attrs (texts are re-read from its sources)",
             "output": "always OUT/attrs (the set goes to OUT/attrs/sets/dedup_exact, or sets/dedup_exact_rpv2 etc. "
                       "named by the settings)",
             "progress": PROGRESS_REASON},
    complete=_complete, estimate=_estimate, output_sets=_output_sets)
