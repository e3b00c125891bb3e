"""`textsieve mix`: selections mixed at token shares into globally shuffled, fixed-size shards.

Steps (each deterministic for the same mix file, inputs and seed):

1. Sources (`stages.mix_sources`): each source's documents, DSIR multiplicity, language and
   token counts: the counts `textsieve tokens` stored with the mix's tokenizer file when they
   are counts of the texts written, else (the plan says why, `stages.mix_counts`) its texts
   encoded with the mix's tokenizer, in worker processes.
2. Plan (`mixing.plan`): per source the available and target tokens and the epochs that takes;
   an infeasible mix (epochs > max_epochs, an empty source, shares not summing to 1) stops here,
   before anything is written. Then the seeded draw: whole epochs plus a partial one.
3. Scatter (`stages.mix_worker`, one task per source shard, in workers): each drawn record gets
   a seeded random key and goes to one of K bucket files by key range.
4. Gather (`mixing.shuffle`, `mixing.shards`): buckets in key order, each sorted in memory (split
   on disk first when larger than the `--memory` share), cut into shards of the fixed size.

Output: `OUT/shard-NNNNN.{jsonl.zst,parquet}` or `.bin`/`.idx`/`.docs.jsonl`, and `OUT/manifest.json`
(the publication manifest, `io.publish`): per file size, SHA-256, documents, tokens; under
`info.mix` the settings, the plan, per source documents / distinct documents / tokens / epochs /
input fingerprints (with `redact:`, `redacted`: the names, columns and spans replaced per label in
the records written), and tokens per language. Everything is staged in `OUT/.textsieve/staging-mix-KEY/`
and published in one switch: a killed run publishes nothing and its re-run resumes the finished
scatter tasks; the same settings on the same inputs re-run is a no-op, recognised before any
token is counted or any selection record read (`finished_mix`: the run key needs neither).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import fsspec
import numpy as np

from textsieve.display import result_display
from textsieve.exec.budget import memory_plan
from textsieve.io.diskfull import disk_full_error, is_disk_full
from textsieve.io.locations import source_locations
from textsieve.io.overlap import check_apart
from textsieve.io.publish import PublishError, check_file, read_manifest
from textsieve.mixing.plan import Plan, draw_counts, make_plan
from textsieve.mixing.spec import (
    FORMATS,
    WORDS,
    MixError,
    MixSpec,
    load_mix,
    parse_count,
    parse_mix,
    parse_shard_size,
)
from textsieve.options import check_choices, memory_option, option, progress_option
from textsieve.stages.descriptor import (
    PROGRESS_REASON,
    CliSpec,
    Layout,
    Outcome,
    Stage,
    absolute,
    every_stage_before,
    recipe_path,
)
from textsieve.stages.planning import Corpus, StagePlan
from textsieve.stages.training.mix_counts import CountPlan, choose_counts, count_missing, mix_tokenizer
from textsieve.stages.training.mix_sources import SourcePool, resolve_pool

STAGE_NAME = "mix"


class MixInfeasibleError(MixError):
    """The mix cannot be made as planned; `plan` says per source why."""

    def __init__(self, plan: Plan):
        super().__init__("infeasible mix: " + "; ".join(plan.problems) + " (nothing was written)")
        self.plan = plan


@dataclass
class MixConfig:
    """What `textsieve mix` (and `ts.mix`) takes: the mix file, and settings that override it."""

    mix: str | dict[str, Any] = option(help="the mix file (YAML: sources, shares, tokens, tokenizer...; see "
                                            "docs/training-data.md), or a bundled mix by name (llama1: LLaMA-1's "
                                            "seven sources and shares, paths in the current folder); the API "
                                            "also takes its parsed dict",
                                       positional=True, metavar="MIX_YAML")
    output: str | None = option(None, help="folder for the shards and manifest.json (required unless --dry-run)",
                                short="-o", metavar="DIR")
    tokens: int | str | None = option(None, help="total token budget, e.g. 5M (overrides the file's tokens:)",
                                metavar="N")
    tokenizer: str | None = option(None, help="tokenizer.json or tiktoken file, or 'words' for estimated counts "
                                              "(overrides the file's tokenizer:)", metavar="PATH")
    seed: int | None = option(None, help="random seed of the draw and the shuffle (overrides the file's seed:)")
    shard_size: str | None = option(None, help="shard size: '5M tokens' or bytes such as 64MB (overrides the "
                                               "file's shard_size:)", metavar="SIZE")
    format: str | None = option(None, help="shard format (overrides the file's format:)", choices=FORMATS)
    memory: int | str = memory_option("here the shuffle's buffers and the bucket sorted in memory (a larger bucket "
                                      "is split on disk first; the output is the same for any value)")
    workers: int | None = option(None, help="processes counting and scattering (default: all cores; same output)")
    threads: int | None = option(None, help="DuckDB threads for the recipes (default: all cores)")
    overwrite: bool = option(False, help="replace an output made with other settings")
    progress: bool = progress_option()
    source_roots: list[str] = option(
        help="a folder the annotate sources may be read from besides the recorded inputs (repeatable)",
        factory=list, renamed_from=("--source-root",), repeat=True, metavar="DIR")


@result_display
@dataclass
class MixResult:
    output: str | None
    plan: Plan
    documents: int = 0  # records written (with repeats)
    tokens: int = 0
    shards: list[dict] = field(default_factory=list)
    skipped: bool = False  # already published with these settings and inputs
    seconds: float = 0.0
    max_bucket_bytes: int = 0  # largest bucket held in memory
    bucket_splits: int = 0  # buckets split on disk because they exceeded the memory share
    manifest: dict = field(default_factory=dict)
    tasks: int = 0  # scatter tasks (one per source shard with drawn documents)
    tasks_resumed: int = 0  # of them, finished by an earlier killed run and adopted


def resolve_mix(cfg: MixConfig) -> MixSpec:
    """The mix file with the config's overrides applied, checked."""
    check_choices(cfg)
    spec = parse_mix(cfg.mix, os.getcwd(), "mix") if isinstance(cfg.mix, dict) else load_mix(cfg.mix)
    if cfg.tokens is not None:
        spec.tokens = parse_count(cfg.tokens, "--tokens")
    if cfg.tokenizer is not None:
        spec.tokenizer = cfg.tokenizer
    if cfg.seed is not None:
        spec.seed = cfg.seed
    if cfg.shard_size is not None:
        parse_shard_size(cfg.shard_size, "--shard-size")
        spec.shard_size = cfg.shard_size
    if cfg.format is not None:
        spec.format = cfg.format
    if spec.tokens is None:
        raise MixError("tokens: the mix needs a total token budget (tokens: 5M in the file, or --tokens)")
    if spec.format == "bin" and (spec.tokenizer is None or spec.tokenizer == WORDS):
        raise MixError("format: bin writes token ids, so it needs tokenizer: PATH (a tokenizer.json or tiktoken "
                       "file), not word counts")
    memory_plan(STAGE_NAME, cfg.memory, 0, floor=1)  # a bad --memory fails before anything is read
    return spec


def plan_mix(cfg: MixConfig) -> tuple[MixSpec, list[SourcePool], Plan]:
    """Resolve the sources, count their tokens and plan the mix (what --dry-run prints); nothing is
    written. Infeasibility is in `plan.problems` (not raised)."""
    spec = resolve_mix(cfg)
    pools = [resolve_pool(s, spec.seed, cfg.threads, cfg.source_roots) for s in spec.sources]
    return spec, pools, plan_pools(spec, pools, cfg)


def plan_pools(spec: MixSpec, pools: list[SourcePool], cfg: MixConfig,
               plans: dict[int, CountPlan] | None = None) -> Plan:
    """Count the resolved sources' tokens and plan them. `spec.tokens` None means every token the
    sources hold, once (each document with its DSIR multiplicity): what `select --shards` writes.
    `plans`: `choose_counts`'s decision when the caller has made it."""
    count_missing(pools, spec, cfg, plans)
    units = []
    for pool in pools:
        toks = [np.repeat(sp.tokens, sp.mult) for sp in pool.shards if sp.tokens is not None]
        units.append(np.concatenate(toks) if toks else np.zeros(0, np.int64))
    mode = WORDS if spec.tokenizer == WORDS else "tokenizer"
    if all(p.token_count.startswith("column:") for p in pools):
        mode = "column"
    total = spec.tokens if spec.tokens is not None else int(sum(int(u.sum()) for u in units))
    plan = make_plan([s.name for s in spec.sources], spec.shares(), [s.max_epochs for s in spec.sources], units,
                     [p.documents for p in pools], total, mode)
    for sp, pool in zip(plan.sources, pools):
        sp.token_count, sp.count_note = pool.token_count, pool.count_note
    return plan


def _draw(pools: list[SourcePool], plan: Plan, seed: int) -> list[list[np.ndarray]]:
    """Per source, per shard: the times each row is written; fills the plan's drawn figures."""
    out = []
    for i, (pool, sp_plan) in enumerate(zip(pools, plan.sources)):
        toks = [np.repeat(np.asarray(sp.tokens), sp.mult) for sp in pool.shards]
        sizes = [len(sp.rows) for sp in pool.shards]
        doc_of = [np.repeat(np.arange(n, dtype=np.int64), sp.mult) for n, sp in zip(sizes, pool.shards)]
        offsets = np.cumsum([0] + sizes)
        tokens = np.concatenate(toks) if toks else np.zeros(0, np.int64)
        unit_doc = np.concatenate([d + o for d, o in zip(doc_of, offsets[:-1])]) if doc_of else np.zeros(0, np.int64)
        counts = draw_counts(tokens, unit_doc, int(offsets[-1]), sp_plan.target_tokens, seed, i,
                             sp_plan.max_epochs)
        doc_tokens = np.concatenate([sp.tokens for sp in pool.shards]) if pool.shards else np.zeros(0, np.int64)
        sp_plan.drawn_documents = int(counts.sum())
        sp_plan.drawn_distinct = int((counts > 0).sum())
        sp_plan.drawn_tokens = int((counts * doc_tokens).sum())
        out.append([counts[offsets[j]:offsets[j + 1]] for j in range(len(sizes))])
    return out


def _fingerprints(spec: MixSpec, pools: list[SourcePool], tokenizer_info: dict | None) -> tuple[str, str]:
    """(settings fingerprint, run key = settings + inputs)."""
    sources: list[dict[str, Any]] = [s.to_dict() for s in spec.sources]
    for s in sources:
        for k in ("attributes", "selection"):
            if k in s:
                s[k] = os.path.abspath(s[k]) if "://" not in s[k] else s[k]
    settings = {"sources": sources, "tokens": spec.tokens, "seed": spec.seed,
                "shard_size": list(parse_shard_size(spec.shard_size)), "format": spec.format,
                "tokenizer": tokenizer_info or spec.tokenizer}
    if spec.extra:  # a caller's own settings (select --shards: its recipe and DSIR fingerprint)
        settings["extra"] = spec.extra
    sfp = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    inputs = [p.inputs for p in pools]
    key = hashlib.sha256(json.dumps([sfp, inputs], sort_keys=True, default=str).encode()).hexdigest()[:16]
    return sfp, key


def check_mix_apart(spec: MixSpec, output: str) -> None:
    inputs: list[str] = []
    for s in spec.sources:
        if s.attributes:
            inputs += [s.attributes, *source_locations(s.attributes)]
        if s.selection:
            inputs.append(s.selection)
    if spec.tokenizer not in (None, WORDS):
        inputs.append(str(spec.tokenizer))
    if spec.path:
        inputs.append(spec.path)
    check_apart(STAGE_NAME, output, inputs)


def _languages(pools: list[SourcePool], draws: list[list[np.ndarray]]) -> dict[str, dict[str, int]]:
    """Tokens written per source and language (`unknown` without a language)."""
    out: dict[str, dict[str, int]] = {}
    for pool, counts in zip(pools, draws):
        by: dict[str, int] = {}
        for sp, c in zip(pool.shards, counts):
            assert sp.tokens is not None
            for lang, n in zip(sp.lang or [None] * len(sp.rows), (c * sp.tokens).tolist()):
                if n:
                    by[lang or "unknown"] = by.get(lang or "unknown", 0) + int(n)
        out[pool.spec.name] = dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


def run_mix(cfg: MixConfig) -> MixResult:
    """Plan, draw, shuffle and publish the mix into `cfg.output` (see the module doc); a mix
    already published from these settings and inputs is returned as it is, uncounted."""
    t0 = time.perf_counter()
    check_output(cfg.output)
    assert cfg.output is not None
    spec = resolve_mix(cfg)
    check_mix_apart(spec, cfg.output)
    pools = [resolve_pool(s, spec.seed, cfg.threads, cfg.source_roots, records=False) for s in spec.sources]
    plans = choose_counts(pools, spec)
    done = finished_mix(cfg, spec, pools, t0)
    if done is not None:
        return done
    return publish_mix(cfg, spec, pools, plan_pools(spec, pools, replace(cfg), plans), t0)


def finished_mix(cfg: MixConfig, spec: MixSpec, pools: list[SourcePool], t0: float) -> MixResult | None:
    """The published mix in `cfg.output` when it was made from exactly these settings and inputs
    and its files are intact (`publish_mix`'s own no-op test), else None. Needs only the run
    key: no token is counted and no selection record read, so a finished mix returns at once."""
    if cfg.overwrite or cfg.output is None:
        return None
    tok = mix_tokenizer(spec)
    _, key = _fingerprints(spec, pools, tok.info() if tok is not None else None)
    fs, root = fsspec.core.url_to_fs(cfg.output)
    root = root.rstrip("/")
    old = read_manifest(fs, root) if fs.isdir(root) else None
    if old is None or old.stage != STAGE_NAME or old.key != key:
        return None
    try:
        for rel in old.files:
            if old.fingerprint_of(rel) != key:
                return None
            check_file(fs, root, old, rel)
    except PublishError:
        return None
    info = old.info.get("mix", {})
    return MixResult(cfg.output, Plan.from_dict(info.get("plan") or {}), int(info.get("documents", 0)),
                     int(info.get("tokens", 0)), list(info.get("shards", [])), True, time.perf_counter() - t0,
                     manifest=old.to_json())


def check_output(output: str | None) -> None:
    """The output must be given and local (the shuffle's buckets are written beside it)."""
    if not output:
        raise MixError("--output DIR is required unless --dry-run")
    if "://" in output and not output.startswith("file://"):
        raise MixError(f"--output {output}: mix writes its shuffle buckets beside the output, so it must be a "
                       "local folder")


def publish_mix(cfg: MixConfig, spec: MixSpec, pools: list[SourcePool], plan: Plan, t0: float | None = None,
                extra_info: dict[str, Any] | None = None, files: dict[str, bytes] | None = None) -> MixResult:
    """Draw, shuffle and publish a planned mix into `cfg.output` (`run_mix`, and `select --shards`,
    whose `extra_info` goes into the manifest's info and whose `files` are published beside the shards)."""
    from textsieve.io.publish import Publication
    from textsieve.io.runstate import holds_output

    t0 = time.perf_counter() if t0 is None else t0
    assert cfg.output is not None
    if not plan.feasible:
        raise MixInfeasibleError(plan)
    draws = _draw(pools, plan, spec.seed)
    from textsieve.stages.training.mix_worker import counter

    tok = counter(spec.tokenizer).tok if spec.tokenizer not in (None, WORDS) else None
    sfp, key = _fingerprints(spec, pools, tok.info() if tok is not None else None)
    fs, out_root = fsspec.core.url_to_fs(cfg.output)
    out_root = out_root.rstrip("/")
    fs.makedirs(out_root, exist_ok=True)
    pub = Publication(fs, out_root, STAGE_NAME, key, info={"settings": sfp}, protect=True, overwrite=cfg.overwrite)
    old = pub.previous
    if old is not None and not cfg.overwrite:
        if old.key == key and all(pub.unchanged(rel, key) for rel in old.files):
            pub.abandon()
            info = old.info.get("mix", {})
            return MixResult(cfg.output, plan, int(info.get("documents", 0)), int(info.get("tokens", 0)),
                             list(info.get("shards", [])), True, time.perf_counter() - t0,
                             manifest=old.to_json())
        if old.info.get("settings") != sfp:
            pub.abandon()
            raise MixError(f"{cfg.output} holds a mix made with other settings (fingerprint "
                           f"{old.info.get('settings')} != {sfp}); use --overwrite or another folder")
    elif old is None and not cfg.overwrite and holds_output(fs, out_root):
        pub.abandon()
        raise MixError(f"{cfg.output} holds files that no textsieve mix published; use --overwrite or another folder")
    pub.claim()
    from textsieve.stages.training.mix_write import write_shards

    try:
        stats = write_shards(cfg, spec, pools, draws, pub.staging, tok)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        pub.discard()  # the space the failed run took is given back at once, not at the next run
        raise disk_full_error(f"{pub.staging}/", what="writing the mix's shards and shuffle buckets in") from None
    shards = []
    for info in stats["shards"]:
        shards.append({"files": info.files, "documents": info.documents, "tokens": info.tokens, "bytes": info.size,
                       "sources": info.by_source})
        for j, rel in enumerate(info.files):
            if j == 0:
                pub.add(rel, key, documents=info.documents, tokens=info.tokens)
            else:
                pub.add(rel, key)
    documents = sum(s["documents"] for s in shards)
    tokens = sum(s["tokens"] for s in shards)
    per_source = []
    for pool, sp_plan in zip(pools, plan.sources):
        per_source.append({"name": pool.spec.name, "spec": pool.spec.to_dict(), "documents": sp_plan.drawn_documents,
                           "distinct_documents": sp_plan.drawn_distinct, "tokens": sp_plan.drawn_tokens,
                           "epochs": round(sp_plan.epochs, 6), "target_tokens": sp_plan.target_tokens,
                           "available_documents": sp_plan.documents, "available_tokens": sp_plan.tokens,
                           "token_count": pool.token_count, "inputs": pool.inputs, "details": pool.details})
        if pool.spec.redact:  # what `redact:` replaced in this source's records (each copy counted)
            labels = next((sp.redact_labels for sp in pool.shards), ())
            per_source[-1]["redacted"] = {**(pool.details.get("redact") or {}), "replaced": {
                **dict.fromkeys(labels, 0), **stats["redacted"].get(pool.spec.name, {})}}
    pub.info["mix"] = {
        "settings": {"tokens": spec.tokens, "seed": spec.seed, "shard_size": spec.shard_size, "format": spec.format,
                     "tokenizer": tok.info() if tok is not None else spec.tokenizer,
                     "token_dtype": stats.get("dtype"), "eos_id": stats.get("eos"),
                     "mix_file": os.path.abspath(spec.path) if spec.path and spec.path != "mix" else None},
        "plan": plan.to_dict(), "sources": per_source, "languages": _languages(pools, draws),
        "documents": documents, "tokens": tokens, "shards": shards}
    pub.info.update(extra_info or {})
    for rel, data in (files or {}).items():
        pub.add_file(rel, data, key)
    manifest = pub.commit()
    return MixResult(cfg.output, plan, documents, tokens, shards, False, time.perf_counter() - t0,
                     stats["max_loaded"], stats["splits"], manifest.to_json(), stats["tasks"], stats["resumed"])


def output_schema() -> Any:
    """The Parquet schema of the mix's records (jsonl.zst has the same fields)."""
    from textsieve.mixing.shards import parquet_schema

    return parquet_schema()


def remove_work(folder: str) -> None:
    """Remove the shuffle's work folder (buckets, markers)."""
    shutil.rmtree(folder, ignore_errors=True)



def _pipeline_run(c: MixConfig) -> Outcome:
    r = run_mix(c)
    return Outcome({"documents": r.documents, "tokens": r.tokens, "shards": len(r.shards)}, ran=not r.skipped)


def _complete(layout: Layout, name: str, c: MixConfig) -> bool:
    fs, root = fsspec.core.url_to_fs(layout.train)
    return read_manifest(fs, root.rstrip("/")) is not None


def _upstream(layout: Layout, name: str, c: MixConfig, names: list[str], keys: dict[str, str]) -> list[Any]:
    """Every earlier stage (a source may use any set, or the selection), the mix file and a
    tokenizer file given in the section."""
    files = [p for p in (c.mix if isinstance(c.mix, str) else None, c.tokenizer) if p and p != WORDS]
    return every_stage_before(layout, name, c, names, keys) + [layout.identities(files)]


def _resolve(section: dict[str, Any], base: Path) -> None:
    """The mix: a file (made absolute) or a mapping written inline, whose sources' folders,
    recipe files and tokenizer are made absolute against the pipeline file's folder."""
    value = section["mix"]
    if isinstance(value, str):
        section["mix"] = absolute(value, base)
        return
    if not isinstance(value, dict):
        return
    out = dict(value)
    if isinstance(out.get("tokenizer"), str) and out["tokenizer"] != WORDS:
        out["tokenizer"] = absolute(out["tokenizer"], base)
    sources = []
    for src in out.get("sources") or []:
        if isinstance(src, dict):
            src = dict(src)
            for k in ("attributes", "selection"):
                if isinstance(src.get(k), str):
                    src[k] = absolute(src[k], base)
            if "recipe" in src:
                src["recipe"] = recipe_path(src["recipe"], base)
        sources.append(src)
    if "sources" in out:
        out["sources"] = sources
    section["mix"] = out


def _estimate(c: MixConfig, e: Corpus) -> StagePlan:
    return StagePlan("mix", f"mix -> {e.layout.train} (shuffled shards + manifest.json)",
                     memory_plan(STAGE_NAME, c.memory, 0, floor=1).total + 100_000_000, 2 * e.docs * e.mean_chars,
                     "disk: the selected text once in shards, once in temporary buckets")

def preview_mix(cfg: MixConfig) -> Plan:
    """What `mix --dry-run` prints and `ts.mix(..., dry_run=True)` returns: the plan (per source
    available and target tokens, epochs; `plan.feasible`), nothing written."""
    return plan_mix(cfg)[2]


def _main(cfg: MixConfig, args: Any) -> int:
    """`textsieve mix`: the plan with --dry-run (non-zero exit when infeasible), else the mix
    written, its plan printed first."""
    if args.dry_run:
        plan = preview_mix(cfg)
        print(json.dumps(plan.to_dict(), indent=2) if args.json else plan.table())
        if not plan.feasible:
            raise MixInfeasibleError(plan)
        return 0
    if not cfg.output:
        raise MixError("--output DIR is required unless --dry-run")
    try:
        res = run_mix(cfg)
    except MixInfeasibleError as exc:
        print(json.dumps(exc.plan.to_dict(), indent=2) if args.json else exc.plan.table())
        raise
    if args.json:
        print(json.dumps({"output": res.output, "documents": res.documents, "tokens": res.tokens,
                          "shards": len(res.shards), "skipped": res.skipped, "tasks": res.tasks,
                          "tasks_resumed": res.tasks_resumed, "plan": res.plan.to_dict()}))
        return 0
    if not args.quiet:
        print(res.plan.table(), file=sys.stderr)
        done = "already published, nothing to do" if res.skipped else f"{res.seconds:.1f} s"
        print(f"mixed {res.documents:,} documents, {res.tokens:,} tokens into {len(res.shards)} shard(s) -> "
              f"{res.output} ({done})", file=sys.stderr)
    return 0


CLI = CliSpec(
    help="mix selections at token shares into shuffled training shards",
    description="Sources are selections (a recipe and/or DSIR draw over an annotate folder, or a `textsieve select` "
                "output), each with a share of the total tokens (or a weight) and an upsampling cap (max_epochs). "
                "The plan (per source available and target tokens, epochs needed) is printed first; an infeasible "
                "mix stops before anything is written. Output: globally shuffled shards of a fixed size (JSONL.zst, "
                "Parquet, or token ids .bin + Megatron .idx) and manifest.json. Seeded: the same file, inputs and "
                "seed give the same bytes.",
    examples=("textsieve mix examples/mix.yaml --dry-run", "textsieve mix examples/mix.yaml -o mix-shards/",
              "textsieve mix examples/mix.yaml -o mix-parquet/ --format parquet --shard-size 200KB"),
    flags=(("--dry-run", "print the plan only (non-zero exit when infeasible)"),
           ("--json", "print the plan / result as JSON")),
    main=_main, writes=("output", "mix", "source_roots", "tokenizer"))


def _prepare(mix: Any, options: dict[str, Any]) -> Any:
    """`ts.mix(a mapping)`: the parsed mix file (its relative paths against the working directory)."""
    from collections.abc import Mapping

    return dict(mix) if isinstance(mix, Mapping) else os.fspath(mix)


STAGE = Stage("mix", MixConfig, "mix", _pipeline_run, order=140, call=run_mix, first="mix", prepare=_prepare,
              preview=preview_mix, cli_spec=CLI,
              placed=lambda layout: {"output": layout.train},
              derived={"output": "always OUT/train (shards and manifest.json)", "progress": PROGRESS_REASON},
              types={"mix": str | dict}, complete=_complete, upstream=_upstream, resolve=_resolve,
              estimate=_estimate)


__all__ = ["STAGE", "MixConfig", "MixError", "MixInfeasibleError", "MixResult", "check_output", "output_schema",
           "plan_mix", "preview_mix", "plan_pools", "publish_mix", "resolve_mix", "run_mix"]
