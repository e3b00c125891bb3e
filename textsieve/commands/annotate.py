"""`textsieve annotate`: compute quality signals into attribute shards."""

from __future__ import annotations

import argparse
import sys


def parse_models(values: list[str] | None) -> dict[str, str]:
    """`--model NAME=PATH` options as an ordered {name: path}; errors name the bad option."""
    models: dict[str, str] = {}
    for value in values or ():
        name, sep, path = value.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise ValueError(f"--model {value!r}: expected NAME=PATH, e.g. --model wikiref=wikiref.tsm")
        if name in models:
            raise ValueError(f"--model {name}: given twice")
        models[name] = path
    return models


def run(args: argparse.Namespace) -> int:
    from textsieve.stages.annotate import AnnotateConfig, run_annotate

    cfg = AnnotateConfig(inputs=args.inputs, output=args.output, signals=args.signals,
                         lang=None if args.lang_field and not args.lang else (args.lang or "en"),
                         lang_field=args.lang_field, text_field=args.text_field, id_field=args.id_field,
                         on_error=args.on_error, workers=args.workers, resources=args.resources,
                         batch_size=args.batch_size, overwrite=args.overwrite, progress=not args.quiet,
                         models=parse_models(args.model), executor=args.executor, address=args.address)
    res = run_annotate(cfg)
    if not args.quiet:
        rate = res.documents / res.seconds if res.seconds else 0.0
        print(f"annotated {res.documents:,} documents in {len(res.shards_written)} shard(s) "
              f"({rate:,.0f} docs/s); {len(res.shards_skipped)} shard(s) already done; "
              f"{res.skipped_records} bad record(s) skipped -> {res.output}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    a = sub.add_parser("annotate", parents=[common], help="compute quality signals into attribute shards",
                       description="Write one Parquet attribute shard per input shard: id, shard, row and one "
                                   "column of RPv2 spans [start, end, score] per signal. Documents are not copied.")
    a.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders or globs; local paths or fsspec URLs")
    a.add_argument("-o", "--output", required=True, metavar="DIR", help="folder (or URL) for attribute shards")
    a.add_argument("--signals", default=None, help="comma list of signal names or groups (default: all, "
                   "i.e. the 28 RPv2 rule signals + minhash); see `textsieve signals`")
    a.add_argument("--lang", default=None, help="language for stop words and bad words (en, de, fr, es, it; "
                   "default en; with --lang-field, the fallback for documents without one). 'auto': detect "
                   "each document's language (built-in py3langid, or a language-id --model such as lid.176.bin) "
                   "and also write ts_lang, ts_lang_score")
    a.add_argument("--model", action="append", default=None, metavar="NAME=PATH",
                   help="add the signals of a model (repeatable): a textsieve .tsm file (`textsieve train ...`), "
                        "a fastText .bin (classifier -> rps_doc_ml_NAME_score, or language id), a KenLM file, "
                        "a UT1 blacklists folder, or builtin:py3langid. See `textsieve models show PATH`")
    a.add_argument("--lang-field", default=None, metavar="FIELD",
                   help="record field holding each document's language (dotted path, e.g. meta.lang)")
    a.add_argument("--text-field", default="text", metavar="FIELD")
    a.add_argument("--id-field", default="id", metavar="FIELD",
                   help="id field; records without one get '<shard>/<row>'")
    a.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="bad record: stop with an error naming file and line (default), or skip and report it")
    a.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    a.add_argument("--resources", default=None, metavar="DIR",
                   help="word-list folder (else $TEXTSIEVE_RESOURCES, else the one `textsieve resources add` filled)")
    a.add_argument("--batch-size", type=int, default=500, help="documents per work unit")
    a.add_argument("--overwrite", action="store_true", help="recompute shards that already exist")
    a.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local process pool (default), or Ray actors (pip install 'textsieve[ray]'); "
                        "same output either way")
    a.add_argument("--address", default=None, metavar="ADDR",
                   help="with --executor ray: the Ray cluster to join ('auto', or host:port); default: start "
                        "a local Ray with all cores (or --workers)")
    a.set_defaults(func=run)
