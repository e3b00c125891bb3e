"""Which embedding model a run uses: the default shipped in a wheel, or a folder given by path.

Why one loader: every consumer of embeddings (the `embed` stage, semantic dedup's report,
embedding DSIR on a target folder, learned filters) must embed with the *same* model and know
its identity. An `Embedder` carries the model's name (the column suffix), kind, dimension and
fingerprint (SHA-256 over its files' bytes, like every other model file in textsieve), so a
changed model re-embeds and two sets made with different models are never mixed.

Model specs (nothing is ever downloaded):
- `None`, `"wordllama"` or `"builtin:wordllama"`: WordLlama L2-Supercat (MIT, 256-d, Llama-2
  tokenizer), the 16 MB weights inside the `wordllama` wheel; name `wordllama`.
- a Model2Vec folder (`model.safetensors` + `tokenizer.json`, optional `config.json`), or any
  folder/`.safetensors` file with a `tokenizer.json` beside it: a static model; name = the
  folder's (or file stem's) name.
- a sentence-transformers folder (`modules.json` or `config_sentence_transformers.json`): needs
  the optional `sentence-transformers` package (torch); runs on a GPU when one is present.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textsieve.errors import TextsieveError

DEFAULT_MODEL = "wordllama"
BUILTINS = ("wordllama",)
#: how a document becomes one vector, per model kind (stored in every set's info)
POOLING = {
    "static": "words = text.split(); every token of every word, mean-pooled (any chunking, token-weighted); "
              "L2-normalised",
    "sentence_transformers": "tokens in windows of the model's max_seq_length (first 64 windows); window "
                             "vectors mean-pooled weighted by their tokens; L2-normalised",
}


class EmbeddingModelError(TextsieveError, ValueError):
    """A model spec that names no usable embedding model (missing files, unknown builtin)."""


class UnencodableText(EmbeddingModelError):
    """A text no tokenizer can take: it holds a lone UTF-16 surrogate (JSON's `\\ud800` escapes
    spell them), so it has no UTF-8 form. The readers refuse such records when they read a file;
    this names the text when a caller passes one straight to `embed`."""

    @classmethod
    def first_in(cls, texts: list[str]) -> UnencodableText | None:
        """The error naming the first text without a UTF-8 form; None when every text has one."""
        for i, text in enumerate(texts):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return cls(f"text #{i} cannot be embedded: it holds a lone surrogate "
                           f"U+{ord(text[exc.start]):04X} at character {exc.start}, which has no UTF-8 "
                           "form; replace or drop it first")
        return None


@dataclass
class Embedder:
    """A loaded embedding model and its identity."""

    name: str  # column suffix: ts_embed_<name>
    kind: str  # "static" | "sentence_transformers"
    dim: int
    path: str  # the model's folder or file (builtin: the wheel's file)
    fingerprint: str
    files: list[str]
    embed_fn: Callable[[list[str]], np.ndarray] = field(repr=False)
    # how this model was run, when the kind's rule (`POOLING`) leaves a choice (sentence-transformers:
    # id windows or text windows, the text preparation) and the library versions behind the vectors;
    # part of `info`, so a set made another way is recomputed, never kept
    runtime: dict[str, str] = field(default_factory=dict)

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), dim), unit length (zero for a text without tokens)."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        try:
            return self.embed_fn(list(texts))
        except (UnicodeEncodeError, TypeError) as exc:  # Arrow: UnicodeEncodeError; HF tokenizers: TypeError
            bad = UnencodableText.first_in(texts)
            if bad is None:
                raise
            raise bad from exc

    def info(self) -> dict[str, Any]:
        out = {"model": self.name, "model_kind": self.kind, "model_path": self.path, "dim": self.dim,
               "model_fingerprint": self.fingerprint, "pooling": POOLING[self.kind],
               **({"runtime": dict(self.runtime)} if self.runtime else {})}
        if self.path.startswith("builtin:"):  # which package release the weights came from
            from importlib import metadata

            pkg = self.path.removeprefix("builtin:")
            try:
                out["model_package"] = f"{pkg} {metadata.version(pkg)}"
            except metadata.PackageNotFoundError:
                pass
        return out


def files_fingerprint(paths: list[str]) -> str:
    """First 16 hex digits of the SHA-256 over the files' names and bytes, in order."""
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.basename(p).encode() + b"\0")
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def safe_model_name(text: str) -> str:
    import re

    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    if not name:
        raise EmbeddingModelError(f"cannot make a column name from the model name {text!r}; pass name=")
    return name


def _static(name: str, path: str, tokenizer: str, weights: str, extra: list[str]) -> Embedder:
    from textsieve.embedding.static import load_static

    try:
        model = load_static(tokenizer, weights)
    except Exception as e:  # a corrupt file: say which
        raise EmbeddingModelError(f"{path}: not a static embedding model ({e})") from e
    files = [tokenizer, weights, *extra]
    return Embedder(name=name, kind="static", dim=model.dim, path=path, fingerprint=files_fingerprint(files),
                    files=files, embed_fn=model.embed)


def load_embedder(model: str | None = None, name: str | None = None) -> Embedder:
    """The embedding model `model` names (see the module doc), its column suffix `name` or its own."""
    spec = DEFAULT_MODEL if model in (None, "", "default") else str(model)
    builtin = spec[len("builtin:"):] if spec.startswith("builtin:") else spec
    if builtin in BUILTINS and not os.path.exists(spec):
        from textsieve.embedding.static import wordllama_files

        try:
            wl_tok, wl_weights = wordllama_files()
        except ImportError as e:
            raise EmbeddingModelError("the default embedding model ships in the wordllama package, which is not "
                                      "installed: pip install wordllama") from e
        return _static(safe_model_name(name or builtin), f"builtin:{builtin}", wl_tok, wl_weights, [])
    path = os.path.abspath(spec)
    if not os.path.exists(path):
        raise EmbeddingModelError(f"embedding model {spec!r}: no such file or folder, and not a builtin "
                                  f"({', '.join(BUILTINS)}); nothing is downloaded - give a local path")
    label = safe_model_name(name or os.path.splitext(os.path.basename(path.rstrip("/")))[0])
    if os.path.isdir(path):
        if any(os.path.exists(os.path.join(path, f)) for f in ("modules.json", "config_sentence_transformers.json")):
            from textsieve.embedding.transformer import load_sentence_transformer

            return load_sentence_transformer(label, path)
        tok = os.path.join(path, "tokenizer.json")
        found = [os.path.join(path, f) for f in ("model.safetensors", "embeddings.safetensors")
                 if os.path.exists(os.path.join(path, f))]
        if not found or not os.path.exists(tok):
            raise EmbeddingModelError(f"{path}: not an embedding model folder: a Model2Vec folder holds "
                                      "model.safetensors and tokenizer.json, a sentence-transformers folder "
                                      "modules.json")
        extra = [os.path.join(path, "config.json")] if os.path.exists(os.path.join(path, "config.json")) else []
        return _static(label, path, tok, found[0], extra)
    if path.endswith(".safetensors"):
        tok = os.path.join(os.path.dirname(path), "tokenizer.json")
        if not os.path.exists(tok):
            raise EmbeddingModelError(f"{path}: a static model's weights need a tokenizer.json beside them")
        return _static(label, path, tok, path, [])
    raise EmbeddingModelError(f"{path}: not an embedding model (a Model2Vec or sentence-transformers folder, "
                              "or a .safetensors file with tokenizer.json beside it)")
