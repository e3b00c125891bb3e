"""Reading users' fastText `.bin`/`.ftz` models (classifiers and `lid.176.bin`).

fastText itself is an optional dependency: any of the `fasttext`, `fasttext-wheel`,
`fasttext-numpy2-wheel` or `fasttext-predict` wheels provides the `fasttext` module. The
header sniff below needs no fastText: it reads the fixed-size `Args` block and the label count
of the dictionary, enough to tell a binary quality classifier from a language-id model.
"""

from __future__ import annotations

import struct

import fsspec
import numpy as np

FASTTEXT_MAGIC = 793712314
_ARGS_END = 8 + 12 * 4 + 8  # magic, version; 12 int32 args and the double `t`
LABEL_PREFIX = "__label__"


class FastTextUnavailable(ValueError):
    pass


def fasttext_labels_count(path: str) -> int | None:
    """The number of labels of a fastText supervised model, or None if `path` is not one."""
    try:
        with fsspec.open(path, "rb") as fh:
            head = fh.read(_ARGS_END + 12)
    except OSError:
        return None
    if len(head) < _ARGS_END + 12 or struct.unpack_from("<i", head, 0)[0] != FASTTEXT_MAGIC:
        return None
    model = struct.unpack_from("<i", head, 8 + 7 * 4)[0]
    if model != 3:  # 3 = supervised
        return None
    return struct.unpack_from("<i", head, _ARGS_END + 8)[0]


def load_fasttext(path: str):
    """Load a fastText model with whichever fastText wheel is installed."""
    try:
        import fasttext
    except ImportError:
        raise FastTextUnavailable(
            f"{path}: reading fastText models needs the `fasttext` module; install one of the wheels "
            "`fasttext-numpy2-wheel`, `fasttext-wheel` or `fasttext-predict`") from None
    if hasattr(fasttext, "FastText"):  # silence the "load_model does not return WordVectorModel" notice
        fasttext.FastText.eprint = lambda *a, **k: None
    local = fsspec.open_local(path) if "://" in path else path
    return fasttext.load_model(local)


def predict_ranked(model, texts: list[str], k: int) -> list[list[tuple[str, float]]]:
    """The top `k` (label without `__label__`, probability) pairs of each text (no '\\n' allowed)."""
    if not texts:
        return []
    labels, probs = model.predict(texts, k=k)
    return [[(lab[len(LABEL_PREFIX):] if lab.startswith(LABEL_PREFIX) else lab, float(p)) for lab, p in zip(ls, ps)]
            for ls, ps in zip(labels, probs)]


def predict_top1(model, texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Top label (without `__label__`) and its probability for each text (no '\\n' allowed)."""
    if not texts:
        return [], np.zeros(0)
    labels, probs = model.predict(texts, k=1)
    out = [lab[0][len(LABEL_PREFIX):] if lab and lab[0].startswith(LABEL_PREFIX) else (lab[0] if lab else "")
           for lab in labels]
    p = np.array([float(x[0]) if len(x) else np.nan for x in probs], dtype=np.float64)
    return out, p
