"""`textsieve train lm` and `textsieve train importance` (added to `train` by `register_more`)."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import writes


def run_lm(args: argparse.Namespace) -> int:
    from textsieve.models.perplexity import LMTrainConfig, train_lm

    cfg = LMTrainConfig(corpus=args.corpus, output=args.output, order=args.order, folds=args.folds,
                        max_docs=args.max_docs, text_field=args.text_field, arpa=args.arpa, seed=args.seed,
                        cutoff_corpus=args.cutoff_corpus,
                        progress=not args.quiet)
    res = train_lm(cfg)
    if not args.quiet:
        print(json.dumps({"output": args.output, "fingerprint": res.fingerprint, "cutoffs": list(res.cutoffs),
                          "metrics": res.metrics}, indent=1), file=sys.stderr)
    return 0


def run_importance(args: argparse.Namespace) -> int:
    from textsieve.models.importance import (
        DEFAULT_MAX_DOCS,
        histogram,
        save_importance_model,
    )
    from textsieve.models.perplexity import texts_and_digest

    if args.buckets < 1:
        raise ValueError(f"--buckets must be >= 1, got {args.buckets}")
    max_docs = args.max_docs if args.max_docs is not None else DEFAULT_MAX_DOCS
    hists = []
    for role, inputs in (("target", args.target), ("source", args.source)):
        texts, _ = texts_and_digest(inputs, args.text_field, max_docs, not args.quiet, f"train importance ({role})")
        batches = (texts[i:i + 2000] for i in range(0, len(texts), 2000))
        hists.append(histogram(batches, args.buckets, args.hash_seed, max_docs))
    target, source = hists
    fp = save_importance_model(args.output, target, source, name=args.name, seed=args.hash_seed,
                               target_desc=" ".join(args.target), source_desc=" ".join(args.source))
    if not args.quiet:
        print(json.dumps({"output": args.output, "fingerprint": fp,
                          "target": {"documents": target.documents, "lambda": target.mean_raw_words},
                          "source": {"documents": source.documents, "lambda": source.mean_raw_words},
                          "signals": [f"rps_doc_{args.name}_importance",
                                      f"rps_doc_{args.name}_importance_length_correction",
                                      f"ts_doc_{args.name}_importance_length_corrected"]}, indent=1),
              file=sys.stderr)
    return 0


def register_more(tsub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    m = tsub.add_parser("lm", parents=[common], help="word n-gram LM -> ts_perplexity_NAME(_bucket)",
                        description="Train a word n-gram language model (interpolated modified Kneser-Ney) "
                                    "on a target corpus, with CCNet-style head/middle/tail cutoffs (30th/60th "
                                    "percentiles of the target's held-out perplexities). annotate --models "
                                    "NAME=FILE gives ts_perplexity_NAME and ts_perplexity_NAME_bucket.")
    m.add_argument("--corpus", nargs="+", required=True, metavar="INPUT",
                   help="target documents (files, folders, globs), e.g. Wikipedia")
    m.add_argument("-o", "--output", required=True, metavar="FILE", help="model file to write (.tsm)")
    m.add_argument("--order", type=int, default=3, help="n-gram order, 1..6 (default 3)")
    m.add_argument("--folds", type=int, default=5,
                   help="held-out folds for the bucket cutoffs (0: in-sample perplexities; default 5)")
    m.add_argument("--cutoff-corpus", nargs="+", default=None, metavar="INPUT",
                   help="take the 30th/60th percentile cutoffs on these documents (e.g. a sample of the pool "
                        "to be filtered, giving even head/middle/tail thirds) instead of the target's held-out "
                        "perplexities")
    m.add_argument("--max-docs", type=int, default=None, help="use at most this many documents")
    m.add_argument("--text-field", default="text", metavar="FIELD")
    m.add_argument("--arpa", default=None, metavar="FILE",
                   help="also write the model as an ARPA file (.arpa or .arpa.gz), readable by KenLM")
    m.add_argument("--seed", type=int, default=0, help="seed of the fold assignment")
    m.set_defaults(func=run_lm)
    writes(m, "train lm", "output", "corpus", "cutoff_corpus")

    i = tsub.add_parser("importance", parents=[common],
                        help="RPv2 DSIR histograms -> rps_doc_NAME_importance(_length_correction)",
                        description="Build RedPajama-V2's hashed unigram+bigram histograms (10,000 buckets, "
                                    "CPython 3.11 hash() under PYTHONHASHSEED=42, computed independently of "
                                    "this process) of a target and a source sample, and their mean raw word "
                                    "counts. annotate --models NAME=FILE gives rps_doc_NAME_importance, "
                                    "rps_doc_NAME_importance_length_correction (RPv2's formula, bug included) "
                                    "and ts_doc_NAME_importance_length_corrected.")
    i.add_argument("--target", nargs="+", required=True, metavar="INPUT",
                   help="target-domain sample (RPv2: wikipedia, books or openwebtext)")
    i.add_argument("--source", nargs="+", required=True, metavar="INPUT",
                   help="source-domain sample (RPv2: a CCNet sample)")
    i.add_argument("--name", required=True, help="target name recorded in the model (RPv2: wikipedia, books, "
                   "openwebtext); use the same name in annotate --models NAME=FILE")
    i.add_argument("-o", "--output", required=True, metavar="FILE", help="model file to write (.tsm)")
    i.add_argument("--max-docs", type=int, default=None,
                   help="at most this many documents per sample (default 500,000, RPv2's DSIR_NUM_SAMPLES)")
    i.add_argument("--buckets", type=int, default=10000, help="hash buckets (RPv2: 10,000)")
    i.add_argument("--hash-seed", type=int, default=42, help="PYTHONHASHSEED whose hash() to reproduce "
                   "(RPv2's image: 42)")
    i.add_argument("--text-field", default="text", metavar="FIELD")
    i.set_defaults(func=run_importance)
    writes(i, "train importance", "output", "target", "source")
