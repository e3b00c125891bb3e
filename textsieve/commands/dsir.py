"""`textsieve dsir fit|resample`: DSIR importance weights toward a target, and draws from them.

`fit` stores the weights as attribute columns (ts_dsir_<name>, ts_dsir_<name>_norm,
ts_dsir_<name>_tokens) beside an annotated pool; recipes can filter on them, and
`textsieve select DIR --dsir NAME --k N --output OUT` writes a resampled selection. `resample`
draws without writing documents and prints the selection's size, token count, effective sample
size and sources, to choose a temperature. Deduplicate the pool before DSIR.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter


def parse_targets(spec: str) -> list[tuple[str, float]]:
    """'wiki' or 'wiki:0.7,code:0.3' -> [(name, weight)]."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, w = part.partition(":")
        try:
            weight = float(w) if w else 1.0
        except ValueError:
            raise ValueError(f"--dsir {spec!r}: weight {w!r} of target {name!r} is not a number") from None
        out.append((name.strip(), weight))
    if not out:
        raise ValueError(f"--dsir {spec!r}: no target name")
    return out


def run_fit_cmd(args: argparse.Namespace) -> int:
    from textsieve.select.dsir_fit import DsirFitConfig, run_fit

    res = run_fit(DsirFitConfig(targets=args.target, raw=args.raw, name=args.name, buckets=args.buckets,
                                ngrams=args.ngrams, hash_seed=args.hash_seed, smoothing=args.smoothing,
                                text_field=args.text_field, model_path=args.model, overwrite=args.overwrite,
                                progress=not args.quiet))
    summary = {"model": res.model_path, "attribute_set": res.set_dir, "columns": list(res.columns),
               "documents": res.documents, "target_docs": res.target_docs, "model_reused": res.model_reused,
               "shards_written": len(res.shards_written), "shards_skipped": len(res.shards_skipped),
               "seconds": round(res.seconds, 3)}
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        print(f"dsir {args.name}: weighed {res.documents:,} documents against {res.target_docs:,} target "
              f"documents in {res.seconds:.1f} s; {len(res.shards_written)} shard(s) written, "
              f"{len(res.shards_skipped)} already done -> {res.set_dir} (columns {', '.join(res.columns)})",
              file=sys.stderr)
    return 0


def run_resample_cmd(args: argparse.Namespace) -> int:
    from textsieve.select.dsir import resample

    r = resample(args.directory, parse_targets(args.dsir), k=args.k, tokens=args.tokens, replace=args.replace,
                 seed=args.seed, temperature=args.temperature, weight=args.weight, min_tokens=args.min_tokens,
                 prior_ngrams=args.prior_ngrams)
    out = r.summary()
    sources = Counter(str(i).split("/", 1)[0] for i in r.id)
    out["sources"] = len(sources)
    out["top_sources"] = dict(sources.most_common(10))
    if args.json:
        print(json.dumps(out))
    else:
        print(f"selected {out['documents']:,} draws ({out['distinct']:,} distinct documents, {out['tokens']:,} tokens) "
              f"of {out['eligible']:,} eligible / {out['pool']:,}; ESS {out['ess']:,.1f} "
              f"({100 * out['ess_fraction']:.2f}% of eligible); {out['sources']} id prefixes")
        if out["shortfall"]:
            print(f"warning: {out['shortfall']:,} requested documents could not be drawn (too few eligible)")
        for name, n in out["top_sources"].items():
            print(f"  {n:8,}  {name}")
    return 0


def add_resample_options(p: argparse.ArgumentParser) -> None:
    """Sampling options shared with `textsieve select --dsir` (call it to keep them identical)."""
    from textsieve.select.dsir_defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE, WEIGHTS

    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--k", type=int, help="number of documents to draw")
    g.add_argument("--tokens", type=int, help="token budget to draw (word/punctuation tokens)")
    p.add_argument("--replace", action="store_true", help="draw with replacement (default: without, Gumbel top-k)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0); the same seed gives the same draw")
    p.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE,
                   help=f"divides the log weights: lower -> closer to top-k, higher -> closer to uniform "
                        f"(default {DEFAULT_TEMPERATURE})")
    p.add_argument("--weight", choices=WEIGHTS, default="normalized",
                   help="normalized: log ratio per n-gram, shrunk by --prior-ngrams (default); raw: the "
                        "reference's sum, which grows with length and makes sampling top-k")
    p.add_argument("--prior-ngrams", type=float, default=DEFAULT_PRIOR_NGRAMS,
                   help=f"normalized weight = sum of log ratios / (n-grams + this): short documents need "
                        f"stronger evidence; 0 = plain mean (default {DEFAULT_PRIOR_NGRAMS})")
    p.add_argument("--min-tokens", type=int, default=DEFAULT_MIN_TOKENS,
                   help=f"documents with fewer tokens are never drawn (default {DEFAULT_MIN_TOKENS}; reference 100)")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser("dsir", parents=[common], help="DSIR importance weights toward a target (fit, resample)",
                       description=__doc__.split("\n\n", 1)[1])
    dsub = d.add_subparsers(dest="dsir_command", required=True, metavar="SUBCOMMAND")
    f = dsub.add_parser("fit", parents=[common], help="fit target/raw n-gram models, store per-document weights",
                        description="Fit bag-of-hashed-n-gram models on the target and on the annotated pool, "
                                    "save the model and write the attribute set RAW/_dsir_NAME with columns "
                                    "ts_dsir_NAME (sum log ratio), ts_dsir_NAME_norm (mean per n-gram) and "
                                    "ts_dsir_NAME_tokens. Deduplicate the pool first.")
    f.add_argument("--target", required=True, nargs="+", metavar="T", help="target documents (files, folders, globs)")
    f.add_argument("--raw", required=True, metavar="ANNOTATED_DIR", help="output folder of `textsieve annotate`")
    f.add_argument("--name", required=True, help="target name: letters, digits, '_' (used in column names)")
    f.add_argument("--buckets", type=int, default=10_000, help="hash buckets (default 10,000)")
    f.add_argument("--ngrams", type=int, default=2, help="n-gram order: 1..n are used (default 2)")
    f.add_argument("--hash-seed", type=int, default=0, help="hash seed (default 0; `eval kl` measures with 1)")
    f.add_argument("--smoothing", type=float, default=1.0,
                   help="additive pseudo-count per bucket (default 1; 0 = the reference's +1e-8)")
    f.add_argument("--text-field", default="text", metavar="FIELD", help="text field of the target records")
    f.add_argument("--model", default=None, metavar="PATH", help="where to store the model (default RAW/_dsir_NAME/model.dsir)")
    f.add_argument("--overwrite", action="store_true", help="refit and rewrite everything")
    f.add_argument("--json", action="store_true", help="print a JSON summary")
    f.set_defaults(func=run_fit_cmd)
    r = dsub.add_parser("resample", parents=[common], help="draw a selection and report its size, ESS and sources",
                        description="Draw from the stored DSIR weights without writing documents (use "
                                    "`textsieve select --dsir` for that) and report what the draw looks like.")
    r.add_argument("directory", metavar="ANNOTATED_DIR")
    r.add_argument("--dsir", required=True, metavar="NAME[:W],...", help="target(s), optionally weighted")
    add_resample_options(r)
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(func=run_resample_cmd)
