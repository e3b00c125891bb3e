"""`textsieve extract`: WARC/ARC archives and HTML pages -> document shards of main-content text."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.sources.extract import ExtractConfig, run_extract

    res = run_extract(config_from_args(ExtractConfig, args))
    if not args.quiet:
        left = ", ".join(f"{n:,} {reason}" for reason, n in res.skipped.items()) or "none"
        print(f"extracted {res.documents:,} of {res.pages:,} pages in {len(res.shards_written)} shard(s) "
              f"({res.docs_per_second:,.0f} docs/s); {len(res.shards_skipped)} shard(s) already done; left out: "
              f"{left}; {res.bad_records} damaged record(s) skipped -> {res.output}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.sources.extract import ExtractConfig

    p = sub.add_parser("extract", parents=[common], help="WARC/ARC archives and HTML pages to document shards",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve extract crawl/*.warc.gz -o docs/",
                                       "textsieve extract pages/ -o docs-html/ --engine trafilatura --fix-text",
                                       "textsieve extract crawl/ -o docs-skip/ --on-error skip --workers 2"),
                       description="Main-content text of every HTML response record (WARC/ARC) or page file "
                                   "(.html, .htm, .html.gz; a folder's pages are one shard), one document shard "
                                   "per input shard with id, text, url, title, date, content_type, charset, lang, "
                                   "lang_score and meta.extract. Pages that are not HTML, redirects, empty bodies "
                                   "and empty extractions are left out and counted by reason in extract.json.")
    add_config_options(p, ExtractConfig)
    p.set_defaults(func=run)
    writes(p, "extract", "output", "inputs")
