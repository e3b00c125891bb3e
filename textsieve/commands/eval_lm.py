"""`textsieve eval lm`: options and printing; the evaluation is `textsieve.eval.lm.evaluate_lm`.
The `eval` parent command (`textsieve/commands/eval.py`) calls `register_lm`."""

from __future__ import annotations

import argparse
import json

from textsieve.commands.options import add_config_options, config_from_args
from textsieve.eval.lm import LMEvalConfig, evaluate_lm

DESCRIPTION = ("`textsieve eval lm`: is a selection closer to the target than a random one? Perplexity of a\n"
               "small n-gram LM trained on each, measured on held-out target documents.")


def run(args: argparse.Namespace) -> int:
    cfg = config_from_args(LMEvalConfig, args, progress=not (args.quiet or args.json))
    res = evaluate_lm(cfg)
    if args.json:
        print(json.dumps(res.to_json()))
        return 0
    print(f"{cfg.order}-gram LM perplexity on {res.target_documents:,} held-out target documents "
          f"({res.target_tokens:,} tokens):")
    print(f"  selection  {res.perplexity:12.2f}   ({res.documents:,} docs, {res.tokens:,} tokens, "
          f"OOV {res.oov_rate:.1%})")
    print(f"  random     {res.perplexity_random:12.2f}   ({res.documents_random:,} docs, "
          f"{res.tokens_random:,} tokens, OOV {res.oov_rate_random:.1%})")
    return 0


def register_lm(eval_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add `lm` to the `eval` subcommands."""
    p = eval_sub.add_parser("lm", parents=[common], help="perplexity of an n-gram LM trained on the selection "
                            "vs on a random sample", description=DESCRIPTION)
    add_config_options(p, LMEvalConfig)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
