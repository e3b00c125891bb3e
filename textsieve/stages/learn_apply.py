"""`textsieve learn apply MODEL ATTRS`: a learned filter's probability per document, stored as the
set `_learned_<name>` (column `ts_learned_<name>`, float64) beside the annotate shards.

Why a stage and not a step inside `select`: a model over embeddings, n-grams or trees does not
compile to SQL, and computing it in `select` would re-read every text (n-grams) on every
selection. Applied once, its probability is a plain column: `select` reads it for the recipe's
`NAME.predict` (checking the set was made by this very model, `recipes.sql`), re-runs with new
thresholds stay column-only, and the set gets what every per-document stage has
(`stages.doc_set`: one task per shard, resume, publish as a unit, refusal to mix models).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from textsieve.options import address_option, executor_option, option, progress_option

STAGE = "learn apply"


@dataclass
class LearnApplyConfig:
    """Everything `textsieve learn apply` takes."""

    model: str = option(help="model file written by `textsieve learn` (any kind)", positional=True,
                        metavar="MODEL.json")
    directory: str = option(help="annotate output folder (with the model's feature sets: _embed_<model> for "
                                 "embed)", positional=True, metavar="ATTRS")
    workers: int | None = option(None, help="processes (or Ray tasks), one annotate shard each (default: all cores)")
    executor: str = executor_option("local processes, or Ray: one task per annotate shard (same output)")
    address: str | None = address_option()
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made by another model of the same name")


@dataclass
class LearnApplyResult:
    output: str
    set_name: str
    column: str
    documents: int = 0
    shards: int = 0
    computed: int = 0
    skipped: bool = False
    seconds: float = 0.0
    mean_probability: float | None = None
    model: dict[str, Any] = field(default_factory=dict)


def output_schema(name: str) -> pa.Schema:
    """The schema of the set `_learned_<name>`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.learned.fusion import column_name
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, (column_name(name), pa.float64())])


_SHARD: dict[str, Any] = {}  # per process: the non-text feature matrices of the current shard


def _setup(params: dict[str, Any]) -> Any:
    from textsieve.learned.model import load_model

    model = load_model(params["model"])
    if model.fingerprint != params["fingerprint"]:
        raise ValueError(f"{STAGE}: {params['model']} changed while the run was applying it; run it again")
    _SHARD.clear()
    return (model, params["directory"])


def _shard_views(model: Any, directory: str, rel: str) -> dict[str, Any]:
    """Signals and embeddings of every row of one annotate shard (read once per shard)."""
    if _SHARD.get("rel") == (directory, rel):
        return dict(_SHARD["views"])
    import fsspec

    from textsieve.embedding.store import column_name as embed_column
    from textsieve.embedding.store import set_name as embed_set
    from textsieve.embedding.store import to_numpy
    from textsieve.io.attributes import attribute_set_dir
    from textsieve.io.parquet_read import read_table

    views: dict[str, Any] = {}
    if "signals" in model.views:
        fs, root = fsspec.core.url_to_fs(directory)
        with fs.open(f"{root.rstrip('/')}/{rel}", "rb") as fh:
            views["signals"] = model.signal_matrix(read_table(fh, columns=model.columns))
    if "embed" in model.views:
        name = model.embed["model"]
        fs, root = fsspec.core.url_to_fs(attribute_set_dir(directory, embed_set(name)))
        with fs.open(f"{root.rstrip('/')}/{rel}", "rb") as fh:
            views["embed"] = to_numpy(read_table(fh, columns=[embed_column(name)]).column(0)).astype(np.float64)
    _SHARD.clear()
    _SHARD.update(rel=(directory, rel), views=views)
    return dict(views)


@dataclass(frozen=True)
class _Compute:
    column: str

    def __call__(self, state: Any, texts: list[str], at: tuple[str, int]) -> dict[str, pa.Array]:
        from textsieve.learned.views import ngram_matrix

        model, directory = state
        rel, start = at
        views = {k: v[start:start + len(texts)] for k, v in _shard_views(model, directory, rel).items()}
        if "ngrams" in model.views:
            views["ngrams"] = ngram_matrix(texts)
        p = model.predict(views) if texts else np.zeros(0)
        return {self.column: pa.array(np.asarray(p, np.float64), pa.float64())}


def _check_embeddings(model: Any, directory: str) -> None:
    """The folder's embeddings are of the model's embedding model (same fingerprint)."""
    from textsieve.learned.views import FeatureSetError, embed_rows, embedding_info

    if "embed" not in model.views:
        return
    embed_rows(directory, model.embed["model"], [])  # the set exists, else a clear error
    have = embedding_info(directory, model.embed["model"])
    if have["fingerprint"] != model.embed.get("fingerprint"):
        raise FeatureSetError(f"{STAGE}: {directory}: the embeddings are of {have['model']} (fingerprint "
                              f"{have['fingerprint']}), the model was trained on fingerprint "
                              f"{model.embed.get('fingerprint')}; embed with that model first")


def run_learn_apply(cfg: LearnApplyConfig) -> LearnApplyResult:
    """Write (or keep) the set `_learned_<name>` of the model's probability per document."""
    import os

    import pyarrow.compute as pc

    from textsieve.learned.fusion import LearnedSetError, column_name
    from textsieve.learned.model import load_model
    from textsieve.stages.doc_set import DocSetJob, annotate_sources, run_doc_set

    model = load_model(cfg.model)
    if getattr(model, "sql_compilable", True):
        raise LearnedSetError(f"{STAGE}: {cfg.model} is a logistic model over signals; select applies it as SQL "
                              "directly (no prediction set needed)")
    annotate_sources(cfg.directory, STAGE)
    _check_embeddings(model, cfg.directory)
    col = column_name(model.name)
    path = cfg.model if "://" in cfg.model else os.path.abspath(cfg.model)
    directory = cfg.directory if "://" in cfg.directory else os.path.abspath(cfg.directory)  # Ray tasks elsewhere
    params = {"model": path, "fingerprint": model.fingerprint, "directory": directory}
    info = {"model_name": model.name, "model_path": path, "model_fingerprint": model.fingerprint,
            "feature_sets": model.views, "model_kind": model.describe(), "column": col}
    job = DocSetJob(stage=STAGE, set_name=model.set_name, setup=_setup, compute=_Compute(col), params=params,
                    info=info, result_keys=("model_path", "model_fingerprint"),
                    schema=pa.schema([(col, pa.float64())]), positions=True, refuse_if_all_differ=True,
                    shard_key_ignores=("model_path",))
    res = run_doc_set(cfg.directory, job, workers=cfg.workers, progress=cfg.progress, overwrite=cfg.overwrite,
                      executor=cfg.executor, address=cfg.address)
    mean = None
    if res.documents:
        from textsieve.io.attributes import attribute_shards
        from textsieve.io.parquet_read import read_table

        fs, files = attribute_shards(cfg.directory, model.set_name)
        total = 0.0
        for f in files:
            with fs.open(f, "rb") as fh:
                total += float(pc.sum(read_table(fh, columns=[col]).column(0)).as_py() or 0.0)
        mean = total / res.documents
    return LearnApplyResult(output=res.output, set_name=model.set_name, column=col, documents=res.documents,
                            shards=res.shards, computed=res.computed, skipped=res.skipped, seconds=res.seconds,
                            mean_probability=mean, model=info)
