"""`textsieve select`: the command's text and its body (a funnel or a draw with --dry-run).

Beside `select.py` because the command does more than run and report: `--dry-run` prints the
recipe's funnel (attribute columns only) or the DSIR draw, `--json` either as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from textsieve.stages.descriptor import CliSpec


def select_main(cfg: Any, args: Any) -> int:
    """`textsieve select`: the funnel or draw with --dry-run, else the selection written."""
    from textsieve.recipes.funnel import Funnel  # duckdb: loaded when select runs, not with the registry
    from textsieve.stages.select.select import preview_select, run_select

    if args.dry_run:
        shown = preview_select(cfg)
        if isinstance(shown, Funnel):
            print(shown.to_json() if args.json else shown.table())
            if not args.json and not args.quiet:
                print(f"({shown.total:,} documents in {shown.seconds:.2f} s, attribute columns only)",
                      file=sys.stderr)
            return 0
        summary = shown.summary()  # with a recipe: over its survivors
        print(json.dumps(summary, indent=2, default=float) if args.json else
              "\n".join(f"{k}: {v}" for k, v in summary.items()))
        return 0
    res = run_select(cfg)
    if args.json:
        print(json.dumps({"output": res.output, "selected": res.documents, "pool": res.pool,
                          "shards_written": len(res.shards_written), "shards_skipped": len(res.shards_skipped),
                          "dsir": res.dsir}, default=float))
    elif not args.quiet:
        extra = f"; ESS {res.dsir['ess']:.1f}" if res.dsir else ""
        print(f"selected {res.documents:,} of {res.pool:,} documents -> {res.output} "
              f"({len(res.shards_written)} shard(s) written, {len(res.shards_skipped)} already done{extra})",
              file=sys.stderr)
    return 0


CLI = CliSpec(
    help="apply a recipe (or DSIR resampling) to annotated documents",
    description="Filter the documents of an annotate folder with a recipe over their stored attributes (signals, "
                "dedup flags, DSIR weights, learned models). --dry-run prints the funnel without reading any text; "
                "otherwise the selected documents are written to --output. Rule language: `textsieve recipes "
                "--help`.",
    examples=("textsieve select attrs/ --recipe gopher --dry-run",
              "textsieve select attrs/ --recipe c4 -o c4-selected/ --format parquet",
              "textsieve select attrs/ --recipe gopher --dsir wiki --k 50 -o gopher-wiki/",
              "textsieve select attrs/ --recipe gopher --shards jsonl.zst --tokenizer words --shard-size 20000 "
              "-o gopher-train/"),
    flags=(("--dry-run", "print the funnel (or the DSIR draw summary) only"),
           ("--json", "print the result as JSON")),
    main=select_main, writes=("output", "directory", "source_roots", "tokenizer"))
