"""`textsieve run PIPELINE.yaml`: run read -> annotate -> dedup -> select from one file."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import writes
from textsieve.commands.tree import CommandTree

#: `textsieve run` options that are not pipeline-file keys, and why.
CLI_ONLY = {"pipeline": "the pipeline file itself", "dry_run": "prints the plan instead of running",
            "verbose": "log level of this invocation", "quiet": "progress display of this invocation",
            "command": "the subcommand name", "func": "argparse plumbing"}


def run(args: argparse.Namespace) -> int:
    from textsieve.pipeline.config import load

    cfg = load(args.pipeline)
    if args.output:
        from pathlib import Path

        cfg.data["output"] = str(Path(args.output).resolve()) if "://" not in args.output else args.output
    if args.executor:
        cfg.data["executor"] = args.executor
    if args.address:
        cfg.data["address"] = args.address
    if cfg.data["address"] and cfg.data["executor"] != "ray":
        raise ValueError("--address is only used with --executor ray")
    if args.dry_run:
        from textsieve.pipeline.plan import make_plan

        print(make_plan(cfg).text())
        return 0
    from textsieve.pipeline.run import run_pipeline

    res = run_pipeline(cfg, quiet=args.quiet)
    if not args.quiet:
        ran = sum(s.status == "ran" for s in res.stages)
        print(f"textsieve run: done in {res.seconds:.1f} s ({ran} stage(s) ran, {len(res.stages) - ran} already "
              f"done) -> {res.output}", file=sys.stderr)
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    r = sub.add_parser("run", parents=[common], help="run a whole pipeline (annotate, dedup, select) from a YAML file",
                       description="Run read -> annotate -> dedup -> DSIR -> select as declared in one YAML file "
                                   "(see examples/pipeline.yaml). Outputs: OUT/attrs (attributes and their sets), "
                                   "OUT/selected, OUT/pipeline.resolved.yaml (defaults filled, input fingerprints, "
                                   "version). Re-running the same command resumes: finished work is skipped.")
    r.add_argument("pipeline", metavar="PIPELINE.yaml")
    r.add_argument("--dry-run", action="store_true", help="print the plan (stages, shards, memory and disk estimates)")
    r.add_argument("-o", "--output", default=None, metavar="DIR", help="override the file's `output`")
    r.add_argument("--executor", choices=("local", "ray"), default=None, help="override the file's `executor`")
    r.add_argument("--address", default=None, metavar="ADDR", help="Ray cluster address (with --executor ray)")
    r.set_defaults(func=run)
    # each stage checks its own inputs; the pipeline file may lie in its output folder (a re-run
    # from OUT/pipeline.resolved.yaml), so it is not an input here
    writes(r, "run", "output")
