"""The SimHash `dedup` stage: near-duplicate documents by 64-bit SimHash of character n-grams,
RedPajama-1T's book dedup (spec rpv1-sources §5) as an attribute set over any annotate folder.

Why a stage of its own: the reference drops near-duplicate books inside its book script; here
that decision is a set of columns beside the documents, so a recipe selects on it
(`rpv1-books`: `dup_simhash_keep`) and a user can change the distance and re-run.

Per document (texts re-read from the annotate folder's sources, one worker task per shard):
its fingerprint (`text.simhash`: lower-cased, non-word characters deleted, `--width`-character
n-grams, MD5, majority bits). Then, over the whole corpus, every pair within Hamming
`--distance` (`text.simhash_search`: block tables, never all pairs). Columns of
`DIR/sets/dedup_simhash/<rel>.parquet` (rows in annotate's order):

* `dup_simhash_fingerprint` (uint64);
* `dup_simhash_near` (int64): other documents within the distance;
* `dup_simhash_cluster` (uint64, null when alone): RPv2 `id_int` of the first document (corpus
  order) of its connected component of the near-duplicate graph; `dup_simhash_size` (int64);
* `dup_simhash_keep` (bool): no near-duplicate comes before it in corpus order (shards sorted
  by path, then rows). That is the reference's rule ("drop a record if a near-duplicate has a
  numerically smaller id") with corpus order for the id: pairwise, not per cluster, so in a
  chain A~B~C where A and C are not near, B and C both go. The reference's ids are its reading
  order when no two records share one (the `source books` shards are named so that corpus
  order is that reading order); its id-collision quirk is not reproduced (docs/sources.md).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.dedup.components import components
from textsieve.dedup.corpus import ShardTable, id_ints, write_set
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import bool_array, numeric_array
from textsieve.io.attributes import open_set, set_place
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.publish import SUMMARY, content_key, settings_diff
from textsieve.options import check_choices, option, progress_option
from textsieve.stages.dedup.exact import DocSource
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, set_named
from textsieve.stages.doc_set import annotate_sources
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan, set_schema
from textsieve.text.simhash import DEFINITION, WIDTH, fingerprint
from textsieve.text.simhash_search import NearGraph, near_graph

SIMHASH_SET = "dedup_simhash"
PREFIX = "dup_simhash"
COLUMNS = [(f"{PREFIX}_fingerprint", pa.uint64()), (f"{PREFIX}_near", pa.int64()), (f"{PREFIX}_cluster", pa.uint64()),
           (f"{PREFIX}_size", pa.int64()), (f"{PREFIX}_keep", pa.bool_())]
#: the reference's threshold (`book/dedup.py -k 5`); larger distances are allowed up to this
DISTANCE = 5
MAX_DISTANCE = 32
TOP_CLUSTERS = 10


class SimhashError(TextsieveError, ValueError):
    """A setting or input `dedup simhash` cannot work with."""


@dataclass
class SimhashConfig:
    """Everything `textsieve dedup simhash` takes (CLI, YAML and `ts.dedup_simhash`)."""

    directory: str = option(help="an annotate output folder (texts are re-read from its sources)", positional=True,
                            metavar="DIR")
    width: int = option(WIDTH, help="characters per n-gram feature, counted after lower-casing and deleting every "
                                    "non-word character (the reference's -w)", metavar="N")
    distance: int = option(DISTANCE, help=f"largest Hamming distance between near-duplicates' 64-bit fingerprints "
                                          f"(the reference's -k; 0 to {MAX_DISTANCE})", metavar="K")
    workers: int | None = option(None, help="processes fingerprinting shards, one shard each (default: all cores)")
    overwrite: bool = option(False, help="replace a sets/dedup_simhash set made with other settings (without it the "
                                         "run refuses)")
    progress: bool = progress_option()


@result_display
@dataclass
class SimhashResult:
    output: str
    documents: int = 0
    removed: int = 0
    skipped: bool = False  # published from these inputs with these settings: nothing to do
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


def _check(cfg: SimhashConfig) -> None:
    check_choices(cfg)
    if not isinstance(cfg.width, int) or cfg.width < 1:
        raise SimhashError(f"dedup simhash: --width must be a whole number of characters >= 1, not {cfg.width!r}")
    if not isinstance(cfg.distance, int) or not 0 <= cfg.distance <= MAX_DISTANCE:
        raise SimhashError(f"dedup simhash: --distance must be between 0 and {MAX_DISTANCE}, not {cfg.distance!r}")


def _fingerprint_shard(task: tuple[DocSource, int]) -> np.ndarray:
    """One shard's fingerprints in row order (in a worker)."""
    src, width = task
    return np.asarray([fingerprint(text, width)[0] for _, _, _, text in src.docs()], dtype=np.uint64)


def run_simhash(cfg: SimhashConfig) -> SimhashResult:
    """Fingerprint every document, find the near-duplicates and publish `sets/dedup_simhash`."""
    start = time.perf_counter()
    _check(cfg)
    sources = annotate_sources(cfg.directory, "dedup simhash", error=SimhashError)
    table = ShardTable.open(cfg.directory)
    set_dir, fs, set_root = set_place(cfg.directory, SIMHASH_SET)
    info: dict[str, Any] = {"stage": SIMHASH_SET, "version": __version__, "definition": DEFINITION,
                            "width": cfg.width, "distance": cfg.distance, "keep": "no near-duplicate earlier in "
                            "corpus order", "set": SIMHASH_SET, "columns": [c for c, _ in COLUMNS]}
    diff = [] if cfg.overwrite else settings_diff(fs, set_root, info, ["definition", "width", "distance"])
    if diff:
        raise SimhashError(f"dedup simhash: {set_root} holds a result made with other settings: {', '.join(diff)}; "
                           "re-run with those settings to keep it, or pass --overwrite (overwrite=True) to replace it")
    afs, aroot = fsspec.core.url_to_fs(cfg.directory)
    built = content_key(afs, aroot.rstrip("/"))
    key = hashlib.sha256(json.dumps([info, built], sort_keys=True).encode()).hexdigest()[:16]
    pub = open_set(fs, set_root, SIMHASH_SET, key, built_from=built)
    result = SimhashResult(output=set_dir)
    done = None if cfg.overwrite else pub.unchanged_summary(table.rels, SUMMARY)
    if done is not None:
        result.skipped, result.summary = True, done
    else:
        try:
            result.summary = _compute(cfg, sources, table, pub, info)
        except BaseException:
            pub.abandon()
            raise
    result.documents = int(result.summary.get("n_docs", 0))
    result.removed = int(result.summary.get("n_removed", 0))
    result.seconds = time.perf_counter() - start
    return result


def _compute(cfg: SimhashConfig, sources: list[DocSource], table: ShardTable, pub: Any,
             info: dict[str, Any]) -> dict[str, Any]:
    planned = min(cfg.workers or default_workers(), max(1, len(sources)))
    workers = pool_workers("dedup simhash", cfg.workers, planned, [cfg.directory, *source_locations(cfg.directory)])
    pub.claim()
    bar = Progress("dedup simhash [fingerprint]", table.n_docs, enabled=cfg.progress)
    parts: list[np.ndarray] = []
    try:
        for (src, _), fps in ordered_map(_fingerprint_shard, [(s, cfg.width) for s in sources], workers=workers):
            parts.append(fps)
            bar.advance(src.size, src.size, shard=src.rel)
    finally:
        bar.close()
    fps = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    graph = near_graph(fps, cfg.distance)
    cols = near_columns(graph)
    ii = np.concatenate([id_ints(table.read(i, ["id"]).column("id")) for i in range(len(table.paths))]) \
        if table.n_docs else np.zeros(0, dtype=np.uint64)
    rep = cols.pop("first")
    clustered = cols[f"{PREFIX}_size"] > 1
    cluster = np.where(clustered, ii[rep] if rep.shape[0] else rep, 0).astype(np.uint64)
    staging = pub.fs.unstrip_protocol(pub.staging)
    for i in range(len(table.paths)):
        lo, hi = int(table.base[i]), int(table.base[i + 1])
        # (built from buffers: `pa.array` loads pandas through pyarrow's shim)
        out = {f"{PREFIX}_fingerprint": numeric_array(fps[lo:hi], pa.uint64()),
               f"{PREFIX}_near": numeric_array(cols[f"{PREFIX}_near"][lo:hi], pa.int64()),
               f"{PREFIX}_cluster": numeric_array(cluster[lo:hi], pa.uint64(), valid=clustered[lo:hi]),
               f"{PREFIX}_size": numeric_array(cols[f"{PREFIX}_size"][lo:hi], pa.int64()),
               f"{PREFIX}_keep": bool_array(cols[f"{PREFIX}_keep"][lo:hi])}
        write_set(table, staging, i, out, info)
        pub.add(table.rels[i], pub.key)
    summary = _summary(table, info, graph, cols, rep, clustered)
    pub.commit_summary(summary, pub.key)
    return summary


def near_columns(graph: NearGraph) -> dict[str, np.ndarray]:
    """Per document (corpus order = input order of `graph`): how many others are within the
    distance, its component's first document (`first`) and size, and whether it is kept (no
    near-duplicate earlier)."""
    n = graph.n
    ordinal = np.arange(n, dtype=np.int64)
    keep = graph.earliest(ordinal) == ordinal
    per_value = np.bincount(graph.inverse, minlength=graph.unique.shape[0]).astype(np.int64)
    beside = np.zeros(graph.unique.shape[0], dtype=np.int64)
    np.add.at(beside, graph.a, per_value[graph.b])
    np.add.at(beside, graph.b, per_value[graph.a])
    near = per_value[graph.inverse] - 1 + beside[graph.inverse]
    root = np.arange(graph.unique.shape[0], dtype=np.int64)  # component of each distinct fingerprint
    if graph.a.shape[0]:
        nodes, label = components(np.stack([graph.a, graph.b], axis=1))
        root[nodes.astype(np.int64)] = nodes[label].astype(np.int64)
    comp = root[graph.inverse]
    first = np.full(graph.unique.shape[0], n, dtype=np.int64)
    np.minimum.at(first, comp, ordinal)
    size = np.bincount(comp, minlength=graph.unique.shape[0])
    return {f"{PREFIX}_near": near, "first": first[comp], f"{PREFIX}_size": size[comp].astype(np.int64),
            f"{PREFIX}_keep": keep}


def _summary(table: ShardTable, info: dict[str, Any], graph: NearGraph, cols: dict[str, np.ndarray],
             rep: np.ndarray, clustered: np.ndarray) -> dict[str, Any]:
    n = table.n_docs
    removed = int((~cols[f"{PREFIX}_keep"]).sum())
    reps, sizes = np.unique(rep[clustered], return_counts=True)
    top = np.lexsort((reps, -sizes))[:TOP_CLUSTERS]
    largest = []
    for k in top.tolist():
        members = np.flatnonzero(rep == reps[k])[:10]
        largest.append({"size": int(sizes[k]), "members": _records(table, members)})
    return {**info, "n_docs": n, "n_shards": len(table.paths), "n_pairs": int(graph.a.shape[0]),
            "n_compared": graph.compared, "n_distinct_fingerprints": int(graph.unique.shape[0]),
            "n_clusters": int(reps.shape[0]),
            "n_docs_in_clusters": int(clustered.sum()), "n_removed": removed,
            "duplicate_fraction": removed / n if n else 0.0, "largest_clusters": largest}


def _records(table: ShardTable, ordinals: np.ndarray) -> list[dict[str, Any]]:
    """{id, shard, row, keep} of the given documents (sorted ordinals), read shard by shard."""
    out: list[dict[str, Any]] = []
    for i, local in table.split(ordinals):
        rows = table.read(i, ["id", "shard", "row"]).take(numeric_array(local, pa.int64())).to_pylist()
        out += rows
    return out


def _pipeline_run(c: SimhashConfig) -> Outcome:
    r = run_simhash(c)
    return Outcome({"documents": r.documents, "near_duplicates": r.removed, "resumed": r.skipped}, ran=not r.skipped)


def _report(res: SimhashResult) -> str:
    s = res.summary
    head = (f"dedup simhash: already done with this configuration ({res.output}); --overwrite to redo\n"
            if res.skipped else "")
    return (f"{head}dedup simhash: {res.removed:,} of {res.documents:,} documents have a near-duplicate earlier in "
            f"corpus order (distance <= {s.get('distance')}, {s.get('n_clusters', 0):,} clusters) "
            f"({res.seconds:.1f} s) -> {res.output}")


def _estimate(c: SimhashConfig, e: Corpus) -> StagePlan:
    workers = c.workers or default_workers()
    return StagePlan("dedup simhash", f"SimHash of {c.width}-character n-grams, pairs within distance {c.distance}",
                     workers * 200_000_000 + 48 * e.docs, e.docs * (SET_BYTES_PER_DOC + 24),
                     f"{workers} worker(s) re-read texts; ~48 B per document for the search")


def _output_sets(c: SimhashConfig, layout: Layout, where: str) -> list[PlannedSet]:
    return [PlannedSet(SIMHASH_SET, set_schema(COLUMNS))]


CLI = CliSpec(
    help="near-duplicates by SimHash of character n-grams (RedPajama-1T's book dedup)",
    description="Fingerprints every document with a 64-bit SimHash of its character n-grams (lower-cased, non-word "
                "characters deleted, MD5 of each n-gram, majority bits), finds every pair within --distance bits "
                "with block tables (not all pairs), and writes dup_simhash_fingerprint, dup_simhash_near, "
                "dup_simhash_cluster, dup_simhash_size and dup_simhash_keep (no near-duplicate earlier in corpus "
                "order) to DIR/sets/dedup_simhash/. The defaults are RedPajama-1T's book settings; the recipe "
                "rpv1-books selects on dup_simhash_keep.",
    examples=("textsieve dedup simhash attrs/", "textsieve dedup simhash attrs/ --distance 3 --overwrite"),
    report=_report)

STAGE = Stage("dedup_simhash", SimhashConfig, "dedup.simhash", _pipeline_run, order=55, call=run_simhash,
              cli_spec=CLI, placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named(SIMHASH_SET), estimate=_estimate, output_sets=_output_sets)
