"""`textsieve models show PATH`: print a model's header, so a signal column can be traced to the
model that made it (kind, parameters, training data, metrics, fingerprint)."""

from __future__ import annotations

import argparse
import json

from textsieve.commands.tree import CommandTree


def run_show(args: argparse.Namespace) -> int:
    from textsieve.models.format import is_model_file, read_header
    from textsieve.models.registry import model_fingerprint, model_header, model_kind_of

    for path in args.paths:
        embedding = _embedding_header(path)
        if embedding is not None:
            header = embedding
        else:
            header = read_header(path) if is_model_file(path) else model_header(path, model_kind_of(path))
            header = {"path": path, "fingerprint": model_fingerprint(path), **header}
        print(json.dumps(header, indent=None if args.compact else 2, sort_keys=False))
    return 0


def _embedding_header(path: str) -> dict | None:
    """An embedding model's identity (`textsieve embed --model`): the builtin name or a model
    folder; None for anything else (then the other model kinds are asked)."""
    import os

    from textsieve.embedding.models import BUILTINS, EmbeddingModelError, load_embedder

    bare = path.removeprefix("builtin:")
    folder_model = os.path.isdir(path) and any(os.path.exists(os.path.join(path, f)) for f in
                                               ("tokenizer.json", "modules.json"))
    if bare not in BUILTINS and not folder_model and not path.endswith(".safetensors"):
        return None
    try:
        emb = load_embedder(path)
    except EmbeddingModelError:
        return None
    info = emb.info()
    return {"path": path, "fingerprint": emb.fingerprint, "kind": "embedding", **info}


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    m = sub.add_parser("models", parents=[common], help="inspect model files",
                       description="Inspect textsieve model files (.tsm) and foreign models usable with "
                                   "`annotate --models NAME=PATH`.")
    msub = m.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    show = msub.add_parser("show", parents=[common], help="print a model's JSON header and fingerprint")
    show.add_argument("paths", nargs="+", metavar="PATH", help="model file(s), UT1 folder, embedding model folder, "
                      "or builtin:NAME (builtin:wordllama: the default embedding model)")
    show.add_argument("--compact", action="store_true", help="one JSON line per model")
    show.set_defaults(func=run_show)
