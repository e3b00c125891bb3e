"""`textsieve learn apply MODEL ATTRS`: a learned filter's probability per document, stored as the
set `sets/learned_<name>` (column `ts_learned_<name>`, float64) beside the annotate shards.

Why a stage and not a step inside `select`: a model over embeddings, n-grams or trees does not
compile to SQL, and computing it in `select` would re-read every text (n-grams) on every
selection. Applied once, its probability is a plain column: `select` reads it for the recipe's
`NAME.predict` (checking the set was made by this very model, `recipes.sql`), re-runs with new
thresholds stay column-only, and the set gets what every per-document stage has
(`stages.doc_set`: one task per shard, resume, publish as a unit, refusal to mix models).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from textsieve.display import result_display
from textsieve.options import address_option, executor_option, option, progress_option
from textsieve.stages.annotate.embed import has_embeddings
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, absolute
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlanError, PlannedSet, StagePlan, set_schema

STAGE_NAME = "learn apply"


@dataclass
class LearnApplyConfig:
    """Everything `textsieve learn apply` takes."""

    model: str = option(help="model file written by `textsieve learn` (any kind)", positional=True,
                        metavar="MODEL.json")
    directory: str = option(help="annotate output folder (with the model's feature sets: sets/embed_<model> for "
                                 "embed)", positional=True, metavar="ATTRS")
    workers: int | None = option(None, help="processes (or Ray tasks), one annotate shard each (default: all cores)")
    executor: str = executor_option("local processes, or Ray: one task per annotate shard (same output)")
    address: str | None = address_option()
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made by another model of the same name")


@result_display
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
    """The schema of the set `sets/learned_<name>`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.learned.fusion import column_name
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, (column_name(name), pa.float64())])


_SHARD: dict[str, Any] = {}  # per process: the non-text feature matrices of the current shard


def _setup(params: dict[str, Any]) -> Any:
    from textsieve.learned.model import load_model

    model = load_model(params["model"])
    if model.fingerprint != params["fingerprint"]:
        raise ValueError(f"{STAGE_NAME}: {params['model']} changed while the run was applying it; run it again")
    _SHARD.clear()
    return (model, params["directory"])


def _shard_views(model: Any, directory: str, rel: str, annotate_rel: str) -> dict[str, Any]:
    """Signals and embeddings of every row of one annotate shard (read once per shard): `rel` is
    its name in the sets, `annotate_rel` in the annotate folder (`docs/...`)."""
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
        with fs.open(f"{root.rstrip('/')}/{annotate_rel}", "rb") as fh:
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

    def __call__(self, state: Any, texts: list[str], at: tuple[str, int, str]) -> dict[str, pa.Array]:
        from textsieve.learned.views import ngram_matrix

        model, directory = state
        rel, start, annotate_rel = at
        views = {k: v[start:start + len(texts)] for k, v in _shard_views(model, directory, rel, annotate_rel).items()}
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
        raise FeatureSetError(f"{STAGE_NAME}: {directory}: the embeddings are of {have['model']} (fingerprint "
                              f"{have['fingerprint']}), the model was trained on fingerprint "
                              f"{model.embed.get('fingerprint')}; embed with that model first")


def run_learn_apply(cfg: LearnApplyConfig) -> LearnApplyResult:
    """Write (or keep) the set `sets/learned_<name>` of the model's probability per document."""
    import os

    import pyarrow.compute as pc

    from textsieve.learned.fusion import LearnedSetError, column_name
    from textsieve.learned.model import load_model
    from textsieve.stages.doc_set import DocSetJob, annotate_sources, run_doc_set

    model = load_model(cfg.model)
    if getattr(model, "sql_compilable", True):
        raise LearnedSetError(f"{STAGE_NAME}: {cfg.model} is a logistic model over signals; select applies it as SQL "
                              "directly (no prediction set needed)")
    annotate_sources(cfg.directory, STAGE_NAME)
    _check_embeddings(model, cfg.directory)
    col = column_name(model.name)
    path = cfg.model if "://" in cfg.model else os.path.abspath(cfg.model)
    directory = cfg.directory if "://" in cfg.directory else os.path.abspath(cfg.directory)  # Ray tasks elsewhere
    params = {"model": path, "fingerprint": model.fingerprint, "directory": directory}
    info = {"model_name": model.name, "model_path": path, "model_fingerprint": model.fingerprint,
            "feature_sets": model.views, "model_kind": model.describe(), "column": col}
    job = DocSetJob(stage=STAGE_NAME, set_name=model.set_name, setup=_setup, compute=_Compute(col), params=params,
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


def learn_label(item: Mapping[str, Any]) -> str:
    """A `learn:` item's name in the run: its model file's name without the extension."""
    return Path(str(item.get("model") or "model")).name.removesuffix(".json")


def _pipeline_run(c: LearnApplyConfig) -> Outcome:
    r = run_learn_apply(c)
    return Outcome({"documents": r.documents, "computed": r.computed, "mean_probability": r.mean_probability},
                   ran=not r.skipped)


def _upstream(layout: Layout, name: str, c: LearnApplyConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The model file, and the sets a model may read beside the annotate shards (embeddings,
    whoever wrote them)."""
    return [layout.identities([c.model]), layout.sets_now(prefix="embed_")]


def _complete(layout: Layout, name: str, c: LearnApplyConfig) -> bool:
    """The set is whole and was made by this model file's parameters (not another of its name)."""
    from textsieve.learned.model import load_model

    try:
        model = load_model(c.model)
        made_by = layout.set_summary(model.set_name).get("model_fingerprint")
    except (OSError, ValueError):
        return False
    return made_by == model.fingerprint and layout.set_complete(model.set_name)


def _resolve(section: dict[str, Any], base: Path) -> None:
    if section.get("model") is not None:  # a learned model file
        section["model"] = absolute(section["model"], base)


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    labels = [learn_label(item) for item in data["learn"]]
    for i, item in enumerate(data["learn"]):
        if not item.get("model"):
            errors.append(f"learn[{i}].model: give the model file `textsieve learn` wrote")
        elif labels.index(labels[i]) != i:
            errors.append(f"learn[{i}].model: another learn item's model file is also named {labels[i]}")


def _output_sets(c: LearnApplyConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """The model's prediction set, with the model's fingerprint; PlanError for a file that is
    no model, a model that compiles to SQL (select applies that one directly from its recipe's
    `models:`; there is nothing to store), or a model over embeddings in a pipeline that makes none."""
    from textsieve.io.attributes import attribute_sets
    from textsieve.learned.model import load_model

    try:
        model = load_model(c.model)
    except (OSError, ValueError) as exc:
        raise PlanError(f"{where}.model: {exc}") from None
    if getattr(model, "sql_compilable", True):
        raise PlanError(f"{where}.model: {c.model} is a logistic model over signals, which select applies as SQL "
                        "directly: name it under the recipe's `models:` and drop this learn item")
    if "embed" in model.views and not has_embeddings(layout.data):
        emb = (model.embed or {}).get("model")
        try:
            on_disk = attribute_sets(layout.attrs)
        except (FileNotFoundError, NotADirectoryError):
            on_disk = []
        if f"embed_{emb}" not in on_disk:
            raise PlanError(f"{where}.model: {c.model} reads embeddings ({emb}); add an `embed:` section (or "
                            "`embed` to annotate.signals)")
    return [PlannedSet(model.set_name, set_schema([(model.prediction_column, pa.float64())]), model.fingerprint)]


def _estimate(c: LearnApplyConfig, e: Corpus) -> StagePlan:
    """A worker holds one batch of texts and the model; the set is one float per document."""
    from textsieve.learned.model import load_model

    return StagePlan(f"learn:{learn_label({'model': c.model})}",
                     f"the model's probability per document -> sets/{load_model(c.model).set_name}", 200_000_000,
                     e.docs * SET_BYTES_PER_DOC)

def _summary(res: LearnApplyResult) -> dict[str, Any]:
    return {"attribute_set": res.output, "column": res.column, "documents": res.documents, "shards": res.shards,
            "computed": res.computed, "skipped": res.skipped, "seconds": round(res.seconds, 3),
            "mean_probability": res.mean_probability, "model": res.model}


def _report(res: LearnApplyResult) -> str:
    what = "unchanged (same inputs, same model)" if res.skipped else f"{res.computed} of {res.shards} shard(s) scored"
    mean = f", mean probability {res.mean_probability:.3f}" if res.mean_probability is not None else ""
    return (f"learn apply: {res.documents:,} documents with {res.model['model_kind']}{mean}; {what} in "
            f"{res.seconds:.1f} s -> {res.output} (column {res.column})")


CLI = CliSpec(
    help="store a model's probability per document (sets/learned_NAME)",
    description="Apply a model that does not compile to SQL (embeddings, n-grams, boosted trees) to every document "
                "of an annotate folder and store its probability as the set ATTRS/sets/learned_NAME (column "
                "ts_learned_NAME), which select reads for the recipe rule NAME.predict. Re-runs keep unchanged "
                "shards.",
    report=_report, summary=_summary)

STAGE = Stage("learn", LearnApplyConfig, "learn[]", _pipeline_run, command="learn apply", api="learn_apply", order=110,
              call=run_learn_apply, cli_spec=CLI,
              label=learn_label,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=_complete, upstream=_upstream, resolve=_resolve, check=_check_pipeline,
              estimate=_estimate, output_sets=_output_sets)
