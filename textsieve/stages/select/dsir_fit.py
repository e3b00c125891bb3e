"""`textsieve dsir fit`: fit DSIR's two n-gram models and store a log importance weight per
document of an annotated pool, as the attribute set ``DIR/sets/dsir_<name>/``.

Columns of every shard of the set (besides `id`, `shard`, `row`):

* ``ts_dsir_<name>``        the reference's log importance weight, the *sum* over the document's
                            n-grams of ``log p_target - log p_raw``. It grows with length (about
                            -120,000 to +2,000 on the dev pool), so sampling with it is top-k;
* ``ts_dsir_<name>_norm``   the length-normalised weight: the *mean* log ratio per n-gram (null for
                            a document without n-grams). What `resample` uses by default;
* ``ts_dsir_<name>_tokens`` the document's word/punctuation token count (DSIR's 'length'), used
                            for token budgets and minimum lengths.

Deduplicate the pool first (`textsieve dedup`): identical texts get identical weights, so a
duplicated document is drawn as many times as it has copies.

Unlike the reference, the raw model is fit on the whole pool (not a prefix of each shard), in two
passes: count all n-grams, then weigh each document. The pool's n-gram ids are kept in memory
between the passes up to `memory_mb`, beyond that the texts are read again. The model file
(`.textsieve/model.dsir` in the set folder) is written before the weights, so a re-run reuses it and only
computes the shards not yet written.

With `recipe` (`dsir fit --recipe R`), the raw side is fit on the recipe's survivors only
(`textsieve.recipes.survivors`: documents passing its document rules and keeping a line), the
same pool `select --recipe R --dsir NAME` then draws from, so filtering and deduplicating
before DSIR needs no materialize-and-re-annotate round trip. Every document is still weighed
(the columns stay usable in any recipe); weights use whole documents, before line rules cut.

With `features="embed"` or `"combined"` the weights come from a target-vs-pool classifier on the
pool's embeddings instead (`textsieve.stages.select.dsir_embed`), written to the same set and columns.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.display import result_display
from textsieve.dsir.names import check_name, column_names, set_name
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.atomic import write_parquet_with_metadata
from textsieve.io.attributes import META_KEY, attribute_shards, open_set, read_shard_meta, set_place, shard_rel
from textsieve.io.leftovers import remove_stale_siblings
from textsieve.io.publish import book, content_key, contents
from textsieve.io.texts import input_texts, shard_texts
from textsieve.options import option, progress_option
from textsieve.recipes.language import Recipe
from textsieve.recipes.survivors import as_recipe, count, recipe_rows, survivor_mask, survivors_fingerprint
from textsieve.stages.descriptor import (
    PROGRESS_REASON,
    CliSpec,
    Layout,
    Outcome,
    Stage,
    recipe_path,
    recipe_value,
)
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan, set_schema

if TYPE_CHECKING:  # the numba feature code loads on first use, not when the CLI builds its parser
    from textsieve.dsir.model import DsirModel
    from textsieve.text.hashed_ngrams import HashedNgramParams, NgramBatch

MODEL_FILE = book("model.dsir")  # in the set's bookkeeping folder, so the set reads as one table


@dataclass
class DsirFitConfig:
    """Everything `textsieve dsir fit` takes (CLI, YAML and `ts.dsir_fit`)."""

    targets: list[str] = option(help="target documents: files, folders or globs (JSONL, Parquet, ...)",
                                renamed_from=("--target",), metavar="T")
    raw: str = option(help="the pool: an output folder of `textsieve annotate`", metavar="ANNOTATED_DIR")
    name: str = option(help="target name: letters, digits, '_' (used in column names)")
    buckets: int = option(10_000, help="hash buckets")
    ngrams: int = option(2, help="n-gram order: 1..n are used")
    hash_seed: int = option(0, help="hash seed (`eval kl` measures with 1)")
    smoothing: float = option(1.0, help="additive pseudo-count per bucket (0 = the reference's +1e-8)")
    text_field: str = option("text", help="text field of the target records", metavar="FIELD")
    model_path: str | None = option(None, help="where to store the model (default "
                                              "RAW/sets/dsir_NAME/.textsieve/model.dsir)",
                                    renamed_from=("--model",), metavar="PATH")
    overwrite: bool = option(False, help="refit and rewrite everything")
    memory_mb: int = option(1024, help="MB of n-gram features cached between the two passes; beyond that the "
                                       "texts are read again", metavar="MB")
    progress: bool = progress_option()
    # fit the raw-side model on this recipe's survivors only (every document is still weighed)
    recipe: Recipe | str | None = option(None, help="fit the raw side on the documents this recipe keeps (bundled "
                                                    "name or YAML file), the pool `select --recipe R --dsir NAME` "
                                                    "draws from", metavar="R")
    features: str = option("ngram", help="what the weights are fit on: ngram (hashed n-grams, the reference's DSIR), "
                                         "embed (a target-vs-pool logistic classifier on the pool's embeddings, "
                                         "from `textsieve embed RAW`) or combined (embeddings plus the n-gram "
                                         "score, its scale fitted)", choices=("ngram", "embed", "combined"))
    embed_model: str | None = option(None, help="with --features embed|combined: the embedding set of RAW to use "
                                                "(default: its only one)", metavar="MODEL")


@result_display
@dataclass
class DsirFitResult:
    model_path: str
    set_dir: str
    columns: tuple[str, str, str]
    documents: int
    target_docs: int
    model_reused: bool
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    weight_range: tuple[float, float] = (0.0, 0.0)
    raw_documents: int = 0  # documents the raw-side model counts: the recipe's survivors, or all


def score_texts(model: DsirModel, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sum log weight, normalised log weight (NaN without n-grams), tokens) of arbitrary texts
    under a fitted model: the values `run_fit` stores, for documents outside the pool."""
    from textsieve.text.hashed_ngrams import doc_sums

    lr = model.log_ratio()
    fbs = _featurize_all(texts, model.params)
    if not fbs:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    sums = np.concatenate([doc_sums(fb, lr) for fb in fbs])
    ngr = np.concatenate([fb.ngram_counts for fb in fbs])
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(ngr > 0, sums / np.maximum(ngr, 1), np.nan)
    return sums, norm, np.concatenate([fb.tokens for fb in fbs])


def _featurize_all(texts: list[str], params: HashedNgramParams) -> list[NgramBatch]:
    from textsieve.text.hashed_ngrams import batched, featurize

    return [featurize(b, params) for b in batched(texts)]


def _model_matches(model: DsirModel, params: HashedNgramParams, smoothing: float, target_fp: str,
                   raw_shards: list, survivors_fp: str | None = None) -> bool:
    return (model.params == params and model.smoothing == smoothing and model.target_fingerprint == target_fp
            and model.info.get("raw_shards") == raw_shards and model.info.get("survivors") == survivors_fp)


def _fit_survivors(cfg: DsirFitConfig, recipe: Recipe) -> dict[str, np.ndarray]:
    """The documents of `cfg.raw` that `recipe` (`cfg.recipe`, loaded) keeps: the raw side of the
    model is fit on them only, as if they had been materialized and annotated on their own (`survivors`)."""
    rows, used = recipe_rows(cfg.raw, recipe)
    if set_name(cfg.name) in used:
        raise ValueError(f"recipe {recipe.name!r} uses the columns of sets/{set_name(cfg.name)}, the weights this "
                         f"fit replaces; filter on other columns, or fit under another --name")
    within = {shard: d["rows"] for shard, d in rows.items()}
    if not count(within):
        raise ValueError(f"recipe {recipe.name!r} keeps none of the documents in {cfg.raw}; nothing to fit the "
                         f"raw side on (check it with `textsieve select {cfg.raw} --recipe ... --dry-run`)")
    return within


def _masked_counts(fbs: list[NgramBatch], keep: np.ndarray, buckets: int) -> np.ndarray:
    """Bucket counts of the documents where `keep` (one flag per document of the batches) is set."""
    out = np.zeros(buckets, dtype=np.int64)
    start = 0
    for fb in fbs:
        n = len(fb.tokens)
        flags = keep[start:start + n]
        start += n
        if flags.all():
            out += np.bincount(fb.buckets, minlength=buckets)
        elif flags.any():
            per_doc = np.repeat(flags, np.diff(fb.offsets))
            out += np.bincount(fb.buckets[per_doc], minlength=buckets)
    return out


def _run_key(cfg: DsirFitConfig, params: Any, raw_shards: list, survivors_fp: str | None) -> str:
    """What the set depends on, for the staging folder of this fit: settings, targets, raw shards."""
    from textsieve.io.identity import file_identity
    from textsieve.io.paths import expand_inputs

    targets = [(s.path, file_identity(s.path)) for s in expand_inputs(cfg.targets)]
    key = [repr(params), cfg.smoothing, cfg.model_path, raw_shards, survivors_fp, targets]
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:16]


def run_fit(cfg: DsirFitConfig) -> DsirFitResult:
    from textsieve.dsir.model import DsirModel
    from textsieve.text.hashed_ngrams import HashedNgramParams, bucket_counts, doc_sums

    if cfg.features != "ngram":  # a classifier on embeddings: same set and columns, its own fit
        from textsieve.options import check_choices
        from textsieve.stages.select.dsir_embed import run_fit_embed

        check_choices(cfg)
        return run_fit_embed(cfg)
    t0 = time.perf_counter()
    check_name(cfg.name)
    params = HashedNgramParams(cfg.buckets, cfg.ngrams, cfg.hash_seed)
    fs, shards = attribute_shards(cfg.raw)
    root = fs._strip_protocol(cfg.raw).rstrip("/")
    set_dir, _, set_root = set_place(cfg.raw, set_name(cfg.name))  # a killed fit's temporary files removed
    model_path = cfg.model_path or f"{set_dir}/{MODEL_FILE}"
    cols = column_names(cfg.name)
    if cfg.model_path:  # a --model-path PATH elsewhere: its killed writes are beside it
        remove_stale_siblings(*fsspec.core.url_to_fs(cfg.model_path))

    # streamed: the target's texts are counted batch by batch, never held together
    target_counts, target_docs = bucket_counts(input_texts(cfg.targets, cfg.text_field), params)
    if not target_docs:
        raise ValueError(f"no target documents in {', '.join(cfg.targets)}")
    annotated = contents(fs, root, [p[len(root) + 1:] for p in shards])
    # each raw shard by name (as the set names it), rows and published content hash: a changed shard means a refit
    raw_shards = [[shard_rel(root, p), pq.ParquetFile(fs.open(p, "rb")).metadata.num_rows,
                   hashlib.sha256(annotated[p[len(root) + 1:]].encode()).hexdigest()[:16]] for p in shards]
    total_rows = sum(n for _, n, _ in raw_shards)
    recipe = as_recipe(cfg.recipe)
    within = _fit_survivors(cfg, recipe) if recipe is not None else None  # set exactly when there is a recipe
    survivors_fp = None
    if within is not None:
        survivors_fp = survivors_fingerprint(within)

    pub = open_set(fs, set_root, set_name(cfg.name), _run_key(cfg, params, raw_shards, survivors_fp),
                   built_from=content_key(fs, root))
    in_set = cfg.model_path is None  # the default model file is published with the weights
    if in_set and not cfg.overwrite and not pub.adoptable(MODEL_FILE) and pub.unchanged(MODEL_FILE, "model"):
        pub.keep(MODEL_FILE)
    elif in_set and not cfg.overwrite and pub.adoptable(MODEL_FILE):
        pass  # saved by an interrupted fit with these settings: used below
    model_path = fs.unstrip_protocol(pub.staged(MODEL_FILE)) if in_set and (
        cfg.overwrite or MODEL_FILE not in pub.kept) else model_path
    model = None
    mfs, mpath = fsspec.core.url_to_fs(model_path)
    if not cfg.overwrite and mfs.exists(mpath):
        model = DsirModel.load(model_path)
        from textsieve.dsir.model import counts_fingerprint

        if not _model_matches(model, params, cfg.smoothing, counts_fingerprint(target_counts, target_docs), raw_shards,
                              survivors_fp):
            raise ValueError(f"{model_path} was fit with other settings or data (params {model.params}, "
                             f"smoothing {model.smoothing}); pass --overwrite to refit")
    reused = model is not None
    cache: dict[str, tuple[pa.Table, list[NgramBatch]]] = {}
    if model is None:
        raw_counts = np.zeros(params.buckets, dtype=np.int64)
        budget = cfg.memory_mb * 2**20
        used = 0
        prog = Progress("dsir fit (count)", total_rows, cfg.progress)
        for path, (rel, _, _) in zip(shards, raw_shards):
            keys, texts = shard_texts(fs, path)
            fbs = _featurize_all(texts, params)
            if within is None:
                for fb in fbs:
                    raw_counts += np.bincount(fb.buckets, minlength=params.buckets)
            else:  # only the recipe's survivors make the raw side
                keep = survivor_mask(to_numpy(keys.column("shard")),
                                     to_numpy(keys.column("row")), within)
                raw_counts += _masked_counts(fbs, keep, params.buckets)
            used += sum(fb.buckets.nbytes for fb in fbs)
            if used <= budget:
                cache[rel] = (keys, fbs)
            prog.update(len(texts), prog.docs + len(texts))
        prog.close()
        info = {"targets": list(cfg.targets), "raw_shards": raw_shards, "name": cfg.name}
        if recipe is not None and within is not None:
            info |= {"recipe": recipe.to_dict(), "survivors": survivors_fp,
                     "survivor_documents": count(within)}
        model = DsirModel(params, target_counts, raw_counts, target_docs,
                          count(within) if within is not None else total_rows, cfg.smoothing, info=info)
        model.save(model_path)
    fingerprint = f"{model.target_fingerprint}:{model.raw_fingerprint}:{model.smoothing}"
    if in_set and MODEL_FILE not in pub.kept:
        pub.add(MODEL_FILE, "model")

    lr = model.log_ratio()
    res = DsirFitResult(model_path, set_dir, cols, total_rows, target_docs, reused, raw_documents=model.raw_docs)
    lo, hi = np.inf, -np.inf
    prog = Progress("dsir fit (weigh)", total_rows, cfg.progress)
    for path, (rel, nrows, content) in zip(shards, raw_shards):
        out = pub.staged(rel)
        shard_fp = f"{fingerprint}:{content}"
        if not cfg.overwrite and pub.unchanged(rel, shard_fp):
            pub.keep(rel)
            res.shards_skipped.append(rel)
            prog.update(nrows, prog.docs + nrows)
            continue
        if pub.adoptable(rel) and read_shard_meta(fs, out).get("model") == fingerprint:
            pub.add(rel, shard_fp)  # finished by an interrupted fit with these settings
            res.shards_skipped.append(rel)
            prog.update(nrows, prog.docs + nrows)
            continue
        if rel in cache:
            keys, fbs = cache.pop(rel)
        else:
            keys, texts = shard_texts(fs, path)
            fbs = _featurize_all(texts, params)
        sums = np.concatenate([doc_sums(fb, lr) for fb in fbs]) if fbs else np.zeros(0)
        ngr = np.concatenate([fb.ngram_counts for fb in fbs]) if fbs else np.zeros(0, np.int64)
        toks = np.concatenate([fb.tokens for fb in fbs]) if fbs else np.zeros(0, np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            norm = sums / ngr
        if len(sums):
            lo, hi = min(lo, float(sums.min())), max(hi, float(sums.max()))
        table = keys.append_column(cols[0], pa.array(sums, pa.float64()))
        table = table.append_column(cols[1], pa.array(norm, pa.float64(), mask=ngr == 0))
        table = table.append_column(cols[2], pa.array(toks, pa.int64()))
        write_parquet_with_metadata(fs, out, table, {META_KEY: json.dumps(
            {"stage": "dsir", "name": cfg.name, "model": fingerprint, "columns": list(cols)}).encode()})
        pub.add(rel, shard_fp)
        res.shards_written.append(rel)
        prog.update(nrows, prog.docs + nrows)
    prog.close()
    pub.commit()
    res.model_path = cfg.model_path or f"{set_dir}/{MODEL_FILE}"
    res.weight_range = (lo, hi) if res.shards_written else (0.0, 0.0)
    res.seconds = time.perf_counter() - t0
    return res


def _pipeline_run(c: DsirFitConfig) -> Outcome:
    r = run_fit(c)
    return Outcome({"documents": r.documents, "shards_written": len(r.shards_written),
                    "shards_skipped": len(r.shards_skipped)})


def _upstream(layout: Layout, name: str, c: DsirFitConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The target files; with a recipe, also the stages before it (its survivors depend on the
    dedup stages and earlier fits)."""
    out: list[Any] = [layout.identities(c.targets)]
    if getattr(c, "features", "ngram") != "ngram":  # embedding DSIR reads the pool's embeddings
        out += layout.sets_now(prefix="embed_")
    if c.recipe is not None:
        out += [keys[n] for n in names[:names.index(name)] if n != "annotate"]
    return out


def _complete(layout: Layout, name: str, c: DsirFitConfig) -> bool:
    return layout.set_complete(name.replace(":", "_"), summary=False)


def _resolve(section: dict[str, Any], base: Path) -> None:
    section["recipe"] = recipe_path(section.get("recipe"), base)


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    from textsieve.stages.annotate.embed import has_embeddings

    for i, fit in enumerate(data["dsir"]):
        if fit.get("features") in ("embed", "combined") and not has_embeddings(data):
            errors.append(f"dsir[{i}]: needs embeddings; add an `embed:` section (or `embed` to annotate.signals)")
    names = [fit.get("name") for fit in data["dsir"]]
    for i, n in enumerate(names):
        if n is not None and names.index(n) != i:
            errors.append(f"dsir[{i}].name: {n!r} is used twice")


def _finish(kw: dict[str, Any], base: Path, where: str) -> None:
    kw["recipe"] = recipe_value(kw["recipe"], base, f"{where}.recipe")


def _estimate(c: DsirFitConfig, e: Corpus) -> StagePlan:
    ids = e.docs * max(e.mean_chars // 5, 1) * 2 * 4  # ~1 token per 5 chars, n-gram ids, int32 each
    on = f", raw side on recipe {c.recipe.name}'s survivors" if isinstance(c.recipe, Recipe) else ""
    return StagePlan(f"dsir:{c.name}", f"fit toward {len(c.targets)} target input(s){on}",
                     min(c.memory_mb * 2**20, ids) + 2 * 8 * c.buckets, e.docs * SET_BYTES_PER_DOC)


def _output_sets(c: DsirFitConfig, layout: Layout, where: str) -> list[PlannedSet]:
    """`sets/dsir_NAME`: the raw and normalised importance weights and the token count."""
    from textsieve.dsir.names import column_names, set_name

    raw, norm, tokens = column_names(c.name)
    return [PlannedSet(set_name(c.name), set_schema([(raw, pa.float64()), (norm, pa.float64()), (tokens, pa.int64())]))]

def _summary(res: DsirFitResult) -> dict[str, Any]:
    return {"model": res.model_path, "attribute_set": res.set_dir, "columns": list(res.columns),
            "documents": res.documents, "target_docs": res.target_docs, "model_reused": res.model_reused,
            "shards_written": len(res.shards_written), "shards_skipped": len(res.shards_skipped),
            "seconds": round(res.seconds, 3)}


def _report(res: DsirFitResult) -> str:
    name = res.set_dir.rstrip("/").rsplit("/", 1)[-1].removeprefix("dsir_")
    return (f"dsir {name}: weighed {res.documents:,} documents against {res.target_docs:,} target documents in "
            f"{res.seconds:.1f} s; {len(res.shards_written)} shard(s) written, {len(res.shards_skipped)} already "
            f"done -> {res.set_dir} (columns {', '.join(res.columns)})")


CLI = CliSpec(
    help="fit target/raw n-gram models, store per-document weights",
    description="Fit bag-of-hashed-n-gram models on the target and on the annotated pool, save the model and write "
                "the attribute set RAW/sets/dsir_NAME with columns ts_dsir_NAME (sum log ratio), ts_dsir_NAME_norm "
                "(mean per n-gram) and ts_dsir_NAME_tokens. Deduplicate the pool first. With --features "
                "embed|combined the weights come from a target-vs-pool classifier on the pool's embeddings (run "
                "`textsieve embed RAW` first), in the same columns.",
    examples=("textsieve dsir fit --targets wiki.jsonl.gz --raw attrs/ --name wiki",
              "textsieve dsir fit --targets wiki.jsonl.gz --raw attrs/ --name wiki_gopher --recipe gopher",
              "textsieve dsir fit --targets wiki.jsonl.gz --raw attrs-emb/ --name wiki_emb --features embed"),
    report=_report, summary=_summary, flags=(("--json", "print a JSON summary"),),
    writes=("model_path", "targets", "raw"))

STAGE = Stage("dsir", DsirFitConfig, "dsir[]", _pipeline_run, command="dsir fit", api="dsir_fit", order=120,
              call=run_fit, first="raw", cli_spec=CLI,
              label=lambda item: str(item["name"]),
              placed=lambda layout: {"raw": layout.attrs},
              derived={"raw": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              types={"recipe": str | dict | None}, complete=_complete, upstream=_upstream, resolve=_resolve,
              check=_check_pipeline, finish=_finish,
              estimate=_estimate, output_sets=_output_sets)
