"""Embedding DSIR: a target-vs-pool logistic classifier whose log-odds are log importance weights.

Why a classifier: for a classifier trained to tell target (p) from pool (q) documents, the
log-odds are ``log p(x)/q(x) + log(n_target / n_pool)``; subtracting that prior term (the class
sizes it was trained on) leaves DSIR's log importance weight, calibrated in nats, with no
length growth and no bag-of-n-grams independence assumption. Measured on the dev corpora
(benchmarks/dsir.py; 15k web documents toward held-out Wikipedia, k = 1,000), the classifier
(L2, C = 1) reached a KL reduction of 0.094 at ESS 11 against 0.092 for the best cosine
similarity to k-means target centroids (k = 1..64, any temperature) and 0.078 for kNN to the
target documents, so the classifier is the only method offered.

Features: ``embed`` = the document's embedding; ``combined`` = the embedding plus the document's
n-gram DSIR score (the shrunk mean log ratio per n-gram, `resample.shrunk` with n0 = 25), so
the log weight is ``w . e + beta * ngram_score + b``: the embedding and n-gram log weights
added with the n-gram scale ``beta`` *fitted* by the same regression (about 35 on the dev
corpora), not chosen by hand.

Cross-fitting (deterministic): the pool documents the classifier is trained on (every
``stride``-th document, at most `MAX_FIT_POOL`) are split by position into `FOLDS` folds; each
is weighed by the model fit without it, so no trained-on document scores its own label. The
other documents use the model fit on everything. The target is split the same way (position
modulo `FOLDS`); in ``combined`` each target fold's n-gram score comes from the target counts
minus that fold's (the n-gram model is additive), so the regression never sees target n-gram
scores inflated by the target's own counts. All models are stored in one `.tsm` file
(`textsieve.models.format`), so a resumed fit weighs its remaining shards identically.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FEATURES = ("ngram", "embed", "combined")
KIND = "textsieve.dsir.embed-logistic"
MODEL_FILE = "model.tsm"
FOLDS = 5
C = 1.0
MAX_FIT_POOL = 200_000
#: the n-grams a document-level log weight counts as in `select --dsir`'s shrinkage: the
#: normalised column holds ``log w / DOC_NGRAMS``, so the defaults (T = 0.015, n0 = 25) draw
#: ``∝ exp(log w / (T * (DOC_NGRAMS + n0)))`` = ``w ** 2.0`` (T_eff = 0.495), the setting with the
#: best held-out KL reduction that keeps ESS > 10 (T_eff = 1, plain importance resampling: KL
#: reduction 0.079, ESS 415; `--dsir-weight raw --temperature 1` draws that).
DOC_NGRAMS = 8


class EmbedTargetModelError(ValueError):
    """A stored embedding DSIR model that does not fit the data it is applied to."""


@dataclass
class EmbedTargetModel:
    """FOLDS + 1 logistic models (the last fit on all data) over embedding [+ n-gram score]."""

    features: str
    coef: np.ndarray  # float64 (FOLDS + 1, dim [+ 1])
    intercept: np.ndarray  # float64 (FOLDS + 1,)
    prior: np.ndarray  # float64 (FOLDS + 1,): log(n_target / n_pool) each model was trained with
    stride: int  # pool documents at positions i % stride == 0 are the trained-on sample
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def folds(self) -> int:
        return len(self.intercept) - 1

    def model_index(self, positions: np.ndarray) -> np.ndarray:
        """Which model weighs the pool documents at global `positions`: its fold's if trained on."""
        sampled = positions % self.stride == 0
        return np.where(sampled, (positions // self.stride) % self.folds, self.folds)

    def log_weights(self, X: np.ndarray, positions: np.ndarray | None = None) -> np.ndarray:
        """log importance weight of each row of `X` (pool documents at `positions`; None = new
        documents, weighed by the model fit on everything)."""
        idx = (np.full(len(X), self.folds) if positions is None else self.model_index(np.asarray(positions)))
        out = np.empty(len(X))
        for m in np.unique(idx):
            sel = idx == m
            out[sel] = X[sel].astype(np.float64) @ self.coef[m] + self.intercept[m] - self.prior[m]
        return out


def features_matrix(embeddings: np.ndarray, ngram_score: np.ndarray | None) -> np.ndarray:
    """The classifier's input: embeddings, with the n-gram score as a last column (combined)."""
    if ngram_score is None:
        return embeddings
    return np.hstack([embeddings.astype(np.float64), np.asarray(ngram_score, np.float64)[:, None]])


def fit(features: str, target: np.ndarray, pool: np.ndarray, stride: int) -> tuple[EmbedTargetModel, dict]:
    """Fit the FOLDS cross-fit models and the full model on `target` (positives) vs `pool` (the
    sampled pool documents, in position order), and the out-of-fold AUC as a metric.

    For `combined` the last column of both matrices is the n-gram score; it is standardised for
    the fit (so C regularises it like an embedding dimension) and its coefficient stored unscaled."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    if len(target) < FOLDS or len(pool) < FOLDS:
        raise ValueError(f"embedding DSIR needs at least {FOLDS} target and {FOLDS} pool documents "
                         f"(got {len(target)} and {len(pool)})")
    scale = np.ones(target.shape[1])
    if features == "combined":
        sd = float(np.std(pool[:, -1]))
        scale[-1] = sd if sd > 0 else 1.0
    tf = np.arange(len(target)) % FOLDS
    pf = np.arange(len(pool)) % FOLDS
    coefs, icpts, priors = [], [], []
    oof_t = np.zeros(len(target))
    oof_p = np.zeros(len(pool))
    for f in [*range(FOLDS), None]:
        tm = np.ones(len(target), bool) if f is None else tf != f
        pm = np.ones(len(pool), bool) if f is None else pf != f
        X = np.vstack([target[tm], pool[pm]]) / scale
        y = np.r_[np.ones(int(tm.sum())), np.zeros(int(pm.sum()))]
        clf = LogisticRegression(C=C, max_iter=3000).fit(X, y)
        coefs.append(clf.coef_[0] / scale)
        icpts.append(float(clf.intercept_[0]))
        priors.append(float(np.log(tm.sum() / pm.sum())))
        if f is not None:
            oof_t[~tm] = target[~tm] @ coefs[-1] + icpts[-1]
            oof_p[~pm] = pool[~pm] @ coefs[-1] + icpts[-1]
    model = EmbedTargetModel(features, np.array(coefs), np.array(icpts), np.array(priors), stride)
    auc = float(roc_auc_score(np.r_[np.ones(len(target)), np.zeros(len(pool))], np.r_[oof_t, oof_p]))
    metrics = {"cv_auc": round(auc, 4), "target_docs": len(target), "pool_fit_docs": len(pool)}
    if features == "combined":
        metrics["ngram_beta"] = round(float(model.coef[-1, -1]), 4)
    return model, metrics


def save(path: str, model: EmbedTargetModel, params: dict[str, Any], training_data: dict[str, Any],
         metrics: dict[str, Any], extra_arrays: dict[str, np.ndarray] | None = None) -> str:
    """Write the `.tsm` file (header: `params` + features, folds, C, stride); its fingerprint."""
    from textsieve.models.format import save_model

    arrays = {"coef": model.coef, "intercept": model.intercept, "prior": model.prior, **(extra_arrays or {})}
    head = {**params, "features": model.features, "folds": model.folds, "C": C, "stride": model.stride,
            "doc_ngrams": DOC_NGRAMS}
    return save_model(path, KIND, head, arrays, training_data, metrics)


def load(path: str) -> tuple[EmbedTargetModel, dict[str, Any], dict[str, np.ndarray]]:
    """(model, header, all arrays) of a `.tsm` file `save` wrote."""
    from textsieve.models.format import load_model_file

    mf = load_model_file(path)
    if mf.kind != KIND:
        raise EmbedTargetModelError(f"{path}: not an embedding DSIR model (kind {mf.kind!r})")
    p = mf.params
    a = mf.arrays
    model = EmbedTargetModel(p["features"], a["coef"], a["intercept"], a["prior"], int(p["stride"]),
                             info={"fingerprint": mf.fingerprint})
    return model, mf.header, a


def texts_fingerprint(texts: list[str]) -> str:
    """SHA-256 (first 32 hex digits) of the target texts, in order: part of the fit's identity."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()[:32]
