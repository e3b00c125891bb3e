"""Check every recipe of a pipeline against the columns its planned stages will write.

Why: a rule is otherwise compiled only when its stage runs, so a typo in `select.recipe` failed
after annotate, dedup and DSIR had run for hours, while `--dry-run` printed a fine plan. Each
stage's output columns follow from its config alone: annotate's from the signals, word lists
and models (`stages.annotate.planned_schema`), dedup's from the chosen settings and thresholds,
DSIR's from each fit's name. Attribute sets already in `OUT/attrs` (an earlier run, or sets a
user added) are joinable too, so they count. Rules are compiled against that planned schema by
the same compiler `select` uses (`compile.schema_from_arrow`), so a dry-run accepts exactly the
rules the real run accepts, and reports the same errors (with "did you mean").

A DSIR fit with a `recipe` sees the columns of the stages before it: annotate, dedup and the
fits listed earlier; `select` sees them all.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from textsieve.pipeline.build import attrs_dir, build
from textsieve.pipeline.config import PipelineConfig, PipelineConfigError
from textsieve.stages.learn_apply import learn_label

KEYS = [pa.field("id", pa.string()), pa.field("shard", pa.string()), pa.field("row", pa.int64())]


def _set(columns: list[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema(KEYS + [pa.field(n, t) for n, t in columns])


def exact_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `dedup exact` will write with the pipeline's settings."""
    from textsieve.stages import dedup_exact

    ex = build(cfg, "dedup_exact", progress=False)
    if hasattr(dedup_exact, "exact_names"):  # sets named by their settings
        name, prefix = dedup_exact.exact_names(ex.normalize, ex.bloom_fp is not None)
    else:  # pragma: no cover - older layout
        name, prefix = dedup_exact.EXACT_SET, "dup_exact"
    return name, _set([(f"{prefix}_group", pa.uint64()), (f"{prefix}_size", pa.int64()),
                       (f"{prefix}_keep", pa.bool_())])


def fuzzy_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `dedup fuzzy` will write: three columns per threshold."""
    from textsieve.stages.dedup_fuzzy import FUZZY_SET, tkey

    fz = build(cfg, "dedup_fuzzy", progress=False)
    cols: list[tuple[str, pa.DataType]] = []
    for t in fz.thresholds:
        cols += [(f"{tkey(t)}_cluster", pa.uint64()), (f"{tkey(t)}_size", pa.int64()), (f"{tkey(t)}_keep", pa.bool_())]
    return FUZZY_SET, _set(cols)


def lines_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `dedup lines` will write: the line spans and their doc-level twins."""
    from textsieve.stages.dedup_lines import LINES_SET, output_schema

    return LINES_SET, output_schema()


def decontam_set() -> tuple[str, pa.Schema]:
    """(set name, schema) that `decontaminate` will write."""
    from textsieve.stages.decontaminate import SET_NAME, output_schema

    return SET_NAME, output_schema()


def pii_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `pii` will write: one span column per type asked for, and the count."""
    from textsieve.stages.pii import SET_NAME, output_schema

    return SET_NAME, output_schema(build(cfg, "pii", progress=False))


def tokens_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `tokens` will write, named by its tokenizer (the file is read now:
    a missing or unreadable tokenizer fails the dry run, not the run after annotate)."""
    from textsieve.stages.tokens import output_schema, set_name
    from textsieve.tokenization.tokenizer import load_tokenizer

    tk = build(cfg, "tokens", progress=False)
    name = load_tokenizer(tk.tokenizer, tk.name, pattern=tk.tiktoken_pattern).name
    return set_name(name), output_schema(name)


def semantic_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `dedup semantic` will write: three columns per eps."""
    from textsieve.stages.dedup_semantic import SEMANTIC_SET, output_schema

    sc = build(cfg, "dedup_semantic", progress=False)
    return SEMANTIC_SET, output_schema(list(sc.eps))


def embed_set(cfg: PipelineConfig) -> tuple[str, pa.Schema]:
    """(set name, schema) that `embed` will write, named by its model (the model is loaded now: a
    missing model fails the dry run, not the run after annotate)."""
    from textsieve.embedding.models import load_embedder
    from textsieve.stages.embed import output_schema, set_name

    ec = build(cfg, "embed", progress=False)
    emb = load_embedder(ec.model, ec.name)
    return set_name(emb.name), output_schema(emb.name, emb.dim)


def dsir_set(name: str) -> tuple[str, pa.Schema]:
    """(set name, schema) that `dsir fit --name NAME` writes."""
    from textsieve.dsir.names import column_names, set_name

    raw, norm, tokens = column_names(name)
    return set_name(name), _set([(raw, pa.float64()), (norm, pa.float64()), (tokens, pa.int64())])


def learn_set(cfg: PipelineConfig, index: int) -> tuple[str, pa.Schema, str]:
    """(set name, schema, model fingerprint) of what the pipeline's `learn[index]` (`learn apply
    MODEL`) writes; PipelineConfigError for a file that is no model, a model that compiles to SQL
    (select applies that one directly from its recipe's `models:`; there is nothing to store), or
    a model over embeddings in a pipeline that makes none."""
    from textsieve.learned.model import load_model
    from textsieve.stages.embed import has_embeddings

    path = cfg.data["learn"][index]["model"]
    where = f"{cfg.source}: learn[{index}].model"
    try:
        model = load_model(path)
    except (OSError, ValueError) as exc:
        raise PipelineConfigError(f"{where}: {exc}") from None
    if getattr(model, "sql_compilable", True):
        raise PipelineConfigError(f"{where}: {path} is a logistic model over signals, which select applies as SQL "
                                  "directly: name it under the recipe's `models:` and drop this learn item")
    if "embed" in model.views and not has_embeddings(cfg.data):
        emb = (model.embed or {}).get("model")
        if f"embed_{emb}" not in existing_sets(attrs_dir(cfg)):
            raise PipelineConfigError(f"{where}: {path} reads embeddings ({emb}); add an `embed:` section (or "
                                      "`embed` to annotate.signals)")
    return model.set_name, _set([(model.prediction_column, pa.float64())]), model.fingerprint


def existing_sets(attrs: str) -> dict[str, pa.Schema]:
    """Schemas of the attribute sets already under `attrs` ({} when nothing is there yet)."""
    from textsieve.io.attributes import attribute_sets, attribute_shards
    from textsieve.recipes.schema import arrow_schema

    try:
        names = attribute_sets(attrs)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for name in names:
        try:
            fs, files = attribute_shards(attrs, name)
        except FileNotFoundError:
            continue
        out[name] = arrow_schema(fs, files[0])
    return out


def planned_sets(cfg: PipelineConfig) -> list[tuple[str, str, pa.Schema]]:
    """(stage, set name, schema) of every stage in run order; annotate's set name is ""."""
    from textsieve.stages.annotate import planned_schema

    d = cfg.data
    out = [("annotate", "", planned_schema(build(cfg, "annotate", progress=False)))]
    if d["embed"] is not None:
        out.append(("embed", *embed_set(cfg)))
    if d["dedup"]["exact"] is not None:
        out.append(("dedup_exact", *exact_set(cfg)))
    if d["dedup"]["fuzzy"] is not None:
        out.append(("dedup_fuzzy", *fuzzy_set(cfg)))
    if d["dedup"]["lines"] is not None:
        out.append(("dedup_lines", *lines_set(cfg)))
    if d["dedup"].get("semantic") is not None:
        out.append(("dedup_semantic", *semantic_set(cfg)))
    if d["decontaminate"] is not None:
        out.append(("decontaminate", *decontam_set()))
    if d["pii"] is not None:
        out.append(("pii", *pii_set(cfg)))
    if d["tokens"] is not None:
        out.append(("tokens", *tokens_set(cfg)))
    for i, item in enumerate(d["learn"]):
        out.append((f"learn:{learn_label(item)}", *learn_set(cfg, i)[:2]))
    for fit in d["dsir"]:
        out.append((f"dsir:{fit['name']}", *dsir_set(fit["name"])))
    return out


def check_rules(cfg: PipelineConfig) -> None:
    """Compile every recipe of the pipeline (`select.recipe`, each `dsir[i].recipe`) against the
    columns available when its stage runs; raise PipelineConfigError naming the YAML path."""
    from textsieve.recipes.language import RecipeError
    from textsieve.recipes.sql import compile_recipe, schema_from_arrow

    d = cfg.data
    learned: dict[str, str] = {}  # set -> the fingerprint of the model its learn item applies
    for i in range(len(d["learn"])):  # a learn item's model file, checked before anything runs
        set_name, _, fingerprint = learn_set(cfg, i)
        if set_name in learned:
            first = next(j for j in range(i) if learn_set(cfg, j)[0] == set_name)
            raise PipelineConfigError(f"{cfg.source}: learn[{i}].model: writes _{set_name}, as learn[{first}] does; "
                                      "give the models different names (`learn --name`)")
        learned[set_name] = fingerprint
    wants = [(i, fit) for i, fit in enumerate(d["dsir"]) if fit.get("recipe") is not None]
    if d["select"] is None and not wants:
        return
    attrs = attrs_dir(cfg)
    planned = planned_sets(cfg)
    on_disk = existing_sets(attrs)

    def schema_before(stage: str | None):
        """Columns joinable when `stage` runs (None: after every stage)."""
        sets: dict[str, pa.Schema] = {}
        main = planned[0][2]
        own = stage.partition(":")[2] if stage else ""
        for name, arrow in on_disk.items():
            if not (own and name == dsir_set(own)[0]):  # a fit never filters on the weights it replaces
                sets[name] = arrow
        remade = set()
        for st, name, arrow in planned[1:]:
            if st == stage:
                break
            sets[name] = arrow
            remade.add(name)
        out = schema_from_arrow(attrs, [("", main, [])] + [(n, a, []) for n, a in sorted(sets.items())])
        out.planned = {name: learned.get(name) for name in remade}
        return out

    # (where in the file, the stage whose columns it may use (None: every stage's), the recipe)
    checks: list[tuple[str, str | None, Any]] = [
        (f"dsir[{i}].recipe", f"dsir:{fit['name']}", build(cfg, "dsir", progress=False, index=i).recipe)
        for i, fit in wants]
    if d["select"] is not None:
        sel = build(cfg, "select", progress=False)
        if sel.recipe is not None:
            checks.append(("select.recipe", None, sel.recipe))
    for where, stage, recipe in checks:
        from textsieve.recipes.survivors import as_recipe

        loaded = as_recipe(recipe)
        if loaded is None:  # no recipe: nothing to check (`checks` holds only given ones)
            continue
        try:
            compile_recipe(loaded, schema_before(stage))
        except RecipeError as exc:
            raise PipelineConfigError(f"{cfg.source}: {where}: {exc} (checked against the columns the planned "
                                      f"stages will write)") from None
