"""The fuzzy `dedup` stage: MinHash-LSH clusters over an annotate folder (spec §8), on disk.

Pipeline per threshold T (all thresholds share one read of the shards):
  1. scan: each document's bands `{prefix}{T}` -> rows (128-bit band key, id_int), scattered
     into partition files by key bits (`dedup.partitions`), under the `--memory` budget;
  2. group: each partition is sorted and cut into runs of equal keys -> edges to the run's
     smallest id_int (the same star edges as RPv2's `run_lsh.py`);
  3. optional verification of each edge by estimated (MinHash) or exact (13-word shingle)
     Jaccard >= T;
  4. connected components (`dedup.components`); cluster id = smallest id_int (§8);
  5. one attribute shard per annotate shard in `DIR/sets/dedup_fuzzy/` with, per threshold,
     `dup_fuzzy_t{P}_cluster` (uint64, null when alone), `_size` (int64) and `_keep` (bool),
     and `summary.json`.
Documents are keyed by id_int, never by shard position, so the output does not depend on
shard names, shard order, worker count or executor.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve._version import __version__
from textsieve.dedup.components import cluster_ids, components, components_chunked, distinct_nodes, edge_rows
from textsieve.dedup.corpus import ShardTable, first_lines, gather_texts, id_ints, write_set
from textsieve.dedup.id_table import check_unique_ids
from textsieve.dedup.lsh import BAND_PREFIXES, band_column, band_rows, band_values, signature_column
from textsieve.dedup.partitions import (
    EDGE_BYTES,
    ROW,
    EdgeStore,
    Grouper,
    PartitionWriter,
    partition_bits,
    rows_per_pass,
)
from textsieve.dedup.ray_components import ray_components
from textsieve.dedup.ray_shuffle import ray_lsh
from textsieve.dedup.ray_verify import ray_exact_edges
from textsieve.dedup.verify import ID_ROW_BYTES, estimated_edges, exact_edges, locate, shard_batches
from textsieve.display import result_display
from textsieve.exec.arrow_memory import lean_arrow_memory
from textsieve.exec.budget import memory_plan
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import bool_array, numeric_array, to_numpy
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import LENGTH_COLUMN, META_KEY, open_set, set_place
from textsieve.io.leftovers import finish_work, start_work, work_parent
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.publish import SUMMARY as SET_SUMMARY_JSON
from textsieve.options import address_option, check_choices, executor_option, memory_option, option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, set_named
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan, set_schema

FUZZY_SET = "dedup_fuzzy"
SUMMARY = SET_SUMMARY_JSON
KEEP_POLICIES = ("first", "longest", "none")
VERIFY_MODES = ("none", "estimated", "exact")
TOP_CLUSTERS = 20
SCAN_BATCH = 4096  # documents per record batch while scanning band columns


def tkey(threshold: float) -> str:
    """Column stem of a threshold: 0.8 -> `dup_fuzzy_t80`."""
    return f"dup_fuzzy_t{int(round(float(threshold) * 100))}"


@dataclass
class FuzzyConfig:
    """Everything `textsieve dedup fuzzy` takes (CLI, YAML and `ts.dedup_fuzzy`)."""

    directory: str = option(help="an annotate output folder with MinHash bands", positional=True, metavar="DIR")
    thresholds: list[float] = option(
        help="similarity threshold with stored bands (1.0, 0.9, 0.8, 0.7); repeat for several",
        factory=lambda: [0.8], renamed_from=("--threshold",), repeat=True, metavar="T")
    bands: str = option("rpv2", help="band columns: rpv2 = signature_sim<T> (RPv2-compatible), fast = "
                                     "ts_fastsig_sim<T>", choices=("rpv2", "fast"))
    verify: str = option("exact", choices=("exact", "estimated", "none"),
                         help="check LSH candidate pairs before clustering: exact = true Jaccard of the 13-word "
                              "shingle sets of the re-read texts >= T; estimated = MinHash Jaccard >= T (no text "
                              "re-read); none = every candidate pair is an edge, exactly RPv2's clusters")
    keep: str = option("first", choices=("first", "longest", "none"),
                       help="per cluster keep: first = the member with the smallest id_int (RPv2's "
                            "representative), longest = most characters, none = drop whole clusters")
    memory: int | str = memory_option("larger key tables are sorted on disk in several passes (same output)")
    workers: int = option(1, help="processes for re-reading texts")
    tmp_dir: str | None = option(None, help="local folder for work files (key partitions, id table, shingle files); "
                                            "default: .textsieve-work in the output folder (the system's temp folder "
                                            "for a remote output); a killed run's are removed by the next run",
                                 metavar="DIR")
    overwrite: bool = option(False, help="recompute even if the output is up to date")
    progress: bool = progress_option()
    executor: str = executor_option("local, or Ray: banding + grouping as a distributed shuffle (same "
                                         "output)")
    address: str | None = address_option()


@result_display
@dataclass
class FuzzyResult:
    output: str
    skipped: bool = False
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)


class _Nodes:
    """Per-threshold cluster members, sorted by id_int."""

    def __init__(self, ids: np.ndarray, cid: np.ndarray, size: np.ndarray, keep: np.ndarray):
        self.ids, self.cid, self.size, self.keep = ids, cid, size, keep


def _check(cfg: FuzzyConfig) -> tuple[list[float], str]:
    if cfg.keep not in KEEP_POLICIES:
        raise ValueError(f"--keep must be one of {', '.join(KEEP_POLICIES)}, not {cfg.keep!r}")
    if cfg.verify not in VERIFY_MODES:
        raise ValueError(f"--verify must be one of {', '.join(VERIFY_MODES)}, not {cfg.verify!r}")
    if cfg.bands not in BAND_PREFIXES:
        raise ValueError(f"--bands must be one of {', '.join(BAND_PREFIXES)}, not {cfg.bands!r}")
    if cfg.executor not in ("local", "ray"):
        raise ValueError(f"--executor must be 'local' or 'ray', not {cfg.executor!r}")
    if not cfg.thresholds:
        raise ValueError("dedup fuzzy: give at least one --thresholds")
    ts = sorted({float(t) for t in cfg.thresholds}, reverse=True)
    for t in ts:
        if not 0.0 < t <= 1.0:
            raise ValueError(f"--thresholds {t}: must be in (0, 1]")
    if len({tkey(t) for t in ts}) != len(ts):
        raise ValueError("--thresholds values must differ in their first two decimals")
    return ts, BAND_PREFIXES[cfg.bands]


def _fingerprint(cfg: FuzzyConfig, ts: list[float], table: ShardTable) -> str:
    key = {"version": __version__, "thresholds": ts, "bands": cfg.bands, "verify": cfg.verify, "keep": cfg.keep,
           "shards": [[r, int(n), table.fs.size(p)] for r, n, p in zip(table.rels, table.n_rows, table.paths)],
           "content": table.content_key()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _bands_per_doc(table: ShardTable, cols: list[str]) -> dict[str, int]:
    """Bands per document of each column, from the first documents that have them."""
    out = {c: 0 for c in cols}
    for i in range(len(table.paths)):
        with table.fs.open(table.paths[i], "rb") as fh:
            for batch in pq.ParquetFile(fh, pre_buffer=False).iter_batches(batch_size=2048, columns=cols,
                                                                           use_threads=False):
                for c in cols:
                    if not out[c]:
                        _, vals = band_values(batch.column(c), f"{table.rels[i]}: column {c}")
                        out[c] = vals.shape[1] if vals.shape[0] else 0
                if all(out.values()):
                    return out
    return out


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} B"  # pragma: no cover


def _scan(cfg: FuzzyConfig, table: ShardTable, cols: dict[float, str], writers: dict[float, PartitionWriter],
          budget: int) -> dict[float, int]:
    """Read every shard once, in batches, and scatter each threshold's band rows."""
    per_doc = 24 * sum(1 for _ in cols) * 16 + 4096  # generous bytes per document while decoding
    # small batches: a dedup pass is bound by hashing, not by per-batch overhead, and Arrow's
    # decode buffers (the band lists) stay a few MB instead of a whole shard's worth
    batch = max(256, min(SCAN_BATCH, budget // (4 * per_doc)))
    with_bands = {t: 0 for t in cols}
    sizes = [table.fs.size(p) for p in table.paths]
    progress = Progress("dedup fuzzy [scan]", sum(sizes), enabled=cfg.progress)
    done = 0
    try:
        for i, path in enumerate(table.paths):
            with table.fs.open(path, "rb") as fh:
                pf = pq.ParquetFile(fh, pre_buffer=False)  # see verify.shard_batches
                seen = 0
                for rb in pf.iter_batches(batch_size=batch, columns=["id", *cols.values()], use_threads=False):
                    ii = id_ints(rb.column("id"))
                    for t, col in cols.items():
                        valid, values = band_values(rb.column(col), f"{table.rels[i]}: column {col}")
                        with_bands[t] += int(valid.sum())
                        writers[t].add(band_rows(values, ii[valid]))
                    seen += rb.num_rows
                    progress.update(rb.num_rows, done + int(sizes[i] * seen / max(1, table.n_rows[i])))
            done += sizes[i]
    finally:
        progress.close()
    return with_bands


def _verify(cfg: FuzzyConfig, table: ShardTable, prefix: str, edges: dict[float, EdgeStore],
            budget: int, edge_work: str) -> dict[float, EdgeStore]:
    """The verified edges of each threshold, in stores beside the candidates' (`edge_work`)."""
    ends = distinct_nodes(itertools.chain.from_iterable(e.chunks() for e in edges.values()))
    if ends.shape[0] == 0:
        return edges

    def out(t: float) -> EdgeStore:
        src = edges[t]
        return EdgeStore(f"{edge_work}/verified-{tkey(t)}", src.max_rows, src.max_edges)

    if cfg.verify == "estimated":
        sig_col = signature_column(table.schema(0).names, prefix)
        if sig_col is None:
            raise ValueError(f"--verify estimated: no {prefix}* column in {table.paths[0]}")
        return estimated_edges(table, sig_col, edges, ends, budget, out)
    if cfg.executor == "ray":  # shingles and pairs as Ray tasks: no work folder every node must see
        return ray_exact_edges(table, edges, ends, budget, out, address=cfg.address, progress=cfg.progress)
    work = start_work("dedup-verify", cfg.directory, cfg.tmp_dir)  # DIR/.textsieve-work, or --tmp-dir
    try:
        return exact_edges(table, edges, ends, budget, work, out, cfg.workers, cfg.progress)
    finally:
        finish_work(work)


def _components(cfg: FuzzyConfig, store: EdgeStore, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Components of a store's edges: as Ray tasks on Ray; else read a chunk at a time when it
    spilled or is large."""
    if cfg.executor == "ray":
        return ray_components(store, budget, address=cfg.address)
    if store.spilled:
        return components_chunked(store.chunks)
    return components(store.array(), max_rows=edge_rows(budget))


def _nodes(cfg: FuzzyConfig, table: ShardTable, edges: dict[float, EdgeStore],
           budget: int) -> dict[float, _Nodes]:
    comps = {t: _components(cfg, e, budget) for t, e in edges.items()}
    lengths: tuple[np.ndarray, np.ndarray] | None = None  # (sorted id_ints, their lengths) for keep=longest
    if cfg.keep == "longest":
        allnodes = np.unique(np.concatenate([n for n, _ in comps.values()] or [np.zeros(0, np.uint64)]))
        if LENGTH_COLUMN in table.schema(0).names:  # annotate stores every document's length
            ii, _, ln = locate(table, allnodes, budget, LENGTH_COLUMN,
                               lambda a: np.asarray(to_numpy(a), dtype=np.int64))
            lengths = (ii, ln if ln is not None and ii.shape[0] else np.zeros(0, np.int64))
        else:
            ii, ords, _ = locate(table, allnodes, budget)
            texts = gather_texts(table, ords, workers=cfg.workers)
            lengths = (ii, np.asarray([len(texts[int(o)]) for o in ords], dtype=np.int64))
    out = {}
    for t, (nodes, label) in comps.items():
        cid, size = cluster_ids(label, nodes)
        if cfg.keep == "first":
            keep = nodes == cid
        elif cfg.keep == "none":
            keep = np.zeros(nodes.shape[0], dtype=bool)
        else:
            assert lengths is not None  # keep == "longest": read above
            ln = lengths[1][np.searchsorted(lengths[0], nodes)]
            order = np.lexsort((nodes, -ln, label))  # per component: longest, then smallest id_int
            keep = np.zeros(nodes.shape[0], dtype=bool)
            lab = label[order]
            head = np.ones(lab.shape[0], dtype=bool)
            head[1:] = lab[1:] != lab[:-1]
            keep[order[head]] = True
        out[t] = _Nodes(nodes, cid, size, keep)
    return out


def _columns(nodes: dict[float, _Nodes], ii: np.ndarray) -> dict[str, pa.Array]:
    cols = {}
    for t, nd in nodes.items():
        pos = np.minimum(np.searchsorted(nd.ids, ii), max(0, nd.ids.shape[0] - 1))
        hit = (nd.ids[pos] == ii) if nd.ids.shape[0] else np.zeros(ii.shape[0], dtype=bool)
        cid = np.where(hit, nd.cid[pos] if nd.ids.shape[0] else 0, 0).astype(np.uint64)
        # (built from buffers: `pa.array` would load pandas through pyarrow's shim)
        cols[f"{tkey(t)}_cluster"] = numeric_array(cid, pa.uint64(), valid=hit)
        cols[f"{tkey(t)}_size"] = numeric_array(np.where(hit, nd.size[pos] if nd.ids.shape[0] else 1, 1), pa.int64())
        cols[f"{tkey(t)}_keep"] = bool_array(np.where(hit, nd.keep[pos] if nd.ids.shape[0] else True, True))
    return cols


def _add_members(nodes: dict[float, _Nodes], want: set[int], ii: np.ndarray, base: pa.RecordBatch, first: int,
                 members: dict[int, list[dict]]) -> None:
    """Member records of the largest clusters (`want`) among one batch of documents (ordinals
    from `first`), for the summary."""
    wanted = list(want)
    for nd in nodes.values():
        if not nd.ids.shape[0]:
            continue
        pos = np.minimum(np.searchsorted(nd.ids, ii), nd.ids.shape[0] - 1)
        for k in np.flatnonzero((nd.ids[pos] == ii) & np.isin(nd.cid[pos], wanted)):
            members.setdefault(int(nd.cid[pos[k]]), []).append(
                {"id": base.column("id")[int(k)].as_py(), "id_int": int(ii[k]),
                 "shard": base.column("shard")[int(k)].as_py(), "row": int(base.column("row")[int(k)].as_py()),
                 "ordinal": first + int(k)})


def _top_clusters(nd: _Nodes) -> list[tuple[int, int]]:
    if nd.ids.shape[0] == 0:
        return []
    cids, first = np.unique(nd.cid, return_index=True)
    sizes = nd.size[first]
    order = np.lexsort((cids, -sizes))[:TOP_CLUSTERS]
    return [(int(cids[k]), int(sizes[k])) for k in order]


#: glibc `mallopt` parameters and the value `_lean_malloc` gives them
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _LEAN_THRESHOLD = -1, -3, 128 * 1024


def _lean_malloc() -> Callable[[], None]:
    """Fixed glibc malloc thresholds (128 KiB, glibc's initial ones) for this process, unless the
    user set MALLOC_*_THRESHOLD_; returns a `release()` that hands the heap's free pages back to
    the system (`malloc_trim`), called between phases. glibc otherwise raises its mmap threshold
    to the largest block freed (up to 32 MB), so each phase's large arrays (id batches, sort
    passes, signatures) are then carved from the heap and their freed pages stay resident into
    the next phase: measured on 543k documents at --memory 32MB, the tree peaked at 132-134 MB
    with them kept, 116-117 without. A no-op where there is no glibc (macOS, Windows, musl)."""
    import ctypes
    import os

    try:
        libc = ctypes.CDLL(None)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # pragma: no cover - not glibc
        return lambda: None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    if not any(k in os.environ for k in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")):
        mallopt(_M_MMAP_THRESHOLD, _LEAN_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, _LEAN_THRESHOLD)

    def release() -> None:
        trim(0)

    return release


#: 1 / the share of the budget the distinct candidate edges of all thresholds hold before they spill
EDGE_SHARE = 4


def _cluster(cfg: FuzzyConfig, table: ShardTable, ts: list[float], cols: dict[float, str], bits: dict[float, int],
             max_rows: int, budget: int, prefix: str, work: str,
             release: Callable[[], None]) -> tuple[dict[float, _Nodes], dict[float, int], dict[float, dict]]:
    """Group the band rows into candidate edges per threshold, verify them, find the components.

    The edges stay in `EdgeStore`s: in memory up to a quarter of the budget (over all
    thresholds), then in files under `work`, read a chunk at a time by verification and the
    components, so no step holds every edge (issue 29 item 1)."""
    max_edges = budget // (EDGE_SHARE * EDGE_BYTES * len(ts))
    if cfg.executor == "ray":  # the same scatter + grouping as a Ray shuffle; identical edges
        with_bands, edges, stats = ray_lsh(table, cols, bits, max_rows, address=cfg.address,
                                           tmp_dir=cfg.tmp_dir, progress=cfg.progress,
                                           store=lambda t: EdgeStore(f"{work}/{tkey(t)}", max_rows, max_edges))
    else:
        writers = {t: PartitionWriter(f"{work}/{tkey(t)}", bits[t], max(1, max_rows // (2 * len(ts))))
                   for t in ts}
        with_bands = _scan(cfg, table, cols, writers, budget)
        edges, stats = {}, {}
        for t in ts:
            grouper = Grouper(f"{work}/{tkey(t)}", max_rows, max_edges)
            parts = writers[t].close()
            grouper.stats.spilled_bytes = writers[t].bytes_written
            progress = Progress(f"dedup fuzzy [group t{t}]", sum(n for _, n in parts), enabled=cfg.progress,
                                unit="band rows")
            for part in parts:  # one partition at a time, so the line shows the pass moving
                grouper.group_partitions([part])
                progress.advance(part[1], part[1])
            progress.close()
            edges[t] = grouper.edge_store()
            stats[t] = asdict(grouper.stats)
    release()
    if cfg.verify != "none":
        before = {t: e.n for t, e in edges.items()}
        verified = _verify(cfg, table, prefix, edges, budget, work)
        for t in ts:
            if verified[t] is not edges[t]:
                edges[t].remove()
        edges = verified
        release()
        for t in ts:
            stats[t]["edges_verified"] = edges[t].n
            stats[t]["edges_rejected"] = before[t] - edges[t].n
    return _nodes(cfg, table, edges, budget), with_bands, stats


def run_fuzzy(cfg: FuzzyConfig) -> FuzzyResult:
    """Cluster near-duplicates for every threshold and write the `sets/dedup_fuzzy` set."""
    start = time.perf_counter()
    check_choices(cfg)
    ts, prefix = _check(cfg)
    # --memory covers the process tree: split with the text-re-reading workers (exec.budget)
    plan = memory_plan("dedup fuzzy", cfg.memory, cfg.workers if cfg.workers > 1 else 0)
    budget = plan.usable
    lean_arrow_memory()
    release = _lean_malloc()
    table = ShardTable.open(cfg.directory)
    pool_workers("dedup fuzzy", cfg.workers, cfg.workers, [cfg.directory, *source_locations(cfg.directory)],
                 cfg.executor)  # raises when worker processes or Ray would have to read memory://
    cols = {t: band_column(prefix, t) for t in ts}
    for i in range(len(table.paths)):
        names = table.schema(i).names
        missing = [c for c in cols.values() if c not in names]
        if missing:
            hint = ("annotate with --signals minhash" if cfg.bands == "rpv2"
                    else "compute fast signatures first, or use --bands rpv2")
            raise ValueError(f"{table.paths[i]}: no column(s) {', '.join(missing)}; {hint}")
    out_dir, fs, out_root = set_place(cfg.directory, FUZZY_SET)  # stale temps of killed writers removed
    fingerprint = _fingerprint(cfg, ts, table)
    result = FuzzyResult(output=out_dir)
    # the resume key lives in the manifest (`io.publish`), kept out of summary.json, which must not
    # depend on shard names; the set is published as one unit, so a killed run never leaves a mix
    pub = open_set(fs, out_root, FUZZY_SET, fingerprint, built_from=table.content_key())
    done = None if cfg.overwrite else pub.unchanged_summary(table.rels, SUMMARY)
    if done is not None:
        result.skipped, result.summary = True, done
        return result
    staging = fs.unstrip_protocol(pub.staging)

    # documents are keyed by id_int (after the skip test: an up-to-date set was checked when made)
    check_unique_ids(table, budget, work_parent(cfg.directory, cfg.tmp_dir), "dedup fuzzy")
    release()
    max_rows = rows_per_pass(budget)
    bands = _bands_per_doc(table, list(cols.values()))
    bits = {t: partition_bits(table.n_docs * bands[cols[t]], max_rows) for t in ts}
    total = sum(table.n_docs * bands[c] for c in cols.values())
    if cfg.progress:
        print(f"dedup fuzzy: {table.n_docs:,} docs in {len(table.paths)} shard(s); thresholds "
              f"{', '.join(map(str, ts))}; at most {total:,} band rows -> disk ~{_human(total * ROW.itemsize)} "
              f"of partitions; {plan.describe()} ({max_rows:,} rows per sort) -> "
              f"{', '.join(f'{t}: {1 << bits[t]}' for t in ts)} partition(s); plus ~16 B per candidate doc "
              f"for clustering"
              + ("; --verify exact then re-reads the candidates' texts, ~8 B per shingle of them on disk"
                 if cfg.verify == "exact" else "")
              + ("; --verify estimated holds the candidates' signatures, ~0.5 KB each"
                 if cfg.verify == "estimated" else ""), file=sys.stderr)
    work = start_work("dedup-fuzzy", cfg.directory, cfg.tmp_dir)  # killed runs' spills are removed
    try:
        nodes, with_bands, stats = _cluster(cfg, table, ts, cols, bits, max_rows, budget, prefix, work, release)
    finally:
        finish_work(work)
    release()

    info = {"stage": FUZZY_SET, "version": __version__, "thresholds": ts, "bands": cfg.bands,
            "band_columns": list(cols.values()), "verify": cfg.verify, "keep": cfg.keep}
    tops = {t: _top_clusters(nd) for t, nd in nodes.items()}
    want = {cid for t in ts for cid, _ in tops[t]}
    members: dict[int, list[dict]] = {}
    progress = Progress("dedup fuzzy [write]", table.n_docs, enabled=cfg.progress)
    rows = max(1024, min(32768, budget // (8 * ID_ROW_BYTES)))  # ids become Python strings to hash
    for i in range(len(table.paths)):
        progress.advance(int(table.n_rows[i]), int(table.n_rows[i]))
        writer = None
        for offset, base in shard_batches(table, i, ["id", "shard", "row"], rows):  # a batch at a time
            ii = id_ints(base.column("id"))
            out = pa.Table.from_batches([base]).replace_schema_metadata(None)  # not annotate's footer
            for name, arr in _columns(nodes, ii).items():
                out = out.append_column(name, arr)
            if writer is None:
                writer = AtomicParquetWriter(fs, pub.staged(table.rels[i]), out.schema)
            writer.write(out)
            _add_members(nodes, want, ii, base, int(table.base[i]) + offset, members)
        if writer is None:  # a shard without rows still gets its (empty) file
            write_set(table, staging, i, _columns(nodes, np.zeros(0, np.uint64)), info)
        else:
            writer.add_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
            writer.close()
        pub.add(table.rels[i], fingerprint)
    progress.close()
    release()
    summary = _summary(cfg, table, ts, nodes, tops, members, with_bands, stats, fingerprint)
    pub.commit_summary(summary, fingerprint, name=SUMMARY)
    result.summary, result.stats = summary, stats
    result.seconds = time.perf_counter() - start
    return result


def _summary(cfg, table, ts, nodes, tops, members, with_bands, stats, fingerprint) -> dict:
    for m in members.values():  # dedupe (a doc is listed once per threshold) and order by id_int
        uniq = {x["id_int"]: x for x in m}
        m[:] = [uniq[k] for k in sorted(uniq)]
    sample_ords = [x["ordinal"] for cid, _ in {c for t in ts for c in tops[t]} for x in members.get(cid, [])[:3]]
    texts = gather_texts(table, np.asarray(sample_ords, dtype=np.int64), workers=cfg.workers) if sample_ords else {}
    per = {}
    for t in ts:
        nd = nodes[t]
        removed = int((~nd.keep).sum())
        per[str(t)] = {
            "columns": [f"{tkey(t)}_cluster", f"{tkey(t)}_size", f"{tkey(t)}_keep"],
            "docs_with_signature": with_bands[t],
            "n_clusters": int(np.unique(nd.cid).shape[0]),
            "n_docs_in_clusters": int(nd.ids.shape[0]),
            "n_removed": removed,
            "duplicate_fraction": removed / table.n_docs if table.n_docs else 0.0,
            "lsh": stats[t],
            "largest_clusters": [
                {"cluster_id": cid, "size": size,
                 "members": [{k: x[k] for k in ("id", "id_int", "shard", "row")} for x in members.get(cid, [])[:10]],
                 "samples": [first_lines(texts[x["ordinal"]], 3) for x in members.get(cid, [])[:3]]}
                for cid, size in tops[t]],
        }
    return {"stage": FUZZY_SET, "version": __version__, "n_docs": table.n_docs,
            "n_shards": len(table.paths), "bands": cfg.bands, "verify": cfg.verify, "keep": cfg.keep,
            "thresholds": per}


def _pipeline_run(c: FuzzyConfig) -> Outcome:
    r = run_fuzzy(c)
    return Outcome({f"t{t}": s["n_removed"] for t, s in r.summary["thresholds"].items()} | {"resumed": r.skipped})


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    fz = data["dedup"]["fuzzy"]
    if fz and isinstance(fz.get("thresholds"), list):
        for i, t in enumerate(fz["thresholds"]):
            if isinstance(t, (int, float)) and not isinstance(t, bool) and not 0 < t <= 1:
                errors.append(f"dedup.fuzzy.thresholds[{i}]: {t} must be in (0, 1]")
        if not fz["thresholds"]:
            errors.append("dedup.fuzzy.thresholds: give at least one threshold")


#: MinHash bands per document of each RPv2 threshold (spec §8: optimal_param).
BANDS = {1.0: 1, 0.9: 5, 0.8: 9, 0.7: 14}


def _estimate(c: FuzzyConfig, e: Corpus) -> StagePlan:
    from textsieve.dedup.partitions import ROW, WORK_BYTES_PER_ROW

    budget = memory_plan("dedup fuzzy", c.memory, 0).total
    rows = e.docs * sum(BANDS.get(round(float(t), 1), 9) for t in c.thresholds)
    return StagePlan("dedup fuzzy", f"MinHash-LSH at {', '.join(map(str, c.thresholds))}",
                     min(budget, rows * WORK_BYTES_PER_ROW) + 16 * e.docs,
                     rows * ROW.itemsize + e.docs * SET_BYTES_PER_DOC, f"{rows:,} band rows, partitions are temporary")


def _output_sets(c: FuzzyConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """Three columns per threshold: cluster, size, keep."""
    cols: list[tuple[str, pa.DataType]] = []
    for t in c.thresholds:
        cols += [(f"{tkey(t)}_cluster", pa.uint64()), (f"{tkey(t)}_size", pa.int64()), (f"{tkey(t)}_keep", pa.bool_())]
    return [PlannedSet(FUZZY_SET, set_schema(cols))]

def cluster_report(command: str, res: Any, rows: list[str]) -> str:
    """The closing lines of a clustering dedup (`dedup fuzzy`, `dedup semantic`): one row per
    threshold, framed by whether the run was a no-op."""
    lines = [f"{command}: already done with this configuration ({res.output}); --overwrite to redo"] \
        if res.skipped else []
    lines += rows
    if not res.skipped:
        lines.append(f"{command}: done in {res.seconds:.1f} s -> {res.output}")
    return "\n".join(lines)


def _report(res: FuzzyResult) -> str:
    return cluster_report("dedup fuzzy", res, [
        f"  threshold {t}: {s['n_clusters']:,} clusters, {s['n_docs_in_clusters']:,} docs in clusters, "
        f"{s['n_removed']:,} to drop ({100 * s['duplicate_fraction']:.2f}%)"
        for t, s in res.summary["thresholds"].items()])


CLI = CliSpec(
    help="MinHash-LSH clusters from annotate's bands",
    description="Clusters near-duplicates over the stored MinHash bands (RPv2 §8): equal bands in the same band "
                "index are candidate pairs; connected components; cluster id = smallest id_int. Writes "
                "dup_fuzzy_t<P>_cluster/_size/_keep per threshold to DIR/sets/dedup_fuzzy/ and summary.json.",
    examples=("textsieve dedup fuzzy attrs/ --thresholds 0.8 --thresholds 0.7 --memory 2GB",
              "textsieve dedup show attrs/ --top 5"),
    report=_report)

STAGE = Stage("dedup_fuzzy", FuzzyConfig, "dedup.fuzzy", _pipeline_run, order=50, call=run_fuzzy, cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named("dedup_fuzzy"), check=_check_pipeline,
              estimate=_estimate, output_sets=_output_sets)
