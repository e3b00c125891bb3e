"""Gradient-boosted trees without pickle: a fitted scikit-learn HistGradientBoostingClassifier
as plain arrays, and its probability computed from them in NumPy.

Why not pickle (or joblib): a pickled estimator runs code when loaded and breaks across
scikit-learn versions; a model file here must be data a recipe can load safely, years later,
without scikit-learn. A binary HGB is `sigmoid(baseline + sum of tree leaf values)`; each tree
node is (feature, threshold, missing-goes-left, left, right, leaf?, value), with numeric
splits `x <= threshold` on the raw feature values (no binning at prediction time), so the
arrays below reproduce `predict_proba` exactly (checked at export).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FIELDS = ("feature", "threshold", "missing_left", "left", "right", "leaf", "value")


class TreeExportError(ValueError):
    """An estimator this exporter cannot represent (multi-class, categorical splits)."""


def export_hgb(clf: Any) -> dict[str, Any]:
    """{"baseline": float, "trees": [{field: list}]} of a fitted binary HistGradientBoostingClassifier."""
    if len(getattr(clf, "classes_", [])) != 2:
        raise TreeExportError("only binary gradient-boosted classifiers can be exported")
    trees = []
    for per_iter in clf._predictors:
        (pred,) = per_iter
        nodes = pred.nodes
        if "is_categorical" in nodes.dtype.names and nodes["is_categorical"].any():
            raise TreeExportError("categorical splits are not supported")
        trees.append({
            "feature": nodes["feature_idx"].astype(int).tolist(),
            "threshold": [float(t) for t in nodes["num_threshold"]],
            "missing_left": nodes["missing_go_to_left"].astype(int).tolist(),
            "left": nodes["left"].astype(int).tolist(), "right": nodes["right"].astype(int).tolist(),
            "leaf": nodes["is_leaf"].astype(int).tolist(), "value": [float(v) for v in nodes["value"]],
        })
    return {"baseline": float(np.ravel(clf._baseline_prediction)[0]), "trees": trees}


def raw_score(model: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """baseline + the sum of every tree's leaf value for each row of X (NaN = missing)."""
    X = np.asarray(X, dtype=np.float64)
    out = np.full(X.shape[0], float(model["baseline"]))
    rows = np.arange(X.shape[0])
    for t in model["trees"]:
        feat = np.asarray(t["feature"], np.int64)
        thr = np.asarray(t["threshold"], np.float64)
        miss = np.asarray(t["missing_left"], bool)
        left, right = np.asarray(t["left"], np.int64), np.asarray(t["right"], np.int64)
        leaf, value = np.asarray(t["leaf"], bool), np.asarray(t["value"], np.float64)
        node = np.zeros(X.shape[0], np.int64)
        for _ in range(len(feat)):  # every step moves all unfinished rows one level down
            active = ~leaf[node]
            if not active.any():
                break
            n = node[active]
            x = X[rows[active], feat[n]]
            go_left = np.where(np.isnan(x), miss[n], x <= thr[n])
            node[active] = np.where(go_left, left[n], right[n])
        out += value[node]
    return out


def predict_proba(model: dict[str, Any], X: np.ndarray) -> np.ndarray:
    """Probability of the positive class."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-raw_score(model, X)))
