"""`textsieve tokens` (real token counts per document) and `textsieve train tokenizer` (a BPE to count with)."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.training.tokens import TokensConfig, run_tokens

    res = run_tokens(config_from_args(TokensConfig, args))
    summary = {"attribute_set": res.output, "column": res.column, "documents": res.documents, "tokens": res.tokens,
               "shards": res.shards, "computed": res.computed, "skipped": res.skipped,
               "seconds": round(res.seconds, 3), "tokenizer": res.tokenizer}
    if getattr(args, "json", False):
        print(json.dumps(summary))
    elif not args.quiet:
        what = ("unchanged (same inputs, same tokenizer)" if res.skipped
                else f"{res.computed} of {res.shards} shard(s) counted")
        print(f"tokens: {res.documents:,} documents, {res.tokens:,} tokens ({res.tokens_per_doc:,.1f}/doc) with "
              f"{res.tokenizer['kind']} tokenizer {res.tokenizer['name']} (fingerprint "
              f"{res.tokenizer['fingerprint']}); {what} in {res.seconds:.1f} s -> {res.output} "
              f"(column {res.column})", file=sys.stderr)
    return 0


def run_train(args: argparse.Namespace) -> int:
    from textsieve.tokenization.train import TrainTokenizerConfig, train_tokenizer

    res = train_tokenizer(config_from_args(TrainTokenizerConfig, args))
    if not args.quiet:
        print(json.dumps({"output": res.output, "documents": res.documents, "vocab_size": res.vocab_size,
                          "eos_id": res.eos_id, "fingerprint": res.fingerprint}, indent=1), file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.training.tokens import TokensConfig

    p = sub.add_parser("tokens", parents=[common], help="real token counts per document (tokenizer.json, tiktoken)",
                       formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve train tokenizer data/ --vocab 2000 --output tok-help.json",
                                       "textsieve annotate data/ -o attrs-tok/ --signals rps_doc_word_count",
                                       "textsieve tokens attrs-tok/ --tokenizer tok-help.json",
                                       "textsieve tokens attrs-tok/ --tokenizer tok-help.json --name help --workers 1"),
                       description="Count every document's tokens with the tokenizer you train with: a Hugging "
                                   "Face tokenizer.json (or a folder holding one) or a tiktoken BPE file, read "
                                   "from its path (nothing is downloaded). Writes the attribute set "
                                   "ATTRS/_tokens_NAME with the int64 column ts_tokens_NAME; select --dsir "
                                   "--tokens, the funnel and the report then count in these tokens. Counts "
                                   "exclude special tokens; a tokenizer file changed in place is counted again "
                                   "on the next run.")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    add_config_options(p, TokensConfig)
    p.set_defaults(func=run)


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
