"""Turn a validated pipeline file into the stage config dataclasses the stages already take.

The pipeline never re-implements a stage: it fills `AnnotateConfig`, `ExactConfig`,
`FuzzyConfig`, `DsirFitConfig` and `SelectConfig` (own section + shared keys + the fields the
output layout fixes) and calls the stage's `run_*` function, exactly as the CLI does.

Output layout: `OUT/docs/` (extracted documents, when the file has an `extract:` section; annotate
then reads them), `OUT/attrs/` (annotate shards and the `sets/dedup_*`, `sets/dsir_*` sets beside them),
`OUT/selected/` (the selection), `OUT/train/` (the mix's training shards), `OUT/pipeline.resolved.yaml`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import fields
from typing import Any

from textsieve.pipeline.config import STAGES, PipelineConfig, PipelineConfigError, section_value
from textsieve.stages.descriptor import Layout, shared_fields

SPECS = {s.name: s for s in STAGES}


def layout(cfg: PipelineConfig) -> Layout:
    """The run as its stages' hooks see it: output folders and the resolved file."""
    return Layout(cfg.output, cfg.data)


def attrs_dir(cfg: PipelineConfig) -> str:
    return layout(cfg).attrs


def docs_dir(cfg: PipelineConfig) -> str:
    """Where `extract` writes its documents (annotate's input when the pipeline extracts)."""
    return layout(cfg).docs


def selected_dir(cfg: PipelineConfig) -> str:
    return layout(cfg).selected


def train_dir(cfg: PipelineConfig) -> str:
    """Where `mix` writes the training shards and their manifest.json."""
    return layout(cfg).train


def _get(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node[part]
    return node


def where_of(kind: str, index: int | None = None) -> str:
    """Where a stage's section is in the pipeline file: `dedup.exact`, `dsir[1]`."""
    spec = SPECS[kind]
    return spec.section if spec.label is None else f"{spec.section[:-2]}[{index or 0}]"


def build_named(cfg: PipelineConfig, name: str) -> Any:
    """The config of the run's stage `name` (`dsir:web` is the `dsir` item named web), progress off."""
    return build(cfg, name.partition(":")[0], progress=False, index=cfg.section_index(name))


def build(cfg: PipelineConfig, name: str, *, progress: bool = True, index: int | None = None,
          overwrite: bool | None = None) -> Any:
    """The stage config dataclass of stage `name` (for a list section, its item `index`): its
    own section, the keys it shares, the fields the output layout fixes, then its `finish` hook."""
    spec = SPECS[name]
    data = cfg.data
    own = section_value(data, spec)
    where = where_of(name, index)
    if spec.label is not None:
        own = own[index or 0]
    shared = shared_fields(spec)
    kw: dict[str, Any] = {}
    for f in fields(spec.config):
        if f.name in spec.derived:
            continue
        # a shared key written in the stage's own section overrides it there (`extract.on_error`)
        kw[f.name] = own[f.name] if f.name in own else _get(data, shared[f.name])
    kw.update(spec.placed(layout(cfg)) | {"progress": progress})
    if spec.placed_item is not None and spec.label is not None:
        kw.update(spec.placed_item(layout(cfg), spec.label(own)))
    if "workers" in kw and kw["workers"] is None:
        kw["workers"] = data["workers"]
    if overwrite is not None and "overwrite" in kw:
        kw["overwrite"] = overwrite
    if spec.finish is not None:
        try:
            spec.finish(kw, cfg.base, where)
        except ValueError as exc:
            raise PipelineConfigError(f"{cfg.source}: {exc}") from None
    return spec.config(**kw)


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
    return {s.name: "executor" in {f.name for f in fields(s.config)} for s in STAGES}
