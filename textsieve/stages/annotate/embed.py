"""`textsieve embed`: one embedding per document, the set `sets/embed_<model>` beside the annotate shards.

Why a set of its own: embeddings are a product (semantic dedup, embedding DSIR, learned
filters and the report read them), large (256 float16 = 512 B per document) and tied to one
model, so they live apart from the signal shards, keyed by the model's fingerprint. Built on
the per-document scaffold `stages.doc_set`: texts re-read from the annotate folder's sources,
one shard per task (local processes or Ray tasks), published as a unit, a re-run keeping the
unchanged shards, a set made with another model under the same name refused unless
`overwrite`. The pooling rule for long documents is the model kind's (`embedding.models.POOLING`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from textsieve.display import result_display
from textsieve.embedding.store import column_name, embedding_type, set_name, to_arrow
from textsieve.options import address_option, executor_option, option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Layout, Outcome, Stage, absolute
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan

if TYPE_CHECKING:
    from textsieve.embedding.models import Embedder
    from textsieve.stages.doc_set import DocSetJob

STAGE_NAME = "embed"
#: the model `embed_job` loaded, reused by `_setup` when the work runs in this process (workers=1)
_LOADED: dict[tuple[str, str, str], Embedder] = {}


@dataclass
class EmbedConfig:
    """Everything `textsieve embed` takes (CLI, YAML `embed:` and `ts.embed`)."""

    directory: str = option(help="annotate output folder (its shards point at the texts)", positional=True,
                            metavar="ATTRS")
    model: str = option("wordllama", help="embedding model: wordllama (the default, 256-d, shipped in the "
                                          "wordllama wheel), or a path: a Model2Vec folder, a .safetensors file "
                                          "with tokenizer.json beside it, or a sentence-transformers folder "
                                          "(needs sentence-transformers; uses a GPU when present)", metavar="MODEL")
    name: str | None = option(None, help="column suffix: writes ts_embed_NAME in the set sets/embed_NAME (default: "
                                         "the model's name)")
    workers: int | None = option(None, help="processes (or Ray tasks), one annotate shard each (default: all "
                                            "cores)")
    executor: str = executor_option("local processes, or Ray: one task per annotate shard (same output)")
    address: str | None = address_option()
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with another model under the same name (without "
                                         "it the run refuses)")


@result_display
@dataclass
class EmbedResult:
    output: str  # the set folder DIR/sets/embed_<name>
    set_name: str
    column: str
    documents: int = 0
    shards: int = 0
    computed: int = 0
    computed_documents: int = 0  # the documents of the shards embedded by this run
    skipped: bool = False
    seconds: float = 0.0
    model: dict[str, Any] = field(default_factory=dict)
    compile_seconds: float = 0.0  # the kernel warm-up before the first batch (not part of `seconds`)
    kernels_compiled: int = 0  # numba kernels compiled (not loaded from the cache) by that warm-up

    @property
    def docs_per_second(self) -> float:
        """The rate of this run's work: a re-run that keeps most shards is not credited with them."""
        return self.computed_documents / self.seconds if self.seconds and self.computed else 0.0

    def rate_text(self) -> str:
        """`3,100 docs/s`, plus `; 5.5 s one-time kernel compile` when this run compiled kernels."""
        text = f"{self.docs_per_second:,.0f} docs/s"
        if self.kernels_compiled:
            text += f"; {self.compile_seconds:.1f} s one-time kernel compile"
        return text


def output_schema(name: str, dim: int) -> pa.Schema:
    """The schema of the set `sets/embed_<name>`'s shards (`run --dry-run` checks recipes against it)."""
    from textsieve.stages.doc_set import BASE

    return pa.schema([*BASE, (column_name(name), embedding_type(dim))])


def _setup(params: dict[str, Any]) -> Any:
    """Once per worker: load the model and check it is the one the run was started with."""
    from textsieve.embedding.models import EmbeddingModelError, load_embedder

    if "RAYON_NUM_THREADS" not in os.environ:
        os.environ["RAYON_NUM_THREADS"] = "1"  # the tokenizer's threads: one per worker process
    key = (params["model"], params["name"], params["fingerprint"])
    emb = _LOADED.pop(key, None) or load_embedder(params["model"], params["name"])
    if emb.fingerprint != params["fingerprint"]:
        raise EmbeddingModelError(f"embed: {params['model']} changed while the run was embedding "
                                  f"(fingerprint {params['fingerprint']}, now {emb.fingerprint}); run it again")
    if emb.runtime != params.get("runtime", emb.runtime):  # a Ray worker with other library releases
        raise EmbeddingModelError(f"embed: a worker runs {params['model']} as {emb.runtime}, the run started as "
                                  f"{params['runtime']}; install the same releases on every worker")
    return emb


@dataclass(frozen=True)
class _Compute:
    """compute(state, texts) with the column name bound (picklable, unlike a closure)."""

    column: str

    def __call__(self, emb: Embedder, texts: list[str]) -> dict[str, pa.Array]:
        return {self.column: to_arrow(emb.embed(texts))}


def _spec(model: str) -> str:
    """A path made absolute (workers may run elsewhere); a builtin name as given."""
    from textsieve.embedding.models import BUILTINS

    bare = model[len("builtin:"):] if model.startswith("builtin:") else model
    if bare in BUILTINS and not os.path.exists(model):
        return model
    return model if "://" in model else os.path.abspath(model)


def embed_job(cfg: EmbedConfig) -> tuple[DocSetJob, Embedder]:
    """The `DocSetJob` of a run (the model loaded once here, so a bad path fails before any work)."""
    from textsieve.embedding.models import load_embedder
    from textsieve.stages.doc_set import DocSetJob, annotate_sources

    emb = load_embedder(cfg.model, cfg.name)
    annotate_sources(cfg.directory, STAGE_NAME)  # not an annotate folder: say so before anything else
    col = column_name(emb.name)
    spec = _spec(cfg.model)
    params: dict[str, Any] = {"model": spec, "name": emb.name, "fingerprint": emb.fingerprint,
                              "runtime": emb.runtime}
    _LOADED.clear()
    _LOADED[(spec, emb.name, emb.fingerprint)] = emb
    info = {**emb.info(), "column": col}
    return DocSetJob(stage=STAGE_NAME, set_name=set_name(emb.name), setup=_setup, compute=_Compute(col),
                     params=params, info=info, result_keys=("model_path", "model_fingerprint"),
                     schema=pa.schema([(col, embedding_type(emb.dim))]), totals=(), batch_docs=1000,
                     refuse_if_all_differ=True, shard_key_ignores=("model_path",)), emb


def run_embed(cfg: EmbedConfig) -> EmbedResult:
    """Embed every document into DIR/sets/embed_<name> (or keep the published embeddings)."""
    from textsieve.stages.annotate.kernel_timing import timed
    from textsieve.stages.doc_set import run_doc_set

    job, emb = embed_job(cfg)
    # compile (or load from numba's cache) the model's kernels before the first batch's clock starts,
    # so the rate shown is the compute's; later runs load them in well under a second
    compile_seconds, compiled = timed(lambda: emb.embed(["warm up the embedding kernels"]))
    res = run_doc_set(cfg.directory, job, workers=cfg.workers, progress=cfg.progress, overwrite=cfg.overwrite,
                      executor=cfg.executor, address=cfg.address)
    return EmbedResult(output=res.output, set_name=job.set_name, column=column_name(emb.name),
                       documents=res.documents, shards=res.shards, computed=res.computed,
                       computed_documents=res.computed_documents, skipped=res.skipped,
                       seconds=res.seconds, model=emb.info(), compile_seconds=compile_seconds,
                       kernels_compiled=compiled)


def has_embeddings(data: Mapping[str, Any]) -> bool:
    """Does a pipeline make embeddings (an `embed:` section, or `embed` in annotate.signals)?"""
    signals = (data.get("annotate") or {}).get("signals")
    items = [] if signals is None else signals.split(",") if isinstance(signals, str) else [str(s) for s in signals]
    return data.get("embed") is not None or "embed" in [s.strip() for s in items]


def _pipeline_run(c: EmbedConfig) -> Outcome:
    r = run_embed(c)
    return Outcome({"documents": r.documents, "column": r.column, "model": r.model["model"],
                    "model_fingerprint": r.model["model_fingerprint"]}, ran=not r.skipped)


def _complete(layout: Layout, name: str, c: EmbedConfig) -> bool:
    from textsieve.embedding.models import load_embedder

    return layout.set_complete(set_name(load_embedder(c.model, c.name).name))


def _model(layout: Layout, name: str, c: EmbedConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The model's identity (its files' fingerprint): a changed model re-embeds."""
    from textsieve.embedding.models import load_embedder

    return [load_embedder(c.model, c.name).fingerprint]


def _resolve(section: dict[str, Any], base: Path) -> None:
    """A builtin model's name is not a path; a model folder is."""
    from textsieve.embedding.models import BUILTINS

    if section.get("model") is not None:
        model = str(section["model"])
        if model.removeprefix("builtin:") not in BUILTINS or (base / model).exists():
            section["model"] = absolute(model, base)


def _estimate(c: EmbedConfig, e: Corpus) -> StagePlan:
    """A worker holds the model (~130 MB as float32) and its word cache; a 256-d float16 vector is 512 B."""
    return StagePlan("embed", "one embedding per document -> sets/embed_MODEL", 400_000_000,
                     int(e.docs * (SET_BYTES_PER_DOC + 2 * 256)))


def _output_sets(c: EmbedConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """Named by the model, which is loaded now: a missing model fails the dry run, not the run
    after annotate."""
    from textsieve.embedding.models import load_embedder

    emb = load_embedder(c.model, c.name)
    return [PlannedSet(set_name(emb.name), output_schema(emb.name, emb.dim))]

def _summary(res: EmbedResult) -> dict[str, Any]:
    return {"attribute_set": res.output, "column": res.column, "documents": res.documents, "shards": res.shards,
            "computed": res.computed, "skipped": res.skipped, "seconds": round(res.seconds, 3),
            "compile_seconds": round(res.compile_seconds, 3), "model": res.model}


def _report(res: EmbedResult) -> str:
    what = ("unchanged (same inputs, same model)" if res.skipped
            else f"{res.computed} of {res.shards} shard(s) embedded ({res.rate_text()})")
    return (f"embed: {res.documents:,} documents with {res.model['model']} ({res.model['dim']}-d, fingerprint "
            f"{res.model['model_fingerprint']}); {what} in {res.seconds:.1f} s -> {res.output} "
            f"(column {res.column})")


CLI = CliSpec(
    help="one embedding per document (offline; default model in a wheel)",
    description="Embed every document of an annotate folder into the attribute set ATTRS/sets/embed_MODEL (column "
                "ts_embed_MODEL, fixed_size_list<float16>, unit length). The default model, WordLlama L2-Supercat "
                "(256-d), ships inside the wordllama wheel; a Model2Vec or sentence-transformers folder is used by "
                "path. Nothing is downloaded. Semantic dedup (dedup semantic), embedding DSIR (dsir fit --features "
                "embed) and learn --features embed read the set.",
    examples=("textsieve annotate data/ -o attrs-emb/ --signals rps_doc_word_count", "textsieve embed attrs-emb/",
              "textsieve embed attrs-emb/ --workers 1 --json"),
    report=_report, summary=_summary)

STAGE = Stage("embed", EmbedConfig, "embed", _pipeline_run, order=30, call=run_embed, cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=_complete, upstream=_model, resolve=_resolve,
              estimate=_estimate, output_sets=_output_sets)
