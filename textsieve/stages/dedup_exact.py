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
Output: `OUT/_dedup_exact/<rel>.parquet` (OUT = --output, else the annotate folder) and
`OUT/_dedup_exact/summary.json`.

Settings that change the result name their own set (`exact_names`), so a re-run with other
settings keeps the earlier result beside it (nothing is thrown away): `--normalize rpv2` writes
`_dedup_exact_rpv2` with `dup_exact_rpv2_group/_size/_keep`, Bloom mode adds `_bloom`. The
default settings keep the plain `_dedup_exact` / `dup_exact_*` names that recipes use. A set
made with other Bloom settings (rate, capacity) is not replaced silently: the run refuses
unless `overwrite` is set.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve import __version__
from textsieve.dedup.components import components
from textsieve.dedup.corpus import first_lines, id_ints
from textsieve.dedup.exact import check_normalize, content_keys
from textsieve.dedup.partitions import ROW, Grouper, PartitionWriter, rows_per_pass
from textsieve.exec.budget import parse_memory
from textsieve.exec.progress import Progress
from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.attributes import META_KEY, attribute_set_dir, attribute_shards, read_shard_meta, source_documents
from textsieve.io.leftovers import remove_stale_temps, remove_stale_work_dirs, work_dir
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.paths import Shard, expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.options import MEMORY_HELP, address_option, check_choices, executor_option, option, progress_option

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
    memory: int | str = option("2GB", help=MEMORY_HELP, metavar="SIZE")
    text_field: str = option("text", help="record field holding the text", metavar="FIELD")
    id_field: str = option("id", help="record field holding the id", metavar="FIELD")
    tmp_dir: str | None = option(None, help="local folder for partition files", metavar="DIR")
    workers: int | None = option(None, help="processes reading and hashing shards, one shard each (default: "
                                            "all cores)")
    executor: str = executor_option("hash shards on the local pool or as Ray tasks; grouping is local "
                                         "(same output)")
    address: str | None = address_option()
    progress: bool = progress_option()
    # replace an existing set of the same name that other Bloom settings made (else refuse)
    overwrite: bool = option(False, help="replace an existing set of the same name made with other Bloom "
                                         "settings (without it the run refuses)")


def exact_names(normalize: str = "none", bloom: bool = False) -> tuple[str, str]:
    """(attribute set name, column prefix) of a `dedup exact` run with these settings.

    Why settings are in the name: two runs with different normalizations (or exact vs Bloom)
    answer different questions, and the project's rule is that nothing is thrown away, so each
    gets its own set instead of the second silently replacing the first. The default settings
    keep the plain names (`_dedup_exact`, `dup_exact_keep`)."""
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
    path = f"{set_root}/summary.json"
    if cfg.overwrite or not fs.exists(path):
        return
    try:
        old = json.loads(fs.cat_file(path))
    except (OSError, ValueError):
        return  # unreadable summary: a broken earlier run, replace it
    keys = ["normalize", "mode", "bloom_fp"] + (["bloom_capacity"] if cfg.bloom_capacity is not None else [])
    diff = [f"{k}={old.get(k)!r} (now {info.get(k)!r})" for k in keys if old.get(k) != info.get(k)]
    if diff:
        raise ExactSettingsError(
            f"dedup exact: {set_root} holds a result made with other settings: {', '.join(diff)}; re-run with "
            f"those settings to keep it, or pass --overwrite (overwrite=True) to replace it")


@dataclass
class ExactResult:
    output: str
    documents: int = 0
    removed: int = 0
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


@dataclass
class _Source:
    """One shard of the corpus: where its output goes and how to read (id, shard, row, text)."""

    rel: str  # output rel (`.parquet`)
    size: int
    annotate_path: str | None = None
    fs: fsspec.AbstractFileSystem | None = None
    shard: Shard | None = None  # raw inputs: the shard, read with `options`
    options: ReadOptions | None = None

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
        import pyarrow.parquet as pq
        with self.fs.open(self.annotate_path, "rb") as fh:
            base = pq.read_table(fh, columns=["id", "shard", "row"])
        ids, shards, rows = (base.column(c).to_pylist() for c in ("id", "shard", "row"))
        meta = read_shard_meta(self.fs, self.annotate_path)
        if "source_shard" not in meta:
            raise ValueError(f"{self.annotate_path}: no source metadata; cannot re-read texts")
        k = 0
        for d in source_documents(meta):
            if k < len(rows) and d.row == rows[k]:
                yield ids[k], shards[k], rows[k], d.text
                k += 1
        if k != len(rows):
            raise ValueError(f"{self.annotate_path}: its source {meta.get('source')!r} changed since annotate")


def _sources(cfg: ExactConfig) -> tuple[list[_Source], str, bool]:
    """The corpus shards in corpus order, the output folder and whether sizes are doc counts."""
    if len(cfg.inputs) == 1:
        fs, root = fsspec.core.url_to_fs(cfg.inputs[0])
        if fs.isdir(root) and fs.exists(f"{root.rstrip('/')}/annotate.json"):
            fs, paths = attribute_shards(cfg.inputs[0])
            root = root.rstrip("/")
            import pyarrow.parquet as pq
            out = []
            for p in paths:
                with fs.open(p, "rb") as fh:
                    n = pq.ParquetFile(fh).metadata.num_rows
                out.append(_Source(p[len(root) + 1:], n, annotate_path=p, fs=fs))
            return out, cfg.output or cfg.inputs[0], True
    if not cfg.output:
        raise ValueError("dedup exact: --output DIR is required unless the input is one annotate output folder")
    from textsieve.stages.annotate import output_rel
    opts = ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field)
    shards = sorted(expand_inputs(cfg.inputs), key=lambda s: s.rel)
    return [_Source(output_rel(s.rel), s.size, shard=s, options=opts) for s in shards], cfg.output, False


def _batches(src: _Source) -> Iterator[tuple[list, list, list, list]]:
    cols: tuple[list, list, list, list] = ([], [], [], [])
    for rec in src.docs():
        for c, v in zip(cols, rec):
            c.append(v)
        if len(cols[0]) >= BATCH:
            yield cols
            cols = ([], [], [], [])
    yield cols


def _hash_shard(task: tuple[_Source, str], on_batch: Callable[[int], None] | None = None):
    """(ids, shards, rows, h1, h2) of one shard: its documents in record order and their content
    keys. Runs in a worker (local pool or Ray actor), or in-process calling `on_batch(n_docs)`."""
    src, normalize = task
    ids, shards, rows, h1s, h2s = [], [], [], [], []
    for b_ids, b_shards, b_rows, texts in _batches(src):
        h1, h2 = content_keys(texts, normalize)
        ids += b_ids
        shards += b_shards
        rows += b_rows
        h1s.append(np.asarray(h1, dtype=np.uint64))
        h2s.append(np.asarray(h2, dtype=np.uint64))
        if on_batch is not None:
            on_batch(len(b_ids))
    return ids, shards, rows, np.concatenate(h1s), np.concatenate(h2s)


def _in_process(cfg: ExactConfig, sources: list[_Source], counted: bool) -> ExactConfig:
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


def _hashed_shards(cfg: ExactConfig, sources: list[_Source], progress: Progress, counted: bool):
    """Yield `_hash_shard` results in corpus order: in-process with one worker (progress per
    batch), otherwise on the local pool or Ray (progress per finished shard)."""
    from textsieve.exec.local import default_workers, ordered_map

    tasks = [(src, cfg.normalize) for src in sources]
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
    for (src, _), result in mapper(_hash_shard, tasks, workers=workers):
        progress.advance(len(result[0]), len(result[0]) if counted else src.size)
        yield result


def _write(set_root: str, fs, rel: str, ids: list, shards: list, rows: list, cols: dict, info: dict) -> None:
    table = pa.table({"id": pa.array(ids, pa.string()), "shard": pa.array(shards, pa.string()),
                      "row": pa.array(rows, pa.int64()), **cols})
    writer = AtomicParquetWriter(fs, f"{set_root}/{rel}", table.schema)
    try:
        writer.write(table)
        writer.add_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    except BaseException as exc:
        writer.abort(exc)
        raise
    writer.close()


def run_exact(cfg: ExactConfig) -> ExactResult:
    """Flag exact duplicates; write the `_dedup_exact` set and its summary."""
    start = time.perf_counter()
    check_choices(cfg)
    check_normalize(cfg.normalize)
    budget = parse_memory(cfg.memory)
    sources, out, counted = _sources(cfg)
    cfg = _in_process(cfg, sources, counted)
    set_name, prefix = exact_names(cfg.normalize, cfg.bloom_fp is not None)
    set_dir = attribute_set_dir(out, set_name)
    fs, set_root = fsspec.core.url_to_fs(set_dir)
    set_root = set_root.rstrip("/")
    remove_stale_temps(fs, set_root)  # what a killed run was writing (never a live run's files)
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
    if cfg.progress:
        docs = f"{n_known:,} docs" if n_known is not None else "documents"
        disk = (f"~{n_known * ROW.itemsize / 1e6:,.1f} MB" if n_known is not None else "24 MB per million docs")
        need = (f"Bloom filter {bloom.m / 8e6:,.1f} MB in memory, no disk" if bloom else
                f"disk {disk} of key partitions + ids; memory budget {budget / 1e6:,.1f} MB")
        print(f"dedup exact: {docs} in {len(sources)} shard(s), normalize={cfg.normalize}; {need}", file=sys.stderr)

    progress = Progress("dedup exact [hash]", sum(s.size for s in sources) if not counted else n_known or 1,
                        enabled=cfg.progress)
    remove_stale_work_dirs(cfg.tmp_dir)  # partition spill of killed runs
    work = work_dir("dedup-exact", cfg.tmp_dir)
    result = ExactResult(output=set_dir)
    try:
        max_rows = rows_per_pass(budget)
        bits = 0 if not counted else max(0, int(np.ceil(np.log2(max(1, 2 * (n_known or 0) // max_rows)))))
        writer = PartitionWriter(f"{work}/keys", min(bits, 16), max_rows // 2) if bloom is None else None
        ordinal, removed = 0, 0
        for si, (src, (ids_all, shards_all, rows_all, h1, h2)) in enumerate(
                zip(sources, _hashed_shards(cfg, sources, progress, counted))):
            n = len(ids_all)
            keep_all = []
            if bloom is not None:
                keep_all.append(~bloom.test_add(h1, h2))
            elif writer is not None and n:  # exact mode: the writer exists exactly when there is no Bloom filter
                rec = np.empty(n, dtype=ROW)
                rec["h1"], rec["h2"], rec["doc"] = h1, h2, np.arange(ordinal, ordinal + n, dtype=np.uint64)
                writer.add(rec)
            ordinal += n
            if bloom is not None:
                keep = np.concatenate(keep_all) if keep_all else np.zeros(0, bool)
                removed += int((~keep).sum())
                null_u64 = pa.nulls(len(ids_all), pa.uint64())
                _write(set_root, fs, src.rel, ids_all, shards_all, rows_all,
                       dict(zip(exact_columns(prefix), (null_u64, pa.nulls(len(ids_all), pa.int64()),
                                                        pa.array(keep, pa.bool_())))), info)
            else:  # keep (id, shard, row) on local disk until the groups are known
                _write(work, fsspec.filesystem("file"), f"base/{si}.parquet", ids_all, shards_all, rows_all, {}, {})
        progress.close()
        summary: dict[str, Any] = {"stage": EXACT_SET, "version": __version__, "n_docs": ordinal,
                                   "n_shards": len(sources),
                                   **{k: v for k, v in info.items() if k not in ("stage", "version")}}
        if bloom is not None:
            if bloom.count > bloom.capacity:
                print(f"dedup exact: warning: {bloom.count:,} documents exceed --bloom-capacity {bloom.capacity:,}; "
                      f"the false-positive rate is above {cfg.bloom_fp}", file=sys.stderr)
            summary.update(n_removed=removed, duplicate_fraction=removed / ordinal if ordinal else 0.0)
        else:
            removed = _finish_exact(cfg, sources, work, writer, max_rows, set_root, fs, info, ordinal, summary,
                                    prefix)
    finally:
        progress.close()
        shutil.rmtree(work, ignore_errors=True)
    with atomic_open(fs, f"{set_root}/summary.json", "w") as fh:
        json.dump(summary, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    result.documents, result.removed, result.summary = ordinal, removed, summary
    result.seconds = time.perf_counter() - start
    return result


def _finish_exact(cfg, sources, work, writer, max_rows, set_root, fs, info, n_docs, summary,
                  prefix: str = "dup_exact") -> int:
    import pyarrow.parquet as pq
    grouper = Grouper(f"{work}/keys", max_rows)
    parts = writer.close()
    progress = Progress("dedup exact [group]", sum(n for _, n in parts), enabled=cfg.progress, unit="keys")
    for part in parts:  # one partition at a time, so the line shows the pass moving
        grouper.group_partitions([part])
        progress.advance(part[1], part[1])
    progress.close()
    nodes, label = components(grouper.all_edges())
    nodes = nodes.astype(np.int64)
    rep = nodes[label]  # union by smaller index: the label is the group's first (smallest) ordinal
    size = np.bincount(label, minlength=nodes.shape[0])[label].astype(np.int64)
    bases = [pq.read_table(f"{work}/base/{i}.parquet") for i in range(len(sources))]
    starts = np.concatenate([[0], np.cumsum([b.num_rows for b in bases])]).astype(np.int64)
    reps = np.unique(rep)
    rep_ii = np.zeros(reps.shape[0], dtype=np.uint64)
    for i, b in enumerate(bases):  # id_int of every group's first document
        lo, hi = np.searchsorted(reps, [starts[i], starts[i + 1]])
        if hi > lo:
            rep_ii[lo:hi] = id_ints(b.column("id").take(pa.array(reps[lo:hi] - starts[i])))
    group = rep_ii[np.searchsorted(reps, rep)]
    progress = Progress("dedup exact [write]", n_docs, enabled=cfg.progress)
    for i, b in enumerate(bases):
        progress.advance(b.num_rows, b.num_rows)
        lo, hi = np.searchsorted(nodes, [starts[i], starts[i + 1]])
        n = b.num_rows
        g = np.zeros(n, dtype=np.uint64)
        s = np.ones(n, dtype=np.int64)
        hit = np.zeros(n, dtype=bool)
        local = nodes[lo:hi] - starts[i]
        g[local], s[local], hit[local] = group[lo:hi], size[lo:hi], True
        keep = np.ones(n, dtype=bool)
        keep[local] = nodes[lo:hi] == rep[lo:hi]
        _write(set_root, fs, sources[i].rel, b.column("id"), b.column("shard"), b.column("row"),
               dict(zip(exact_columns(prefix), (pa.array(g, pa.uint64(), mask=~hit), pa.array(s, pa.int64()),
                                                pa.array(keep, pa.bool_())))), info)
    progress.close()
    removed = int((nodes != rep).sum())
    summary.update(n_groups=int(reps.shape[0]), n_docs_in_groups=int(nodes.shape[0]), n_removed=removed,
                   duplicate_fraction=removed / n_docs if n_docs else 0.0)
    # the 20 largest groups, with the first document's id and text
    gsize = np.bincount(np.searchsorted(reps, rep), minlength=reps.shape[0])
    top = np.lexsort((rep_ii, -gsize))[:20]
    largest: list[dict[str, Any]] = []
    want: dict[int, dict[int, int]] = {}  # {shard index: {document index in it: index in largest}}
    for k in top:
        r = int(reps[k])
        i = int(np.searchsorted(starts, r, side="right") - 1)
        want.setdefault(i, {})[int(r - starts[i])] = len(largest)
        recs = []
        for m in nodes[rep == r][:10]:
            j = int(np.searchsorted(starts, m, side="right") - 1)
            row = bases[j].slice(int(m - starts[j]), 1).to_pylist()[0]
            recs.append({"id": row["id"], "shard": row["shard"], "row": row["row"]})
        largest.append({"group": int(rep_ii[k]), "size": int(gsize[k]), "members": recs, "sample": ""})
    for i, wanted in want.items():  # one re-read per shard that holds a sample
        for k, (_, _, _, text) in enumerate(sources[i].docs()):
            if k in wanted:
                largest[wanted[k]]["sample"] = first_lines(text, 3)
    summary["largest_groups"] = largest
    return removed


