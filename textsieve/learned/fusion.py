"""Learned filters over embeddings, hashed n-grams and signals, with logistic or boosted models.

Why a second model kind beside `model.LearnedModel`: logistic regression over signals compiles
to SQL, but an embedding, an n-gram bag or a tree ensemble does not; such a model is applied by
`textsieve learn apply` (`stages.learn_apply`), which writes its probability to the attribute
set `sets/learned_<name>` that `select` reads as the recipe's `NAME.predict` (no text read there).

The model is an average of members' probabilities (late fusion):

  --model logistic  one L2 logistic regression per feature set (signals: cfg.C on standardised
                    features as today; embed and ngrams: C = 1, the scikit-learn default)
  --model boosted   one HistGradientBoosting over the dense sets (signals, embed) concatenated
                    (fixed settings `HGB`, seeded, no early stopping: deterministic), plus the
                    logistic member of ngrams when it is used (16k sparse columns suit a linear
                    model, not trees)

Why averaging rather than one model over the concatenation: on the 218 DCLM documents a single
logistic regression over signals + embeddings was worse than signals alone (0.58 vs 0.68 CV
accuracy: 256 embedding columns drown 28 signals at one regularisation strength) while the
average of per-set models was better (0.70, `benchmarks/learned.py`). These settings were
fixed before the CV numbers of the table were taken and are not tuned per fold.

The file (JSON, pickle-free: trees as arrays, `learned.trees`) is
{"kind": "textsieve.learned_filter", "version": 2, "name", "textsieve_version", "training":
{"fingerprint", ...}, "parameters", "cv", "views", "signals": {features, impute, mean, scale},
"embed": {model, fingerprint, dim}, "ngrams": {buckets, ngrams, seed, ...}, "members": [...]}.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from textsieve._version import __version__
from textsieve.errors import TextsieveError
from textsieve.learned import trees
from textsieve.learned.views import DENSE_VIEWS, FeatureSetError, ngram_spec

KIND = "textsieve.learned_filter"
VERSION = 2
SET_PREFIX = "learned_"
COLUMN_PREFIX = "ts_learned_"
MODELS = ("logistic", "boosted")
#: C of the logistic member of each non-signal feature set (signals use LearnConfig.C)
VIEW_C = {"embed": 1.0, "ngrams": 1.0}
#: the boosted member's fixed settings (small trees, shrinkage, L2: 218 labels overfit easily)
HGB = {"max_iter": 100, "learning_rate": 0.05, "max_leaf_nodes": 8, "l2_regularization": 1.0,
       "early_stopping": False}
_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


class LearnedSetError(TextsieveError, ValueError):
    """A model that needs its prediction set, which is missing or was made by another model."""


def check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise ValueError(f"model name {name!r}: use letters, digits and _ only (it names the set sets/learned_NAME)")
    return name


def set_name(name: str) -> str:
    return SET_PREFIX + name


def column_name(name: str) -> str:
    return COLUMN_PREFIX + name


@dataclass
class FusedModel:
    """A fitted filter over feature sets (see the module doc); `predict` takes each set's matrix."""

    name: str
    views: list[str]
    members: list[dict[str, Any]]  # {"kind": logistic|boosted, "views": [...], ...parameters}
    signals: dict[str, Any] | None = None  # {"features", "impute", "mean", "scale"}
    embed: dict[str, Any] | None = None  # {"model", "fingerprint", "dim"}
    ngrams: dict[str, Any] | None = None  # ngram_spec()
    header: dict[str, Any] = field(default_factory=dict)

    sql_compilable = False

    @property
    def fingerprint(self) -> str:
        """Identifies the model's parameters (the prediction set records it)."""
        import xxhash

        body = json.dumps([self.views, self.members, self.signals, self.embed, self.ngrams], sort_keys=True)
        return xxhash.xxh64(body.encode()).hexdigest()

    @property
    def set_name(self) -> str:
        return set_name(self.name)

    @property
    def prediction_column(self) -> str:
        return column_name(self.name)

    @property
    def columns(self) -> list[str]:
        """The attribute columns of the signals view."""
        from textsieve.learned.features import columns_of

        return columns_of(self.signals["features"]) if self.signals else []

    def signal_matrix(self, table: Any) -> np.ndarray:
        """The standardised signals view of an attribute table."""
        from textsieve.learned.features import compute_features

        s = self.signals or {}
        names = s.get("features", [])
        feats = compute_features(table, names)
        X = np.column_stack([feats[n] for n in names]) if names else np.zeros((table.num_rows, 0))
        X = np.where(np.isnan(X), np.asarray(s.get("impute", []))[None, :], X)
        return (X - np.asarray(s.get("mean", []))) / np.asarray(s.get("scale", []))

    def predict(self, views: dict[str, Any]) -> np.ndarray:
        """Probability of the positive class given each feature set's matrix (signals already
        standardised: `signal_matrix`)."""
        return np.mean([_member_proba(m, views) for m in self.members], axis=0)

    def predict_sql(self, feature_sql_fn: Any = None) -> str:
        raise LearnedSetError(f"model {self.name!r} ({self.describe()}) does not compile to SQL; its predictions "
                              f"are read from the set _{self.set_name} (`textsieve learn apply`)")

    def describe(self) -> str:
        kinds = sorted({m["kind"] for m in self.members})
        return f"{'+'.join(kinds)} over {'+'.join(self.views)}"

    def to_dict(self) -> dict[str, Any]:
        h = dict(self.header)
        return {"kind": KIND, "version": VERSION, "name": self.name,
                "textsieve_version": h.pop("textsieve_version", __version__),
                **{k: h[k] for k in ("training", "parameters", "cv") if k in h},
                "views": self.views, "signals": self.signals, "embed": self.embed, "ngrams": self.ngrams,
                "members": self.members}

    def save(self, path: str | Path) -> None:
        import fsspec

        from textsieve.io.atomic import atomic_open

        fs, p = fsspec.core.url_to_fs(str(path))
        with atomic_open(fs, p, "wb") as fh:
            fh.write((json.dumps(self.to_dict(), indent=1) + "\n").encode("utf-8"))


def from_dict(doc: dict[str, Any]) -> FusedModel:
    """The model of a version-2 file's content (KeyError/TypeError/ValueError when malformed)."""
    views = list(doc["views"])
    if any(v not in ("signals", "embed", "ngrams") for v in views):
        raise ValueError(f"unknown feature sets {views}")
    if doc.get("ngrams") is not None and doc["ngrams"] != ngram_spec():
        raise ValueError(f"n-gram features {doc['ngrams']} differ from what this textsieve computes {ngram_spec()}")
    members = list(doc["members"])
    for m in members:
        if m["kind"] not in MODELS:
            raise ValueError(f"unknown member kind {m['kind']!r}")
    header: dict[str, Any] = {k: doc[k] for k in ("textsieve_version", "training", "parameters", "cv") if k in doc}
    return FusedModel(check_name(str(doc["name"])), views, members, doc.get("signals"), doc.get("embed"),
                      doc.get("ngrams"), header)


def _dense(views: dict[str, Any], names: list[str]) -> np.ndarray:
    return np.hstack([np.asarray(views[v], np.float64) for v in names])


def _member_proba(m: dict[str, Any], views: dict[str, Any]) -> np.ndarray:
    if m["kind"] == "boosted":
        return trees.predict_proba(m, _dense(views, m["views"]))
    (v,) = m["views"]
    X = views[v]
    z = X @ np.asarray(m["coef"], np.float64) + float(m["intercept"])
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-np.asarray(z).ravel()))


# --------------------------------------------------------------------------- fitting


def _fit_members(views: dict[str, Any], y: np.ndarray, kind: str, C: float | str, class_weight: str | None,
                 seed: int) -> list[dict[str, Any]]:
    """The fitted members (module doc) on these matrices (signals standardised)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from textsieve.learned.regularisation import fitted_C, logistic

    members: list[dict[str, Any]] = []
    dense = [v for v in views if v in DENSE_VIEWS]
    if kind == "boosted" and dense:
        clf = HistGradientBoostingClassifier(random_state=seed, class_weight=class_weight, **HGB)
        clf.fit(_dense(views, dense), y)
        members.append({"kind": "boosted", "views": dense, **trees.export_hgb(clf)})
    for v in views:
        if kind == "boosted" and v in DENSE_VIEWS:
            continue
        n_min = int(min(y.sum(), len(y) - y.sum()))
        lr = logistic(C if v == "signals" else VIEW_C[v], class_weight, seed, n_min)
        lr.fit(views[v], y)
        members.append({"kind": "logistic", "views": [v], "C": fitted_C(lr), "coef": [float(c) for c in lr.coef_[0]],
                        "intercept": float(lr.intercept_[0])})
    return members


def _standardise(S: np.ndarray, names: list[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """Median-impute and standardise the signals view (statistics of these rows)."""
    with np.errstate(all="ignore"):
        impute = np.nanmedian(S, axis=0) if len(S) else np.zeros(S.shape[1])
    impute = np.where(np.isnan(impute), 0.0, impute)
    X = np.where(np.isnan(S), impute[None, :], S)
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return (X - mean) / scale, {"features": list(names), "impute": impute.tolist(), "mean": mean.tolist(),
                                "scale": scale.tolist()}


def fit_fused(*, name: str, views: dict[str, Any], signal_names: list[str], y: np.ndarray, ids: list[str],
              kind: str, C: float | str, class_weight: str | None, folds: int, seed: int,
              embed: dict[str, Any] | None, training: dict[str, Any]) -> tuple[FusedModel, np.ndarray]:
    """Cross-validate (standardisation and members refit inside every fold), refit on all rows;
    the model and the out-of-fold probabilities. `views` holds raw matrices (signals unscaled)."""
    from sklearn.model_selection import StratifiedKFold

    if kind not in MODELS:
        raise FeatureSetError(f"unknown model {kind!r}; choose from {', '.join(MODELS)}")
    order: list[str] = [v for v in ("signals", "embed", "ngrams") if v in views]
    cv = StratifiedKFold(folds, shuffle=True, random_state=seed)

    def fit(idx: np.ndarray) -> FusedModel:
        vs: dict[str, Any] = {v: views[v][idx] for v in order}
        spec = None
        if "signals" in vs:
            vs["signals"], spec = _standardise(vs["signals"], signal_names)
        members = _fit_members(vs, y[idx], kind, C, class_weight, seed)
        return FusedModel(name, order, members, spec, embed, ngram_spec() if "ngrams" in order else None)

    # One thread: a few hundred labelled rows gain nothing from more, and OpenMP/BLAS threads
    # spinning on a busy machine made a 3 s fit take 80 s.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        model, oof, fold_acc = _cross_validate(fit, views, order, y, cv)
    return _finish(model, oof, fold_acc, views, order, y, ids, signal_names, embed, training, kind, C,
                   class_weight, folds, seed)


def _cross_validate(fit: Any, views: dict[str, Any], order: list[str], y: np.ndarray,
                    cv: Any) -> tuple[FusedModel, np.ndarray, list[float]]:
    """Out-of-fold probabilities (each fold's model fit on the other folds) and the final model."""
    from sklearn.metrics import accuracy_score

    oof = np.zeros(len(y))
    fold_acc = []
    for tr, te in cv.split(np.zeros((len(y), 1)), y):
        m = fit(tr)
        test = {v: views[v][te] for v in order}
        if m.signals is not None:
            s = m.signals
            S = np.where(np.isnan(test["signals"]), np.asarray(s["impute"])[None, :], test["signals"])
            test["signals"] = (S - np.asarray(s["mean"])) / np.asarray(s["scale"])
        oof[te] = m.predict(test)
        fold_acc.append(float(accuracy_score(y[te], oof[te] > 0.5)))
    return fit(np.arange(len(y))), oof, fold_acc


def _finish(model: FusedModel, oof: np.ndarray, fold_acc: list[float], views: dict[str, Any], order: list[str],
            y: np.ndarray, ids: list[str], signal_names: list[str], embed: dict[str, Any] | None,
            training: dict[str, Any], kind: str, C: float | str, class_weight: str | None, folds: int,
            seed: int) -> tuple[FusedModel, np.ndarray]:
    """The model with its header: training fingerprint, parameters, CV metrics."""
    import xxhash
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, log_loss, roc_auc_score

    n_pos = int(y.sum())
    metrics = {"folds": folds, "accuracy": float(accuracy_score(y, oof > 0.5)),
               "balanced_accuracy": float(balanced_accuracy_score(y, oof > 0.5)),
               "auc": float(roc_auc_score(y, oof)), "log_loss": float(log_loss(y, np.clip(oof, 1e-12, 1 - 1e-12))),
               "majority_baseline": max(n_pos, len(y) - n_pos) / len(y), "fold_accuracy": fold_acc}
    h = xxhash.xxh64()
    h.update(json.dumps([ids, order, signal_names, embed]).encode())
    h.update(np.ascontiguousarray(y, np.int64).tobytes())
    for v in order:
        X = views[v]
        parts = (X.data, X.indices, X.indptr) if hasattr(X, "indptr") else (X,)
        for p in parts:
            h.update(np.ascontiguousarray(p).tobytes())
    model.header = {
        "textsieve_version": __version__,
        "training": {"fingerprint": h.hexdigest(), **training, "n_positive": n_pos, "n_negative": len(y) - n_pos},
        "parameters": {"model": kind, "feature_sets": order, "C_signals": C, "C_other": VIEW_C,
                       "boosted": HGB if kind == "boosted" else None, "class_weight": class_weight,
                       "impute": "median", "cv_folds": folds, "seed": seed, "fusion": "mean of member probabilities"},
        "cv": metrics,
    }
    return model, oof
