"""`dedup show`: explain one fuzzy cluster (members, first lines, pairwise estimated Jaccard)
and `export rpv2-clusters`: RPv2's cluster file (spec §8 step 5) from the `_dedup_fuzzy` set."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable, first_lines, gather_texts, id_ints
from textsieve.dedup.lsh import BAND_PREFIXES, band_values, estimated_jaccard, signature_column
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import attribute_shards
from textsieve.stages.dedup import FUZZY_SET, tkey


def _thresholds(names: list[str]) -> list[str]:
    return sorted({n[:-len("_cluster")] for n in names if n.startswith("dup_fuzzy_t") and n.endswith("_cluster")})


def find_cluster(directory: str, cluster: int, threshold: float | None = None) -> tuple[str, list[tuple[int, int]]]:
    """(column stem, [(shard index, local index)]) of the members of `cluster`; without a
    threshold, the lowest threshold whose column holds the cluster (its largest form)."""
    table = ShardTable.open(directory)
    fs, paths = attribute_shards(directory, FUZZY_SET)
    by_rel = {p.split(f"/_{FUZZY_SET}/", 1)[1]: p for p in paths}
    names = pq.read_schema(fs.open(paths[0], "rb")).names
    stems = [tkey(threshold)] if threshold is not None else sorted(_thresholds(names), key=lambda s: int(s[11:]))
    for stem in stems:
        if f"{stem}_cluster" not in names:
            raise ValueError(f"no {stem}_cluster column in {paths[0]}; run `textsieve dedup fuzzy` with that threshold")
        hits = []
        for i, rel in enumerate(table.rels):
            with fs.open(by_rel[rel], "rb") as fh:
                col = pq.read_table(fh, columns=[f"{stem}_cluster"]).column(0)
            idx = np.flatnonzero(pc.fill_null(pc.equal(col, pa.scalar(cluster, pa.uint64())), False).to_numpy(
                zero_copy_only=False))
            hits += [(i, int(k)) for k in idx]
        if hits:
            return stem, hits
    raise ValueError(f"cluster {cluster} not found in {directory}/_{FUZZY_SET}")


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


def export_rpv2_clusters(directory: str, threshold: float, output: str) -> int:
    """Write RPv2's cluster file: `id`, `id_int`, `cluster_id` of documents in clusters of >= 2,
    ordered by (cluster_id, id_int). Returns the number of rows."""
    import fsspec

    fs, paths = attribute_shards(directory, FUZZY_SET)
    col = f"{tkey(threshold)}_cluster"
    parts = []
    for p in paths:
        with fs.open(p, "rb") as fh:
            if col not in pq.read_schema(fh).names:
                raise ValueError(f"{p}: no column {col}; run `textsieve dedup fuzzy {directory} --threshold {threshold}`")
        with fs.open(p, "rb") as fh:
            t = pq.read_table(fh, columns=["id", col])
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
