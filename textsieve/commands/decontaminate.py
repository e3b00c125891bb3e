"""`textsieve decontaminate`: n-gram overlap of documents with evaluation data (the set `_decontam`)."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.training.decontaminate import DecontamConfig, run_decontaminate

    res = run_decontaminate(config_from_args(DecontamConfig, args))
    summary = {"attribute_set": res.output, "documents": res.documents, "contaminated": res.contaminated,
               "matched_ngrams": res.matched_ngrams, "shards": res.shards, "computed": res.computed,
               "skipped": res.skipped, "mode": res.mode, "seconds": round(res.seconds, 3),
               "benchmarks": res.benchmarks}
    if getattr(args, "json", False):
        print(json.dumps(summary))
    elif not args.quiet:
        what = ("unchanged (same inputs, benchmarks and settings)" if res.skipped
                else f"{res.computed} of {res.shards} shard(s) matched")
        names = ", ".join(f"{name} ({_examples(b)})" for name, b in res.benchmarks.items())
        print(f"decontaminate: {res.contaminated:,} of {res.documents:,} documents share n-grams with {names} "
              f"({res.matched_ngrams:,} matched n-grams; {res.mode} index); {what} in {res.seconds:.1f} s -> "
              f"{res.output} (keep clean documents with ts_contam_count == 0)", file=sys.stderr)
    return 0


def _examples(bench: dict) -> str:
    """"1,000 examples", and how many were left out as shorter than --min-words when any were (a
    user otherwise cannot tell that part of a benchmark was never matched)."""
    text = f"{bench.get('examples', 0):,} examples"
    left = bench.get("short_examples_left_out", 0)
    return f"{text}, {left:,} left out as shorter than --min-words" if left else text


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.training.decontaminate import DecontamConfig

    p = sub.add_parser("decontaminate", parents=[common], help="n-gram overlap of documents with benchmark data",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve decontaminate attrs/ --against wiki=wiki.jsonl.gz",
                                       "textsieve decontaminate attrs/ --against wiki.jsonl.gz --field text "
                                       "--bloom-fp 1e-6 --overwrite --workers 1"),
                       description="Mark every document that shares an n-gram (13 normalised words by default: "
                                   "lowercase, punctuation and diacritics ignored, GPT-3's rule) with evaluation "
                                   "data you provide: JSONL, Parquet or text files or folders, one benchmark per "
                                   "--against. Writes the attribute set ATTRS/_decontam with ts_contam_count "
                                   "(matched n-grams), ts_contam_spans (the matched text, character offsets) and "
                                   "ts_contam_bench (benchmarks matched). Keep clean documents with a recipe rule "
                                   "ts_contam_count == 0, or cut the matched text out with select --redact "
                                   "ts_contam_spans. A changed benchmark file is matched again on the next run.")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    add_config_options(p, DecontamConfig)
    p.set_defaults(func=run)
