"""DSIR (Xie et al. 2023): importance resampling of a pool toward one or more targets.

Workflow: `textsieve dsir fit` (textsieve.stages.select.dsir_fit) stores per-document log importance
weights as the attribute set ``sets/dsir_<name>``; `resample` here draws a selection from them and
`textsieve select --dsir NAME[:W],... --k N` writes it out. **Deduplicate before DSIR**: identical
texts get identical weights, so every copy of a well-scoring duplicate competes on its own.

Weights. The reference uses the sum of per-n-gram log ratios. On whole web documents that sum
scales with length (about -140,000 to +1,700 on the dev pool): one long document outweighs all
others by thousands of nats, the effective sample size (ESS) is ~1, and "importance resampling"
is deterministic top-k. `weight="normalized"` (default) uses a length-normalised score, divided
by `temperature`: ``w(x) ∝ exp(s(x) / T)`` with ``s(x) = (Σ log ratios + n0·μ) / (n(x) + n0)``,
n(x) the document's n-grams, μ the pool's mean log ratio per n-gram (over eligible documents)
and n0 = `prior_ngrams`. n0 = 0 is the plain mean log ratio per n-gram. n0 > 0 is the posterior
mean under a prior worth n0 n-grams centred on the pool's average: a short document needs
proportionally stronger evidence to stand out in either direction. Without it the mean of 40
n-grams is noisy, and at a low temperature the top of the ranking fills with short snippets
whose high mean is luck. (Shrinking toward 0 instead would favour short documents whenever the
target is far from the pool and every mean is negative.) T → 0 approaches top-k on the score,
large T approaches uniform sampling. `weight="raw"` is the reference's sum (divided by T as
well). Every result carries the ESS of the weights it drew from, ``(Σw)² / Σw²`` over the
eligible documents, so a user sees when sampling has become top-k.

Sampling. Without replacement: Gumbel-top-k, i.e. add i.i.d. Gumbel noise to the log weights
and keep the k largest, which is exactly k sequential draws without replacement; a token budget
takes the prefix of that order until the budget is reached. With replacement: i.i.d. categorical
draws. Noise comes from ``numpy.random.default_rng(seed)`` in document order (shards sorted,
rows in order), so a seed always gives the same selection.

Several targets (``[("wiki", 0.7), ("code", 0.3)]``): each gets a quota of the k (or tokens) in
proportion to its weight and fills it in turn from the documents not yet chosen, with its own
weights (the reference's ``separate_targets``). The reported ESS is that of the mixture of the
targets' normalised weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from textsieve.display import result_display
from textsieve.dsir.defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE, WEIGHTS
from textsieve.dsir.names import check_name, column_names, set_name
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import attribute_shards
from textsieve.io.parquet_read import read_table
from textsieve.tokenization.columns import aligned_counts, resolve_token_column


@result_display
@dataclass
class Resample:
    shard: np.ndarray  # object: source shard rel name of each selected document
    row: np.ndarray  # int64: record index in that shard
    count: np.ndarray  # int64: times drawn (1 without replacement)
    ess: float  # effective sample size of the (mixture) weights drawn from
    id: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    log_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the score each doc was drawn with
    target: np.ndarray = field(default_factory=lambda: np.zeros(0, object))  # which target's quota drew it
    tokens: int = 0  # tokens selected (with multiplicity)
    eligible: int = 0  # documents that could be drawn
    pool: int = 0  # documents in the pool
    ess_per_target: dict = field(default_factory=dict)
    shortfall: int = 0  # requested documents that could not be drawn (k > eligible without replacement)
    annotated: int | None = None  # with a survivor set: documents in the annotated folder (pool = survivors)
    token_column: str | None = None  # what `tokens` counts: a ts_tokens_<name> column, None = word/punct tokens

    @property
    def documents(self) -> int:
        """Number of draws (documents with multiplicity)."""
        return int(self.count.sum())

    def _headline(self) -> str:
        """Jupyter's caption of a draw (`textsieve.display`): its counts, not its arrays."""
        return (f"drew {self.documents:,} documents ({len(self.row):,} distinct) of {self.eligible:,} eligible "
                f"in a pool of {self.pool:,}; effective sample size {self.ess:,.1f}")

    def summary(self) -> dict:
        out = {"documents": self.documents, "distinct": int(len(self.row)), "tokens": self.tokens,
               "ess": self.ess, "ess_fraction": self.ess / self.eligible if self.eligible else 0.0,
               "ess_per_target": self.ess_per_target, "eligible": self.eligible, "pool": self.pool,
               "shortfall": self.shortfall}
        if self.annotated is not None:  # drawn from a recipe's survivors: say from how many
            out |= {"recipe_survivors": self.pool, "annotated": self.annotated}
        if self.token_column is not None:  # tokens are a real tokenizer's, not word/punctuation tokens
            out["token_column"] = self.token_column
        return out


def effective_sample_size(log_w: np.ndarray) -> float:
    """Kish's ESS, (Σw)²/Σw², of weights given by their logs (stable for any scale)."""
    lw = log_w[np.isfinite(log_w)]
    if lw.size == 0:
        return 0.0
    w = np.exp(lw - lw.max())
    return float(w.sum() ** 2 / np.dot(w, w))


@dataclass
class _Scores:
    shard: np.ndarray
    row: np.ndarray
    id: np.ndarray
    tokens: np.ndarray
    scores: dict  # target name -> (raw sum, normalised mean)


def load_scores(directory: str, names: list[str]) -> _Scores:
    """The DSIR columns of targets `names` over the whole pool, in document order."""
    base: _Scores | None = None
    for name in names:
        check_name(name)
        try:
            fs, paths = attribute_shards(directory, set_name(name))
        except FileNotFoundError:
            raise FileNotFoundError(f"no DSIR weights for target {name!r} in {directory} "
                                    f"(run `textsieve dsir fit --raw {directory} --name {name}` first)") from None
        raw_col, norm_col, tok_col = column_names(name)
        tables = [read_table(fs.open(p, "rb"), columns=["id", "shard", "row", raw_col, norm_col, tok_col])
                  for p in paths]
        t = pa.concat_tables(tables)
        keys = (to_numpy(t.column("shard")).astype(object), to_numpy(t.column("row")))
        if base is None:
            base = _Scores(keys[0], keys[1].astype(np.int64),
                           to_numpy(t.column("id")).astype(object),
                           to_numpy(t.column(tok_col)).astype(np.int64), {})
        elif len(keys[1]) != len(base.row) or not (np.array_equal(keys[1], base.row)
                                                   and np.array_equal(keys[0], base.shard)):
            raise ValueError(f"DSIR target {name!r} was fit on other documents than {names[0]!r} "
                             f"in {directory}; refit both on the same annotated folder")
        norm = to_numpy(t.column(norm_col))
        base.scores[name] = (to_numpy(t.column(raw_col)).astype(np.float64),
                        np.asarray(norm, dtype=np.float64))  # nulls become NaN
    if base is None:
        raise ValueError("no DSIR target given")
    return base


def shrunk(raw_sum: np.ndarray, norm: np.ndarray, tokens: np.ndarray, eligible: np.ndarray,
           prior_ngrams: float) -> np.ndarray:
    """``(Σ log ratios + n0·μ) / (n + n0)`` (see the module doc) from the stored sum and mean:
    n = sum / mean, rounded (the columns carry no n-gram count; where the mean is exactly 0, n
    is estimated from the tokens). NaN where the mean is null (no n-grams)."""
    if prior_ngrams == 0:
        return norm
    with np.errstate(invalid="ignore", divide="ignore"):
        exact = np.isfinite(norm) & (norm != 0)
        n = np.where(exact, np.rint(raw_sum / norm), 0.0)
        if not exact.all():
            per_token = n[exact].sum() / max(int(tokens[exact].sum()), 1) if exact.any() else 1.0
            n = np.where(exact, n, np.rint(tokens * per_token))
        use = eligible & np.isfinite(norm)
        mu = raw_sum[use].sum() / n[use].sum() if use.any() and n[use].sum() > 0 else 0.0
        return np.where(np.isfinite(norm), (raw_sum + prior_ngrams * mu) / (n + prior_ngrams), np.nan)


def _quotas(total: int, props: np.ndarray) -> np.ndarray:
    """Integer split of `total` proportional to `props` (largest remainder, ties by order)."""
    raw = props * total
    q = np.floor(raw).astype(np.int64)
    rem = total - int(q.sum())
    order = np.argsort(-(raw - q), kind="stable")
    q[order[:rem]] += 1
    return q


def resample(directory: str, targets: list[tuple[str, float]], k: int | None = None, tokens: int | None = None,
             replace: bool = False, seed: int = 0, temperature: float = DEFAULT_TEMPERATURE,
             weight: str = "normalized", min_tokens: int = DEFAULT_MIN_TOKENS,
             prior_ngrams: float = DEFAULT_PRIOR_NGRAMS, within: Mapping[str, np.ndarray] | None = None,
             token_column: str | None = None) -> Resample:
    """Draw documents of the annotated pool `directory` toward the DSIR targets (see module doc).

    Exactly one of `k` (documents) and `tokens` (token budget) is given. Documents with fewer
    than `min_tokens` tokens (at least 1: a document without n-grams has no weight) are not
    eligible; the reference uses 100. Asking for more documents than are eligible (without
    replacement) returns all eligible ones and reports the difference as `shortfall`.
    `prior_ngrams` (n0, for `weight="normalized"`) is explained in the module doc.

    `within` (source shard -> rows, e.g. a recipe's survivors, see `survivors`) narrows the
    pool to those documents *before* anything else: the pool mean of the shrinkage, the ESS and
    the Gumbel noise (drawn in document order over the survivors only) are then exactly those
    of a pool that holds only the survivors, so filtering first in one step draws the same
    documents as materializing the survivors, annotating and fitting on them.

    `token_column` picks what the `tokens` budget and the reported tokens count
    (`tokenization.columns.resolve_token_column`): None = the real counts of the folder's one
    `sets/tokens_<name>` set if it has exactly one, else the word/punctuation tokens stored with the
    DSIR weights; "words" = those; "ts_tokens_<name>" (or "<name>") = that set. Eligibility
    (`min_tokens`) and the n-gram estimate of the shrinkage always use the word tokens, the
    units the DSIR weights were computed in.
    """
    if (k is None) == (tokens is None):
        raise ValueError("give exactly one of k (documents) or tokens (token budget)")
    if (k is not None and k < 0) or (tokens is not None and tokens < 0):
        raise ValueError("k and tokens must be >= 0")
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {WEIGHTS}, not {weight!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, not {temperature}")
    if not prior_ngrams >= 0:
        raise ValueError(f"prior_ngrams must be >= 0, not {prior_ngrams}")
    if not targets:
        raise ValueError("no DSIR target given")
    names = [n for n, _ in targets]
    if len(set(names)) != len(names):
        raise ValueError(f"a DSIR target is listed twice: {names}")
    props = np.array([float(w) for _, w in targets])
    if not (np.all(props >= 0) and props.sum() > 0):
        raise ValueError(f"DSIR target weights must be >= 0 and not all 0: {targets}")
    props = props / props.sum()

    sc = load_scores(directory, names)
    budget_col = resolve_token_column(directory, token_column, "DSIR token budget")
    budget = sc.tokens if budget_col is None else aligned_counts(directory, budget_col, sc.shard, sc.row)
    annotated = None
    if within is not None:
        from textsieve.recipes.survivors import survivor_mask

        annotated = len(sc.row)
        keep = survivor_mask(sc.shard, sc.row, within)
        sc = _Scores(sc.shard[keep], sc.row[keep], sc.id[keep], sc.tokens[keep],
                     {t: (a[keep], b[keep]) for t, (a, b) in sc.scores.items()})
        budget = budget[keep]
    n = len(sc.row)
    eligible = sc.tokens >= max(1, min_tokens)
    logw = {}
    ess_t = {}
    for name in names:
        raw_sum, norm = sc.scores[name]
        s = (shrunk(raw_sum, norm, sc.tokens, eligible, prior_ngrams) if weight == "normalized" else raw_sum)
        s = s / temperature
        s = np.where(eligible & np.isfinite(s), s, -np.inf)
        logw[name] = s
        ess_t[name] = effective_sample_size(s)
    # ESS of the mixture sum_i props_i * w_i / sum(w_i)
    mix = np.zeros(n)
    for name, p in zip(names, props):
        s = logw[name]
        fin = np.isfinite(s)
        if fin.any():
            w = np.where(fin, np.exp(s - s[fin].max()), 0.0)
            mix += p * w / w.sum()
    ess = float(mix.sum() ** 2 / np.dot(mix, mix)) if mix.any() else 0.0

    rng = np.random.default_rng(seed)
    counts = np.zeros(n, dtype=np.int64)
    drawn_by = np.full(n, -1, dtype=np.int64)
    drawn_w = np.full(n, np.nan)
    quota = _quotas(k, props) if k is not None else props * tokens
    shortfall = 0
    for ti, (name, q) in enumerate(zip(names, quota)):
        s = logw[name]
        if replace:
            idx = _draw_with_replacement(rng, s, budget, q, by_tokens=tokens is not None)
            if idx is None:
                shortfall += int(q) if k is not None else 0
                continue
            np.add.at(counts, idx, 1)
        else:
            keys = s + rng.gumbel(size=n)
            keys[counts > 0] = -np.inf
            avail = int(np.isfinite(keys).sum())
            if k is not None:
                m = min(int(q), avail)
                shortfall += int(q) - m
                idx = np.argpartition(-keys, m - 1)[:m] if 0 < m < n else np.flatnonzero(np.isfinite(keys))[:m]
            else:
                order = np.argsort(-keys, kind="stable")[:avail]
                cum = np.cumsum(budget[order])
                idx = order[:int(np.searchsorted(cum, q, side="left")) + 1] if q > 0 else order[:0]
            counts[idx] = 1
        fresh = drawn_by[idx] < 0
        drawn_by[idx[fresh]] = ti
        drawn_w[idx[fresh]] = s[idx[fresh]]
    sel = np.flatnonzero(counts)
    return Resample(shard=sc.shard[sel], row=sc.row[sel], count=counts[sel], ess=ess, id=sc.id[sel],
                    log_weight=drawn_w[sel], target=np.array(names, dtype=object)[drawn_by[sel]],
                    tokens=int((budget[sel] * counts[sel]).sum()), eligible=int(eligible.sum()), pool=n,
                    ess_per_target=ess_t, shortfall=shortfall, annotated=annotated, token_column=budget_col)


def _draw_with_replacement(rng: np.random.Generator, logw: np.ndarray, tokens: np.ndarray, quota: float,
                           by_tokens: bool) -> np.ndarray | None:
    """Indices of i.i.d. draws ∝ exp(logw): `quota` draws, or draws until `quota` tokens."""
    fin = np.isfinite(logw)
    if not fin.any():
        return None
    w = np.where(fin, np.exp(logw - logw[fin].max()), 0.0)
    cdf = np.cumsum(w)
    cdf /= cdf[-1]

    def draw(m: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), len(cdf) - 1)

    if not by_tokens:
        return draw(int(quota))
    if quota <= 0:
        return np.zeros(0, dtype=np.int64)
    mean_tok = float(np.dot(w, tokens) / w.sum())
    out: list[np.ndarray] = []
    have = 0.0
    while have < quota:
        chunk = draw(max(16, int(1.2 * (quota - have) / max(mean_tok, 1.0)) + 1))
        cum = have + np.cumsum(tokens[chunk])
        stop = int(np.searchsorted(cum, quota, side="left"))
        if stop < len(chunk):
            out.append(chunk[:stop + 1])
            break
        out.append(chunk)
        have = float(cum[-1])
    return np.concatenate(out)
