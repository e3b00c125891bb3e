"""`dedup show`: explain one fuzzy cluster (members, first lines, pairwise estimated Jaccard)
and `export rpv2-clusters`: RPv2's cluster file (spec §8 step 5) from the `sets/dedup_fuzzy` set."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable, first_lines, gather_texts, id_ints
from textsieve.dedup.lsh import BAND_PREFIXES, band_values, estimated_jaccard, signature_column
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import attribute_shards, set_files
from textsieve.io.parquet_read import read_table
from textsieve.stages.dedup.fuzzy import FUZZY_SET, tkey


def _thresholds(names: list[str]) -> list[str]:
    return sorted({n[:-len("_cluster")] for n in names if n.startswith("dup_fuzzy_t") and n.endswith("_cluster")})


def find_cluster(directory: str, cluster: int, threshold: float | None = None) -> tuple[str, list[tuple[int, int]]]:
    """(column stem, [(shard index, local index)]) of the members of `cluster`; without a
    threshold, the lowest threshold whose column holds the cluster (its largest form)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    table = ShardTable.open(directory)
    fs, by_rel = set_files(directory, FUZZY_SET)
    paths = list(by_rel.values())
    names = pq.read_schema(fs.open(paths[0], "rb")).names
    stems = [tkey(threshold)] if threshold is not None else sorted(_thresholds(names), key=lambda s: int(s[11:]))
    for stem in stems:
        if f"{stem}_cluster" not in names:
            raise ValueError(f"no {stem}_cluster column in {paths[0]}; run `textsieve dedup fuzzy` with that threshold")
        hits = []
        for i, rel in enumerate(table.rels):
            with fs.open(by_rel[rel], "rb") as fh:
                col = read_table(fh, columns=[f"{stem}_cluster"]).column(0)
            idx = np.flatnonzero(to_numpy(pc.fill_null(pc.equal(col, pa.scalar(cluster, pa.uint64())), False)))
            hits += [(i, int(k)) for k in idx]
        if hits:
            return stem, hits
    raise ValueError(f"cluster {cluster} not found in {directory}/sets/{FUZZY_SET}")


def show_cluster(directory: str, cluster: int, threshold: float | None = None, bands: str = "rpv2",
                 lines: int = 2) -> str:
    """A printable report of one cluster."""
    table = ShardTable.open(directory)
    stem, hits = find_cluster(directory, cluster, threshold)
    sig_col = signature_column(table.schema(0).names, BAND_PREFIXES[bands])
    ids, sigs, ords = [], [], []
    for i, k in hits:
        t = table.read(i, ["id", "shard", "row"] + ([sig_col] if sig_col else [])).slice(k, 1)
        ids.append((t.column("id")[0].as_py(), t.column("shard")[0].as_py(), t.column("row")[0].as_py()))
        if sig_col:
            _, v = band_values(t.column(sig_col), sig_col)
            sigs.append(v.reshape(-1) if v.shape[0] else None)
        ords.append(int(table.base[i] + k))
    texts = gather_texts(table, np.asarray(ords))
    ii = id_ints(pa.array([x[0] for x in ids]))
    order = np.argsort(ii, kind="stable")
    out = [f"cluster {cluster} ({stem}): {len(hits)} documents"]
    for n, k in enumerate(order):
        doc_id, shard, row = ids[k]
        out.append(f"[{n}] {doc_id}  (id_int {int(ii[k])}, {shard} row {row})")
        out.append(f"     {first_lines(texts[ords[k]], lines)}")
    if sig_col and all(s is not None for s in sigs) and len(hits) > 1:
        out.append(f"pairwise estimated Jaccard ({sig_col}):")
        m = np.stack([sigs[k] for k in order])
        head = "      " + "".join(f"[{n}]".rjust(7) for n in range(len(order)))
        out.append(head)
        for a in range(len(order)):
            row = estimated_jaccard(np.repeat(m[a:a + 1], len(order), axis=0), m)
            out.append(f"[{a}]".ljust(6) + "".join(f"{x:7.3f}" for x in row))
    return "\n".join(out)


DEFAULT_TOP = 20  # clusters listed by `dedup show` without --cluster


def list_clusters(directory: str, threshold: float | None = None, top: int = DEFAULT_TOP, width: int = 100) -> str:
    """A printable list of the `top` largest clusters at `threshold` (default: the lowest stored
    threshold, whose clusters are the largest): size, cluster id and the first line of its
    representative (the member whose id_int is the cluster id). Why: `--cluster ID` needs an id,
    and this is where a user finds one. Reads only the cluster columns plus a few texts."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    if top < 1:
        raise ValueError(f"dedup show: --top must be at least 1, not {top}")
    table = ShardTable.open(directory)
    fs, by_rel = set_files(directory, FUZZY_SET)
    paths = list(by_rel.values())
    stems = sorted(_thresholds(pq.read_schema(fs.open(paths[0], "rb")).names), key=lambda s: int(s[11:]))
    if not stems:
        raise ValueError(f"no dup_fuzzy_t*_cluster columns in {directory}/sets/{FUZZY_SET}; "
                         "run `textsieve dedup fuzzy`")
    stem = tkey(threshold) if threshold is not None else stems[0]
    if stem not in stems:
        have = ", ".join(f"{int(s[11:]) / 100:g}" for s in stems)
        raise ValueError(f"dedup show: no clusters at threshold {threshold} in {directory}/sets/{FUZZY_SET} "
                         f"(stored: {have}); run `textsieve dedup fuzzy {directory} --thresholds {threshold}`")
    col = f"{stem}_cluster"
    per_shard = []  # (cluster id per row, in a cluster?) per annotate shard
    for rel in table.rels:
        with fs.open(by_rel[rel], "rb") as fh:
            c = read_table(fh, columns=[col]).column(0)
        valid = to_numpy(pc.is_valid(c))
        per_shard.append((to_numpy(pc.fill_null(c, 0)).astype(np.uint64), valid))
    everything = np.concatenate([v[m] for v, m in per_shard]) if per_shard else np.zeros(0, np.uint64)
    cids, sizes = np.unique(everything, return_counts=True)
    order = np.lexsort((cids, -sizes))[:top]  # largest first, ties by id
    want = {int(cids[k]): int(sizes[k]) for k in order}
    reps: dict[int, int] = {}  # cluster id -> ordinal of its representative
    wanted = np.asarray(list(want), dtype=np.uint64)
    for i, (cl, valid) in enumerate(per_shard):
        hit = np.flatnonzero(np.isin(cl, wanted) & valid)
        if not hit.shape[0]:
            continue
        ii = id_ints(table.read(i, ["id"]).column("id").take(pa.array(hit)))
        for k, v in zip(hit, ii):
            if int(v) == int(cl[k]):
                reps[int(v)] = int(table.base[i] + k)
    texts = gather_texts(table, np.asarray(list(reps.values()), dtype=np.int64)) if reps else {}
    t = f"{int(stem[11:]) / 100:g}"
    out = [f"{cids.shape[0]:,} clusters at threshold {t} ({col}), {int(sizes.sum()):,} documents in them"
           + (f"; the {len(order)} largest:" if cids.shape[0] else "")]
    if cids.shape[0]:
        w = max(len(str(int(c))) for c in want)
        out.append(f"{'size':>8}  {'cluster id':<{w}}  first line (of the member with the smallest id_int)")
        for cid, size in want.items():
            text = texts.get(reps.get(cid, -1), "")
            out.append(f"{size:>8,}  {cid:<{w}}  {first_lines(text, 1, width)}")
        out.append(f"members of one: textsieve dedup show {directory} --cluster ID"
                   + (f" --threshold {t}" if len(stems) > 1 else ""))
    if len(stems) > 1:
        out.append("thresholds stored: " + ", ".join(f"{int(s[11:]) / 100:g}" for s in stems) + " (--threshold T)")
    return "\n".join(out)


def show(directory: str, cluster: int | None = None, threshold: float | None = None, bands: str = "rpv2",
         lines: int = 2, top: int = DEFAULT_TOP, semantic: bool = False, eps: float | None = None) -> str:
    """`dedup show`: one cluster's report with `cluster`, else the list of the largest clusters
    (`semantic`: of `dedup semantic` at `eps`, see `dedup_show_semantic`)."""
    if semantic or eps is not None:
        from textsieve.stages.dedup.show_semantic import list_semantic, show_semantic_cluster

        if cluster is None:
            return list_semantic(directory, eps, top)
        return show_semantic_cluster(directory, cluster, eps, lines=lines)
    if cluster is None:
        return list_clusters(directory, threshold, top)
    return show_cluster(directory, cluster, threshold, bands=bands, lines=lines)


def export_rpv2_clusters(directory: str, threshold: float, output: str) -> int:
    """Write RPv2's cluster file: `id`, `id_int`, `cluster_id` of documents in clusters of >= 2,
    ordered by (cluster_id, id_int). Returns the number of rows."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command

    from textsieve.io.locations import source_locations
    from textsieve.io.overlap import check_apart

    check_apart("export rpv2-clusters", output, [directory, *source_locations(directory)])
    import fsspec

    fs, paths = attribute_shards(directory, FUZZY_SET)
    col = f"{tkey(threshold)}_cluster"
    parts = []
    for p in paths:
        with fs.open(p, "rb") as fh:
            if col not in pq.read_schema(fh).names:
                raise ValueError(f"{p}: no column {col}; run "
                                 f"`textsieve dedup fuzzy {directory} --thresholds {threshold}`")
        with fs.open(p, "rb") as fh:
            t = read_table(fh, columns=["id", col])
        t = t.filter(pc.is_valid(t.column(col)))
        parts.append(pa.table({"id": t.column("id"), "id_int": pa.array(id_ints(t.column("id")), pa.uint64()),
                               "cluster_id": t.column(col).cast(pa.uint64())}))
    table = pa.concat_tables(parts) if parts else pa.table({"id": pa.array([], pa.string())})
    table = table.sort_by([("cluster_id", "ascending"), ("id_int", "ascending")])
    ofs, opath = fsspec.core.url_to_fs(output)
    writer = AtomicParquetWriter(ofs, opath, table.schema)
    writer.write(table)
    writer.close()
    return table.num_rows
