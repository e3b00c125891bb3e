"""`learn` with embeddings, n-grams or boosted trees: gather each feature set of the labelled
documents and fit a `fusion.FusedModel`.

Why apart from `model.train`: that one builds the SQL-compiled logistic model from signals
alone and must stay byte-for-byte what it was; this one reads the other feature sets (the
`sets/embed_<model>` set, texts re-read for n-grams) of exactly the rows `model.read_source`
selected, matched by (annotate shard, position).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from textsieve.io.arrow_arrays import to_numpy
from textsieve.learned.model import LearnConfig, LearnResult, read_source
from textsieve.learned.views import FeatureSetError, embed_rows, embedding_info, ngram_matrix, shard_texts


def default_name(cfg: LearnConfig) -> str:
    """The model's name: `cfg.name`, else the output file's stem made a valid name, else "quality"."""
    import re

    from textsieve.learned.fusion import check_name

    if cfg.name:
        return check_name(cfg.name)
    if cfg.output:
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(cfg.output).name.split(".")[0])
        if stem:
            return stem
    return "quality"


def train_fused(cfg: LearnConfig, views: list[str]) -> LearnResult:
    """Fit, cross-validate and (with `output`) save a fused model over `views`."""
    import scipy.sparse as sp

    from textsieve.learned.features import compute_features
    from textsieve.learned.fusion import fit_fused

    name = default_name(cfg)
    names: list[str] = []
    signal_blocks, embed_blocks, ngram_blocks, ys = [], [], [], []
    ids: list[str] = []
    unlabelled = 0
    embed_spec: dict[str, Any] | None = None
    for src in cfg.sources:
        table, names = read_source(src, names or cfg.features, need_signals="signals" in views)
        y = to_numpy(table.column("label")).astype(np.float64)
        known = ~np.isnan(y)
        unlabelled += int((~known).sum())
        where = [(r, int(p)) for r, p, k in zip(table.column("__rel").to_pylist(), table.column("__pos").to_pylist(),
                                                known) if k]
        if "signals" in views:
            feats = compute_features(table, names)
            signal_blocks.append(np.column_stack([feats[n] for n in names])[known])
        if "embed" in views:
            E, model_name = embed_rows(src.directory, cfg.embed_model, where)
            info = embedding_info(src.directory, model_name)
            if embed_spec is not None and info["fingerprint"] != embed_spec["fingerprint"]:
                raise FeatureSetError(f"feature set embed: {src.directory} holds embeddings of another model "
                                      f"({info}) than the first source ({embed_spec})")
            embed_spec = info
            embed_blocks.append(E)
        if "ngrams" in views:
            ngram_blocks.append(ngram_matrix(shard_texts(src.directory, where)))
        ys.append(y[known].astype(np.int64))
        ids += [i for i, k in zip(table.column("id").to_pylist(), known) if k]
    y = np.concatenate(ys)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if min(n_pos, n_neg) < 2:
        raise ValueError(f"need at least 2 labelled documents of each class, got {n_pos} positive and "
                         f"{n_neg} negative")
    matrices: dict[str, Any] = {}
    if signal_blocks:
        matrices["signals"] = np.vstack(signal_blocks)
    if embed_blocks:
        matrices["embed"] = np.vstack(embed_blocks).astype(np.float64)
    if ngram_blocks:
        matrices["ngrams"] = sp.vstack(ngram_blocks).tocsr()
    folds = max(2, min(cfg.folds, n_pos, n_neg))
    training = {"sources": [s.describe() for s in cfg.sources], "unlabelled_skipped": unlabelled}
    model, oof = fit_fused(name=name, views=matrices, signal_names=names if "signals" in views else [], y=y,
                           ids=ids, kind=cfg.model, C=cfg.C, class_weight=cfg.class_weight, folds=folds,
                           seed=cfg.seed, embed=embed_spec, training=training)
    if cfg.output:
        model.save(cfg.output)
    return LearnResult(model, n_pos, n_neg, unlabelled, oof, y)
