"""Run a pipeline file: annotate -> dedup (exact, fuzzy) -> DSIR fits -> select, resumably.

Resume rules (a run may be killed at any moment and re-run with the same command):
* annotate skips every attribute shard that exists (shards are published atomically, so a
  partial shard never has its final name);
* every later stage has a state file `OUT/.state/<stage>.json` holding a key of its config and
  of everything upstream (annotate shards, earlier stages' keys, DSIR target files). It is
  written as "running" before the stage starts and "done" after. A stage whose key matches a
  "done" state and whose outputs exist is skipped; one interrupted while running is resumed
  through the stage's own per-shard resume; one whose config or upstream changed is redone.
* the resolved config `OUT/pipeline.resolved.yaml` has no timestamps (identical on every run);
  timings go to `OUT/pipeline.run.json`, the only file that differs between runs.

Stages are looked up by kind in the registry of stage descriptors (`stages.registry`, each
module's `STAGE`): how to run one, what its state key depends on and how to tell that its outputs
are complete. The loop in `run_pipeline` knows no stage by name except annotate, the root every
key depends on.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import yaml

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.io.atomic import atomic_open
from textsieve.io.identity import input_identities
from textsieve.pipeline.build import SPECS, build, executor_support, layout
from textsieve.pipeline.config import STAGES, PipelineConfig, PipelineConfigError, section_value
from textsieve.stages.descriptor import Outcome, key_of

log = logging.getLogger("textsieve.pipeline")

RESOLVED = "pipeline.resolved.yaml"
RUN_LOG = "pipeline.run.json"
STATE_DIR = ".state"
#: config fields that change how a stage runs, not what it writes (left out of state keys)
NOT_CONTENT = {"progress", "workers", "threads", "tmp_dir", "memory", "memory_mb", "executor", "address",
               "overwrite", "batch_size", "part_size"}


@dataclass
class StageRecord:
    name: str
    status: str  # ran | skipped
    seconds: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


@result_display
@dataclass
class PipelineResult:
    output: str
    stages: list[StageRecord] = field(default_factory=list)
    seconds: float = 0.0

    def _headline(self) -> str:
        """Jupyter's caption of a run (`textsieve.display`): each stage and whether it ran."""
        return ", ".join(f"{s.name} {s.status}" for s in self.stages) + f" in {self.seconds:.1f} s"


def input_fingerprints(inputs: list[str], mode: str = "stat") -> list[dict[str, Any]]:
    """Per input file: path, size and mtime (`stat`) or a SHA-256 of its bytes (`content`), the
    same identity annotate keys its shards on (`io.identity`)."""
    return input_identities(inputs, mode)


def resolved_document(cfg: PipelineConfig) -> dict[str, Any]:
    """The config with defaults filled, absolute paths, input fingerprints and the version."""
    data = json.loads(json.dumps(cfg.data, default=str))
    for stage in STAGES:  # what each stage actually used, for an exact repeat (annotate: the word lists found)
        section = section_value(data, stage)
        if stage.record is not None and section is not None:
            stage.record(section)
    source = cfg.source if cfg.source.startswith("<") else str(Path(cfg.source).resolve())
    data["provenance"] = {"textsieve_version": __version__, "pipeline_file": source,
                          "fingerprint_mode": cfg.data["fingerprint"],
                          "inputs": input_fingerprints(cfg.data["inputs"], cfg.data["fingerprint"])}
    return data


def _check_provenance(cfg: PipelineConfig, now: dict[str, Any], fs, out_root: str) -> None:
    """Refuse to continue in a folder (or from a resolved file) whose inputs have changed."""
    claims = []
    given = cfg.data.get("provenance")
    if given:
        claims.append(("the resolved pipeline file", given))
        if given.get("textsieve_version") != __version__:
            log.warning("%s was resolved by textsieve %s, this is %s: outputs may differ", cfg.source,
                        given.get("textsieve_version"), __version__)
    path = f"{out_root}/{RESOLVED}"
    if fs.exists(path) and not cfg.data["overwrite"]:
        old = yaml.safe_load(fs.cat_file(path)) or {}
        claims.append((path, old.get("provenance") or {}))
    for where, prov in claims:
        if prov.get("fingerprint_mode", "stat") != now["fingerprint_mode"]:
            continue
        before = {r["path"]: r for r in prov.get("inputs", [])}
        after = {r["path"]: r for r in now["inputs"]}
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if changed:
            raise PipelineConfigError(
                f"the inputs differ from those recorded in {where} ({len(changed)} file(s), e.g. {changed[0]}: "
                f"{before.get(changed[0])} -> {after.get(changed[0])}); set overwrite: true or use another output")


_key = key_of


def _content(stage_cfg: Any) -> dict[str, Any]:
    d = asdict(stage_cfg)
    if d.get("recipe") is not None:
        d["recipe"] = stage_cfg.recipe.fingerprint()
    return {k: v for k, v in d.items() if k not in NOT_CONTENT}


class _States:
    """The `OUT/.state/<stage>.json` files."""

    def __init__(self, fs, out_root: str):
        self.fs, self.root = fs, f"{out_root}/{STATE_DIR}"

    def read(self, name: str) -> dict[str, Any]:
        path = f"{self.root}/{name.replace(':', '_')}.json"
        return json.loads(self.fs.cat_file(path)) if self.fs.exists(path) else {}

    def write(self, name: str, doc: dict[str, Any]) -> None:
        with atomic_open(self.fs, f"{self.root}/{name.replace(':', '_')}.json", "w") as fh:
            json.dump(doc, fh, sort_keys=True)


def _remove_leftovers(fs, out_root: str) -> None:
    """Delete temporary files a killed run left behind (`.NAME.tmp-PID@HOST-...`, see
    io.atomic): they never count as finished. Only those whose writer process is gone go
    (`io.leftovers`), so a run started beside a live one does not break it."""
    from textsieve.io.leftovers import remove_stale_temps

    remove_stale_temps(fs, out_root)


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"textsieve run: {text}", file=sys.stderr, flush=True)


def run_pipeline(cfg: PipelineConfig, *, quiet: bool = False) -> PipelineResult:
    """Run (or resume) every stage of the pipeline; see the module doc."""
    t0 = time.perf_counter()
    supported = executor_support(cfg)
    fs, out_root = fsspec.core.url_to_fs(cfg.output)
    out_root = out_root.rstrip("/")
    resolved = resolved_document(cfg)
    _check_provenance(cfg, resolved["provenance"], fs, out_root)
    from textsieve.pipeline.columns import check_rules

    check_rules(cfg)  # a rule typo fails now, not after annotate, dedup and DSIR have run
    fs.makedirs(out_root, exist_ok=True)
    _remove_leftovers(fs, out_root)
    with atomic_open(fs, f"{out_root}/{RESOLVED}", "w") as fh:
        yaml.safe_dump(resolved, fh, sort_keys=False, allow_unicode=True)
    result = PipelineResult(cfg.output)
    states = _States(fs, out_root)
    progress = not quiet
    names = cfg.stages()
    keys: dict[str, str] = {}
    for i, name in enumerate(names, 1):
        label = f"[{i}/{len(names)}] {name.replace('_', ' ')}"
        kind, _, fit = name.partition(":")
        runner = SPECS[kind]
        if cfg.data["executor"] == "ray" and not supported.get(kind, False):
            log.info("%s: no Ray path for this stage; it runs on the local pool", name)
        start = time.perf_counter()
        index = cfg.section_index(name)
        if runner.complete is None:  # resumes shard by shard by itself: always run
            _say(quiet, label)
            outcome = runner.run(build(cfg, kind, progress=progress, index=index))
            keys[name] = runner.output_key(layout(cfg)) if runner.output_key else ""
            result.stages.append(StageRecord(name, "ran" if outcome.ran else "skipped", time.perf_counter() - start,
                                             outcome.detail))
            _say(quiet, _summary(name, outcome))
            continue
        probe = build(cfg, kind, progress=progress, index=index)
        always = [keys[s.name] for s in STAGES if s.always]  # everything reads the annotate shards
        key = _key(name, _content(probe), [*always, *runner.upstream(layout(cfg), name, probe, names, keys)])
        keys[name] = key
        old = states.read(name)
        if old.get("key") == key and old.get("status") == "done" and runner.complete is not None \
                and runner.complete(layout(cfg), name, probe) \
                and not cfg.data["overwrite"]:
            log.info("%s: skipped (done with this configuration and inputs)", name)
            _say(quiet, f"{label}: already done")
            result.stages.append(StageRecord(name, "skipped"))
            continue
        # redo from scratch when the config or upstream changed (or a redo was interrupted)
        redo = cfg.data["overwrite"] or (bool(old) and (old.get("key") != key or old.get("redo", False)))
        if redo and old:
            log.info("%s: configuration or upstream changed since the last run: redoing it", name)
        states.write(name, {"key": key, "status": "running", "redo": redo})
        _say(quiet, label)
        outcome = runner.run(build(cfg, kind, progress=progress, index=index, overwrite=True if redo else None))
        states.write(name, {"key": key, "status": "done", "redo": False})
        result.stages.append(StageRecord(name, "ran", time.perf_counter() - start, outcome.detail))
        _say(quiet, _summary(name, outcome))
    result.seconds = time.perf_counter() - t0
    with atomic_open(fs, f"{out_root}/{RUN_LOG}", "w") as fh:  # timings live here and only here
        json.dump({"version": __version__, "seconds": result.seconds,
                   "stages": [asdict(s) for s in result.stages]}, fh, indent=1)
    return result


def _summary(name: str, outcome: Outcome) -> str:
    return outcome.summary or f"{name.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in outcome.detail.items())
