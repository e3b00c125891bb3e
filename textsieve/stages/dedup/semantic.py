"""The semantic `dedup` stage (SemDeDup on the CPU): near-duplicates by embedding similarity.

MinHash finds copies; it misses paraphrases, reordered and templated pages whose words
differ but whose meaning does not. SemDeDup (Abbas et al., 2023) clusters the embeddings with
k-means and, within each cluster, joins pairs whose cosine similarity is >= 1 - eps.

Pipeline (reads `DIR/sets/embed_<model>/`, written by `textsieve embed DIR`):
  1. sample: a seeded uniform sample of the vectors, spilled to a work file
     (`dedup.semantic_kmeans.draw_sample`);
  2. fit: spherical mini-batch k-means on it (k = --clusters, default n/200 within [1, 50,000]);
  3. assign: every document's nearest centroid, streamed shard by shard, each document
     spilled with its vector to a partition file (`dedup.semantic_pairs.Spill`);
  4. pairs: per partition, per k-means cluster, cosine >= 1 - eps in 1024 x 1024 tiles,
     merged into union-find forests, one per eps (`dedup.semantic_pairs`);
  5. one attribute shard per annotate shard in `DIR/sets/dedup_semantic/` (rows in annotate
     order): id, shard, row and per eps `dup_semantic_e<D>_cluster` (int64: the corpus
     ordinal of the component's earliest member; null when the document is in no
     component), `_size` (int32, 1 when alone) and `_keep` (bool, true when alone), where <D>
     is eps's digits after "0." (0.05 -> e05, 0.1 -> e1); and `summary.json`.
Corpus order (ordinals) is shards sorted by relative path, then row order, as in
`dedup exact`. Keep policies: first = the earliest member; longest = the largest `ts_length`;
none = drop whole components; any other value names a numeric column (of the annotate shards
or of another attribute set such as a quality score): the member with the highest value is
kept, nulls lowest; every tie goes to the earliest member.

Everything spilled lives in a work folder (`DIR/.textsieve-work`, or --tmp-dir) removed at
the end; memory is bounded by --memory (centroids, one partition, one 4 MB tile). The output
does not depend on --memory: the matrix shapes of the fit, assignment and tiles are fixed.

summary.json (read by the report; `eps` keyed by the eps as written, e.g. "0.05"):
  {"stage": "dedup_semantic", "version", "n_docs", "n_shards", "model", "model_fingerprint",
   "dim", "keep", "seed",
   "kmeans": {"clusters", "sample", "epochs", "batch", "empty_clusters",
              "mean_cosine_to_centroid", "largest_cluster", "comparisons"},
   "eps": {"0.05": {"columns": [3 names], "min_cosine": 0.95, "n_clusters",
                    "n_docs_in_clusters", "n_removed", "duplicate_fraction", "pairs",
                    "top_clusters": [{"cluster_id", "size",
                                      "members": [{"id", "shard", "row", "keep",
                                                   "cosine", "text"}]}]}}}
`top_clusters`: the 20 largest components (ties: smaller id), each with up to 10 members:
its reference first (the kept member; with keep=none the earliest), then the others in corpus
order; `cosine` is to the reference, `text` the first line (<= 200 characters).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.dedup import semantic_kmeans as km
from textsieve.dedup.corpus import ShardTable, first_lines, gather_texts, write_set
from textsieve.dedup.semantic_keys import keep_keys, keep_source, keep_source_key
from textsieve.dedup.semantic_pairs import EpsResult, PairStats, Spill, partition_count, partition_results
from textsieve.dedup.semantic_vectors import VectorSet
from textsieve.dedup.verify import shard_batches
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.budget import memory_plan
from textsieve.exec.progress import Progress
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import META_KEY, open_set, set_place
from textsieve.io.leftovers import finish_work, start_work
from textsieve.io.publish import SUMMARY as SET_SUMMARY_JSON
from textsieve.options import check_choices, memory_option, option, progress_option
from textsieve.stages.annotate.embed import has_embeddings
from textsieve.stages.dedup.fuzzy import cluster_report
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, set_named
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan

SEMANTIC_SET = "dedup_semantic"
SUMMARY = SET_SUMMARY_JSON
TOP_CLUSTERS = 20
MEMBERS_SHOWN = 10
TEXT_WIDTH = 200


class SemanticError(TextsieveError, ValueError):
    """A setting semantic dedup cannot work with (eps, keep column, memory for the centroids)."""


def ekey(eps: float) -> str:
    """Column stem of an eps: 0.05 -> `dup_semantic_e05`, 0.1 -> `dup_semantic_e1`."""
    text = format(Decimal(repr(float(eps))), "f")
    if not text.startswith("0."):
        raise SemanticError(f"--eps {eps}: must be in (0, 1)")
    return f"dup_semantic_e{text[2:].rstrip('0') or '0'}"


@dataclass
class SemanticConfig:
    """Everything `textsieve dedup semantic` takes (CLI, YAML `dedup: semantic:` and `ts.dedup_semantic`)."""

    directory: str = option(help="an annotate output folder with embeddings (`textsieve embed DIR`)",
                            positional=True, metavar="DIR")
    eps: list[float] = option(help="duplicates have cosine similarity >= 1 - EPS (within one k-means cluster); "
                                   "repeat for several", factory=lambda: [0.05], repeat=True, metavar="EPS")
    embed_model: str | None = option(None, help="which embedding set sets/embed_<MODEL> (default: the folder's "
                                                "only one)", metavar="MODEL")
    clusters: int | None = option(None, help="k-means clusters (default: documents / 200, within [1, 50,000])",
                                  metavar="K")
    keep: str = option("first", help="per duplicate cluster keep: first = earliest in corpus order, longest = most "
                                     "characters, none = drop whole clusters, or a numeric column name (e.g. a "
                                     "quality score): the member with the highest value; ties go to the earliest",
                       metavar="POLICY")
    memory: int | str = memory_option("larger clusters are spilled to disk (same output)")
    seed: int = option(0, help="seed of the k-means sample, initial centres and mini-batches")
    sample: int | None = option(None, help="documents the k-means fit reads (a seeded random sample; default "
                                           "max(100,000, 40 per cluster), all when the corpus is smaller)",
                                metavar="N")
    tmp_dir: str | None = option(None, help="local folder for work files (sample, partitions); default: "
                                            ".textsieve-work in the annotate folder", metavar="DIR")
    overwrite: bool = option(False, help="recompute even if the output is up to date")
    progress: bool = progress_option()


@result_display
@dataclass
class SemanticResult:
    output: str
    skipped: bool = False
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)


def _check(cfg: SemanticConfig) -> list[float]:
    if not cfg.eps:
        raise SemanticError("dedup semantic: give at least one --eps")
    eps = sorted({float(e) for e in cfg.eps})
    for e in eps:
        if not 0.0 < e < 1.0:
            raise SemanticError(f"--eps {e}: must be in (0, 1) (duplicates have cosine >= 1 - eps)")
    if len({ekey(e) for e in eps}) != len(eps):
        raise SemanticError("--eps values must differ")
    if cfg.clusters is not None and int(cfg.clusters) < 1:
        raise SemanticError(f"--clusters {cfg.clusters}: must be at least 1")
    if cfg.sample is not None and int(cfg.sample) < 1:
        raise SemanticError(f"--sample {cfg.sample}: must be at least 1")
    return eps


def output_schema(eps: list[float]) -> pa.Schema:
    """The schema of the `sets/dedup_semantic` set's shards (`run --dry-run` checks recipes against it)."""
    fields = [("id", pa.string()), ("shard", pa.string()), ("row", pa.int64())]
    for e in sorted({float(x) for x in eps}):
        stem = ekey(e)
        fields += [(f"{stem}_cluster", pa.int64()), (f"{stem}_size", pa.int32()), (f"{stem}_keep", pa.bool_())]
    return pa.schema(fields)


def _fingerprint(cfg: SemanticConfig, eps: list[float], table: ShardTable, vs: VectorSet, keep_from: str) -> str:
    key = {"version": __version__, "eps": eps, "keep": cfg.keep, "keep_from": keep_from, "clusters": cfg.clusters,
           "seed": int(cfg.seed), "sample": cfg.sample, "model": vs.model, "model_fingerprint": vs.fingerprint,
           "embeddings": vs.key, "shards": [[r, int(n)] for r, n in zip(table.rels, table.n_rows)],
           "content": table.content_key(), "keep_set": keep_source_key(table, keep_from)}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _columns(eps: list[float], res: list[tuple], ords: np.ndarray) -> dict[str, pa.Array]:
    """Per eps, the three columns of the documents with ordinals `ords`."""
    cols = {}
    for e, (o, cid, size, keep) in zip(eps, res):
        pos = np.minimum(np.searchsorted(o, ords), max(0, o.shape[0] - 1))
        hit = (o[pos] == ords) if o.shape[0] else np.zeros(ords.shape[0], dtype=bool)
        stem = ekey(e)
        cols[f"{stem}_cluster"] = pa.array(np.where(hit, cid[pos] if o.shape[0] else 0, 0).astype(np.int64),
                                           type=pa.int64(), mask=~hit)
        cols[f"{stem}_size"] = pa.array(np.where(hit, size[pos] if o.shape[0] else 1, 1).astype(np.int32),
                                        type=pa.int32())
        cols[f"{stem}_keep"] = pa.array(np.where(hit, keep[pos] if o.shape[0] else True, True), type=pa.bool_())
    return cols


def _cluster(cfg: SemanticConfig, eps: list[float], table: ShardTable, vs: VectorSet, keep_from: str,
             budget: int) -> tuple[list[tuple], dict]:
    """Steps 1-4: per eps (ordinal, cid, size, keep) of the documents in components, and stats."""
    n = table.n_docs
    if n == 0:
        empty = EpsResult().arrays()
        return [empty for _ in eps], {"clusters": 0, "sample": 0, "epochs": 0, "batch": km.BATCH,
                                      "empty_clusters": 0, "mean_cosine_to_centroid": 0.0, "largest_cluster": 0,
                                      "comparisons": 0, "partitions": 0, "spilled_bytes": 0, "tiled_clusters": 0,
                                      "pairs": {str(e): 0 for e in eps}}
    k = int(cfg.clusters) if cfg.clusters is not None else km.default_clusters(n)
    k = max(1, min(k, n))
    if km.centroid_bytes(k, vs.dim) > budget // 2:
        raise SemanticError(f"dedup semantic: {k:,} clusters of {vs.dim} dimensions need "
                            f"~{km.centroid_bytes(k, vs.dim) / 1e6:,.0f} MB for the centroids, more than half of "
                            f"--memory {cfg.memory}; raise --memory or give fewer --clusters")
    work = start_work("dedup-semantic", cfg.directory, cfg.tmp_dir)
    try:
        sample_path = f"{work}/sample.f16"
        bar = Progress("dedup semantic [sample]", n, enabled=cfg.progress)
        count = km.draw_sample(vs, int(cfg.sample) if cfg.sample is not None else km.default_sample(k), int(cfg.seed),
                               sample_path, bar)
        bar.close()
        bar = Progress("dedup semantic [k-means]", km.EPOCHS * count, enabled=cfg.progress)
        centroids, kstats = km.fit(sample_path, count, vs.dim, k, int(cfg.seed), bar)
        bar.close()
        km.remove(sample_path)
        parts = partition_count(n, vs.dim, kstats.clusters, budget)
        spill = Spill(work, parts, vs.dim, budget // 4)
        if cfg.progress:
            print(f"dedup semantic: {n:,} docs, {kstats.clusters:,} k-means clusters fit on {count:,}; "
                  f"{parts} partition(s) of ~{n * spill.dtype.itemsize / parts / 1e6:,.1f} MB on disk", file=sys.stderr)
        bar = Progress("dedup semantic [assign]", n, enabled=cfg.progress)
        cos_sum = 0.0
        for i in range(len(table.paths)):
            keys = keep_keys(table, i, cfg.keep, keep_from)
            for offset, v in vs.batches(i):
                label, best = km.assign(v, centroids)
                cos_sum += float(best.astype(np.float64).sum())
                ords = table.base[i] + offset + np.arange(v.shape[0], dtype=np.int64)
                spill.add(label, ords, keys[offset:offset + v.shape[0]], v)
                bar.advance(v.shape[0], v.shape[0])
        spill.flush()
        bar.close()
        del centroids
        results = [EpsResult() for _ in eps]
        pstats = PairStats()
        bar = Progress("dedup semantic [pairs]", n, enabled=cfg.progress)
        for p in range(parts):
            done = partition_results(spill, p, eps, budget, cfg.keep == "none", results, pstats)
            bar.advance(done, done)
        bar.close()
    finally:
        finish_work(work)
    stats = {"clusters": kstats.clusters, "sample": kstats.sample, "epochs": kstats.epochs, "batch": kstats.batch,
             "empty_clusters": kstats.empty_clusters, "mean_cosine_to_centroid": cos_sum / n if n else 0.0,
             "largest_cluster": pstats.largest_cluster, "comparisons": pstats.comparisons,
             "partitions": parts, "spilled_bytes": spill.bytes_written, "tiled_clusters": pstats.tiled_clusters,
             "pairs": {str(e): r.pairs for e, r in zip(eps, results)}}
    return [r.arrays() for r in results], stats


def run_semantic(cfg: SemanticConfig) -> SemanticResult:
    """Cluster semantic near-duplicates for every eps and write the `sets/dedup_semantic` set."""
    start = time.perf_counter()
    check_choices(cfg)
    eps = _check(cfg)
    budget = memory_plan("dedup semantic", cfg.memory, 0).usable
    table = ShardTable.open(cfg.directory)
    vs = VectorSet.open(table, cfg.embed_model)  # no embeddings: says to run `textsieve embed`
    keep_from = keep_source(table, cfg.keep)
    out_dir, fs, out_root = set_place(cfg.directory, SEMANTIC_SET)  # stale temps of killed writers removed
    fingerprint = _fingerprint(cfg, eps, table, vs, keep_from)
    result = SemanticResult(output=out_dir)
    pub = open_set(fs, out_root, SEMANTIC_SET, fingerprint, built_from=table.content_key())
    done = None if cfg.overwrite else pub.unchanged_summary(table.rels, SUMMARY)
    if done is not None:
        result.skipped, result.summary = True, done
        return result
    staging = fs.unstrip_protocol(pub.staging)
    res, stats = _cluster(cfg, eps, table, vs, keep_from, budget)

    info = {"stage": SEMANTIC_SET, "version": __version__, "eps": eps, "keep": cfg.keep, "model": vs.model,
            "model_fingerprint": vs.fingerprint, "seed": int(cfg.seed), "clusters": stats["clusters"]}
    bar = Progress("dedup semantic [write]", table.n_docs, enabled=cfg.progress)
    for i in range(len(table.paths)):
        writer = None
        for offset, base in shard_batches(table, i, ["id", "shard", "row"], 32768):
            ords = table.base[i] + offset + np.arange(base.num_rows, dtype=np.int64)
            out = pa.Table.from_batches([base]).replace_schema_metadata(None)
            for name, arr in _columns(eps, res, ords).items():
                out = out.append_column(name, arr)
            if writer is None:
                writer = AtomicParquetWriter(fs, pub.staged(table.rels[i]), out.schema)
            writer.write(out)
        if writer is None:  # a shard without rows still gets its (empty) file
            write_set(table, staging, i, _columns(eps, res, np.zeros(0, np.int64)), info)
        else:
            writer.add_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
            writer.close()
        pub.add(table.rels[i], fingerprint)
        bar.advance(int(table.n_rows[i]), int(table.n_rows[i]))
    bar.close()
    summary = _summary(cfg, table, vs, eps, res, stats)
    pub.commit_summary(summary, fingerprint, name=SUMMARY)
    result.summary, result.stats = summary, stats
    result.seconds = time.perf_counter() - start
    return result


def _top(o: np.ndarray, cid: np.ndarray, size: np.ndarray, keep: np.ndarray) -> list[tuple[int, int, list[int]]]:
    """(cluster id, size, member ordinals: reference first, then corpus order) of the largest components."""
    if not o.shape[0]:
        return []
    cids, first = np.unique(cid, return_index=True)
    order = np.lexsort((cids, -size[first]))[:TOP_CLUSTERS]
    out = []
    for k in order:
        c = int(cids[k])
        members = o[cid == c]
        kept = members[keep[cid == c]]
        ref = int(kept[0]) if kept.shape[0] else c
        rest = [int(x) for x in members if int(x) != ref]
        out.append((c, int(size[first[k]]), [ref, *rest][:MEMBERS_SHOWN]))
    return out


def _rows_of(table: ShardTable, ordinals: np.ndarray) -> dict[int, tuple[str, str, int]]:
    """(id, shard, row) of the given ordinals, reading annotate shards a batch at a time."""
    out: dict[int, tuple[str, str, int]] = {}
    for i, local in table.split(np.unique(ordinals)):
        for offset, rb in shard_batches(table, i, ["id", "shard", "row"], 32768):
            sel = local[(local >= offset) & (local < offset + rb.num_rows)] - offset
            if sel.shape[0]:
                t = rb.take(pa.array(sel))
                for k, a, b, c in zip(sel, t.column(0).to_pylist(), t.column(1).to_pylist(), t.column(2).to_pylist()):
                    out[int(table.base[i] + offset + k)] = (a, b, int(c))
    return out


def _summary(cfg: SemanticConfig, table: ShardTable, vs: VectorSet, eps: list[float], res: list[tuple],
             stats: dict) -> dict:
    tops = {e: _top(*r) for e, r in zip(eps, res)}
    wanted = np.asarray(sorted({m for t in tops.values() for _, _, ms in t for m in ms}), dtype=np.int64)
    rows = _rows_of(table, wanted) if wanted.shape[0] else {}
    texts = gather_texts(table, wanted) if wanted.shape[0] else {}
    vecs = vs.take(wanted) if wanted.shape[0] else {}
    per = {}
    for e, (o, cid, _, keep) in zip(eps, res):
        removed = int((~keep).sum())
        keep_of = dict(zip(o.tolist(), keep.tolist())) if tops[e] else {}
        clusters = []
        for c, n, members in tops[e]:
            ref = vecs[members[0]]
            clusters.append({"cluster_id": c, "size": n, "members": [
                {"id": rows[m][0], "shard": rows[m][1], "row": rows[m][2], "keep": bool(keep_of.get(m, False)),
                 "cosine": round(min(1.0, float(np.dot(ref, vecs[m]))), 4),
                 "text": first_lines(texts.get(m, ""), 1, TEXT_WIDTH)}
                for m in members]})
        per[str(e)] = {"columns": [f"{ekey(e)}_cluster", f"{ekey(e)}_size", f"{ekey(e)}_keep"],
                       "min_cosine": round(1.0 - e, 10), "n_clusters": int(np.unique(cid).shape[0]),
                       "n_docs_in_clusters": int(o.shape[0]), "n_removed": removed,
                       "duplicate_fraction": removed / table.n_docs if table.n_docs else 0.0,
                       "pairs": stats["pairs"][str(e)], "top_clusters": clusters}
    kmeans = {k: stats[k] for k in ("clusters", "sample", "epochs", "batch", "empty_clusters",
                                    "mean_cosine_to_centroid", "largest_cluster", "comparisons")}
    return {"stage": SEMANTIC_SET, "version": __version__, "n_docs": table.n_docs, "n_shards": len(table.paths),
            "model": vs.model, "model_fingerprint": vs.fingerprint, "dim": vs.dim, "keep": cfg.keep,
            "seed": int(cfg.seed), "kmeans": kmeans, "eps": per}


def _pipeline_run(c: SemanticConfig) -> Outcome:
    r = run_semantic(c)
    per = r.summary.get("eps", {})
    return Outcome({f"e{e}": s.get("n_removed") for e, s in per.items()} | {"resumed": r.skipped}
                   if isinstance(per, dict) else {"resumed": r.skipped}, ran=not r.skipped)


#: sets written by pipeline stages that run after dedup (and semantic dedup's own): never its input
_AFTER_DEDUP = ("dedup_semantic", "dsir_", "tokens_", "pii", "decontam", "learned_")


def _sets_read(layout: Layout, name: str, c: SemanticConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """Semantic dedup reads the embeddings (made by `embed:` or by `annotate.signals: [embed]`)
    and, with `keep: COLUMN`, a column of any other set: their current contents."""
    if c.keep in ("first", "longest", "none"):
        return layout.sets_now(prefix="embed_")
    return layout.sets_now(skip=_AFTER_DEDUP)


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    sem = data["dedup"].get("semantic")
    if sem is None:
        return
    if isinstance(sem.get("eps"), list):
        for i, e in enumerate(sem["eps"]):
            if isinstance(e, (int, float)) and not isinstance(e, bool) and not 0 < e < 1:
                errors.append(f"dedup.semantic.eps[{i}]: {e} must be in (0, 1)")
    if isinstance(sem.get("keep"), str) and sem["keep"].startswith(("ts_tokens_", "ts_pii", "ts_contam", "ts_dsir_",
                                                                   "ts_learned_")):
        errors.append(f"dedup.semantic.keep: {sem['keep']} is written by a stage that runs after dedup; keep by "
                      "first, longest, none or an annotate signal (or run dedup semantic by hand afterwards)")
    if not has_embeddings(data):
        errors.append("dedup.semantic: needs embeddings; add an `embed:` section (or `embed` to annotate.signals)")


def _estimate(c: SemanticConfig, e: Corpus) -> StagePlan:
    """Each document's float16 vector (512 B at 256-d) plus its ids spill into per-cluster
    partitions; memory is the --memory budget at most (union-find: ~16 B per doc)."""
    budget = memory_plan("dedup semantic", c.memory, 0).total
    spill = e.docs * (2 * 256 + 24)
    return StagePlan("dedup semantic", f"SemDeDup at eps {', '.join(map(str, c.eps))}",
                     min(budget, spill) + 16 * e.docs, spill + e.docs * SET_BYTES_PER_DOC,
                     "per-cluster partitions are temporary")

def _report(res: SemanticResult) -> str:
    return cluster_report("dedup semantic", res, [
        f"  eps {e} (cosine >= {s['min_cosine']:g}): {s['n_clusters']:,} clusters, {s['n_docs_in_clusters']:,} docs "
        f"in clusters, {s['n_removed']:,} to drop ({100 * s['duplicate_fraction']:.2f}%)"
        for e, s in res.summary["eps"].items()])


CLI = CliSpec(
    help="SemDeDup: near-duplicates by embedding similarity",
    description="SemDeDup on the CPU over the embeddings of `textsieve embed DIR`: seeded mini-batch k-means (fit on "
                "a sample, assignment streamed), then within each cluster the pairs with cosine similarity >= 1 - "
                "EPS are duplicates; connected components; cluster id = the corpus ordinal of the earliest member. "
                "Writes dup_semantic_e<D>_cluster/_size/_keep per eps (0.05 -> e05) to DIR/sets/dedup_semantic/ and "
                "summary.json.",
    examples=("textsieve dedup semantic attrs-emb/ --eps 0.05",
              "textsieve dedup semantic attrs-emb/ --eps 0.05 --eps 0.1 --keep longest --overwrite",
              "textsieve dedup show attrs-emb/ --semantic --top 5"),
    report=_report)

STAGE = Stage("dedup_semantic", SemanticConfig, "dedup.semantic", _pipeline_run, order=70, call=run_semantic,
              cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs (its sets/embed_MODEL set)",
                       "progress": PROGRESS_REASON},
              complete=set_named("dedup_semantic"), upstream=_sets_read, check=_check_pipeline,
              estimate=_estimate,
              output_sets=lambda c, layout, where: [PlannedSet(SEMANTIC_SET, output_schema(list(c.eps)))])
