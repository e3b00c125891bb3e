"""`textsieve train`: build model files (.tsm) from data the user points at, offline.

Subcommands here: `classifier` (fastText-style quality classifier, RPv2 §4.5/§5.1), `ut1`
(UT1 domain blocklist index, RPv2 §5.4) and `tokenizer` (a byte-level BPE for `textsieve
tokens`). `textsieve.commands.train_more` adds `lm` and `importance` through
`register_more(train_subparsers, common)`.
"""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands import train_more
from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes
from textsieve.commands.tree import CommandTree


def run_classifier(args: argparse.Namespace) -> int:
    from textsieve.models.classifier import ClassifierConfig, train_classifier

    cfg = ClassifierConfig(positive=args.positive, negative=args.negative, output=args.output,
                           label=args.label, langs=[g.strip() for g in args.lang.split(",")] if args.lang else None,
                           text_field=args.text_field, max_docs=args.max_docs, holdout=args.holdout, seed=args.seed,
                           backend=args.backend, epochs=args.epochs, buckets=args.buckets,
                           progress=not args.quiet)
    res = train_classifier(cfg)
    if not args.quiet:
        print(json.dumps({"output": args.output, "fingerprint": res.fingerprint, "metrics": res.metrics}, indent=1),
              file=sys.stderr)
    return 0


def run_ut1(args: argparse.Namespace) -> int:
    from textsieve.models.ut1 import build_ut1_model

    fingerprint, header = build_ut1_model(args.blacklists, args.output)
    if not args.quiet:
        print(f"UT1 index: {header['training_data']['domains']:,} domains in "
              f"{len(header['training_data']['categories_found'])} categories -> {args.output} "
              f"(fingerprint {fingerprint})", file=sys.stderr)
    return 0


def register(tree: CommandTree) -> None:
    common = tree.common
    tsub = tree.group("train", help="train model files for model-based signals",
                      description="Build textsieve model files (.tsm: JSON header + arrays) for "
                                  "`annotate --models NAME=PATH`. Nothing is downloaded.", dest="train_command",
                      metavar="MODEL")

    c = tsub.add_parser("classifier", parents=[common], help="quality classifier -> rps_doc_ml_NAME_score",
                        description="Train a fastText-style binary quality classifier (positives vs negatives) "
                                    "with RPv2's input preparation; annotate --models NAME=FILE gives "
                                    "rps_doc_ml_NAME_score = probability of the positive class, round8.")
    c.add_argument("--positive", nargs="+", required=True, metavar="INPUT",
                   help="high-quality documents (files, folders, globs), e.g. Wikipedia")
    c.add_argument("--negative", nargs="+", required=True, metavar="INPUT",
                   help="the pool to score against (RPv2: a CCNet sample), labelled __label__cc")
    c.add_argument("-o", "--output", required=True, metavar="FILE", help="model file to write (.tsm)")
    c.add_argument("--label", default="hq", help="name of the positive class (RPv2: wiki, palm, wikipedia)")
    c.add_argument("--lang", default=None, help="comma list of languages the model applies to; other documents "
                   "get null (RPv2: en for wikiref/palm). Default: all")
    c.add_argument("--text-field", default="text", metavar="FIELD")
    c.add_argument("--max-docs", type=int, default=None, help="at most this many documents per class "
                   "(RPv2 uses 75,000 in total; classes are balanced to the smaller one)")
    c.add_argument("--holdout", type=float, default=0.1, help="fraction kept aside to report accuracy")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--backend", choices=("auto", "fasttext", "linear"), default="auto",
                   help="linear (hashed word uni+bigrams, logistic regression; no extra dependency) or "
                        "fasttext (a fastText wheel, RPv2's defaults). auto = linear")
    c.add_argument("--epochs", type=int, default=5, help="fastText epochs (RPv2: 5, the default)")
    c.add_argument("--buckets", type=int, default=1 << 20, help="hash buckets of the linear backend")
    c.set_defaults(func=run_classifier)
    writes(c, "train classifier", "output", "positive", "negative")

    u = tsub.add_parser("ut1", parents=[common], help="UT1 domain blocklist -> rps_doc_ut1_blacklist",
                        description="Index a UT1-style blacklists folder (CATEGORY/domains files) with RPv2's "
                                    "category-id scheme.")
    u.add_argument("--blacklists", required=True, metavar="DIR", help="folder with CATEGORY/domains files")
    u.add_argument("-o", "--output", required=True, metavar="FILE", help="model file to write (.tsm)")
    u.set_defaults(func=run_ut1)
    writes(u, "train ut1", "output", "blacklists")
    train_more.register_more(tsub, common)
    register_train(tsub, common)  # `train tokenizer` (a BPE for `textsieve tokens`)


def run_train(args: argparse.Namespace) -> int:
    from textsieve.tokenization.train import TrainTokenizerConfig, train_tokenizer

    res = train_tokenizer(config_from_args(TrainTokenizerConfig, args))
    if not args.quiet:
        print(json.dumps({"output": res.output, "documents": res.documents, "vocab_size": res.vocab_size,
                          "eos_id": res.eos_id, "fingerprint": res.fingerprint}, indent=1), file=sys.stderr)
    return 0


def register_train(tsub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`textsieve train tokenizer` (called by `textsieve.commands.train`)."""
    from textsieve.tokenization.train import TrainTokenizerConfig

    t = tsub.add_parser("tokenizer", parents=[common], help="byte-level BPE tokenizer -> tokenizer.json",
                        formatter_class=ExamplesFormatter,
                        epilog=examples("textsieve train tokenizer data/ --vocab 1000 --output tok-train.json"),
                        description="Train a byte-level BPE (GPT-2 style: every byte is a token, so nothing "
                                    "is unknown) on your documents with the tokenizers library and write a "
                                    "Hugging Face tokenizer.json, the offline default for `textsieve tokens`. "
                                    "The special tokens take ids 0, 1, ...; the same documents and settings give "
                                    "the same file.")
    add_config_options(t, TrainTokenizerConfig)
    t.set_defaults(func=run_train)
    writes(t, "train tokenizer", "output", "corpus")
