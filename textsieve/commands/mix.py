"""`textsieve mix MIX_YAML --output OUT [--dry-run]`: mix selections at token shares into shuffled,
training-ready shards."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run(args: argparse.Namespace) -> int:
    from textsieve.mixing.spec import MixError
    from textsieve.stages.training.mix import MixConfig, MixInfeasibleError, plan_mix, run_mix

    cfg = config_from_args(MixConfig, args)
    if args.dry_run:
        _, _, plan = plan_mix(cfg)
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


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.training.mix import MixConfig

    p = sub.add_parser("mix", parents=[common], help="mix selections at token shares into shuffled training shards",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve mix examples/mix.yaml --dry-run",
                                       "textsieve mix examples/mix.yaml -o mix-shards/",
                                       "textsieve mix examples/mix.yaml -o mix-parquet/ --format parquet "
                                       "--shard-size 200KB"),
                       description="Sources are selections (a recipe and/or DSIR draw over an annotate folder, or "
                                   "a `textsieve select` output), each with a share of the total tokens (or a "
                                   "weight) and an upsampling cap (max_epochs). The plan (per source available "
                                   "and target tokens, epochs needed) is printed first; an infeasible mix stops "
                                   "before anything is written. Output: globally shuffled shards of a fixed size "
                                   "(JSONL.zst, Parquet, or token ids .bin + Megatron .idx) and manifest.json. "
                                   "Seeded: the same file, inputs and seed give the same bytes.")
    p.add_argument("--dry-run", action="store_true", help="print the plan only (non-zero exit when infeasible)")
    p.add_argument("--json", action="store_true", help="print the plan / result as JSON")
    add_config_options(p, MixConfig)
    p.set_defaults(func=run)
    writes(p, "mix", "output", "mix", "source_roots", "tokenizer")
