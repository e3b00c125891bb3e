"""The L2 strength of a learned filter's logistic regression: a fixed C, or `auto` = chosen by
cross-validation inside the training documents only.

Why `auto`: with a few hundred labels the best C depends on the features (28 signals want
strong regularisation, a few reference scores less), and picking it on the folds that also
report the accuracy would overstate that accuracy. `auto` is nested: in every outer CV fold
(and for the final model, on all documents) an inner stratified 5-fold CV over the training
rows only picks C from `C_GRID` by mean ROC AUC (`choose_C`, seeded with seed + 1 so its folds
differ from the outer ones), then refits on those rows. (Not scikit-learn's LogisticRegressionCV:
its attributes and defaults are changing across 1.8-1.10, with warnings on every fit.) The grid
was fixed before any score was looked at: half-decades around the previous default 0.1.
"""

from __future__ import annotations

from typing import Any

#: the values `C = "auto"` chooses from (half-decade steps around the old default 0.1)
C_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
INNER_FOLDS = 5
AUTO = "auto"


def parse_C(value: Any) -> float | str:
    """A positive number, or "auto"; ValueError (one clear line) otherwise."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    try:
        c = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"C must be a positive number or 'auto', got {value!r}") from None
    if not c > 0 or c != c or c == float("inf"):
        raise ValueError(f"C must be a positive number or 'auto', got {value!r}")
    return c


def logistic(C: float | str, class_weight: str | None, seed: int, n_min_class: int | None = None) -> Any:
    """An unfitted L2 logistic regression with this C, or for "auto" `AutoCLogistic`
    (`n_min_class`, the smaller class's size among the rows it will be fitted on, caps the
    inner folds)."""
    from sklearn.linear_model import LogisticRegression

    C = parse_C(C)
    if C != AUTO:
        return LogisticRegression(C=float(C), class_weight=class_weight, max_iter=5000)
    folds = max(2, min(INNER_FOLDS, n_min_class if n_min_class is not None else INNER_FOLDS))
    return _auto_class()(class_weight=class_weight, seed=seed, folds=folds)


def choose_C(X: Any, y: Any, class_weight: str | None, seed: int, folds: int = INNER_FOLDS) -> float:
    """The C of `C_GRID` with the best mean ROC AUC over a stratified k-fold CV of (X, y)
    (seed + 1; ties: the smaller C, the stronger regularisation)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed + 1).split(np.zeros((len(y), 1)), y))
    best, best_c = -np.inf, C_GRID[0]
    for c in C_GRID:
        aucs = []
        for tr, te in splits:
            m = LogisticRegression(C=c, class_weight=class_weight, max_iter=5000).fit(X[tr], y[tr])
            aucs.append(roc_auc_score(y[te], m.decision_function(X[te])))
        if float(np.mean(aucs)) > best + 1e-12:
            best, best_c = float(np.mean(aucs)), c
    return float(best_c)


_AUTO_CLASS: Any = None


def _auto_class() -> Any:
    """`AutoCLogistic`, defined on first use so that importing this module needs no scikit-learn."""
    global _AUTO_CLASS
    if _AUTO_CLASS is not None:
        return _AUTO_CLASS
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.linear_model import LogisticRegression

    class AutoCLogistic(ClassifierMixin, BaseEstimator):
        """Logistic regression whose C `fit` chooses by `choose_C` on the rows it is given
        (so inside cross_val_predict it is nested in every outer fold)."""

        def __init__(self, class_weight: str | None = "balanced", seed: int = 0, folds: int = INNER_FOLDS):
            self.class_weight = class_weight
            self.seed = seed
            self.folds = folds

        def fit(self, X: Any, y: Any) -> AutoCLogistic:
            self.C_ = choose_C(X, y, self.class_weight, self.seed, self.folds)
            self.model_ = LogisticRegression(C=self.C_, class_weight=self.class_weight, max_iter=5000).fit(X, y)
            self.coef_, self.intercept_, self.classes_ = self.model_.coef_, self.model_.intercept_, self.model_.classes_
            return self

        def predict_proba(self, X: Any) -> Any:
            return self.model_.predict_proba(X)

        def decision_function(self, X: Any) -> Any:
            return self.model_.decision_function(X)

        def predict(self, X: Any) -> Any:
            return self.model_.predict(X)

    _AUTO_CLASS = AutoCLogistic
    return _AUTO_CLASS


def fitted_C(estimator: Any) -> float:
    """The C a fitted `logistic(...)` estimator used (the chosen one for "auto")."""
    c = getattr(estimator, "C_", None)
    return float(c) if c is not None else float(estimator.C)
