"""A fitted DSIR model: two bag-of-hashed-n-grams distributions and the log ratio between them.

Stored as one small file: a JSON header line (kind, version, feature params, smoothing, data
fingerprints, array layout) followed by the raw little-endian int64 bucket counts of the target
and of the raw pool. Counts rather than probabilities are kept so the smoothing can be changed,
models can be merged, and the fingerprints stay exact.

Smoothing: with ``smoothing = a > 0`` each side is ``p[j] = (c[j] + a) / (N + a * B)`` (additive
pseudo-counts, like the reference's later `target_laplace_smoothing`); with ``a = 0`` it is the
reference's ``c[j] / N + 1e-8`` inside the log. The per-n-gram log ratio is
``log p_target[j] - log p_raw[j]``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import fsspec
import numpy as np

from textsieve.io.atomic import atomic_open
from textsieve.text.hashed_ngrams import HashedNgramParams

KIND = "textsieve.dsir.hashed-ngram"
VERSION = 1
REFERENCE_EPS = 1e-8


def counts_fingerprint(counts: np.ndarray, docs: int) -> str:
    """Content fingerprint of a fitted side: SHA-256 of its counts and document count."""
    h = hashlib.sha256(np.ascontiguousarray(counts, dtype="<i8").tobytes())
    h.update(str(docs).encode())
    return h.hexdigest()[:32]


@dataclass
class DsirModel:
    params: HashedNgramParams
    target_counts: np.ndarray
    raw_counts: np.ndarray
    target_docs: int
    raw_docs: int
    smoothing: float = 1.0
    info: dict = field(default_factory=dict)  # sources, raw shard list, creation details

    def __post_init__(self) -> None:
        for name in ("target_counts", "raw_counts"):
            arr = getattr(self, name)
            if arr.shape != (self.params.buckets,):
                raise ValueError(f"{name} has shape {arr.shape}, expected ({self.params.buckets},)")
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be >= 0, not {self.smoothing}")
        if self.target_counts.sum() == 0:
            raise ValueError("the target has no n-grams (empty or blank documents only)")
        if self.raw_counts.sum() == 0:
            raise ValueError("the raw pool has no n-grams (empty or blank documents only)")

    def _log_probs(self, counts: np.ndarray) -> np.ndarray:
        c = counts.astype(np.float64)
        if self.smoothing > 0:
            return np.log(c + self.smoothing) - np.log(c.sum() + self.smoothing * c.shape[0])
        return np.log(c / c.sum() + REFERENCE_EPS)

    def log_ratio(self) -> np.ndarray:
        """log p_target - log p_raw per bucket: a document's log importance weight is the sum of
        this over its n-grams."""
        return self._log_probs(self.target_counts) - self._log_probs(self.raw_counts)

    @property
    def target_fingerprint(self) -> str:
        return counts_fingerprint(self.target_counts, self.target_docs)

    @property
    def raw_fingerprint(self) -> str:
        return counts_fingerprint(self.raw_counts, self.raw_docs)

    def header(self) -> dict:
        return {"kind": KIND, "version": VERSION, "params": self.params.to_json(), "smoothing": self.smoothing,
                "target": {"docs": self.target_docs, "ngrams": int(self.target_counts.sum()),
                           "fingerprint": self.target_fingerprint},
                "raw": {"docs": self.raw_docs, "ngrams": int(self.raw_counts.sum()),
                        "fingerprint": self.raw_fingerprint},
                "arrays": ["target_counts", "raw_counts"], "dtype": "<i8", "length": self.params.buckets,
                "info": self.info}

    def save(self, path: str) -> None:
        fs, p = fsspec.core.url_to_fs(path)
        with atomic_open(fs, p) as fh:
            fh.write(json.dumps(self.header(), sort_keys=True).encode() + b"\n")
            fh.write(np.ascontiguousarray(self.target_counts, dtype="<i8").tobytes())
            fh.write(np.ascontiguousarray(self.raw_counts, dtype="<i8").tobytes())

    @classmethod
    def load(cls, path: str) -> DsirModel:
        fs, p = fsspec.core.url_to_fs(path)
        with fs.open(p, "rb") as fh:
            line = fh.readline()
            try:
                head = json.loads(line)
            except ValueError:
                raise ValueError(f"{path}: not a textsieve DSIR model (no JSON header)") from None
            if not isinstance(head, dict) or head.get("kind") != KIND:
                kind = head.get("kind") if isinstance(head, dict) else None
                raise ValueError(f"{path}: not a textsieve DSIR model (kind {kind!r})")
            if head.get("version") != VERSION:
                raise ValueError(f"{path}: DSIR model version {head.get('version')} (this textsieve reads {VERSION})")
            n = int(head["length"])
            data = fh.read()
        if len(data) != 16 * n:
            raise ValueError(f"{path}: truncated DSIR model ({len(data)} bytes of counts, expected {16 * n})")
        arr = np.frombuffer(data, dtype="<i8").astype(np.int64)
        model = cls(HashedNgramParams.from_json(head["params"]), arr[:n].copy(), arr[n:].copy(),
                    int(head["target"]["docs"]), int(head["raw"]["docs"]), float(head["smoothing"]),
                    head.get("info") or {})
        for side in ("target", "raw"):
            if getattr(model, f"{side}_fingerprint") != head[side]["fingerprint"]:
                raise ValueError(f"{path}: {side} counts do not match their fingerprint (corrupt file)")
        return model
