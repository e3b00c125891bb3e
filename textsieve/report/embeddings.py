"""The report's embedding sections: a 2-D map of a sample of the documents' embeddings, and the
semantic duplicate clusters `dedup semantic` found.

Why a map: an embedding set (`textsieve embed`) is 256 numbers per document, which no table
shows; projected on its two principal axes, a seeded sample shows at a glance whether the
sources overlap or sit apart, and, with a recipe, whether what it drops is one region (a topic,
a template) or spread over the corpus. Why PCA: it is exact, deterministic (numpy SVD of the
centred sample, each axis's sign fixed so its largest loading is positive) and needs no new
dependency; a non-linear map (UMAP, t-SNE) would be seeded but slower, and reads less honestly.

What is drawn, per embedding model in the folder:
* `SAMPLE` documents drawn without replacement by a seeded generator over the corpus order
  (all of them when fewer), their vectors read shard by shard (only the sampled rows kept);
* one point each, coloured by its source (the annotate shard = the input file it came from;
  the `MAX_SOURCES - 1` largest sources by name, the rest as "other");
* with a recipe (the selection's or `--recipe`), a second map of the same points coloured kept
  / dropped by the recipe (its survivors: every document rule passes and a line is left).
Points are drawn in a seeded shuffled order, so no source is always painted on top.

The semantic section reads `sets/dedup_semantic/summary.json` only (no text): per eps the cluster
counts and the largest clusters with their members' first lines and similarity. Its shape
mirrors fuzzy dedup's summary (see `stages.dedup_semantic`); missing keys are tolerated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

import fsspec
import numpy as np

from textsieve.io.attributes import attribute_set_dir
from textsieve.io.publish import summary_of
from textsieve.report.charts import fmt

SAMPLE = 2000  # documents drawn per embedding model
SEED = 0
MAX_SOURCES = 10  # colours; further sources are drawn as "other"
SAMPLE_TABLE = "__ts_embed_sample"
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#ff9da6", "#9d755d")
OTHER = "#bab0ac"
KEPT, DROPPED = "#2e7d32", "#c0392b"
SW, SH = 560, 420
PAD_L, PAD_R, PAD_T, PAD_B = 46, 16, 30, 40
MAX_CLUSTERS = 5  # example clusters shown per eps
MAX_MEMBERS = 6


@dataclass
class EmbeddingView:
    """One embedding model's sample, projected to 2-D."""

    model: str
    info: dict[str, Any]  # the set's summary.json (model, dim, model_fingerprint, pooling, n_docs ...)
    n_docs: int
    ids: list[str] = field(default_factory=list)
    xy: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    source: list[str] = field(default_factory=list)  # per point: the annotate shard (input file)
    kept: list[bool] | None = None  # per point: survives the recipe (None: no recipe)
    recipe: str | None = None
    explained: tuple[float, float] = (0.0, 0.0)  # share of the sample's variance on each axis
    order: list[int] = field(default_factory=list)  # drawing order (seeded shuffle)


# ---------------------------------------------------------------- collecting

def _json(set_dir: str) -> dict | None:
    """The summary.json of the attribute set at `set_dir`, or None."""
    return summary_of(set_dir)


def project(matrix: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """(n, 2) coordinates on the first two principal axes of the rows of `matrix`, and the share
    of the variance on each. Deterministic: float64 SVD of the centred rows; each axis's sign is
    chosen so that its largest-magnitude loading is positive."""
    x = np.asarray(matrix, np.float64)
    n = x.shape[0]
    if n == 0:
        return np.zeros((0, 2)), (0.0, 0.0)
    x = x - x.mean(axis=0)
    if n < 2 or not np.any(x):
        return np.zeros((n, 2)), (0.0, 0.0)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    axes = vt[:2]
    for i in range(axes.shape[0]):
        if axes[i, int(np.argmax(np.abs(axes[i])))] < 0:
            axes[i] = -axes[i]
    xy = x @ axes.T
    if xy.shape[1] < 2:
        xy = np.hstack([xy, np.zeros((n, 2 - xy.shape[1]))])
    var = s ** 2
    total = float(var.sum()) or 1.0
    share = [float(v) / total for v in var[:2]] + [0.0, 0.0]
    return xy, (share[0], share[1])


def _sample(directory: str, model: str, sample: int, seed: int) -> tuple[list[str], list[str], list[int],
                                                                         np.ndarray, int]:
    """(ids, source shards, rows, float32 matrix, total documents) of the seeded sample of the
    model's set, read one set shard at a time (only the sampled rows are kept)."""
    import pyarrow.parquet as pq

    from textsieve.embedding.store import column_name, set_name, to_numpy
    from textsieve.io.parquet_read import read_table

    fs, root = fsspec.core.url_to_fs(attribute_set_dir(directory, set_name(model)))
    root = root.rstrip("/")
    paths = sorted(fs.glob(f"{root}/**/*.parquet"))
    sizes = []
    for p in paths:
        with fs.open(p, "rb") as fh:
            sizes.append(pq.ParquetFile(fh).metadata.num_rows)
    total = sum(sizes)
    k = min(sample, total)
    picked = np.sort(np.random.default_rng(seed).choice(total, size=k, replace=False)) if k else np.zeros(0, np.int64)
    col = column_name(model)
    ids: list[str] = []
    shards: list[str] = []
    rows: list[int] = []
    mats = []
    start = 0
    for p, n in zip(paths, sizes):
        lo, hi = np.searchsorted(picked, [start, start + n])
        local = picked[lo:hi] - start
        start += n
        if not len(local):
            continue
        with fs.open(p, "rb") as fh:
            t = read_table(fh, columns=["id", "shard", "row", col]).take(local)
        ids += [str(v) for v in t.column("id").to_pylist()]
        shards += [str(v) for v in t.column("shard").to_pylist()]
        rows += [int(v) for v in t.column("row").to_pylist()]
        mats.append(to_numpy(t.column(col)))
    matrix = np.concatenate(mats) if mats else np.zeros((0, 0), np.float32)
    return ids, shards, rows, matrix, total


def _kept(con: Any, compiled: Any, shards: list[str], rows: list[int]) -> list[bool]:
    """Per sampled document: does it survive the recipe (every document rule passes and, with
    line rules, a line is left; `recipes.survivors`' definition)? One DuckDB query joined to
    the sample, no text read."""
    import pyarrow as pa

    conds = [f"coalesce({s}, FALSE)" for s in compiled.doc_rules.values()]
    if compiled.line_rules:
        conds.append(f"list_contains({compiled.line_mask_sql(list(compiled.line_rules))}, TRUE)")
    con.register(SAMPLE_TABLE, pa.table({"shard": pa.array(shards, pa.string()), "row": pa.array(rows, pa.int64())}))
    try:
        got = con.execute(f"SELECT a.shard, a.\"row\" FROM {compiled.from_sql()} JOIN {SAMPLE_TABLE} AS s "
                          f"ON a.shard = s.shard AND a.\"row\" = s.\"row\" WHERE {' AND '.join(conds) or 'TRUE'}"
                          ).fetchall()
    finally:
        con.unregister(SAMPLE_TABLE)
    keep = {(str(s), int(r)) for s, r in got}
    return [(s, r) in keep for s, r in zip(shards, rows)]


def embedding_views(directory: str, compiled: Any = None, con: Any = None, recipe: str | None = None,
                    sample: int = SAMPLE, seed: int = SEED) -> list[EmbeddingView]:
    """One view per embedding model of the annotate folder `directory` (none without a set).
    `compiled` (a `recipes.sql.Compiled`) and `con` (a DuckDB connection that reads its files):
    colour the points kept / dropped by that recipe too."""
    from textsieve.embedding.store import embedding_models, set_name
    out = []
    for model in embedding_models(directory):
        info = _json(attribute_set_dir(directory, set_name(model))) or {}
        ids, shards, rows, matrix, total = _sample(directory, model, sample, seed)
        xy, explained = project(matrix)
        order = [int(i) for i in np.random.default_rng(seed + 1).permutation(len(ids))]
        view = EmbeddingView(model, info, total, ids, xy, shards, explained=explained, order=order)
        if compiled is not None and con is not None and ids:
            view.kept = _kept(con, compiled, shards, rows)
            view.recipe = recipe
        out.append(view)
    return out


def semantic_summary(directory: str) -> dict | None:
    """The `sets/dedup_semantic` set's summary.json of the annotate folder, or None."""
    return _json(attribute_set_dir(directory, "dedup_semantic"))


# ---------------------------------------------------------------- drawing

def source_colours(sources: list[str]) -> dict[str, str]:
    """A colour per source: the largest `MAX_SOURCES - 1` (ties by name) get the palette in name
    order; with more sources, the rest share the "other" grey."""
    counts: dict[str, int] = {}
    for s in sources:
        counts[s] = counts.get(s, 0) + 1
    if len(counts) <= MAX_SOURCES:
        top = sorted(counts)
    else:
        top = sorted(sorted(counts, key=lambda s: (-counts[s], s))[:MAX_SOURCES - 1])
    colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(top)}
    return {s: colours.get(s, OTHER) for s in counts}


def _scale(v: np.ndarray, lo_px: float, hi_px: float) -> np.ndarray:
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (0.0, 1.0)
    span = hi - lo or 1.0
    lo, span = lo - 0.03 * span, span * 1.06
    return lo_px + (v - lo) / span * (hi_px - lo_px)


def scatter_svg(view: EmbeddingView, by: str = "source") -> str:
    """The sample as an inline SVG scatter: one `<circle class="pt">` per point, coloured by
    `by` ("source" or "kept"), with a legend and each point's id and source on hover."""
    if by == "kept":
        kept = view.kept or []
        colour = [KEPT if k else DROPPED for k in kept]
        n_kept = sum(kept)
        legend = [(f"kept ({n_kept:,})", KEPT), (f"dropped ({len(kept) - n_kept:,})", DROPPED)]
        what = [("kept" if k else "dropped") for k in kept]
    else:
        cmap = source_colours(view.source)
        colour = [cmap[s] for s in view.source]
        counts: dict[str, int] = {}
        for s in view.source:
            counts[s] = counts.get(s, 0) + 1
        named = [s for s in sorted(cmap) if cmap[s] != OTHER]
        legend = [(f"{s} ({counts[s]:,})", cmap[s]) for s in named]
        rest = sum(c for s, c in counts.items() if cmap[s] == OTHER)
        if rest:
            legend.append((f"{len(counts) - len(named):,} other sources ({rest:,})", OTHER))
        what = view.source
    name = f"embed-{view.model}-{by}"
    per_line = 3
    lh = 16 * ((len(legend) + per_line - 1) // per_line)
    h = SH + lh
    top, bottom = PAD_T + lh, h - PAD_B
    left, right = PAD_L, SW - PAD_R
    parts = [f'<svg class="chart" data-kind="scatter" data-chart="{escape(name)}" data-points="{len(view.ids)}" '
             f'viewBox="0 0 {SW} {h}" width="{SW}" height="{h}" role="img" '
             f'aria-label="{escape(f"embedding map of {view.model}, coloured by {by}")}" '
             'xmlns="http://www.w3.org/2000/svg">',
             f'<rect class="plot" x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
             'fill="#fbfcfd" stroke="#e4e7eb"/>']
    for k, (label, c) in enumerate(legend):
        x, y = 8 + (k % per_line) * ((SW - 16) / per_line), 6 + 16 * (k // per_line)
        parts.append(f'<rect x="{x:.1f}" y="{y + 2}" width="10" height="10" fill="{c}"/>')
        short = label if len(label) <= 40 else label[:39] + "…"
        parts.append(f'<text x="{x + 14:.1f}" y="{y + 11}" class="tick">{escape(short)}<title>{escape(label)}'
                     f'</title></text>')
    if len(view.ids):
        px = _scale(view.xy[:, 0], left + 4, right - 4)
        py = _scale(-view.xy[:, 1], top + 4, bottom - 4)  # up is positive
        for i in view.order:
            parts.append(f'<circle class="pt" cx="{px[i]:.1f}" cy="{py[i]:.1f}" r="2.6" fill="{colour[i]}" '
                         f'fill-opacity="0.75"><title>{escape(view.ids[i])} · {escape(what[i])}</title></circle>')
    e1, e2 = view.explained
    parts.append(f'<text x="{(left + right) / 2:.1f}" y="{h - 12}" class="axlabel" text-anchor="middle">'
                 f'principal axis 1 ({100 * e1:.1f}% of the variance)</text>')
    parts.append(f'<text transform="translate(16,{(top + bottom) / 2:.1f}) rotate(-90)" class="axlabel" '
                 f'text-anchor="middle">principal axis 2 ({100 * e2:.1f}%)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _model_table(view: EmbeddingView) -> str:
    info = view.info
    rows = [("model", info.get("model", view.model)), ("kind", info.get("model_kind", "")),
            ("dimensions", info.get("dim", "")), ("fingerprint", info.get("model_fingerprint", "")),
            ("model file", info.get("model_path", "")), ("column", info.get("column", "")),
            ("documents embedded", f"{view.n_docs:,}"), ("pooling", info.get("pooling", ""))]
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
                               for k, v in rows if v not in ("", None)) + "</table>"


def embeddings_section(views: list[EmbeddingView]) -> str:
    """The "Embeddings" section (a pointer to `textsieve embed` when the folder has no set)."""
    if not views:
        return ('<section id="embeddings"><h2>Embeddings</h2><p class="muted">No <code>_embed_*</code> attribute '
                'set (run <code>textsieve embed DIR</code>).</p></section>')
    out = ['<section id="embeddings"><h2>Embeddings</h2><p class="muted">A seeded sample of the documents, '
           'projected on the two principal axes of its embeddings (PCA): nearby points are documents the model '
           'finds similar. Hover a point for its id.</p>']
    for v in views:
        figs = [f'<figure><div class="t">coloured by source (input file)</div>{scatter_svg(v, "source")}'
                f'<figcaption>{len(v.ids):,} of {v.n_docs:,} documents (seed {SEED})</figcaption></figure>']
        if v.kept is not None:
            label = f" {v.recipe}" if v.recipe else ""
            figs.append(f'<figure><div class="t">kept / dropped by the recipe{escape(label)}</div>'
                        f'{scatter_svg(v, "kept")}<figcaption>{sum(v.kept):,} of {len(v.kept):,} sampled documents '
                        f'kept</figcaption></figure>')
        out.append(f'<h3 id="embed-{escape(v.model)}">Model <code>{escape(v.model)}</code></h3>{_model_table(v)}'
                   f'<div class="grid">{"".join(figs)}</div>')
    return "".join(out) + "</section>"


def _per_eps(summary: dict) -> dict[str, dict]:
    """The summary's per-eps records, whichever key holds them (`eps`, as fuzzy's `thresholds`)."""
    for key in ("eps", "per_eps", "thresholds"):
        value = summary.get(key)
        if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            return value
    return {}


def _eps_key(e: str) -> float:
    try:
        return float(e)
    except ValueError:
        return float("inf")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _member(m: dict) -> str:
    text = next((str(m[k]) for k in ("first_line", "line", "text", "sample") if m.get(k)), "")
    sim = next((_num(m.get(k)) for k in ("similarity", "cosine", "sim") if _num(m.get(k)) is not None), None)
    tag = f"<span class='muted'>cos {sim:.3f}</span> " if sim is not None else ""
    kept = " <b>kept</b>" if m.get("keep") is True or m.get("kept") is True else ""
    return (f"<div>{tag}<code>{escape(str(m.get('id', '')))}</code>{kept}"
            f"{' — ' + escape(text[:160]) if text else ''}</div>")


def semantic_section(summary: dict | None) -> str:
    """The "Semantic duplicates" section ("" without a `sets/dedup_semantic` set)."""
    if not summary:
        return ""
    per = _per_eps(summary)
    n_docs = _num(summary.get("n_docs"))
    settings = [(k, v) for k, v in summary.items()
                if k in ("model", "model_fingerprint", "keep", "seed") and not isinstance(v, (dict, list))]
    found = summary.get("kmeans")
    kmeans: dict = found if isinstance(found, dict) else {}
    settings += [(f"k-means {k}", fmt(v)) for k, v in kmeans.items() if k in ("clusters", "sample", "comparisons")
                 and _num(v) is not None]
    rows = []
    for e in sorted(per, key=_eps_key):
        v = per[e]
        frac = _num(v.get("duplicate_fraction"))
        if frac is None and n_docs:
            frac = (_num(v.get("n_removed")) or 0.0) / n_docs
        low = _num(v.get("min_cosine"))
        sim = f"{low:.3g}" if low is not None else f"{1 - _eps_key(e):.3g}" if _eps_key(e) != float("inf") else "–"
        rows.append(f"<tr><td>{escape(e)}</td><td class='n'>≥ {sim}</td>"
                    + "".join(f"<td class='n'>{fmt(v[k]) if _num(v.get(k)) is not None else '–'}</td>"
                              for k in ("pairs", "n_clusters", "n_docs_in_clusters", "n_removed"))
                    + f"<td class='n'>{f'{100 * frac:.2f}%' if frac is not None else '–'}</td></tr>")
    table = ("<table><tr><th>eps</th><th class='n'>cosine</th><th class='n'>pairs</th><th class='n'>duplicate "
             "clusters</th><th class='n'>documents in clusters</th><th class='n'>removed</th><th class='n'>% of "
             "corpus</th></tr>" + "".join(rows) + "</table>")
    sett = ("<p class='muted'>" + escape(", ".join(f"{k} {v}" for k, v in settings)) + "</p>") if settings else ""
    parts = [f'<section id="semantic"><h2>Semantic duplicates</h2><p class="muted">Documents whose embeddings have '
             f'cosine similarity ≥ 1 − eps to another in their k-means cluster, joined into clusters '
             f'(<code>textsieve dedup semantic</code>): paraphrases and templated pages MinHash misses.</p>'
             f'{sett}{table}']
    for e in sorted(per, key=_eps_key):
        clusters = per[e].get("top_clusters") or per[e].get("largest_clusters") or []
        clusters = [c for c in clusters if isinstance(c, dict)][:MAX_CLUSTERS]
        if not clusters:
            continue
        body = []
        for c in clusters:
            members = [m for m in c.get("members") or [] if isinstance(m, dict)]
            size = c.get("size", len(members))
            more = (f"<div class='muted'>… {int(size) - MAX_MEMBERS:,} more</div>"
                    if _num(size) is not None and int(size) > MAX_MEMBERS and len(members) >= MAX_MEMBERS else "")
            body.append(f"<tr><td class='n'>{fmt(size) if _num(size) is not None else '–'}</td>"
                        f"<td><code>{escape(str(c.get('cluster_id', c.get('cluster', ''))))}</code></td>"
                        f"<td>{''.join(_member(m) for m in members[:MAX_MEMBERS])}{more}</td></tr>")
        parts.append(f"<h3>Largest semantic clusters at eps {escape(e)}</h3><table><tr><th class='n'>size</th>"
                     "<th>cluster id</th><th>members (cosine to the kept member, first line of text)</th></tr>"
                     + "".join(body) + "</table>")
    return "".join(parts) + "</section>"


def embedding_links(views: list[EmbeddingView], summary: dict | None) -> list[tuple[str, str, int]]:
    """Navigation entries of the two sections."""
    return [("embeddings", "Embeddings", 1)] + ([("semantic", "Semantic duplicates", 1)] if summary else [])


__all__ = ["EmbeddingView", "embedding_links", "embedding_views", "embeddings_section", "project", "scatter_svg",
           "semantic_section", "semantic_summary", "source_colours"]
