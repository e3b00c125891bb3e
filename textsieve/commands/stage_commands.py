"""One `textsieve` command per registered stage, built from its descriptor.

A stage's command is its `CliSpec` (help, description, examples, what it prints, what it
writes) plus one option per field of its config (`commands.options`), so adding a stage adds
its command without any file here naming it. The body is the same for every stage: build the
config from the options, run `stage.call`, print `report` (or `summary` as JSON with --json);
a stage whose command does more gives `main(config, args)`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes
from textsieve.commands.tree import CommandTree
from textsieve.stages.descriptor import Stage
from textsieve.stages.registry import stages


def run_stage(stage: Stage, args: argparse.Namespace) -> int:
    """The body of a stage's command."""
    spec = stage.cli_spec
    assert spec is not None
    cfg = config_from_args(stage.config, args)
    if spec.main is not None:
        return spec.main(cfg, args)
    assert stage.call is not None  # Stage.__post_init__: a command has call or main
    result = stage.call(cfg)
    if spec.summary is not None and getattr(args, "json", False):
        print(json.dumps(spec.summary(result), default=float))
    elif spec.report is not None and not args.quiet:
        print(spec.report(result), file=sys.stderr)
    return 0


def register_stage(tree: CommandTree, stage: Stage) -> None:
    """Add `textsieve <stage.cli>` to the tree."""
    spec = stage.cli_spec
    assert spec is not None
    p = tree.parser(stage.cli, help=spec.help, description=spec.description, formatter_class=ExamplesFormatter,
                    epilog=examples(*spec.examples) if spec.examples else None)
    if spec.summary is not None and not any(flag == "--json" for flag, _ in spec.flags):
        p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    for flag, about in spec.flags:
        p.add_argument(flag, action="store_true", help=about)
    add_config_options(p, stage.config)
    p.set_defaults(func=lambda args: run_stage(stage, args))
    if spec.writes:
        writes(p, stage.cli, *spec.writes)


def register(tree: CommandTree, only: Sequence[Stage] | None = None) -> list[str]:
    """Every stage's command (or those of `only`); returns their paths in run order (the help
    lists them first)."""
    made = []
    for stage in stages() if only is None else sorted(only, key=lambda s: s.order):
        if stage.cli_spec is not None:
            register_stage(tree, stage)
            made.append(stage.cli)
    return made
