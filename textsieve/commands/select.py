"""`textsieve select` (funnel / materialize a recipe or a DSIR resample) and `textsieve recipes`."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.select.dsir_defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE


def _parse_dsir(spec: str) -> list[tuple[str, float]]:
    """`wiki` or `wiki:0.7,books:0.3` -> [(name, weight)]."""
    out = []
    for part in spec.split(","):
        name, _, w = part.strip().partition(":")
        if not name:
            raise ValueError(f"--dsir {spec!r}: empty target name; expected NAME[:WEIGHT][,NAME2:W2]")
        try:
            weight = float(w) if w else 1.0
        except ValueError:
            raise ValueError(f"--dsir {spec!r}: weight {w!r} of {name!r} is not a number") from None
        if weight <= 0:
            raise ValueError(f"--dsir {spec!r}: weight of {name!r} must be > 0")
        out.append((name, weight))
    return out


def run_select_cmd(args: argparse.Namespace) -> int:
    from textsieve.select.funnel import compute_funnel
    from textsieve.select.materialize import SelectConfig, run_select
    from textsieve.select.recipe import load_recipe

    if (args.recipe is None) == (args.dsir is None):
        raise ValueError("give --recipe R or --dsir NAME (one of them); see `textsieve recipes`")
    recipe = load_recipe(args.recipe) if args.recipe else None
    if recipe is not None and args.dry_run:
        f = compute_funnel(args.directory, recipe, threads=args.threads)
        print(f.to_json() if args.json else f.table())
        if not args.json and not args.quiet:
            print(f"({f.total:,} documents in {f.seconds:.2f} s, attribute columns only)", file=sys.stderr)
        return 0
    dsir = _parse_dsir(args.dsir) if args.dsir else None
    if dsir is not None:
        if (args.k is None) == (args.tokens is None):
            raise ValueError("--dsir needs exactly one of --k N (documents) or --tokens N")
        if args.dry_run:
            from textsieve.select.dsir import resample

            res = resample(args.directory, dsir, k=args.k, tokens=args.tokens, replace=args.replace,
                           seed=args.seed, temperature=args.temperature, weight=args.dsir_weight,
                           min_tokens=args.min_tokens, prior_ngrams=args.prior_ngrams)
            summary = res.summary()
            print(json.dumps(summary, indent=2, default=float) if args.json else
                  "\n".join(f"{k}: {v}" for k, v in summary.items()))
            return 0
    if not args.output:
        raise ValueError("--output DIR is required unless --dry-run")
    cfg = SelectConfig(directory=args.directory, output=args.output, recipe=recipe, dsir=dsir, k=args.k,
                       tokens=args.tokens, replace=args.replace, seed=args.seed, temperature=args.temperature,
                       min_tokens=args.min_tokens, prior_ngrams=args.prior_ngrams,
                       dsir_weight=args.dsir_weight, format=args.format, overwrite=args.overwrite,
                       workers=args.workers, threads=args.threads, progress=not args.quiet,
                       executor=args.executor, address=args.address)
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


def run_recipes(args: argparse.Namespace) -> int:
    from textsieve.select.recipe import bundled_recipes, bundled_text

    if args.name:
        print(bundled_text(args.name), end="")
        return 0
    for name, about in bundled_recipes().items():
        print(f"{name:<14} {about}")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.select import recipe as recipe_mod

    s = sub.add_parser("select", parents=[common], help="apply a recipe (or DSIR resampling) to annotated documents",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Filter the documents of an annotate folder with a recipe over their stored "
                                   "attributes (signals, dedup flags, DSIR weights, learned models). --dry-run "
                                   "prints the funnel without reading any text; otherwise the selected documents "
                                   "are written to --output. Rule language: `textsieve recipes --help`.")
    s.add_argument("directory", metavar="ANNOTATED_DIR", help="output folder of `textsieve annotate`")
    s.add_argument("--recipe", "-r", default=None, metavar="R", help="bundled recipe name or YAML file")
    s.add_argument("--dry-run", action="store_true", help="print the funnel (or the DSIR draw summary) only")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("-o", "--output", default=None, metavar="DIR", help="folder for the selected documents")
    s.add_argument("--format", default="jsonl.gz", choices=("jsonl.gz", "parquet"), help="output shard format")
    s.add_argument("--overwrite", action="store_true", help="replace an output made with other settings")
    s.add_argument("--workers", type=int, default=None, help="processes writing shards (default: all cores)")
    s.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all cores)")
    s.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="write the output shards on the local pool or as Ray tasks (same output)")
    s.add_argument("--address", default=None, metavar="ADDR",
                   help="with --executor ray: Ray cluster to join; default: start a local Ray")
    d = s.add_argument_group("DSIR resampling (after `textsieve dsir fit`)")
    d.add_argument("--dsir", default=None, metavar="NAME[:W][,NAME2:W2]", help="targets to resample toward")
    d.add_argument("--k", type=int, default=None, help="documents to draw")
    d.add_argument("--tokens", type=int, default=None, help="token budget to draw instead of --k")
    d.add_argument("--replace", action="store_true", help="draw with replacement (a document may repeat)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--temperature", type=float, default=None,
                   help="divides the log weights: lower is closer to top-k, higher to uniform "
                        "(default: DSIR's, as in `textsieve dsir resample --help`)")
    d.add_argument("--min-tokens", type=int, default=None,
                   help="documents with fewer tokens are never drawn (default: DSIR's)")
    d.add_argument("--dsir-weight", default="normalized", choices=("normalized", "raw"),
                   help="per-n-gram log ratio, shrunk by --prior-ngrams (default), or the reference's "
                        "length-scaled sum")
    d.add_argument("--prior-ngrams", type=float, default=DEFAULT_PRIOR_NGRAMS,
                   help=f"normalized weight = sum of log ratios / (n-grams + this); 0 = plain mean "
                        f"(default {DEFAULT_PRIOR_NGRAMS})")
    s.set_defaults(func=run_select_cmd)

    r = sub.add_parser("recipes", parents=[common], help="list bundled selection recipes (rule language in --help)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Bundled recipes for `textsieve select --recipe NAME`; give a NAME to print its "
                                   "YAML (copy it to start your own).\n\nRecipe file:\n  name: my-recipe\n"
                                   "  models: {quality: model.json}   # optional learned filters\n  rules:\n"
                                   "    word_count: \"rps_doc_word_count between 50 and 100000\"\n"
                                   "    short_lines: \"line: rps_lines_num_words >= 5\"\n\n"
                                   + recipe_mod.__doc__.split("\n", 2)[2])
    r.add_argument("name", nargs="?", default=None, help="print this bundled recipe")
    r.set_defaults(func=run_recipes)
