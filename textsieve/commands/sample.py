"""`textsieve sample FILE`: assemble the bundled sample corpus from this machine's documentation."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import writes
from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.sample import build_sample

    if args.crawl:
        from textsieve.sample_crawl import build_sample_crawl

        crawl = build_sample_crawl(args.output)
        if not args.quiet:
            print(f"wrote {crawl.pages} HTML pages and {crawl.other} other responses in {len(crawl.files)} WARC "
                  f"file(s) to {crawl.folder}/", file=sys.stderr)
        return 0
    info = build_sample(args.output, max_docs=args.max_docs)
    if not args.quiet:
        print(f"wrote {info.n_docs} documents ({info.n_chars:,} characters) to {info.path}: "
              + ", ".join(f"{k} {v}" for k, v in info.counts.items()), file=sys.stderr)
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    sm = sub.add_parser("sample", parents=[common], help="assemble the bundled sample corpus (Python and "
                        "Debian documentation and licences found on this machine)")
    sm.add_argument("output", metavar="FILE.jsonl.gz|DIR")
    sm.add_argument("--crawl", action="store_true", help="write the sample as web pages in WARC files under DIR "
                    "instead (for `textsieve extract`): menus, cookie banners, footers, plus a redirect, a PDF, an "
                    "image, a 404 and an empty response")
    sm.add_argument("--max-docs", type=int, default=500)
    sm.set_defaults(func=run)
    writes(sm, "sample", "output")
