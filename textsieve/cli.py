"""The `textsieve` command: argument parsing only; the work lives in the stages."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from textsieve import __version__

log = logging.getLogger("textsieve")


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def _cmd_annotate(args: argparse.Namespace) -> int:
    from textsieve.stages.annotate import AnnotateConfig, run_annotate

    cfg = AnnotateConfig(inputs=args.inputs, output=args.output, signals=args.signals,
                         lang=None if args.lang_field and not args.lang else (args.lang or "en"),
                         lang_field=args.lang_field, text_field=args.text_field, id_field=args.id_field,
                         on_error=args.on_error, workers=args.workers, resources=args.resources,
                         batch_size=args.batch_size, overwrite=args.overwrite, progress=not args.quiet)
    res = run_annotate(cfg)
    if not args.quiet:
        rate = res.documents / res.seconds if res.seconds else 0.0
        print(f"annotated {res.documents:,} documents in {len(res.shards_written)} shard(s) "
              f"({rate:,.0f} docs/s); {len(res.shards_skipped)} shard(s) already done; "
              f"{res.skipped_records} bad record(s) skipped -> {res.output}", file=sys.stderr)
    return 0


def _cmd_signals(args: argparse.Namespace) -> int:
    from textsieve.signals import REGISTRY
    from textsieve.signals.selection import groups

    if args.json:
        print(json.dumps([{"name": s.name, "level": s.level, "type": s.dtype, "group": s.group,
                           "needs": list(s.needs), "definition": s.definition} for s in REGISTRY.values()],
                         indent=2))
        return 0
    width = max(len(n) for n in REGISTRY)
    for s in REGISTRY.values():
        print(f"{s.name:<{width}}  {s.level:<4}  {s.dtype:<5}  {s.definition}")
    print(f"\n{'minhash':<{width}}  doc   bands  RPv2 MinHash: 13-word shingles, 128 permutations, seed 42, "
          "bands for Jaccard 1.0/0.9/0.8/0.7 (columns signature_sim{t})")
    print("\ngroups: " + ", ".join(f"{g} ({len(names)})" for g, names in groups().items()) + ", minhash, all")
    return 0


def _cmd_resources(args: argparse.Namespace) -> int:
    from textsieve.signals.resources import add_resources, load_word_lists, missing_message, resolve_resources_dir

    if args.action == "add":
        dest = add_resources(args.dir)
        print(f"installed word lists into {dest}")
        return 0
    where = resolve_resources_dir(args.resources)
    lists = load_word_lists(where)
    print(f"resources folder: {where or '(none found)'}")
    for lang in sorted(set(lists.stop_words) | set(lists.bad_words)):
        print(f"  {lang}: {len(lists.stop_words.get(lang, ()))} stop words, "
              f"{len(lists.bad_words.get(lang, ()))} bad words")
    if lists.missing:
        print(missing_message(lists.missing))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from textsieve.export.rpv2 import export_rpv2

    n = export_rpv2(args.dir, args.output)
    print(f"wrote {n:,} documents to {args.output}", file=sys.stderr)
    return 0


def _cmd_sample(args: argparse.Namespace) -> int:
    from textsieve.sample import build_sample

    info = build_sample(args.output, max_docs=args.max_docs)
    print(f"wrote {info.n_docs} documents ({info.n_chars:,} characters) to {info.path}: "
          + ", ".join(f"{k} {v}" for k, v in info.counts.items()), file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="textsieve", description=(
        "Curate LLM pre-training text: compute RedPajama-V2 quality signals beside your documents, "
        "then dedup and select."))
    p.add_argument("--version", action="version", version=f"textsieve {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar, errors only")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    a = sub.add_parser("annotate", parents=[common], help="compute quality signals into attribute shards",
                       description="Write one Parquet attribute shard per input shard: id, shard, row and one "
                                   "column of RPv2 spans [start, end, score] per signal. Documents are not copied.")
    a.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders or globs; local paths or fsspec URLs")
    a.add_argument("-o", "--output", required=True, metavar="DIR", help="folder (or URL) for attribute shards")
    a.add_argument("--signals", default=None, help="comma list of signal names or groups (default: all, "
                   "i.e. the 28 RPv2 rule signals + minhash); see `textsieve signals`")
    a.add_argument("--lang", default=None, help="language for stop words and bad words (en, de, fr, es, it; "
                   "default en)")
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
    a.set_defaults(func=_cmd_annotate)

    s = sub.add_parser("signals", parents=[common], help="list the signals with level, type and definition")
    s.add_argument("--json", action="store_true", help="machine-readable list")
    s.set_defaults(func=_cmd_signals)

    r = sub.add_parser("resources", parents=[common], help="install or show the stop-word / bad-word lists")
    rsub = r.add_subparsers(dest="action", required=True, metavar="ACTION")
    radd = rsub.add_parser("add", help="copy a word-list folder (stopwords/{lang}.json, ldnoobw/{lang}) "
                           "into the per-user cache")
    radd.add_argument("dir", metavar="DIR")
    rshow = rsub.add_parser("show", help="which word lists textsieve would use")
    rshow.add_argument("--resources", default=None, metavar="DIR")
    r.set_defaults(func=_cmd_resources)

    e = sub.add_parser("export", parents=[common], help="export attributes in another tool's format")
    esub = e.add_subparsers(dest="format", required=True, metavar="FORMAT")
    erp = esub.add_parser("rpv2", help="RedPajama-V2 JSONL: id, quality_signals, minhash bands (hex)")
    erp.add_argument("dir", metavar="DIR", help="an annotate output folder")
    erp.add_argument("-o", "--output", required=True, metavar="FILE.jsonl.gz")
    e.set_defaults(func=_cmd_export)

    sm = sub.add_parser("sample", parents=[common], help="assemble the bundled sample corpus (Python and "
                        "Debian documentation and licences found on this machine)")
    sm.add_argument("output", metavar="FILE.jsonl.gz")
    sm.add_argument("--max-docs", type=int, default=500)
    sm.set_defaults(func=_cmd_sample)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(getattr(args, "verbose", 0), getattr(args, "quiet", False))
    from textsieve.io.errors import InputError
    from textsieve.signals.resources import ResourceError
    from textsieve.stages.annotate import AnnotateError

    try:
        return args.func(args)
    except (InputError, ResourceError, AnnotateError, ValueError, FileNotFoundError) as exc:
        print(f"textsieve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("textsieve: interrupted; finished shards are kept, re-run to continue", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
