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

Stages are looked up by kind in a registry (`STAGE_RUNNERS`, filled by `register_stage`): how to
run one, what its state key depends on and how to tell that its outputs are complete. The loop
in `run_pipeline` knows no stage by name except annotate, the root every key depends on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import yaml

from textsieve._version import __version__
from textsieve.io.atomic import atomic_open
from textsieve.pipeline.build import attrs_dir, build, docs_dir, executor_support, selected_dir, train_dir
from textsieve.pipeline.config import PipelineConfig, PipelineConfigError

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


@dataclass
class PipelineResult:
    output: str
    stages: list[StageRecord] = field(default_factory=list)
    seconds: float = 0.0


def input_fingerprints(inputs: list[str], mode: str = "stat") -> list[dict[str, Any]]:
    """Per input file: path, size and mtime (`stat`) or a SHA-256 of its bytes (`content`), the
    same identity annotate keys its shards on (`io.identity`)."""
    from textsieve.io.identity import file_identity
    from textsieve.io.paths import expand_inputs

    return [{"path": path, **file_identity(path, verify=mode == "content")}
            for shard in expand_inputs(inputs) for path in (shard.members or (shard.path,))]


def resolved_document(cfg: PipelineConfig) -> dict[str, Any]:
    """The config with defaults filled, absolute paths, input fingerprints and the version."""
    data = json.loads(json.dumps(cfg.data, default=str))
    ann = data["annotate"]
    if ann.get("resources") is None:  # record the word lists actually found, for an exact repeat
        from textsieve.signals.resources import resolve_resources_dir

        found = resolve_resources_dir(None)
        ann["resources"] = str(found) if found else None
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


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _content(stage_cfg: Any) -> dict[str, Any]:
    d = asdict(stage_cfg)
    if d.get("recipe") is not None:
        d["recipe"] = stage_cfg.recipe.fingerprint()
    return {k: v for k, v in d.items() if k not in NOT_CONTENT}


def _annotate_key(attrs: str) -> str:
    """What downstream stages depend on: the published contents of annotate's output (its
    manifest's hashes of every shard)."""
    from textsieve.io.publish import content_key

    fs, root = fsspec.core.url_to_fs(attrs)
    return _key(content_key(fs, root))


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


# --------------------------------------------------------------------------- the stage registry


@dataclass
class Outcome:
    """What the pipeline records of one stage run: `detail` goes to the run log and, unless
    `summary` is given, makes the closing line; `ran` is False when there was nothing to do."""

    detail: dict[str, Any]
    ran: bool = True
    summary: str | None = None


def _no_upstream(cfg: PipelineConfig, name: str, stage_cfg: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    return []


@dataclass(frozen=True)
class StageRunner:
    """How `run_pipeline` runs one kind of stage (`dsir` for the stage named `dsir:web`). Its
    config is `build(cfg, kind)`, from the kind's `StageSpec` in `pipeline.config.STAGES`, and
    `PipelineConfig.stages()` puts it in order; everything else is here, so the run loop needs
    no edit for a new stage, only a `register_stage` call.

    `run`: stage config -> `Outcome` (it imports the stage when called, so a pipeline loads only
    the stages it runs). `complete(cfg, name, stage_cfg)`: are all its outputs there?
    With it, the stage is tracked by a state file keyed by its content config and `upstream`
    (what it depends on besides the annotate shards, which everything depends on) and skipped
    when done. Without it (annotate), the stage resumes shard by shard by itself, runs every
    time, and `output_key(cfg)` fingerprints its outputs for the stages after it."""

    run: Callable[[Any], Outcome]
    complete: Callable[[PipelineConfig, str, Any], bool] | None = None
    upstream: Callable[[PipelineConfig, str, Any, list[str], dict[str, str]], list[Any]] = _no_upstream
    output_key: Callable[[PipelineConfig], str] | None = None


STAGE_RUNNERS: dict[str, StageRunner] = {}


def register_stage(kind: str, runner: StageRunner) -> None:
    """Let `textsieve run` run stage `kind` (the name of its `StageSpec`)."""
    if (runner.complete is None) == (runner.output_key is None):
        raise ValueError(f"stage {kind}: give exactly one of complete (state-tracked) or output_key (self-resuming)")
    STAGE_RUNNERS[kind] = runner


def _annotated_rels(cfg: PipelineConfig) -> tuple[Any, list[str]]:
    """The file system and every annotate shard's path relative to OUT/attrs: each later stage
    writes one file per annotate shard."""
    from textsieve.io.attributes import attribute_shards

    attrs = attrs_dir(cfg)
    fs, paths = attribute_shards(attrs)
    root = fsspec.core.url_to_fs(attrs)[1].rstrip("/")
    return fs, [p[len(root) + 1:] for p in paths]


def _set_complete(cfg: PipelineConfig, set_name: str, summary: bool = True) -> bool:
    """Does attribute set `set_name` have one file per annotate shard (and its summary.json)?"""
    from textsieve.io.attributes import attribute_set_dir
    from textsieve.io.publish import read_manifest

    fs, rels = _annotated_rels(cfg)
    set_root = fsspec.core.url_to_fs(attribute_set_dir(attrs_dir(cfg), set_name))[1].rstrip("/")
    manifest = read_manifest(fs, set_root)  # published as one unit: the manifest lists it all or is absent
    return manifest is not None and (not summary or "summary.json" in manifest.files) and all(
        r in manifest.files for r in rels)


def _extract(c: Any) -> Outcome:
    from textsieve.stages.extract import run_extract

    res = run_extract(c)
    left = ", ".join(f"{n:,} {r}" for r, n in res.skipped.items()) or "none left out"
    return Outcome({"pages": res.pages, "documents": res.documents, "skipped": res.skipped,
                    "bad_records": res.bad_records, "shards_written": len(res.shards_written),
                    "shards_skipped": len(res.shards_skipped)}, ran=bool(res.shards_written),
                   summary=f"extract: {res.documents:,} of {res.pages:,} pages kept ({left}); "
                           f"{len(res.shards_written)} shard(s) written, {len(res.shards_skipped)} already done")


def _annotate(c: Any) -> Outcome:
    from textsieve.stages.annotate import run_annotate

    res = run_annotate(c)
    for rel in res.shards_skipped:
        log.info("annotate: skipped %s (already annotated)", rel)
    return Outcome({"documents_this_run": res.documents, "shards_written": len(res.shards_written),
                    "shards_skipped": len(res.shards_skipped)}, ran=bool(res.shards_written),
                   summary=f"annotate: {len(res.shards_written)} shard(s) written ({res.documents:,} docs), "
                           f"{len(res.shards_skipped)} already done")


def _dedup_exact(c: Any) -> Outcome:
    from textsieve.stages.dedup_exact import run_exact

    r = run_exact(c)
    return Outcome({"documents": r.documents, "duplicates": r.removed})


def _dedup_exact_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    from textsieve.stages.dedup_exact import exact_names

    return _set_complete(cfg, exact_names(c.normalize, c.bloom_fp is not None)[0])  # the set is named by its settings


def _dedup_fuzzy(c: Any) -> Outcome:
    from textsieve.stages.dedup_fuzzy import run_fuzzy

    r = run_fuzzy(c)
    return Outcome({f"t{t}": s["n_removed"] for t, s in r.summary["thresholds"].items()} | {"resumed": r.skipped})


def _dedup_semantic(c: Any) -> Outcome:
    from textsieve.stages.dedup_semantic import run_semantic

    r = run_semantic(c)
    per = r.summary.get("eps", {})
    return Outcome({f"e{e}": s.get("n_removed") for e, s in per.items()} | {"resumed": r.skipped}
                   if isinstance(per, dict) else {"resumed": r.skipped}, ran=not r.skipped)


def _attribute_sets_now(cfg: PipelineConfig, prefix: str = "", skip: tuple[str, ...] = ()) -> list[Any]:
    """The content keys of OUT/attrs' attribute sets named `prefix*` (less those starting with one
    of `skip`) as they are when the stage is
    about to run: whatever made them (an `embed:` section, `annotate.signals: [embed]`, a stage
    earlier in the file or an earlier run), a changed set re-runs the stage that reads it."""
    from textsieve.io.attributes import attribute_set_dir, attribute_sets
    from textsieve.io.publish import content_key

    try:
        names = attribute_sets(attrs_dir(cfg))
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for set_name in sorted(n for n in names if n.startswith(prefix) and not n.startswith(skip)):
        fs, root = fsspec.core.url_to_fs(attribute_set_dir(attrs_dir(cfg), set_name))
        out.append([set_name, content_key(fs, root.rstrip("/"))])
    return out


#: sets written by pipeline stages that run after dedup (and semantic dedup's own): never its input
_AFTER_DEDUP = ("dedup_semantic", "dsir_", "tokens_", "pii", "decontam", "learned_")


def _embedding_set(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """Semantic dedup reads the embeddings (made by `embed:` or by `annotate.signals: [embed]`)
    and, with `keep: COLUMN`, a column of any other set: their current contents."""
    if c.keep in ("first", "longest", "none"):
        return _attribute_sets_now(cfg, prefix="embed_")
    return _attribute_sets_now(cfg, skip=_AFTER_DEDUP)


def _dedup_lines(c: Any) -> Outcome:
    from textsieve.stages.dedup_lines import run_lines

    r = run_lines(c)
    return Outcome({"documents": r.documents, "lines": r.lines, "duplicate_lines": r.duplicate_lines,
                    "groups": r.groups})


def _decontaminate(c: Any) -> Outcome:
    from textsieve.stages.decontaminate import run_decontaminate

    r = run_decontaminate(c)
    return Outcome({"documents": r.documents, "contaminated": r.contaminated, "matched_ngrams": r.matched_ngrams},
                   ran=not r.skipped)


def _benchmarks(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The benchmark files' identities (a changed benchmark redoes the stage)."""
    paths = [v.partition("=")[2] if "=" in v and "/" not in v.partition("=")[0] else v for v in c.against]
    return [input_fingerprints(paths, cfg.data["fingerprint"])]


def _pii(c: Any) -> Outcome:
    from textsieve.stages.pii import run_pii

    r = run_pii(c)
    return Outcome({"documents": r.documents, "spans": int(r.summary.get("ts_pii_count", 0))}, ran=not r.skipped)


def _embed(c: Any) -> Outcome:
    from textsieve.stages.embed import run_embed

    r = run_embed(c)
    return Outcome({"documents": r.documents, "column": r.column, "model": r.model["model"],
                    "model_fingerprint": r.model["model_fingerprint"]}, ran=not r.skipped)


def _embed_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    from textsieve.embedding.models import load_embedder
    from textsieve.stages.embed import set_name

    return _set_complete(cfg, set_name(load_embedder(c.model, c.name).name))


def _embed_model(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The model's identity (its files' fingerprint): a changed model re-embeds."""
    from textsieve.embedding.models import load_embedder

    return [load_embedder(c.model, c.name).fingerprint]


def _tokens(c: Any) -> Outcome:
    from textsieve.stages.tokens import run_tokens

    r = run_tokens(c)
    return Outcome({"documents": r.documents, "tokens": r.tokens, "column": r.column}, ran=not r.skipped)


def _tokens_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    from textsieve.stages.tokens import set_name
    from textsieve.tokenization.tokenizer import load_tokenizer

    return _set_complete(cfg, set_name(load_tokenizer(c.tokenizer, c.name, pattern=c.tiktoken_pattern).name))


def _tokenizer_file(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    return [input_fingerprints([c.tokenizer], cfg.data["fingerprint"])]


def _mix(c: Any) -> Outcome:
    from textsieve.stages.mix import run_mix

    r = run_mix(c)
    return Outcome({"documents": r.documents, "tokens": r.tokens, "shards": len(r.shards)}, ran=not r.skipped)


def _mix_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    from textsieve.io.publish import read_manifest

    fs, root = fsspec.core.url_to_fs(train_dir(cfg))
    return read_manifest(fs, root.rstrip("/")) is not None


def _mix_upstream(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """Every earlier stage (a source may use any set, or the selection), the mix file and a
    tokenizer file given in the section."""
    files = [p for p in (c.mix if isinstance(c.mix, str) else None, c.tokenizer) if p and p != "words"]
    return _every_other_stage(cfg, name, c, names, keys) + [input_fingerprints(files, cfg.data["fingerprint"])]


def _dsir_fit(c: Any) -> Outcome:
    from textsieve.stages.dsir_fit import run_fit

    r = run_fit(c)
    return Outcome({"documents": r.documents, "shards_written": len(r.shards_written),
                    "shards_skipped": len(r.shards_skipped)})


def _dsir_upstream(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The target files; with a recipe, also the stages before it (its survivors depend on the
    dedup stages and earlier fits)."""
    out: list[Any] = [input_fingerprints(c.targets, cfg.data["fingerprint"])]
    if getattr(c, "features", "ngram") != "ngram":  # embedding DSIR reads the pool's embeddings
        out += _attribute_sets_now(cfg, prefix="embed_")
    if c.recipe is not None:
        out += [keys[n] for n in names[:names.index(name)] if n != "annotate"]
    return out


def _learn_apply(c: Any) -> Outcome:
    from textsieve.stages.learn_apply import run_learn_apply

    r = run_learn_apply(c)
    return Outcome({"documents": r.documents, "computed": r.computed, "mean_probability": r.mean_probability},
                   ran=not r.skipped)


def _learn_upstream(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The model file, and the sets a model may read beside the annotate shards (embeddings,
    whoever wrote them)."""
    return [input_fingerprints([c.model], cfg.data["fingerprint"]), _attribute_sets_now(cfg, prefix="embed_")]


def _learn_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    """The set is whole and was made by this model file's parameters (not another of its name)."""
    from textsieve.io.attributes import attribute_set_dir
    from textsieve.learned.model import load_model

    try:
        model = load_model(c.model)
        fs, root = fsspec.core.url_to_fs(attribute_set_dir(attrs_dir(cfg), model.set_name))
        made_by = json.loads(fs.cat_file(f"{root.rstrip('/')}/summary.json")).get("model_fingerprint")
    except (OSError, ValueError):
        return False
    return made_by == model.fingerprint and _set_complete(cfg, model.set_name)


def _select(c: Any) -> Outcome:
    from textsieve.stages.select import run_select

    r = run_select(c)
    return Outcome({"selected": r.documents, "pool": r.pool, "shards_written": len(r.shards_written),
                    "shards_skipped": len(r.shards_skipped)})


def _select_complete(cfg: PipelineConfig, name: str, c: Any) -> bool:
    from textsieve.io.publish import read_manifest

    fs, rels = _annotated_rels(cfg)
    out = fsspec.core.url_to_fs(selected_dir(cfg))[1].rstrip("/")
    manifest = read_manifest(fs, out)
    if manifest is None or "selection.json" not in manifest.files:
        return False
    if c.shards is not None:  # training shards: published as one unit with selection.json beside them
        return True
    fmt = cfg.data["select"]["format"]
    return all(f"{r[:-len('.parquet')]}.{fmt}" in manifest.files for r in rels)


def _every_other_stage(cfg: PipelineConfig, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """Every stage before this one (a selection may use any set they write)."""
    return [keys[n] for n in names[:names.index(name)] if n != "annotate"]


register_stage("extract", StageRunner(_extract, output_key=lambda cfg: _annotate_key(docs_dir(cfg))))
register_stage("annotate", StageRunner(_annotate, output_key=lambda cfg: _annotate_key(attrs_dir(cfg))))
register_stage("embed", StageRunner(_embed, upstream=_embed_model, complete=_embed_complete))
register_stage("dedup_exact", StageRunner(_dedup_exact, complete=_dedup_exact_complete))
register_stage("dedup_fuzzy", StageRunner(_dedup_fuzzy, complete=lambda cfg, name, c: _set_complete(cfg, name)))
register_stage("dedup_lines", StageRunner(_dedup_lines, complete=lambda cfg, name, c: _set_complete(cfg, name)))
register_stage("dedup_semantic", StageRunner(_dedup_semantic, upstream=_embedding_set,
                                             complete=lambda cfg, name, c: _set_complete(cfg, "dedup_semantic")))
register_stage("decontaminate", StageRunner(_decontaminate, upstream=_benchmarks,
                                            complete=lambda cfg, name, c: _set_complete(cfg, "decontam")))
register_stage("pii", StageRunner(_pii, complete=lambda cfg, name, c: _set_complete(cfg, "pii")))
register_stage("tokens", StageRunner(_tokens, upstream=_tokenizer_file, complete=_tokens_complete))
register_stage("learn", StageRunner(_learn_apply, upstream=_learn_upstream, complete=_learn_complete))
register_stage("dsir", StageRunner(_dsir_fit, upstream=_dsir_upstream,
                                   complete=lambda cfg, name, c: _set_complete(cfg, name.replace(":", "_"), False)))
register_stage("select", StageRunner(_select, complete=_select_complete, upstream=_every_other_stage))
register_stage("mix", StageRunner(_mix, complete=_mix_complete, upstream=_mix_upstream))


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
        runner = STAGE_RUNNERS[kind]
        if cfg.data["executor"] == "ray" and not supported.get(kind, False):
            log.info("%s: no Ray path for this stage; it runs on the local pool", name)
        start = time.perf_counter()
        index = cfg.section_index(name)
        if runner.complete is None:  # resumes shard by shard by itself: always run
            _say(quiet, label)
            outcome = runner.run(build(cfg, kind, progress=progress, index=index))
            keys[name] = runner.output_key(cfg) if runner.output_key else ""
            result.stages.append(StageRecord(name, "ran" if outcome.ran else "skipped", time.perf_counter() - start,
                                             outcome.detail))
            _say(quiet, _summary(name, outcome))
            continue
        probe = build(cfg, kind, progress=progress, index=index)
        key = _key(name, _content(probe), [keys["annotate"], *runner.upstream(cfg, name, probe, names, keys)])
        keys[name] = key
        old = states.read(name)
        if old.get("key") == key and old.get("status") == "done" and runner.complete(cfg, name, probe) \
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
