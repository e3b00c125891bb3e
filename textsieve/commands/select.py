"""`textsieve select` (funnel / materialize a recipe or a DSIR resample) and `textsieve recipes`."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run_select_cmd(args: argparse.Namespace) -> int:
    from textsieve.recipes.funnel import compute_funnel
    from textsieve.stages.select.select import (
        SelectConfig,
        SelectError,
        recipe_and_targets,
        resolve_select_config,
        run_select,
    )

    cfg = resolve_select_config(config_from_args(SelectConfig, args))
    recipe, targets = recipe_and_targets(cfg)
    if recipe is None and targets is None:
        raise SelectError("give --recipe R and/or --dsir NAME; see `textsieve recipes`")
    if args.dry_run:
        if recipe is not None and targets is None:
            f = compute_funnel(cfg.directory, recipe, threads=cfg.threads)
            print(f.to_json() if args.json else f.table())
            if not args.json and not args.quiet:
                print(f"({f.total:,} documents in {f.seconds:.2f} s, attribute columns only)", file=sys.stderr)
            return 0
        from textsieve.stages.select.select import preview_draw

        summary = preview_draw(cfg).summary()  # with a recipe: over its survivors
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


def run_recipes(args: argparse.Namespace) -> int:
    from textsieve.recipes.language import bundled_recipes, bundled_text

    if args.name:
        print(bundled_text(args.name), end="")
        return 0
    recipes = bundled_recipes()
    width = max(map(len, recipes), default=0)  # names are not all short (rpv2-card-gopher)
    for name, about in recipes.items():
        print(f"{name:<{width}}  {about}")
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.recipes import language as recipe_mod

    s = sub.add_parser("select", parents=[common], help="apply a recipe (or DSIR resampling) to annotated documents",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve select attrs/ --recipe gopher --dry-run",
                                       "textsieve select attrs/ --recipe c4 -o c4-selected/ --format parquet",
                                       "textsieve select attrs/ --recipe gopher --dsir wiki --k 50 -o gopher-wiki/",
                                       "textsieve select attrs/ --recipe gopher --shards jsonl.zst --tokenizer words "
                                       "--shard-size 20000 -o gopher-train/"),
                       description="Filter the documents of an annotate folder with a recipe over their stored "
                                   "attributes (signals, dedup flags, DSIR weights, learned models). --dry-run "
                                   "prints the funnel without reading any text; otherwise the selected documents "
                                   "are written to --output. Rule language: `textsieve recipes --help`.")
    from textsieve.stages.select.select import SelectConfig

    s.add_argument("--dry-run", action="store_true", help="print the funnel (or the DSIR draw summary) only")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    add_config_options(s, SelectConfig)
    s.set_defaults(func=run_select_cmd)
    writes(s, "select", "output", "directory", "source_roots", "tokenizer")

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
