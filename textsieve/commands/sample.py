"""`textsieve sample FILE`: assemble the bundled sample corpus from this machine's documentation."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import writes
from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.sample import build_sample

    if args.crawl and args.sources:
        print("textsieve: error: sample: --crawl and --sources write different samples; give one", file=sys.stderr)
        return 2
    if args.sources:
        from textsieve.sample_sources import build_sample_sources

        made = build_sample_sources(args.output)
        if not args.quiet:
            print(f"wrote source dumps to {made.folder}/: "
                  + ", ".join(f"{family} {len(files)} file(s), {made.counts[family]} record(s)"
                              for family, files in made.files.items()), file=sys.stderr)
        return 0
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
    sm.add_argument("--sources", action="store_true", help="write a small dump of each RedPajama-1T source family "
                    "under DIR instead (for `textsieve source`): github/, arxiv/, wikipedia/, stackexchange/, books/ "
                    "in their native formats, from Python's and Debian's own code and text")
    sm.add_argument("--max-docs", type=int, default=500)
    sm.set_defaults(func=run)
    writes(sm, "sample", "output")
