"""Where embeddings are stored and how consumers read them back.

The `embed` stage writes the attribute set `DIR/sets/embed_<model>/` (one shard per annotate shard,
rows in annotate's order) with the column `ts_embed_<model>`: `fixed_size_list<float16>[dim]`,
unit length. float16 halves the disk and memory of float32 at a cosine error below 1e-3,
which no consumer here (k-means, thresholds at 1 - eps >= 0.8, logistic regression) can see.
Readers get float32 matrices.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.io.arrow_arrays import to_numpy as values_of
from textsieve.io.attributes import attribute_set_dir
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import SUMMARY

SET_PREFIX = "embed_"
COLUMN_PREFIX = "ts_embed_"


class EmbeddingsMissing(TextsieveError, ValueError):
    """The folder has no (or more than one, unnamed) embedding set."""


def set_name(model: str) -> str:
    return SET_PREFIX + model


def column_name(model: str) -> str:
    return COLUMN_PREFIX + model


def embedding_type(dim: int) -> pa.DataType:
    return pa.list_(pa.float16(), dim)


def to_arrow(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """float32 (n, dim) -> fixed_size_list<float16>[dim]."""
    n, dim = matrix.shape
    flat = pa.array(np.ascontiguousarray(matrix, np.float16).reshape(-1), pa.float16())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """fixed_size_list<float16>[dim] -> float32 (n, dim)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    dim = column.type.list_size
    flat = column.flatten() if column.offset == 0 else column.values.slice(column.offset * dim, len(column) * dim)
    return np.asarray(values_of(flat), np.float32).reshape(len(column), dim)


def embedding_models(directory: str) -> list[str]:
    """The models with a published embedding set in `directory` (sorted)."""

    sets = attribute_set_dir(directory, "")  # DIR/sets/ (an older layout is moved into this one first)
    fs, root = fsspec.core.url_to_fs(sets)
    root = root.rstrip("/")
    out = []
    for p in fs.glob(f"{root}/{SET_PREFIX}*"):
        if fs.isdir(p) and fs.exists(f"{p}/{SUMMARY}"):
            out.append(p.rstrip("/").rsplit("/", 1)[-1][len(SET_PREFIX):])
    return sorted(out)


def resolve_model(directory: str, model: str | None) -> str:
    """`model`, or the folder's only embedding model; a clear error otherwise."""
    have = embedding_models(directory)
    if model is not None:
        if model not in have:
            raise EmbeddingsMissing(f"{directory}: no embeddings of model {model!r} (have: "
                                    f"{', '.join(have) or 'none'}); run `textsieve embed {directory}` first")
        return model
    if not have:
        raise EmbeddingsMissing(f"{directory}: no embeddings; run `textsieve embed {directory}` first")
    if len(have) > 1:
        raise EmbeddingsMissing(f"{directory}: embeddings of several models ({', '.join(have)}); say which "
                                "with --embed-model")
    return have[0]


@dataclass
class EmbeddingShard:
    rel: str  # the shard's path relative to the set folder (= the annotate shard's)
    ids: list[str]
    matrix: np.ndarray  # float32 (n, dim)


def iter_embeddings(directory: str, model: str | None = None, *, ids: bool = True,
                    rels: Collection[str] | None = None) -> Iterator[EmbeddingShard]:
    """The set's shards in corpus order (sorted paths), each as a float32 matrix; with `rels`
    only those shards are read (a labelled subset of a big pool)."""
    name = resolve_model(directory, model)
    fs, root = fsspec.core.url_to_fs(attribute_set_dir(directory, set_name(name)))
    root = root.rstrip("/")
    col = column_name(name)
    for p in sorted(fs.glob(f"{root}/**/*.parquet")):
        if rels is not None and p[len(root) + 1:] not in rels:
            continue
        with fs.open(p, "rb") as fh:
            t = read_table(fh, columns=["id", col] if ids else [col])
        yield EmbeddingShard(rel=p[len(root) + 1:], ids=t.column("id").to_pylist() if ids else [],
                             matrix=to_numpy(t.column(col)) if t.num_rows else np.zeros((0, 0), np.float32))


def read_embeddings(directory: str, model: str | None = None) -> tuple[list[str], np.ndarray]:
    """All document ids and one float32 matrix (corpus order) - for corpora that fit in memory."""
    all_ids: list[str] = []
    mats = []
    for s in iter_embeddings(directory, model):
        all_ids += s.ids
        if len(s.ids):
            mats.append(s.matrix)
    return all_ids, (np.concatenate(mats) if mats else np.zeros((0, 0), np.float32))
