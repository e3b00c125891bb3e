"""Check every recipe of a pipeline against the columns its planned stages will write.

Why: a rule is otherwise compiled only when its stage runs, so a typo in `select.recipe` failed
after annotate, dedup and DSIR had run for hours, while `--dry-run` printed a fine plan. Each
stage's output columns follow from its config alone, and each stage says which in its
descriptor's `output_sets` (annotate's from the signals, word lists and models, dedup's from the
settings and thresholds, DSIR's from each fit's name; a model or tokenizer is loaded then, so a
missing one fails now). Attribute sets already in `OUT/attrs` (an earlier run, or sets a user
added) are joinable too, so they count. Rules are compiled against that planned schema by the
same compiler `select` uses (`compile.schema_from_arrow`), so a dry-run accepts exactly the
rules the real run accepts, and reports the same errors (with "did you mean").

A stage whose config has a `recipe` (a DSIR fit, `select`) sees the columns of the stages
before it in run order, less the sets it writes itself. This module names no stage.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from textsieve.pipeline.build import SPECS, attrs_dir, build_named, layout, where_of
from textsieve.pipeline.config import PipelineConfig, PipelineConfigError
from textsieve.stages.planning import PlanError, PlannedSet


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


def planned_sets(cfg: PipelineConfig) -> list[tuple[str, PlannedSet]]:
    """(stage, set) of every set the run's stages will write, in run order, from each stage's
    descriptor (`output_sets`); annotate's own shards are the set named ""."""
    lay = layout(cfg)
    out: list[tuple[str, PlannedSet]] = []
    for name in cfg.stages():
        kind = name.partition(":")[0]
        sets = SPECS[kind].output_sets
        if sets is None:
            continue
        try:
            out += [(name, s) for s in sets(build_named(cfg, name), lay, where_of(kind, cfg.section_index(name)))]
        except PlanError as exc:
            raise PipelineConfigError(f"{cfg.source}: {exc}") from None
    return out


def check_rules(cfg: PipelineConfig) -> None:
    """Compile every recipe of the pipeline (`select.recipe`, each `dsir[i].recipe`) against the
    columns available when its stage runs; raise PipelineConfigError naming the YAML path. Two
    stages that would write the same set are refused too."""
    from textsieve.recipes.language import RecipeError
    from textsieve.recipes.sql import compile_recipe, schema_from_arrow
    from textsieve.recipes.survivors import as_recipe

    planned = planned_sets(cfg)
    writer: dict[str, str] = {}
    for name, planned_set in planned:
        first = writer.setdefault(planned_set.name, name)
        if first != name:
            raise PipelineConfigError(
                f"{cfg.source}: {_where(cfg, name)}: writes _{planned_set.name}, as {_where(cfg, first)} does; give "
                "them different names")
    attrs = attrs_dir(cfg)
    on_disk = existing_sets(attrs)
    main = next((s.schema for _, s in planned if s.name == ""), None)

    def schema_before(stage: str) -> Any:
        """Columns joinable when `stage` runs: the sets on disk and those the stages before it
        write, less the stage's own (a fit never filters on the weights it replaces)."""
        own = {s.name for n, s in planned if n == stage}
        sets = {n: a for n, a in on_disk.items() if n not in own}
        remade: dict[str, str | None] = {}
        for name, planned_set in planned:
            if name == stage:
                break
            if planned_set.name:
                sets[planned_set.name] = planned_set.schema
                remade[planned_set.name] = planned_set.fingerprint
        out = schema_from_arrow(attrs, [("", main, [])] + [(n, a, []) for n, a in sorted(sets.items())])
        out.planned = remade
        return out

    for name in cfg.stages():
        recipe = as_recipe(getattr(build_named(cfg, name), "recipe", None))
        if recipe is None or main is None:
            continue
        try:
            compile_recipe(recipe, schema_before(name))
        except RecipeError as exc:
            raise PipelineConfigError(f"{cfg.source}: {_where(cfg, name)}.recipe: {exc} (checked against the columns "
                                      "the planned stages will write)") from None


def _where(cfg: PipelineConfig, name: str) -> str:
    return where_of(name.partition(":")[0], cfg.section_index(name))
