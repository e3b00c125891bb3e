"""`textsieve sample FILE`: assemble the bundled sample corpus from this machine's documentation."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from textsieve.sample import build_sample

    info = build_sample(args.output, max_docs=args.max_docs)
    if not args.quiet:
        print(f"wrote {info.n_docs} documents ({info.n_chars:,} characters) to {info.path}: "
              + ", ".join(f"{k} {v}" for k, v in info.counts.items()), file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sm = sub.add_parser("sample", parents=[common], help="assemble the bundled sample corpus (Python and "
                        "Debian documentation and licences found on this machine)")
    sm.add_argument("output", metavar="FILE.jsonl.gz")
    sm.add_argument("--max-docs", type=int, default=500)
    sm.set_defaults(func=run)
