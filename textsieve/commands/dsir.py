"""`textsieve dsir resample` (draws from DSIR weights); `dsir fit` is a stage (`stages.select.dsir_fit`).

`fit` stores the weights as attribute columns (ts_dsir_<name>, ts_dsir_<name>_norm,
ts_dsir_<name>_tokens) beside an annotated pool; recipes can filter on them, and
`textsieve select DIR --dsir NAME --k N --output OUT` writes a resampled selection. `resample`
draws without writing documents and prints the selection's size, token count, effective sample
size and sources, to choose a temperature. Deduplicate the pool before DSIR.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples
from textsieve.commands.tree import CommandTree

#: The `select` options that `dsir resample` shares (one definition: SelectConfig's).
RESAMPLE_FIELDS = ("directory", "dsir", "k", "tokens", "replace", "seed", "temperature", "min_tokens",
                   "prior_ngrams", "dsir_weight", "token_column")


def run_resample_cmd(args: argparse.Namespace) -> int:
    from textsieve.dsir.resample import resample
    from textsieve.stages.select.select import SelectConfig, recipe_and_targets, resolve_select_config

    cfg = resolve_select_config(config_from_args(SelectConfig, args))
    _, targets = recipe_and_targets(cfg)
    if targets is None:
        raise ValueError("dsir resample: --dsir NAME[:W][,NAME2:W2] is required")
    r = resample(cfg.directory, targets, k=cfg.k, tokens=cfg.tokens, replace=cfg.replace, seed=cfg.seed,
                 temperature=cfg.temperature, weight=cfg.dsir_weight, min_tokens=cfg.min_tokens,
                 prior_ngrams=cfg.prior_ngrams, token_column=cfg.token_column)
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


def register(tree: CommandTree) -> None:
    tree.group("dsir", help="DSIR importance weights toward a target (fit, resample)",
               description=__doc__.split("\n\n", 1)[1], dest="dsir_command", metavar="SUBCOMMAND")
    from textsieve.stages.select.select import SelectConfig

    r = tree.parser("dsir resample", help="draw a selection and report its size, ESS and sources",
                    formatter_class=ExamplesFormatter,
                    epilog=examples("textsieve dsir resample attrs/ --dsir wiki --k 50",
                                    "textsieve dsir resample attrs/ --dsir wiki --tokens 20000 --temperature 0.1"),
                    description="Draw from the stored DSIR weights without writing documents (use "
                                "`textsieve select --dsir` for that) and report what the draw looks like.")
    add_config_options(r, SelectConfig, only=RESAMPLE_FIELDS)
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(func=run_resample_cmd)
