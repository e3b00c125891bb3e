"""Feature sets ("views") a learned filter may use beside the stored signals.

  signals  the signal features of `learned.features` (median-imputed, standardised)
  embed    the document's stored embedding (`sets/embed_<model>`, `embedding.store`): unit rows
  ngrams   hashed word/punctuation uni- and bigrams of the text (the DSIR featurizer,
           `text.hashed_ngrams`), log(1 + count) per bucket, each row scaled to unit length

Why these and why so: signals are cheap and interpretable; an embedding sees topic and style;
n-grams see the words themselves. The n-gram view re-reads texts from the annotate shards'
sources (nothing is stored), the embed view reads the set `textsieve embed` wrote. Rows are
matched to the attribute rows by (annotate shard, position), never by id, so repeated ids
cannot mix documents up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from textsieve.errors import TextsieveError

VIEWS = ("signals", "embed", "ngrams")
DENSE_VIEWS = ("signals", "embed")
#: the n-gram space of the `ngrams` view (recorded in every model that uses it)
NGRAM_BUCKETS = 1 << 14
NGRAM_ORDER = 2
NGRAM_SEED = 0
NGRAM_WEIGHTING = "log1p-count-l2"


class FeatureSetError(TextsieveError, ValueError):
    """An unknown feature set, or one whose data the annotate folder does not have."""


def parse_views(spec: str | Sequence[str] | None) -> list[str]:
    """Feature sets from "signals,embed" or a list, in the canonical order (signals, embed,
    ngrams), each once; None or empty = signals only (today's default)."""
    if spec is None:
        return ["signals"]
    items = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec)]
    items = [s for s in items if s]
    if "all" in items:
        items = [s for s in items if s != "all"] + list(VIEWS)
    unknown = [s for s in items if s not in VIEWS]
    if unknown:
        raise FeatureSetError(f"unknown feature set(s) {', '.join(map(repr, unknown))}; choose from "
                              f"{', '.join(VIEWS)} (comma-separated) or all")
    return [v for v in VIEWS if v in items] or ["signals"]


def ngram_params() -> Any:
    from textsieve.text.hashed_ngrams import HashedNgramParams

    return HashedNgramParams(buckets=NGRAM_BUCKETS, ngrams=NGRAM_ORDER, seed=NGRAM_SEED)


def ngram_spec() -> dict[str, Any]:
    """What defines the n-gram view's space (a model refuses texts featurized otherwise)."""
    return {**ngram_params().to_json(), "weighting": NGRAM_WEIGHTING}


def ngram_matrix(texts: Sequence[str]) -> Any:
    """The `ngrams` view of `texts`: SciPy CSR (n, NGRAM_BUCKETS), float64."""
    from scipy.sparse import csr_matrix

    from textsieve.text.hashed_ngrams import featurize

    params = ngram_params()
    if not texts:
        return csr_matrix((0, params.buckets))
    b = featurize(list(texts), params)
    counts = np.diff(b.offsets)
    rows = np.repeat(np.arange(len(texts)), counts)
    m = csr_matrix((np.ones(len(b.buckets)), (rows, b.buckets.astype(np.int64))), shape=(len(texts), params.buckets))
    m.sum_duplicates()
    m.data = np.log1p(m.data)
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    m = csr_matrix(m.multiply(1.0 / norms[:, None]))
    return m


def embed_rows(directory: str, model: str | None, wanted: Iterable[tuple[str, int]]) -> tuple[np.ndarray, str]:
    """Embeddings of the documents at (annotate shard rel, position) `wanted`, in that order,
    and the embedding model's name; FeatureSetError naming `textsieve embed` when missing."""
    from textsieve.embedding.store import EmbeddingsMissing, iter_embeddings, resolve_model

    try:
        name = resolve_model(directory, model)
    except EmbeddingsMissing as exc:
        raise FeatureSetError(f"feature set embed: {exc}") from None
    wanted = list(wanted)
    if not wanted:  # only the check that the set is there
        return np.zeros((0, 0), np.float32), name
    by_rel: dict[str, set[int]] = {}
    for rel, pos in wanted:
        by_rel.setdefault(rel, set()).add(pos)
    # only the wanted rows are kept, one shard in memory at a time (a labelled subset of a big pool)
    kept: dict[str, np.ndarray] = {}  # rel -> the wanted rows' vectors
    positions: dict[str, np.ndarray] = {}  # rel -> their (sorted) positions in the shard
    sizes: dict[str, int] = {}
    for s in iter_embeddings(directory, name, ids=False, rels=by_rel):
        at = np.asarray(sorted(p for p in by_rel[s.rel] if p < len(s.matrix)), np.int64)
        sizes[s.rel] = len(s.matrix)
        kept[s.rel], positions[s.rel] = s.matrix[at], at
    out = []
    for rel, pos in wanted:
        if rel not in sizes or pos >= sizes[rel]:
            raise FeatureSetError(f"feature set embed: {directory}: the embeddings do not cover shard {rel!r} "
                                  f"(made before the documents were annotated again?); run "
                                  f"`textsieve embed {directory} --overwrite`")
        out.append(kept[rel][int(np.searchsorted(positions[rel], pos))])
    return np.vstack(out).astype(np.float32), name


def embedding_info(directory: str, name: str) -> dict[str, Any]:
    """The set's model identity (name, fingerprint, dim) from its summary.json."""


    from textsieve.embedding.store import set_name
    from textsieve.io.attributes import set_summary

    summary = set_summary(directory, set_name(name)) or {}
    return {"model": name, "fingerprint": summary.get("model_fingerprint") or summary.get("fingerprint"),
            "dim": summary.get("dim")}


def shard_texts(directory: str, wanted: Iterable[tuple[str, int]]) -> list[str]:
    """Texts of the documents at (annotate shard rel, position), re-read from the sources."""
    import fsspec

    from textsieve.io.attributes import attribute_shards, read_shard_meta, shard_rel, source_documents
    from textsieve.io.parquet_read import read_table
    from textsieve.io.source_roots import trusted

    wanted = list(wanted)
    _, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    fs, paths = attribute_shards(directory)
    by_rel: dict[str, list[str]] = {}
    for path in paths:
        rel = shard_rel(root, path)
        if not any(r == rel for r, _ in wanted):
            continue
        meta = trusted(read_shard_meta(fs, path), fs, path)
        if "source_shard" not in meta:
            raise FeatureSetError(f"feature set ngrams: {path} has no source metadata; cannot re-read its texts")
        with fs.open(path, "rb") as fh:
            rows = read_table(fh, columns=["row"]).column("row").to_pylist()
        texts = {d.row: d.text for d in source_documents(meta)}
        missing = [r for r in rows if r not in texts]
        if missing:
            raise FeatureSetError(f"feature set ngrams: {path}: its source {meta.get('source')!r} changed since "
                                  "annotate")
        by_rel[rel] = [texts[r] for r in rows]
    return [by_rel[rel][pos] for rel, pos in wanted]
