"""`select --shards FORMAT`: a selection written as training-ready shards, by the mix machinery.

Why a module of its own, and no second shuffle or shard writer: `textsieve mix` already writes
globally shuffled, fixed-size shards (jsonl.zst, Parquet, Megatron `.bin`/`.idx`), out of core,
seeded, resumable and published in one switch. A selection is a one-source mix whose source is
exactly this select config (`stages.mix_sources.select_pool` takes the whole `SelectConfig`:
recipe, line rules, DSIR draw and all its parameters, source roots) and whose token budget is
every token that source holds, once: share 1.0, max_epochs 1, `tokens: None`
(`stages.mix.plan_pools`). With that budget the mix's draw is one whole epoch, so every
selected document is written exactly as often as `select` would write it (its DSIR
multiplicity), then `stages.mix.publish_mix` shuffles and publishes.

The output is a mix output (manifest stage `mix`, so trainers and `report --mix` read it like any
mix; every record's `source` is `select`); `info.select` in the manifest says these are select's
training shards, and `selection.json` is published beside them with the recipe, the DSIR summary
and the counts. Token counts: `--tokenizer PATH` (its `ts_tokens_<name>` column when the folder
has one made with that file, else the texts encoded), or `words` (an estimate, the default for
jsonl.zst and Parquet; `bin` needs a real tokenizer to write ids).
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from textsieve.exec.budget import memory_plan
from textsieve.mixing.spec import WORDS, MixSpec, SourceSpec, parse_shard_size

if TYPE_CHECKING:
    from textsieve.stages.select.select import SelectConfig, SelectResult

SOURCE = "select"  # the one mix source's name: every record's `source` field


def check_shard_options(cfg: SelectConfig) -> None:
    """One-line errors for option combinations that make no sense, for the CLI, the API and the
    YAML pipeline alike (called by `resolve_select_config`, so `--dry-run` checks them too)."""
    from textsieve.stages.select.select import SelectConfig, SelectError, redact_names

    if cfg.shards is None:
        given = [flag for flag, v in (("--tokenizer", cfg.tokenizer), ("--shard-size", cfg.shard_size),
                                      ("--memory", cfg.memory)) if v is not None]
        if given:
            raise SelectError(f"{given[0]} only applies with --shards FORMAT (training shards); without it select "
                              "writes one selection file per input shard")
        return
    if cfg.shards == "bin" and cfg.tokenizer in (None, WORDS):
        raise SelectError("--shards bin writes token ids, so it needs --tokenizer PATH (a tokenizer.json or tiktoken "
                          "file), not word counts")
    if cfg.format != SelectConfig.format:
        raise SelectError(f"--format {cfg.format} is the format of per-input selection files; with --shards the "
                          "shards' format is --shards (jsonl.zst, parquet or bin)")
    if cfg.executor != "local":
        raise SelectError(f"--shards runs on the local process pool; --executor {cfg.executor} is not supported "
                          "with it")
    if redact_names(cfg):
        raise SelectError("--shards does not redact (--redact or the recipe's redact:); write the redacted selection "
                          "without --shards, then shard it with `textsieve mix` (a selection: source)")
    if cfg.tokenizer not in (None, WORDS) and "://" not in str(cfg.tokenizer) and not os.path.exists(
            str(cfg.tokenizer)):
        raise SelectError(f"--tokenizer {cfg.tokenizer}: no such file (a tokenizer.json or tiktoken file, or 'words')")
    if cfg.shard_size is not None:
        parse_shard_size(cfg.shard_size, "--shard-size")
    if cfg.memory is not None:
        memory_plan("select", cfg.memory, 0, floor=1)


def shard_spec(cfg: SelectConfig) -> MixSpec:
    """The one-source mix `cfg` is (its config resolved): every selected token, once."""
    from textsieve.stages.select.select import recipe_and_targets, selection_fingerprint

    recipe, targets = recipe_and_targets(cfg)
    source = SourceSpec(SOURCE, attributes=cfg.directory, recipe=recipe.name if recipe is not None else None,
                        dsir=",".join(f"{n}:{w:g}" for n, w in targets) if targets else None,
                        k=cfg.k if targets else None, dsir_tokens=cfg.tokens if targets else None,
                        replace=cfg.replace, temperature=cfg.temperature if targets else None, share=1.0,
                        max_epochs=1.0)
    assert cfg.shards is not None
    # the select's own settings (recipe fingerprint, DSIR parameters): other ones are other settings
    spec = MixSpec([source], tokens=None, tokenizer=cfg.tokenizer or WORDS, seed=cfg.seed, format=cfg.shards,
                   extra={"select": selection_fingerprint(cfg, [])})
    if cfg.shard_size is not None:
        spec.shard_size = cfg.shard_size
    return spec


def run_select_shards(cfg: SelectConfig) -> SelectResult:
    """Write the selection of `cfg` (resolved, `cfg.shards` set) as shuffled training shards."""
    from textsieve.stages.select.select import (
        SUMMARY,
        SelectError,
        SelectResult,
        check_selection_apart,
        recipe_and_targets,
        shard_metas,
    )
    from textsieve.stages.training.mix import MixConfig, check_mix_apart, check_output, plan_pools, publish_mix
    from textsieve.stages.training.mix_sources import select_pool

    t0 = time.perf_counter()
    check_output(cfg.output)
    assert cfg.output is not None
    spec = shard_spec(cfg)
    check_mix_apart(spec, cfg.output)
    _, _, metas = shard_metas(cfg.directory, cfg.source_roots)
    check_selection_apart(cfg, metas)
    mcfg = MixConfig(mix={"sources": [s.to_dict() for s in spec.sources]}, output=cfg.output, workers=cfg.workers,
                     threads=cfg.threads, overwrite=cfg.overwrite, progress=cfg.progress,
                     source_roots=list(cfg.source_roots))
    if cfg.memory is not None:
        mcfg.memory = cfg.memory
    pool = select_pool(spec.sources[0], cfg)
    plan = plan_pools(spec, [pool], mcfg)
    selected = int(sum(int(sp.mult.sum()) for sp in pool.shards))
    if selected and not plan.total_tokens:
        raise SelectError(f"the {selected:,} selected documents hold no tokens ({pool.token_count}); nothing to shard")
    recipe, _ = recipe_and_targets(cfg)
    counts = {"pool": sum(int(m.get("documents") or 0) for _, m in metas.values()), "selected": selected,
              "distinct": pool.documents, "tokens": plan.total_tokens}
    dsir = pool.details.get("dsir")
    summary = {"stage": "select", "status": "done", "fingerprint": spec.extra["select"],
               "training_shards": {"format": spec.format, "shard_size": spec.shard_size, "tokenizer": spec.tokenizer,
                                   "token_count": pool.token_count, "seed": spec.seed, "manifest": "manifest.json"},
               "recipe": recipe.to_dict() if recipe is not None else None,
               "attribute_sets": pool.inputs.get("attribute_sets"), "dsir": dsir, "counts": counts}
    body = json.dumps(summary, indent=2, sort_keys=True, default=str).encode("utf-8")
    info = {"select": {"training_shards": True, "summary": SUMMARY, "settings": spec.extra["select"],
                       "counts": counts}}
    res = publish_mix(mcfg, spec, [pool], plan, t0, extra_info=info, files={SUMMARY: body})
    out = cfg.output.rstrip("/")
    data_files = [f"{out}/{s['files'][0]}" for s in res.shards]
    return SelectResult(cfg.output, res.documents, 0, counts["pool"], [] if res.skipped else data_files,
                        data_files if res.skipped else [], res.seconds, dsir,
                        training={"format": spec.format, "documents": res.documents, "tokens": res.tokens,
                                  "shards": res.shards, "skipped": res.skipped, "manifest": res.manifest})


__all__ = ["SOURCE", "check_shard_options", "run_select_shards", "shard_spec"]
