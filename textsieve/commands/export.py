"""`textsieve export FORMAT`: write attributes in another tool's format."""

from __future__ import annotations

import argparse
import sys


def run_rpv2(args: argparse.Namespace) -> int:
    from textsieve.export.rpv2 import export_rpv2

    n = export_rpv2(args.dir, args.output)
    print(f"wrote {n:,} documents to {args.output}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    e = sub.add_parser("export", parents=[common], help="export attributes in another tool's format")
    esub = e.add_subparsers(dest="format", required=True, metavar="FORMAT")
    erp = esub.add_parser("rpv2", parents=[common],
                          help="RedPajama-V2 JSONL: id, quality_signals, minhash bands (hex)")
    erp.add_argument("dir", metavar="DIR", help="an annotate output folder")
    erp.add_argument("-o", "--output", required=True, metavar="FILE.jsonl.gz")
    erp.set_defaults(func=run_rpv2)
    # Other export formats add a subparser to `esub` here.
