"""Turn a validated pipeline file into the stage config dataclasses the stages already take.

The pipeline never re-implements a stage: it fills `AnnotateConfig`, `ExactConfig`,
`FuzzyConfig`, `DsirFitConfig` and `SelectConfig` (own section + shared keys + the fields the
output layout fixes) and calls the stage's `run_*` function, exactly as the CLI does.

Output layout: `OUT/docs/` (extracted documents, when the file has an `extract:` section; annotate
then reads them), `OUT/attrs/` (annotate shards and the `_dedup_*`, `_dsir_*` sets beside them),
`OUT/selected/` (the selection), `OUT/train/` (the mix's training shards), `OUT/pipeline.resolved.yaml`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import fields
from typing import Any

from textsieve.pipeline.config import STAGES, PipelineConfig, PipelineConfigError, StageSpec, parse_dsir_targets

ATTRS = "attrs"
DOCS = "docs"
SELECTED = "selected"
TRAIN = "train"
SPECS = {s.name: s for s in STAGES}


def attrs_dir(cfg: PipelineConfig) -> str:
    return f"{cfg.output.rstrip('/')}/{ATTRS}"


def docs_dir(cfg: PipelineConfig) -> str:
    """Where `extract` writes its documents (annotate's input when the pipeline extracts)."""
    return f"{cfg.output.rstrip('/')}/{DOCS}"


def selected_dir(cfg: PipelineConfig) -> str:
    return f"{cfg.output.rstrip('/')}/{SELECTED}"


def train_dir(cfg: PipelineConfig) -> str:
    """Where `mix` writes the training shards and their manifest.json."""
    return f"{cfg.output.rstrip('/')}/{TRAIN}"


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node[part]
    return node


def _section(data: dict[str, Any], spec: StageSpec, index: int | None) -> dict[str, Any]:
    if spec.section.endswith("[]"):
        return data[spec.section[:-2]][index or 0]
    return _get(data, spec.section)


def derived_values(cfg: PipelineConfig, name: str, progress: bool) -> dict[str, Any]:
    """The fields the output layout fixes, per stage (see `StageSpec.derived`)."""
    attrs = attrs_dir(cfg)
    extracts = cfg.data.get("extract") is not None
    fixed: dict[str, dict[str, Any]] = {"extract": {"output": docs_dir(cfg)},
                                        "annotate": {"output": attrs} | ({"inputs": [docs_dir(cfg)]} if extracts
                                                                         else {}),
                                        "embed": {"directory": attrs},
                                        "dedup_exact": {"inputs": [attrs], "output": attrs},
                                        "dedup_fuzzy": {"directory": attrs},
                                        "dedup_lines": {"directory": attrs},
                                        "dedup_semantic": {"directory": attrs},
                                        "decontaminate": {"directory": attrs}, "pii": {"directory": attrs},
                                        "tokens": {"directory": attrs}, "mix": {"output": train_dir(cfg)},
                                        "learn": {"directory": attrs},
                                        "dsir": {"raw": attrs},
                                        "select": {"directory": attrs, "output": selected_dir(cfg)}}
    return fixed[name] | {"progress": progress}


def build(cfg: PipelineConfig, name: str, *, progress: bool = True, index: int | None = None,
          overwrite: bool | None = None) -> Any:
    """The stage config dataclass of stage `name` (for `dsir`, the fit number `index`)."""
    spec = SPECS[name]
    data = cfg.data
    own = dict(_section(data, spec, index))
    kw: dict[str, Any] = {}
    for f in fields(spec.cls):
        if f.name in spec.derived:
            continue
        kw[f.name] = _get(data, spec.shared_fields()[f.name]) if f.name in spec.shared_fields() else own[f.name]
    kw.update(derived_values(cfg, name, progress))
    if "workers" in kw and kw["workers"] is None:
        kw["workers"] = data["workers"]
    if overwrite is not None and "overwrite" in kw:
        kw["overwrite"] = overwrite
    if name == "annotate":
        kw["models"] = dict(kw["models"] or {})
    if name == "dsir" and kw.get("recipe") is not None:
        kw["recipe"] = _recipe(cfg, kw["recipe"], f"dsir[{index or 0}].recipe")
    if name == "select":
        kw["recipe"] = _recipe(cfg, kw["recipe"])
        if kw["dsir"] is not None:
            kw["dsir"] = parse_dsir_targets(kw["dsir"], "select.dsir")
    return spec.cls(**kw)


def _recipe(cfg: PipelineConfig, value: Any, where: str = "select.recipe"):
    from textsieve.recipes.language import Recipe, RecipeError, load_recipe

    if value is None:
        return None
    try:
        if isinstance(value, dict):
            return Recipe.from_dict(value, name=str(value.get("name", "pipeline")), base=cfg.base)
        return load_recipe(value)
    except RecipeError as exc:
        raise PipelineConfigError(f"{cfg.source}: {where}: {exc}") from None


def executor_support(cfg: PipelineConfig) -> dict[str, bool]:
    """Which stages run on the chosen executor. With `executor: ray`, fail early and clearly when
    Ray support is missing; stages whose config has no executor field run locally."""
    if cfg.data["executor"] == "local":
        return {}
    spec = importlib.util.find_spec("textsieve.exec.ray_exec")
    if spec is None:
        raise PipelineConfigError("executor: ray: Ray support is not installed in this textsieve "
                                  "(textsieve.exec.ray_exec is missing); use executor: local")
    from textsieve.exec import ray_exec

    if not hasattr(ray_exec, "ray_ordered_map"):
        raise PipelineConfigError("executor: ray: this textsieve's Ray support has no ray_ordered_map; "
                                  "use executor: local")
    if importlib.util.find_spec("ray") is None:
        raise PipelineConfigError("executor: ray needs Ray, which is not installed: "
                                  "pip install 'textsieve[ray]' (or pip install ray), or use executor: local")
    return {s.name: "executor" in {f.name for f in fields(s.cls)} for s in STAGES}
