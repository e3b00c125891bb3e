"""`textsieve eval`: measure whether a selection is good. `eval kl` (DSIR's KL reduction) lives
here; `eval lm` is registered from `textsieve.commands.eval_lm`."""

from __future__ import annotations

import argparse
import json

from textsieve.commands import eval_lm
from textsieve.commands.tree import CommandTree


def run_kl(args: argparse.Namespace) -> int:
    from textsieve.eval.kl import KLEvalConfig, evaluate_kl

    res = evaluate_kl(KLEvalConfig(selection=args.selection, target=args.target, pool=args.pool,
                                   buckets=args.buckets, ngrams=args.ngrams, hash_seed=args.hash_seed,
                                   seed=args.seed, pool_sample=args.pool_sample, text_field=args.text_field))
    if args.json:
        print(json.dumps(res.to_json()))
        return 0
    print(f"KL(target || pool sample of {res.pool_sample_docs:,} of {res.pool_docs:,} docs) = {res.kl_target_pool:.4f}")
    print(f"{'':22}{'KL(target||X)':>15}{'KL reduction':>15}")
    print(f"{'selection':<14}{res.selection_docs:>8,}{res.kl_target_selection:>15.4f}{res.kl_reduction:>15.4f}")
    print(f"{'random':<14}{res.random_docs:>8,}{res.kl_target_random:>15.4f}{res.kl_reduction_random:>15.4f}")
    print(f"(hashed {args.ngrams}-grams, {args.buckets:,} buckets, hash seed {args.hash_seed}; "
          f"{res.target_docs:,} target documents)")
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    e = sub.add_parser("eval", parents=[common], help="measure a selection (kl, lm)",
                       description="Measure how close a selection is to a target, beside a random selection "
                                   "of equal size.")
    esub = e.add_subparsers(dest="eval_command", required=True, metavar="METRIC")
    k = esub.add_parser("kl", parents=[common], help="DSIR's KL reduction of a selection vs random",
                        description="KL reduction = KL(h_target||h_pool) - KL(h_target||h_selection), h = hashed "
                                    "n-gram distribution; printed beside the same figure for a uniform random "
                                    "selection of as many pool documents. Measured with hash seed 1 by default, "
                                    "which `dsir fit` (seed 0) does not use; keep the target documents used here "
                                    "out of the fit for an honest figure.")
    k.add_argument("--selection", required=True, nargs="+", metavar="S",
                   help="selected documents: a `select` output folder, or JSONL/Parquet files")
    k.add_argument("--target", required=True, nargs="+", metavar="T", help="target documents (held out of the fit)")
    k.add_argument("--pool", required=True, nargs="+", metavar="P",
                   help="the pool S was drawn from: the annotated folder, or the input files")
    k.add_argument("--buckets", type=int, default=10_000)
    k.add_argument("--ngrams", type=int, default=2)
    k.add_argument("--hash-seed", type=int, default=1, help="hash space (default 1; dsir fit uses 0)")
    k.add_argument("--seed", type=int, default=0, help="seed of the random samples (default 0)")
    k.add_argument("--pool-sample", type=int, default=100_000,
                   help="pool documents sampled for h_pool (default 100,000)")
    k.add_argument("--text-field", default="text", metavar="FIELD")
    k.add_argument("--json", action="store_true", help="print one JSON object (kl_reduction, kl_reduction_random, ...)")
    k.set_defaults(func=run_kl)
    eval_lm.register_lm(esub, common)
