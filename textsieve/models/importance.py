"""RedPajama-V2 DSIR importance weights (spec §4.6, §5.2, §11.13-14): features, training, signals.

RPv2 scores a document by the log-likelihood ratio of its hashed unigram+bigram bag under a target
histogram (Wikipedia, books, OpenWebText) versus a source histogram (CCNet). Its histograms
cannot be downloaded here, so `textsieve train importance` builds them from samples the user
points at, with the reference's *exact* features: raw WordPunct tokens and bigrams (as tuples)
bucketed by CPython 3.11 `hash()` under PYTHONHASHSEED=42 (`cpython_hash`), `B = 10000`. A model
trained on the same samples therefore gives the same scores as the reference's artifacts would.

Signals for a model named NAME:

* `rps_doc_NAME_importance` = round8(f · v), v = ln(p_t + 1e-8) − ln(p_s + 1e-8).
* `rps_doc_NAME_importance_length_correction`: the reference's formula, bug included: it adds
  ln(Pois(L; λ_t) + 1e-8) − ln(Pois(L; λ_s) + 1e-8) with L the *character* length while the λ
  are mean raw *word* counts, so for real documents both pmfs underflow and the term is ~0 or
  noise (§11.13).
* `ts_doc_NAME_importance_length_corrected`: the intended correction: L is the document's raw
  word count (the unit of λ), and the log-pmfs are used directly (no +1e-8 floor that would
  flatten every long document to the same value).

Documents with an empty text get null, as in the reference.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import xlogy
from scipy.stats import poisson

from textsieve.models.cpython_hash import RPV2_HASH_SEED, abs_mod_u, hash_secret, token_hashes, tuple2_hash_u
from textsieve.text.batch_encoding import codepoints_batch
from textsieve.text.unicode_props import unicode_tables
from textsieve.text.wordpunct import token_bounds

KIND = "importance"
DEFAULT_BUCKETS = 10000  # RPv2's DSIR_FEATURE_DIM (§5)
DEFAULT_MAX_DOCS = 500000  # RPv2's DSIR_NUM_SAMPLES (§5)


@njit(cache=True)
def _feature_buckets(hashes, tok_off, buckets):
    """Flat bucket ids of each document's unigrams then bigrams, with n_docs+1 offsets."""
    n_docs = tok_off.shape[0] - 1
    total = 0
    for d in range(n_docs):
        n = tok_off[d + 1] - tok_off[d]
        total += n + (n - 1 if n > 1 else 0)
    out = np.empty(total, dtype=np.int64)
    off = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        s = tok_off[d]
        e = tok_off[d + 1]
        for i in range(s, e):
            out[k] = abs_mod_u(hashes[i], buckets)
            k += 1
        for i in range(s, e - 1):
            out[k] = abs_mod_u(tuple2_hash_u(hashes[i], hashes[i + 1]), buckets)
            k += 1
        off[d + 1] = k
    return out, off


@dataclass
class BatchFeatures:
    """Hashed features of a batch: `buckets[off[d]:off[d+1]]` are document d's feature buckets
    (one per unigram and bigram); `raw_words[d]` its raw token count."""

    buckets: np.ndarray
    off: np.ndarray
    raw_words: np.ndarray

    def counts(self, d: int, n_buckets: int) -> np.ndarray:
        """Document d's dense count vector, as RPv2's `hash_feature` returns it."""
        return np.bincount(self.buckets[self.off[d]:self.off[d + 1]], minlength=n_buckets)


def batch_features(texts: list[str], n_buckets: int = DEFAULT_BUCKETS,
                   seed: int = RPV2_HASH_SEED) -> BatchFeatures:
    """RPv2's DSIR features (§4.6) of every text, independent of this process's hash seed."""
    cps, doc_off = codepoints_batch(texts)
    start, end, tok_off = token_bounds(cps, doc_off, unicode_tables().flags)
    k0, k1 = hash_secret(seed)
    hashes = token_hashes(cps, start, end, np.uint64(k0), np.uint64(k1))
    buckets, off = _feature_buckets(hashes, tok_off, n_buckets)
    return BatchFeatures(buckets, off, np.diff(tok_off))


# ---------------------------------------------------------------------------------------------
# training (§5.2)
# ---------------------------------------------------------------------------------------------

@dataclass
class Histogram:
    """Summed feature counts of a sample and its mean raw word count (the Poisson λ)."""

    counts: np.ndarray
    documents: int
    mean_raw_words: float
    fingerprint: str


def histogram(texts: Iterable[list[str]], n_buckets: int = DEFAULT_BUCKETS, seed: int = RPV2_HASH_SEED,
              max_docs: int = DEFAULT_MAX_DOCS, progress=None) -> Histogram:
    """Sum the features of up to `max_docs` documents given as batches of texts (RPv2 §5.2)."""
    counts = np.zeros(n_buckets, dtype=np.int64)
    n_docs = 0
    words = 0
    sha = hashlib.sha256()
    for batch in texts:
        batch = batch[:max_docs - n_docs]
        if not batch:
            break
        f = batch_features(batch, n_buckets, seed)
        counts += np.bincount(f.buckets, minlength=n_buckets)
        words += int(f.raw_words.sum())
        n_docs += len(batch)
        for t in batch:
            sha.update(t.encode("utf-8", "surrogatepass"))
            sha.update(b"\x00")
        if progress is not None:
            progress(len(batch))
        if n_docs >= max_docs:
            break
    if n_docs == 0:
        raise ValueError("no documents in the sample")
    return Histogram(counts, n_docs, words / n_docs, sha.hexdigest())


# ---------------------------------------------------------------------------------------------
# scoring (§4.6)
# ---------------------------------------------------------------------------------------------

@dataclass
class ImportanceModel:
    """A loaded importance model: the log-ratio vector and the two Poisson λ's."""

    log_diff: np.ndarray
    target_lambda: float
    source_lambda: float
    n_buckets: int
    seed: int
    fingerprint: str = ""

    @classmethod
    def from_counts(cls, target_counts: np.ndarray, source_counts: np.ndarray, target_lambda: float,
                    source_lambda: float, seed: int = RPV2_HASH_SEED, fingerprint: str = "") -> ImportanceModel:
        t = np.asarray(target_counts)
        s = np.asarray(source_counts)
        if t.shape != s.shape or t.ndim != 1:
            raise ValueError(f"target and source histograms differ in shape: {t.shape} vs {s.shape}")
        # exactly the reference's expression (importance_weights.py): same operations, same order
        log_diff = np.array(np.log(t / t.sum() + 1e-8) - np.log(s / s.sum() + 1e-8))
        return cls(log_diff, float(target_lambda), float(source_lambda), t.shape[0], seed, fingerprint)

    def scores(self, texts: list[str]) -> ImportanceScores:
        f = batch_features(texts, self.n_buckets, self.seed)
        n = len(texts)
        raw = np.empty(n, dtype=np.float64)
        for d in range(n):
            # the reference's `float(np.inner(features, log_diff))`, dense, same BLAS summation
            raw[d] = float(np.inner(f.counts(d, self.n_buckets), self.log_diff))
        chars = np.fromiter((len(t) for t in texts), dtype=np.int64, count=n)
        return ImportanceScores(raw, chars, f.raw_words, self)


@dataclass
class ImportanceScores:
    """Unrounded log-ratios of a batch plus the lengths the length corrections need."""

    raw: np.ndarray
    chars: np.ndarray
    words: np.ndarray
    model: ImportanceModel

    @property
    def valid(self) -> np.ndarray:
        return self.chars > 0  # the reference returns None for an empty document

    def importance(self) -> np.ndarray:
        return _round8(self.raw)

    def length_correction_rpv2(self) -> np.ndarray:
        """The reference's correction: pmf at the character length, λ in words (§11.13)."""
        m = self.model
        corr = (np.log(poisson.pmf(self.chars, m.target_lambda) + 1e-8)
                - np.log(poisson.pmf(self.chars, m.source_lambda) + 1e-8))
        return _round8(self.raw + corr)

    def length_corrected(self) -> np.ndarray:
        """The intended correction: log Pois(n_words; λ_t) − log Pois(n_words; λ_s)."""
        m = self.model
        k = self.words.astype(np.float64)  # log k! cancels between the two pmfs
        corr = (xlogy(k, m.target_lambda) - m.target_lambda) - (xlogy(k, m.source_lambda) - m.source_lambda)
        return _round8(self.raw + corr)


def _round8(values: np.ndarray) -> np.ndarray:
    from textsieve.signals.registry import round8
    return round8(values)


# ---------------------------------------------------------------------------------------------
# helpers for reading samples
# ---------------------------------------------------------------------------------------------

def read_golden_features(path: str) -> Iterator[tuple[str, dict[int, int]]]:
    """Records of `rpv2_dsir_features_dev.jsonl.gz`: (id, {bucket: count})."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            yield rec["id"], {int(b): int(c) for b, c in rec["dsir_hash_features"]}


# ---------------------------------------------------------------------------------------------
# model files and signals
# ---------------------------------------------------------------------------------------------

def save_importance_model(path: str, target: Histogram, source: Histogram, *, name: str,
                          seed: int = RPV2_HASH_SEED, target_desc: str = "", source_desc: str = "") -> str:
    """Write an `importance` `.tsm` (the two histograms and λ's, RPv2 §5.2); returns its fingerprint."""
    from textsieve.models.format import save_model

    params = {"name": name, "buckets": int(target.counts.shape[0]), "hash": "cpython311-siphash13",
              "hash_seed": seed, "features": "rpv2-wordpunct-unigram+bigram-tuple",
              "target_lambda": target.mean_raw_words, "source_lambda": source.mean_raw_words}
    training = {"fingerprint": hashlib.sha256((target.fingerprint + source.fingerprint).encode()).hexdigest(),
                "documents": target.documents + source.documents,
                "target": {"path": target_desc, "documents": target.documents, "fingerprint": target.fingerprint},
                "source": {"path": source_desc, "documents": source.documents, "fingerprint": source.fingerprint}}
    return save_model(path, KIND, params, {"target_counts": target.counts, "source_counts": source.counts},
                      training)


def load_importance_model(path: str) -> ImportanceModel:
    from textsieve.models.format import ModelFormatError, load_model_file

    mf = load_model_file(path)
    if mf.kind != KIND:
        raise ModelFormatError(f"{path}: a {mf.kind!r} model, not an importance model")
    try:
        p = mf.params
        return ImportanceModel.from_counts(mf.arrays["target_counts"], mf.arrays["source_counts"],
                                           p["target_lambda"], p["source_lambda"], int(p["hash_seed"]),
                                           mf.fingerprint)
    except KeyError as exc:
        raise ModelFormatError(f"{path}: importance model lacks {exc}") from None


def _scores(views, name: str) -> ImportanceScores:
    """Scores of `views.models[name]`, computed once per batch for all three signals."""
    key = ("importance", name)
    if key not in views.cache:
        views.cache[key] = views.models[name].scores(views.texts)
    return views.cache[key]


def importance_signals(name: str, model: object) -> list:
    from textsieve.signals.registry import DocScores, Signal

    if not isinstance(model, ImportanceModel):  # the registry hands every kind's loader result as an object
        raise TypeError(f"model {name!r} is a {type(model).__name__}, not an ImportanceModel")

    def importance(v) -> DocScores:
        s = _scores(v, name)
        return DocScores(s.importance(), s.valid)

    def length_correction(v) -> DocScores:
        s = _scores(v, name)
        return DocScores(s.length_correction_rpv2(), s.valid)

    def length_corrected(v) -> DocScores:
        s = _scores(v, name)
        return DocScores(s.length_corrected(), s.valid)

    g = "importance"
    return [
        Signal(f"rps_doc_{name}_importance", "doc", "float", g,
               f"RPv2 DSIR log-likelihood ratio of the hashed unigram+bigram bag, target vs source of model "
               f"{name!r} (CPython 3.11 hash, PYTHONHASHSEED={model.seed}, {model.n_buckets} buckets).",
               (), importance),
        Signal(f"rps_doc_{name}_importance_length_correction", "doc", "float", g,
               "RPv2's length-corrected importance, bug included: Poisson pmf at the CHARACTER length with "
               "lambdas in WORDS (spec 11.13), so the correction is ~0 or noise.", (), length_correction),
        Signal(f"ts_doc_{name}_importance_length_corrected", "doc", "float", g,
               "Importance plus log Pois(n_raw_words; lambda_t) - log Pois(n_raw_words; lambda_s): the "
               "length correction RPv2 intended, in consistent units.", (), length_corrected),
    ]


def _register() -> None:
    from textsieve.models.registry import KINDS, register_model_kind

    if KIND not in KINDS:
        register_model_kind(KIND, load=load_importance_model, signals=importance_signals)


_register()
