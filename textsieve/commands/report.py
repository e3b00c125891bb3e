"""`textsieve report RUN_DIR --output report.html`: a self-contained HTML report of a run."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import writes
from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.report import ReportConfig, write_report

    if args.examples < 0:
        raise ValueError(f"--examples {args.examples}: must be >= 0")
    out = write_report(ReportConfig(run_dir=args.run_dir, output=args.output, recipe=args.recipe,
                                    selection=args.selection, examples=args.examples, threads=args.threads,
                                    by=args.by, mix=args.mix))
    if not args.quiet:
        print(f"report written to {out}", file=sys.stderr)
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    r = sub.add_parser("report", parents=[common], help="write a self-contained HTML report of a run",
                       description="One HTML file (opens offline): per-signal histograms with the recipe's "
                                   "thresholds (log axes for heavy tails), the selection funnel, the funnel per "
                                   "source (--by) and per language, dedup statistics and largest clusters, DSIR "
                                   "weight distributions and example documents each rule removes and keeps.")
    r.add_argument("run_dir", metavar="RUN_DIR", help="an annotate output folder (with its _dedup_*/_dsir_* sets) "
                   "or a `textsieve run` output folder")
    r.add_argument("-o", "--output", default="report.html", metavar="FILE", help="HTML file (default report.html)")
    r.add_argument("--recipe", "-r", default=None, metavar="NAME|PATH",
                   help="recipe for thresholds, funnel and examples (default: the one in the selection's "
                        "selection.json, if any)")
    r.add_argument("--selection", default=None, metavar="DIR", help="a `textsieve select` output folder")
    r.add_argument("--examples", type=int, default=3, help="example documents per rule and side (default 3)")
    r.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all cores)")
    r.add_argument("--by", default=None, metavar="FIELD",
                   help="break the funnel down by this record field or attribute column, dotted for nested "
                        "fields (default: source, when the documents have it); the language view is always added "
                        "when ts_lang or a --lang-field exists")
    r.add_argument("--mix", default=None, metavar="DIR",
                   help="a `textsieve mix` output folder: add its tokens per source and per language")
    r.set_defaults(func=run)
    writes(r, "report", "output", "run_dir", "selection", "mix")
