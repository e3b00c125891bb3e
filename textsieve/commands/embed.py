"""`textsieve embed`: one embedding per document (the default model ships in a wheel; others by path)."""

from __future__ import annotations

import argparse
import json
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.annotate.embed import EmbedConfig, run_embed

    res = run_embed(config_from_args(EmbedConfig, args))
    summary = {"attribute_set": res.output, "column": res.column, "documents": res.documents,
               "shards": res.shards, "computed": res.computed, "skipped": res.skipped,
               "seconds": round(res.seconds, 3), "compile_seconds": round(res.compile_seconds, 3),
               "model": res.model}
    if getattr(args, "json", False):
        print(json.dumps(summary))
    elif not args.quiet:
        what = ("unchanged (same inputs, same model)" if res.skipped
                else f"{res.computed} of {res.shards} shard(s) embedded ({res.rate_text()})")
        print(f"embed: {res.documents:,} documents with {res.model['model']} ({res.model['dim']}-d, fingerprint "
              f"{res.model['model_fingerprint']}); {what} in {res.seconds:.1f} s -> {res.output} "
              f"(column {res.column})", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from textsieve.stages.annotate.embed import EmbedConfig

    p = sub.add_parser("embed", parents=[common], help="one embedding per document (offline; default model "
                       "in a wheel)", formatter_class=ExamplesFormatter,
                       epilog=examples("textsieve annotate data/ -o attrs-emb/ --signals rps_doc_word_count",
                                       "textsieve embed attrs-emb/",
                                       "textsieve embed attrs-emb/ --workers 1 --json"),
                       description="Embed every document of an annotate folder into the attribute set "
                                   "ATTRS/_embed_MODEL (column ts_embed_MODEL, fixed_size_list<float16>, unit "
                                   "length). The default model, WordLlama L2-Supercat (256-d), ships inside the "
                                   "wordllama wheel; a Model2Vec or sentence-transformers folder is used by path. "
                                   "Nothing is downloaded. Semantic dedup (dedup semantic), embedding DSIR "
                                   "(dsir fit --features embed) and learn --features embed read the set.")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    add_config_options(p, EmbedConfig)
    p.set_defaults(func=run)
