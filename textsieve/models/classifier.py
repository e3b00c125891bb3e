"""Quality classifiers: `rps_doc_ml_NAME_score` (RPv2 §4.5, §5.1), trained offline or loaded.

Input preparation (RPv2 §4.5): split the raw text on `str.splitlines()` boundaries, join with
one space, strip. Score: probability of the high-quality class, round8 (for a fastText model,
top label `__label__cc` gives `1 - p`, any other `p`). Null for an empty prepared text, or for
a document whose language the model does not cover (RPv2 applies `wikiref` and `palm` to
English only and `wikipedia` to de/fr/es/it only: train with `--lang`).

Backends of `textsieve train classifier`:

* `linear` (the default; no extra dependency): logistic regression (scikit-learn, C=1000) on
  mean-pooled hashed word unigrams+bigrams (`textsieve.models.hashed_text`); scored by a numba
  kernel. Deterministic; on the dev sets (1.2k docs) it beats fastText at RPv2's defaults.
* `fasttext` (`--backend fasttext`): `fasttext.train_supervised` at RPv2's defaults (softmax, dim 100, lr 0.1,
  5 epochs, word unigrams, minCount 1; one thread and a fixed seed, so reruns are identical).
  The fastText `.bin` is stored inside the `.tsm` (member `model.bin`).

A user's own fastText `.bin` (e.g. RPv2's published `wikiref.model.bin`) loads directly with
`--models wikiref=wikiref.model.bin` when a fastText wheel is installed.

Recipes for RPv2's three classifiers (see docs/models.md):

* `wikiref` (RPv1): positives = pages cited as references by English Wikipedia,
  negatives = random CCNet head/middle pages; `--label wiki --lang en`.
* `palm`: positives = equal parts English Wikipedia, OpenWebText and book chunks (1-250
  paragraphs); negatives = a CCNet sample (10% head, 20% middle, 70% tail); `--label palm
  --lang en`, 75,000 documents in total.
* `wikipedia`: per language, positives = that language's Wikipedia, negatives = that
  language's CCNet sample; `--label wikipedia --lang de` (and fr, es, it).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textsieve.exec.progress import Progress
from textsieve.io.texts import input_shards, shard_documents
from textsieve.models.fasttext_io import LABEL_PREFIX, fasttext_labels_count, load_fasttext, predict_top1
from textsieve.models.format import load_model_file, save_model
from textsieve.models.hashed_text import feature_matrix, linear_scores
from textsieve.models.registry import register_model_kind
from textsieve.signals.registry import DocScores, Signal, round8
from textsieve.text.batch_encoding import encode_batch
from textsieve.text.views import BatchViews

KIND = "classifier"
NEGATIVE_LABEL = "cc"  # RPv2's label of the source-domain (CCNet) class
FASTTEXT_MEMBER = "model.bin"


def prepare(text: str) -> str:
    """RPv2 §4.5: lines joined by one space (any `str.splitlines` boundary), ends stripped."""
    return " ".join(text.splitlines()).strip()


def signal_name(name: str) -> str:
    return f"rps_doc_ml_{name}_score"


# --- scoring ---------------------------------------------------------------------------------

class LinearClassifier:
    """Logistic regression over hashed unigrams+bigrams (a `.tsm` of backend `linear`)."""

    def __init__(self, weights: np.ndarray, bias: float, langs: list[str] | None):
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.bias = float(bias)
        self.langs = frozenset(langs) if langs else None

    def scores(self, texts: list[str]) -> np.ndarray:
        """P(high quality) per text (already prepared); NaN for texts without tokens."""
        buf, off = encode_batch(texts)
        z = linear_scores(buf, off, self.weights, self.bias)
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-z))


class FastTextClassifier:
    """A fastText binary classifier: RPv2's score convention on its top-1 prediction."""

    def __init__(self, path: str, langs: list[str] | None = None):
        self.model = load_fasttext(path)
        self.langs = frozenset(langs) if langs else None

    def scores(self, texts: list[str]) -> np.ndarray:
        out = np.full(len(texts), np.nan)
        keep = [i for i, t in enumerate(texts) if t]
        labels, probs = predict_top1(self.model, [texts[i] for i in keep])
        for j, i in enumerate(keep):
            out[i] = 1.0 - probs[j] if labels[j] == NEGATIVE_LABEL else probs[j]
        return out


def _load(path: str) -> LinearClassifier | FastTextClassifier:
    if path.lower().endswith((".bin", ".ftz")) and fasttext_labels_count(path) is not None:
        return FastTextClassifier(path)
    mf = load_model_file(path)
    langs = mf.params.get("langs")
    if mf.params.get("backend") == "fasttext":
        # fastText loads from a path only: unpack the embedded .bin once per process.
        fd, tmp = tempfile.mkstemp(suffix=".bin", prefix="textsieve-ft-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(mf.extra[FASTTEXT_MEMBER])
            return FastTextClassifier(tmp, langs)
        finally:
            os.unlink(tmp)
    return LinearClassifier(mf.arrays["weights"], float(mf.arrays["bias"]), langs)


def _signals(name: str, loaded: LinearClassifier | FastTextClassifier) -> list[Signal]:
    def fn(v: BatchViews) -> DocScores:
        langs = loaded.langs
        texts = [prepare(t) if langs is None or g in langs else "" for t, g in zip(v.texts, v.langs)]
        p = loaded.scores(texts)
        ok = ~np.isnan(p)
        return DocScores(round8(np.where(ok, p, 0.0)), ok)

    return [Signal(signal_name(name), "doc", "float", "ml",
                   f"P(high quality) by classifier {name!r} on the lines joined by spaces (RPv2 §4.5), round8",
                   (), fn)]


def _is_fasttext_classifier(path: str) -> bool:
    return fasttext_labels_count(path) == 2


register_model_kind(KIND, load=_load, signals=_signals, extensions=(".bin", ".ftz"), sniff=_is_fasttext_classifier)


# --- training --------------------------------------------------------------------------------

@dataclass
class ClassifierConfig:
    positive: list[str]
    negative: list[str]
    output: str
    label: str = "hq"
    langs: list[str] | None = None
    text_field: str = "text"
    max_docs: int | None = None  # per class
    holdout: float = 0.1
    seed: int = 0
    backend: str = "auto"  # auto | fasttext | linear
    epochs: int = 5
    buckets: int = 1 << 20
    C: float = 1000.0  # inverse L2 strength of the linear backend (features are mean-pooled, so small)
    progress: bool = True


@dataclass
class ClassifierResult:
    fingerprint: str
    metrics: dict = field(default_factory=dict)


def _prepared_texts(inputs: list[str], text_field: str, digest: hashlib._Hash, progress: bool = True) -> list[str]:
    """Prepared, non-empty texts of every document in `inputs`, in order. `digest` gets every
    shard's name and every raw text: the training data's part of the model fingerprint."""
    out = []
    shards = input_shards(inputs)
    bar = Progress("train: reading", total_bytes=sum(s.size for s in shards), enabled=progress)
    try:
        for doc in shard_documents(shards, text_field, progress=bar.update,
                                   on_shard=lambda shard: digest.update(f"\0shard:{shard.rel}\0".encode())):
            digest.update(doc.text.encode("utf-8", "surrogatepass") + b"\0")
            text = prepare(doc.text)
            if text:
                out.append(text)
    finally:
        bar.close()
    return out


def _fasttext_available() -> bool:
    try:
        import fasttext  # noqa: F401
        return True
    except ImportError:
        return False


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else float("nan")


def train_classifier(cfg: ClassifierConfig) -> ClassifierResult:
    """Balance the classes, keep `holdout` aside, train, measure, write the `.tsm`."""
    backend = cfg.backend
    if backend == "auto":  # linear: deterministic, no extra dependency, better on small sets (docs/models.md)
        backend = "linear"
    if backend == "fasttext" and not _fasttext_available():
        raise ValueError("--backend fasttext needs a fastText wheel (fasttext-numpy2-wheel, fasttext-wheel); "
                         "or use --backend linear")
    if backend not in ("fasttext", "linear"):
        raise ValueError(f"--backend must be auto, fasttext or linear, not {cfg.backend!r}")
    if not cfg.label.replace("_", "").isalnum() or cfg.label == NEGATIVE_LABEL:
        raise ValueError(f"--label {cfg.label!r}: letters, digits, '_' only, and not {NEGATIVE_LABEL!r}")
    if not 0 <= cfg.holdout < 1:
        raise ValueError(f"--holdout must be in [0, 1), not {cfg.holdout}")
    digest = hashlib.sha256()
    pos = _prepared_texts(cfg.positive, cfg.text_field, digest, cfg.progress)
    digest.update(b"\0negative\0")
    neg = _prepared_texts(cfg.negative, cfg.text_field, digest, cfg.progress)
    for what, docs, where in (("--positive", pos, cfg.positive), ("--negative", neg, cfg.negative)):
        if len(docs) < 2:
            raise ValueError(f"{what} {' '.join(where)}: needs at least 2 non-empty documents, found {len(docs)}")
    available = {"positive_available": len(pos), "negative_available": len(neg)}
    rng = np.random.default_rng(cfg.seed)
    n = min(len(pos), len(neg), cfg.max_docs or len(pos) + len(neg))  # balanced, as RPv2 (§5.1)
    pos = [pos[i] for i in rng.permutation(len(pos))[:n]]
    neg = [neg[i] for i in rng.permutation(len(neg))[:n]]
    texts = pos + neg
    y = np.r_[np.ones(n), np.zeros(n)].astype(np.int64)
    order = rng.permutation(len(texts))
    texts = [texts[i] for i in order]
    y = y[order]
    n_test = int(round(len(texts) * cfg.holdout))
    train_x, train_y, test_x, test_y = texts[n_test:], y[n_test:], texts[:n_test], y[:n_test]

    params: dict[str, Any] = {
        "backend": backend, "label": cfg.label, "negative_label": NEGATIVE_LABEL, "langs": cfg.langs,
        "input_preparation": "rpv2-4.5: splitlines joined by ' ', stripped",
        "score": "P(positive class), round8", "seed": cfg.seed}
    extra: dict[str, bytes] = {}
    arrays: dict[str, np.ndarray] = {}
    scorer: LinearClassifier | FastTextClassifier
    if backend == "fasttext":
        model_bytes, scorer = _train_fasttext(train_x, train_y, cfg)
        extra[FASTTEXT_MEMBER] = model_bytes
        params.update({"fasttext": {"epoch": cfg.epochs, "dim": 100, "lr": 0.1, "wordNgrams": 1, "minCount": 1,
                                    "loss": "softmax", "thread": 1}})
    else:
        weights, bias = _train_linear(train_x, train_y, cfg)
        arrays = {"weights": weights.astype(np.float32), "bias": np.array(bias, dtype=np.float64)}
        scorer = LinearClassifier(arrays["weights"], bias, cfg.langs)
        params.update({"buckets": cfg.buckets, "features": "fnv1a64 word unigrams + bigrams, mean-pooled",
                       "C": cfg.C})
    metrics: dict = {"train_documents": len(train_x), "holdout_documents": len(test_x)}
    if test_x:
        p = np.nan_to_num(scorer.scores(test_x), nan=0.5)
        metrics.update({"holdout_accuracy": round(float(((p >= 0.5) == (test_y == 1)).mean()), 4),
                        "holdout_auc": round(_auc(p, test_y), 4)})
    training_data = {"fingerprint": digest.hexdigest(), "documents": 2 * n, "positive": cfg.positive,
                     "negative": cfg.negative, **available, "text_field": cfg.text_field}
    fp = save_model(cfg.output, KIND, params, arrays, training_data, metrics, extra)
    return ClassifierResult(fp, metrics)


def _train_linear(texts: list[str], y: np.ndarray, cfg: ClassifierConfig) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    X = feature_matrix(texts, cfg.buckets)
    m = LogisticRegression(C=cfg.C, solver="liblinear", max_iter=1000, random_state=cfg.seed).fit(X, y)
    return m.coef_[0], float(m.intercept_[0])


def _train_fasttext(texts: list[str], y: np.ndarray, cfg: ClassifierConfig) -> tuple[bytes, FastTextClassifier]:
    import fasttext

    with tempfile.TemporaryDirectory(prefix="textsieve-ft-") as tmp:
        train_path = os.path.join(tmp, "train.txt")
        with open(train_path, "w", encoding="utf-8", errors="surrogatepass") as fh:
            for text, label in zip(texts, y):
                tag = cfg.label if label else NEGATIVE_LABEL
                fh.write(f"{LABEL_PREFIX}{tag} {text}\n")
        try:
            model = fasttext.train_supervised(train_path, epoch=cfg.epochs, thread=1, seed=cfg.seed, verbose=0)
        except RuntimeError as exc:  # fastText 0.9.2 wheels: "Encountered NaN", heap-state dependent
            raise ValueError(f"fastText training failed ({exc}); rerun (it can depend on process state) "
                             "or use --backend linear") from None
        bin_path = os.path.join(tmp, "model.bin")
        model.save_model(bin_path)
        with open(bin_path, "rb") as fh:
            data = fh.read()
        scorer = FastTextClassifier(bin_path, cfg.langs)
    return data, scorer
