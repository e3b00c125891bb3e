"""DSIR's KL-reduction metric: does a selection look more like the target than the pool does?

    KL reduction(S) = KL(h_target ‖ h_pool) − KL(h_target ‖ h_S)

where h_X is the distribution of hashed n-gram buckets (the DSIR feature space,
`dsir_features`) pooled over the documents of X and ``KL(p‖q) = Σ p (log(p+1e-10) − log(q+1e-10))``
as in the paper. Higher is better; 0 means no closer to the target than the pool.

* the **selection** S: the documents written by `textsieve select` (its output folder; files
  that are not documents, like ``selection.json``, are ignored) or any JSONL/Parquet files.
  A document written twice (sampling with replacement) counts twice;
* the **pool**: the annotated folder the selection was drawn from (its source documents are
  read back) or the raw input files themselves. h_pool is computed on a uniform random sample of
  at most `pool_sample` documents (100,000, as the paper's author did), all of them when smaller;
* the **random baseline**: the same figure for |S| documents drawn uniformly without
  replacement from the pool (seeded), printed beside it. A selector is only useful if it beats it;
* the **hash space**: by default seed 1, while `dsir fit` hashes with seed 0, so the metric is
  not measured in the very buckets DSIR optimised (the paper's circularity caveat). For an
  honest figure, also keep the target documents used here out of the DSIR fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from textsieve.io.texts import corpus_documents, input_texts
from textsieve.text.hashed_ngrams import HashedNgramParams, bucket_counts

EPS = 1e-10


def kl_divergence(p_counts: np.ndarray, q_counts: np.ndarray, eps: float = EPS) -> float:
    """KL(p‖q) of two bucket-count vectors, each normalised to a distribution."""
    p = p_counts / max(p_counts.sum(), 1)
    q = q_counts / max(q_counts.sum(), 1)
    return float(np.sum(p * (np.log(p + eps) - np.log(q + eps))))


@dataclass
class KLEvalConfig:
    selection: list[str]
    target: list[str]
    pool: list[str]
    buckets: int = 10_000
    ngrams: int = 2
    hash_seed: int = 1
    seed: int = 0
    pool_sample: int = 100_000
    text_field: str = "text"


@dataclass
class KLResult:
    kl_reduction: float
    kl_reduction_random: float
    kl_target_pool: float
    kl_target_selection: float
    kl_target_random: float
    selection_docs: int
    random_docs: int
    pool_docs: int
    pool_sample_docs: int
    target_docs: int
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kl_reduction": self.kl_reduction, "kl_reduction_random": self.kl_reduction_random,
                "kl_target_pool": self.kl_target_pool, "kl_target_selection": self.kl_target_selection,
                "kl_target_random": self.kl_target_random, "selection_docs": self.selection_docs,
                "random_docs": self.random_docs, "pool_docs": self.pool_docs,
                "pool_sample_docs": self.pool_sample_docs, "target_docs": self.target_docs, **self.params}


def _reservoirs(texts: Iterable[str], sizes: list[int], rng: np.random.Generator) -> tuple[list[list[str]], int]:
    """Uniform samples without replacement of the given sizes (Algorithm R), one pass."""
    res: list[list[str]] = [[] for _ in sizes]
    n = 0
    for t in texts:
        for r, size in zip(res, sizes):
            if len(r) < size:
                r.append(t)
            else:
                j = int(rng.integers(0, n + 1))
                if j < size:
                    r[j] = t
        n += 1
    return res, n


def evaluate_kl(cfg: KLEvalConfig) -> KLResult:
    params = HashedNgramParams(cfg.buckets, cfg.ngrams, cfg.hash_seed)
    target, target_docs = bucket_counts(input_texts(cfg.target, cfg.text_field, skip_metadata=True), params)
    if target_docs == 0 or target.sum() == 0:
        raise ValueError(f"no target text in {', '.join(cfg.target)}")
    selection, sel_docs = bucket_counts(input_texts(cfg.selection, cfg.text_field, skip_metadata=True), params)
    if sel_docs == 0:
        raise ValueError(f"no selected documents in {', '.join(cfg.selection)}")
    rng = np.random.default_rng(cfg.seed)
    pool = (d.text for d in corpus_documents(cfg.pool, cfg.text_field))
    (sample, rand), pool_docs = _reservoirs(pool, [cfg.pool_sample, sel_docs], rng)
    if pool_docs == 0:
        raise ValueError(f"no pool documents in {', '.join(cfg.pool)}")
    pool_c, _ = bucket_counts(sample, params)
    rand_c, _ = bucket_counts(rand, params)
    kl_pool = kl_divergence(target, pool_c)
    kl_sel = kl_divergence(target, selection)
    kl_rand = kl_divergence(target, rand_c)
    return KLResult(kl_pool - kl_sel, kl_pool - kl_rand, kl_pool, kl_sel, kl_rand, sel_docs, len(rand), pool_docs,
                    len(sample), target_docs,
                    {"buckets": cfg.buckets, "ngrams": cfg.ngrams, "hash_seed": cfg.hash_seed, "seed": cfg.seed})
