"""`textsieve annotate`: compute quality signals into attribute shards."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    cfg = config_from_args(AnnotateConfig, args)
    res = run_annotate(cfg)
    if not args.quiet:
        print(f"annotated {res.documents:,} documents in {len(res.shards_written)} shard(s) "
              f"({res.rate_text()}); {len(res.shards_skipped)} shard(s) already done; "
              f"{res.skipped_records} bad record(s) skipped -> {res.output}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    a = sub.add_parser("annotate", parents=[common], help="compute quality signals into attribute shards",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve annotate data/*.jsonl.gz -o attrs-all/",
                                       "textsieve annotate data/ -o attrs-lines/ --signals lines,repetition "
                                       "--workers 1"),
                       description="Write one Parquet attribute shard per input shard: id, shard, row and one "
                                   "column of RPv2 spans [start, end, score] per signal. Documents are not copied.")
    from textsieve.stages.annotate.annotate import AnnotateConfig

    add_config_options(a, AnnotateConfig)
    a.set_defaults(func=run)
    writes(a, "annotate", "output", "inputs", "resources", "models")
