"""`textsieve import FORMAT`: read another tool's released files as textsieve attribute shards."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes
from textsieve.commands.tree import CommandTree


def run_rpv2(args: argparse.Namespace) -> int:
    from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, run_import_rpv2

    res = run_import_rpv2(config_from_args(ImportRpv2Config, args))
    if not args.quiet:
        missing = "; ".join(f"{len(v)} without {k}" for k, v in res.missing_files.items())
        print(f"imported {res.documents:,} documents in {len(res.shards_written)} shard(s) "
              f"({res.docs_per_second:,.0f} docs/s); {len(res.shards_skipped)} shard(s) already done; "
              f"{res.without_signals:,} document(s) without signals; {res.duplicates:,} listed duplicate(s)"
              f"{'; shards ' + missing if missing else ''} -> {res.output}", file=sys.stderr)
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    i = sub.add_parser("import", parents=[common], help="read another tool's released files as attribute shards")
    isub = i.add_subparsers(dest="format", required=True, metavar="FORMAT")
    r = isub.add_parser("rpv2", parents=[common], formatter_class=ExamplesFormatter,
                        help="RedPajama-V2's release: signals, MinHash bands, duplicate lists, CCNet fields",
                        epilog=examples("textsieve import rpv2 rpv2/ -o rpv2-attrs/ --snapshots 2023-06 --langs en  "
                                        "# illustrative: needs RPv2's files, downloaded as its dataset card shows"),
                        description="Read RPv2's released layout (documents/, quality_signals/, minhash/, "
                                    "duplicates/ under ROOT) into one attribute shard per documents file, keyed "
                                    "to documents/ by shard and row, with the released ids; the duplicate lists "
                                    "become the attribute set sets/dedup_exact. Nothing is recomputed.")
    from textsieve.stages.sources.import_rpv2 import ImportRpv2Config

    add_config_options(r, ImportRpv2Config)
    r.set_defaults(func=run_rpv2)
    writes(r, "import rpv2", "output", "root")
    from textsieve.commands.import_dolma import register_dolma

    register_dolma(isub, common)
