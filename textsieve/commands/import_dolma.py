"""`textsieve import dolma`: a Dolma folder's attributes as textsieve attribute shards.

Kept apart from `import_cmd.py` (which owns `import rpv2`): that module's `register` calls
`register_dolma(isub, common)` with its FORMAT subparsers.
"""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run_dolma(args: argparse.Namespace) -> int:
    from textsieve.stages.sources.import_dolma import ImportDolmaConfig, run_import_dolma

    res = run_import_dolma(config_from_args(ImportDolmaConfig, args))
    if not args.quiet:
        missing = "; ".join(f"{len(v)} shard(s) without {k}" for k, v in res.missing_files.items())
        print(f"imported {res.documents:,} documents in {len(res.shards_written)} shard(s), "
              f"{len(res.columns)} attribute(s); {len(res.shards_skipped)} shard(s) already done"
              f"{'; ' + missing if missing else ''} -> {res.output}", file=sys.stderr)
    return 0


def register_dolma(isub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add `dolma` to the `textsieve import` FORMAT subparsers `isub`."""
    from textsieve.stages.sources.import_dolma import ImportDolmaConfig

    d = isub.add_parser("dolma", parents=[common], formatter_class=ExamplesFormatter,
                        help="Dolma's attributes/<name>/ beside documents/: taggers' spans as attribute columns",
                        epilog=examples("textsieve annotate sample.jsonl.gz -o rep-attrs --signals repetition",
                                        "textsieve export dolma rep-attrs -o rep-dolma",
                                        "textsieve import dolma rep-dolma -o rep-dolma-attrs"),
                        description="Read ROOT/attributes/<name>/<rel> (Dolma tagger output) for every "
                                    "ROOT/documents/<rel> into one attribute shard per documents file, keyed to "
                                    "it by shard and row: one span column per attribute key, plus KEY__score "
                                    "where each document has at most one span. Nothing is recomputed.")
    add_config_options(d, ImportDolmaConfig)
    d.set_defaults(func=run_dolma)
    writes(d, "import dolma", "output", "root")
