"""`dedup show --semantic`: the largest semantic clusters, or one cluster's members with their
pairwise cosine similarity (from the `sets/dedup_semantic` set and the embeddings it was made from).

Why pairwise cosine: components are transitive (a ~ b ~ c joins a and c even when their own
similarity is below 1 - eps), and the matrix shows where a cluster's chain runs.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable, first_lines, gather_texts
from textsieve.dedup.semantic_vectors import VectorSet
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import set_files
from textsieve.io.parquet_read import read_table
from textsieve.stages.dedup.semantic import SEMANTIC_SET, SemanticError, ekey

STEM = "dup_semantic_e"
SHOWN = 50  # members printed by --cluster
MATRIX = 12  # members in the pairwise cosine matrix


def _stems(names: list[str]) -> list[str]:
    """Stored column stems, loosest eps first (its clusters are the largest)."""
    stems = {n[:-len("_cluster")] for n in names if n.startswith(STEM) and n.endswith("_cluster")}
    return sorted(stems, key=lambda s: -float("0." + s[len(STEM):]))


def _eps_text(stem: str) -> str:
    return f"{float('0.' + stem[len(STEM):]):g}"


def _cluster_columns(directory: str, eps: float | None) -> tuple[ShardTable, str, list[str], list[tuple]]:
    """(table, stem, all stems, per shard (cluster values, keep, valid)) of the chosen eps."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    table = ShardTable.open(directory)
    fs, by_rel = set_files(directory, SEMANTIC_SET)
    paths = list(by_rel.values())
    with fs.open(paths[0], "rb") as fh:
        stems = _stems(pq.read_schema(fh).names)
    if not stems:
        raise SemanticError(f"no {STEM}*_cluster columns in {directory}/sets/{SEMANTIC_SET}; run "
                            "`textsieve dedup semantic`")
    stem = ekey(eps) if eps is not None else stems[0]
    if stem not in stems:
        raise SemanticError(f"dedup show: no semantic clusters at eps {eps} in {directory}/sets/{SEMANTIC_SET} "
                            f"(stored: {', '.join(_eps_text(s) for s in stems)}); run "
                            f"`textsieve dedup semantic {directory} "
                            f"--eps {eps}`")
    per_shard = []
    for rel in table.rels:
        with fs.open(by_rel[rel], "rb") as fh:
            t = read_table(fh, columns=[f"{stem}_cluster", f"{stem}_keep"])
        c = t.column(0)
        per_shard.append((to_numpy(pc.fill_null(c, -1)).astype(np.int64),
                          to_numpy(t.column(1)).astype(bool),
                          to_numpy(pc.is_valid(c))))
    return table, stem, stems, per_shard


def list_semantic(directory: str, eps: float | None = None, top: int = 20, width: int = 100) -> str:
    """The `top` largest semantic clusters at `eps` (default: the loosest stored): size, cluster
    id and the first line of its earliest member (whose ordinal is the id)."""
    if top < 1:
        raise SemanticError(f"dedup show: --top must be at least 1, not {top}")
    table, stem, stems, per_shard = _cluster_columns(directory, eps)
    everything = np.concatenate([c[v] for c, _, v in per_shard]) if per_shard else np.zeros(0, np.int64)
    cids, sizes = np.unique(everything, return_counts=True)
    order = np.lexsort((cids, -sizes))[:top]
    want = {int(cids[k]): int(sizes[k]) for k in order}
    texts = gather_texts(table, np.asarray(sorted(want), dtype=np.int64)) if want else {}
    out = [f"{cids.shape[0]:,} semantic clusters at eps {_eps_text(stem)} ({stem}_cluster), "
           f"{int(sizes.sum()):,} documents in them" + (f"; the {len(order)} largest:" if cids.shape[0] else "")]
    if want:
        w = max(len(str(c)) for c in want)
        out.append(f"{'size':>8}  {'cluster id':<{w}}  first line (of its earliest member)")
        for cid, size in want.items():
            out.append(f"{size:>8,}  {cid:<{w}}  {first_lines(texts.get(cid, ''), 1, width)}")
        out.append(f"members of one: textsieve dedup show {directory} --semantic --cluster ID"
                   + (f" --eps {_eps_text(stem)}" if len(stems) > 1 else ""))
    if len(stems) > 1:
        out.append("eps stored: " + ", ".join(_eps_text(s) for s in stems) + " (--eps E)")
    return "\n".join(out)


def show_semantic_cluster(directory: str, cluster: int, eps: float | None = None, lines: int = 2,
                          embed_model: str | None = None) -> str:
    """One semantic cluster: its members (kept ones marked) and their pairwise cosine."""
    table, stem, _, per_shard = _cluster_columns(directory, eps)
    ords, keep = [], []
    for i, (c, k, v) in enumerate(per_shard):
        hit = np.flatnonzero((c == cluster) & v)
        ords += [int(table.base[i] + x) for x in hit]
        keep += [bool(k[x]) for x in hit]
    if not ords:
        raise SemanticError(f"semantic cluster {cluster} not found at eps {_eps_text(stem)} in "
                            f"{directory}/sets/{SEMANTIC_SET}; list them with "
                            f"`textsieve dedup show {directory} --semantic`")
    total = len(ords)
    ords, keep = ords[:SHOWN], keep[:SHOWN]
    texts = gather_texts(table, np.asarray(ords))
    vecs = VectorSet.open(table, embed_model).take(np.asarray(ords[:MATRIX]))
    out = [f"semantic cluster {cluster} (eps {_eps_text(stem)}, cosine >= {1 - float(_eps_text(stem)):g}): "
           f"{total} documents" + (f", the first {SHOWN} in corpus order:" if total > SHOWN else "")]
    for n, o in enumerate(ords):
        i = int(np.searchsorted(table.base, o, side="right") - 1)
        row = table.read(i, ["id", "shard", "row"]).slice(o - int(table.base[i]), 1).to_pylist()[0]
        out.append(f"[{n}] {row['id']}  ({row['shard']} row {row['row']}){'  kept' if keep[n] else ''}")
        out.append(f"     {first_lines(texts[o], lines)}")
    if len(vecs) > 1:
        m = np.stack([vecs[o] for o in ords[:MATRIX]])
        sims = np.minimum(m @ m.T, 1.0)
        out.append("pairwise cosine similarity" + (f" (first {MATRIX})" if len(ords) > MATRIX else "") + ":")
        out.append("      " + "".join(f"[{n}]".rjust(7) for n in range(m.shape[0])))
        for a in range(m.shape[0]):
            out.append(f"[{a}]".ljust(6) + "".join(f"{x:7.3f}" for x in sims[a]))
    return "\n".join(out)
