"""`textsieve learn`: fit a learned quality filter over stored signals of labelled documents."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import writes
from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.learned.model import LabelledSource, LearnConfig, train

    if not args.output:
        raise ValueError("learn needs -o MODEL.json (where to write the model)")
    sources: list[LabelledSource] = []
    if args.input:
        if not args.label_field:
            raise ValueError("--input needs --label-field (the record field holding the 0/1 label)")
        if args.positive or args.negative:
            raise ValueError("give either --input with --label-field, or --positive and --negative, not both")
        sources = [LabelledSource(d, label_field=args.label_field, where=args.where) for d in args.input]
    else:
        if not args.positive or not args.negative:
            raise ValueError("learn needs --positive DIR and --negative DIR (annotate output folders), "
                             "or --input DIR --label-field FIELD")
        if args.label_field:
            raise ValueError("--label-field goes with --input, not with --positive/--negative")
        sources = [LabelledSource(d, label=1, where=args.positive_where) for d in args.positive]
        sources += [LabelledSource(d, label=0, where=args.negative_where) for d in args.negative]
    features = [f.strip() for f in args.features.split(",") if f.strip()] if args.features else None
    if args.features_file:
        with open(args.features_file, encoding="utf-8") as fh:
            features = [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    cfg = LearnConfig(sources=sources, output=args.output, features=features, C=args.C,
                      class_weight=None if args.class_weight == "none" else args.class_weight,
                      folds=args.folds, seed=args.seed, feature_sets=args.features_from, model=args.model,
                      embed_model=args.embed_model, name=args.name)
    res = train(cfg)
    m = res.model
    if args.json:
        print(json.dumps(m.to_dict() | {"output": args.output}, indent=1))
        return 0
    cv = m.header["cv"]
    print(f"trained on {res.n_positive:,} positive and {res.n_negative:,} negative documents"
          + (f" ({res.unlabelled:,} without a label skipped)" if res.unlabelled else "")
          + (f", {len(m.features)} features" if hasattr(m, "features") else f", feature sets {'+'.join(m.views)}"))
    print(f"{cv['folds']}-fold cross-validation: accuracy {cv['accuracy']:.3f} (majority class "
          f"{cv['majority_baseline']:.3f}), balanced accuracy {cv['balanced_accuracy']:.3f}, AUC {cv['auc']:.3f}")
    if not hasattr(m, "top_signals"):  # a fused model: applied by `learn apply`, read by select as a column
        print(f"model {m.name!r}: {m.describe()}")
        print(f"model written to {args.output}; it does not compile to SQL: run `textsieve learn apply "
              f"{args.output} ATTRS` (writes ATTRS/sets/{m.set_name}), then use it in a recipe with "
              f"`models: {{quality: {args.output}}}` and a rule `quality.predict > 0.5`", file=sys.stderr)
        return 0
    print("most important signals (standardised coefficient; + favours positive):")
    for name, coef in m.top_signals(args.top):
        print(f"  {coef:+8.3f}  {name}")
    print(f"model written to {args.output}; use it in a recipe with "
          f"`models: {{quality: {args.output}}}` and a rule `quality.predict > 0.5`", file=sys.stderr)
    return 0


def _C_arg(value: str) -> float | str:
    from textsieve.learned.regularisation import parse_C

    try:
        return parse_C(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(tree: CommandTree) -> None:
    p = tree.parser("learn", help="fit a learned quality filter over stored signals",
                       description="Fit a logistic regression (standardised features, median imputation) on "
                                   "the stored signals of labelled documents, report stratified k-fold "
                                   "cross-validated accuracy and AUC and the most important signals, and save "
                                   "a JSON model a recipe applies as a rule (compiled to SQL, no text read).")
    p.add_argument("--positive", action="append", metavar="DIR", help="annotate output folder of positive "
                   "(good) documents; repeatable")
    p.add_argument("--negative", action="append", metavar="DIR", help="annotate output folder of negative "
                   "documents; repeatable")
    p.add_argument("--positive-where", metavar="SQL", help="DuckDB WHERE clause over the attribute columns "
                   "choosing which --positive documents to use, e.g. \"id LIKE 'c4-en/%%'\"")
    p.add_argument("--negative-where", metavar="SQL", help="the same for --negative")
    p.add_argument("--input", action="append", metavar="DIR", help="annotate output folder whose source "
                   "records carry the label (with --label-field); repeatable")
    p.add_argument("--label-field", metavar="FIELD", help="record field (dotted path) holding 0/1 or "
                   "true/false, e.g. meta.human_quality_label; records without it are skipped")
    p.add_argument("--where", metavar="SQL", help="with --input: WHERE clause (columns id, shard, row, "
                   "signals, label) choosing the documents")
    p.add_argument("-o", "--output", metavar="MODEL.json", help="where to write the model (required)")
    p.add_argument("--features", help="comma list of features (default: every rps_doc_* signal, counts as "
                   "log1p, plus mean(<line signal>) of every rps_lines_* signal); also "
                   "sum/min/max(<line signal>), frac(<line signal> OP number), log1p(<feature>)")
    p.add_argument("--features-file", metavar="FILE", help="features one per line (# comments)")
    p.add_argument("--C", type=_C_arg, default=0.1, help="inverse L2 regularisation strength (default 0.1), or "
                   "auto: chosen from 0.003..3 by an inner 5-fold CV on the training documents only (nested "
                   "inside every CV fold, so the reported accuracy stays honest)")
    p.add_argument("--class-weight", choices=("balanced", "none"), default="balanced",
                   help="weight classes inversely to their size (default) or not")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top", type=int, default=10, help="how many signals to list")
    p.add_argument("--json", action="store_true", help="print the model file's content as JSON")
    p.add_argument("--features-from", default="signals", metavar="SETS",
                   help="feature sets, comma-separated: signals (default), embed (the folder's sets/embed_<model> "
                        "set, `textsieve embed`), ngrams (hashed uni+bigrams of the texts), or all; anything but "
                        "signals alone with --model logistic gives a model applied by `learn apply`")
    p.add_argument("--model", choices=("logistic", "boosted"), default="logistic",
                   help="logistic regression per feature set (default), or gradient-boosted trees "
                        "(HistGradientBoosting, seeded) over signals and embed")
    p.add_argument("--embed-model", metavar="NAME", help="with embed: which set sets/embed_NAME (default: the one)")
    p.add_argument("--name", help="name of a model applied by `learn apply` (its set sets/learned_NAME; default: "
                                  "the output file's stem)")
    p.set_defaults(func=run)
    writes(p, "learn", "output", "positive", "negative", "input", "features_file", "features_from")
    # `learn apply` is a stage (`stages.annotate.learn_apply`): its command comes from its descriptor
    tree.group("learn", dest="learn_action", required=False, metavar="apply")
