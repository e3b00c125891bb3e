"""`textsieve models show PATH`: print a model's header, so a signal column can be traced to the
model that made it (kind, parameters, training data, metrics, fingerprint)."""

from __future__ import annotations

import argparse
import json


def run_show(args: argparse.Namespace) -> int:
    from textsieve.models.format import is_model_file, read_header
    from textsieve.models.registry import model_fingerprint, model_header, model_kind_of

    for path in args.paths:
        header = read_header(path) if is_model_file(path) else model_header(path, model_kind_of(path))
        header = {"path": path, "fingerprint": model_fingerprint(path), **header}
        print(json.dumps(header, indent=None if args.compact else 2, sort_keys=False))
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    m = sub.add_parser("models", parents=[common], help="inspect model files",
                       description="Inspect textsieve model files (.tsm) and foreign models usable with "
                                   "`annotate --model NAME=PATH`.")
    msub = m.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    show = msub.add_parser("show", parents=[common], help="print a model's JSON header and fingerprint")
    show.add_argument("paths", nargs="+", metavar="PATH", help="model file(s), UT1 folder, or builtin:NAME")
    show.add_argument("--compact", action="store_true", help="one JSON line per model")
    show.set_defaults(func=run_show)
