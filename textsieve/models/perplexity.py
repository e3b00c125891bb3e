"""n-gram LM perplexity signals (CCNet-style, spec §6) and `textsieve train lm`.

CCNet scores every document with a Wikipedia KenLM model and splits each language into head /
middle / tail at the 30th and 60th percentiles (`ccnet_perplexity`, `ccnet_bucket`). We cannot
download those models, so `train lm` fits a word n-gram model (interpolated modified Kneser-Ney,
`ngram_lm_model`) on a target corpus the user names and stores, with it, the 30th/60th
percentile cutoffs of the *target's own* perplexities. Those are measured on held-out folds
(k-fold cross-fitting): in-sample perplexities of an n-gram model are far too low (it has seen
every trigram), so in-sample cutoffs would put nearly every unseen document in the tail.

Signals for `--models NAME=PATH`:

* `ts_perplexity_NAME`: 10^(−Σ log10 p / (n_words + 1)), rounded to 1 decimal as CCNet does; the
  document is one sentence `<s> … </s>` (CCNet deletes newlines before scoring, §11.19). null
  for a document without words.
* `ts_perplexity_NAME_bucket`: 0.0 head (< 30th percentile), 1.0 middle (< 60th), 2.0 tail,
  like `ccnet_bucket`. Only for `.tsm` models (an ARPA file has no cutoffs).

A user's ARPA file (`.arpa`, `.arpa.gz`) is read by the same scorer; its vocabulary must be words
of our tokenization (RPv2-normalized words, digits as 0), e.g. an ARPA exported by
`train lm --arpa`, or one KenLM's `lmplz` built from such text.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from textsieve.models.format import ModelFormatError, file_fingerprint, is_model_file, load_model_file, save_model
from textsieve.models.ngram_lm_model import (
    TOKENIZER,
    BackoffTables,
    digits0,
    read_arpa,
    train_kn,
    word_hashes,
    write_arpa,
)
from textsieve.text.batch_encoding import encode_batch
from textsieve.text.normalize import normalize

if TYPE_CHECKING:
    from textsieve.signals.registry import Signal

KIND = "lm"
CUTOFF_PERCENTILES = (30.0, 60.0)  # CCNet's head / middle / tail split


@dataclass
class PerplexityModel:
    """Loaded LM: backoff tables, head/middle/tail cutoffs (None for ARPA files)."""

    tables: BackoffTables
    cutoffs: tuple[float, float] | None
    fingerprint: str = ""
    params: dict = field(default_factory=dict)

    def perplexities(self, normalized: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(perplexity rounded to 1 decimal, valid) of RPv2-normalized texts."""
        return self.perplexities_utf8(*encode_batch(normalized))

    def perplexities_utf8(self, buf: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The same from the UTF-8 bytes of the normalized texts (annotate has them already)."""
        hashes, tok_off = word_hashes(buf, off, 32)
        return self.perplexities_of_hashes(hashes, tok_off)

    def perplexities_of_hashes(self, hashes: np.ndarray, tok_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        total, count = self.tables.doc_log10(hashes, tok_off)
        ppl = np.power(10.0, -total / count)
        valid = np.diff(tok_off) > 0
        # Python's round(x, 1), as CCNet (np.round scales by 10 and can differ in the last digit)
        return np.array([round(x, 1) for x in ppl.tolist()], dtype=np.float64), valid

    def buckets(self, ppl: np.ndarray) -> np.ndarray:
        if self.cutoffs is None:
            raise ValueError("this LM has no bucket cutoffs (an ARPA file)")
        lo, hi = self.cutoffs
        return np.where(ppl < lo, 0.0, np.where(ppl < hi, 1.0, 2.0))


def tokenize(text: str) -> list[str]:
    """The LM's tokens of a raw text (what the kernel reads from `views.normalized`)."""
    return digits0(normalize(text)).split()


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------

@dataclass
class LMTrainConfig:
    """`textsieve train lm` options."""

    corpus: list[str]
    output: str
    order: int = 3
    folds: int = 5  # held-out folds for the bucket cutoffs (0: in-sample, not recommended)
    max_docs: int | None = None
    text_field: str = "text"
    arpa: str | None = None  # also write the model as an ARPA file here
    cutoff_corpus: list[str] | None = None  # take the percentiles on these documents instead
    seed: int = 0
    progress: bool = True


@dataclass
class LMTrainResult:
    fingerprint: str
    cutoffs: tuple[float, float]
    metrics: dict


def texts_and_digest(inputs: list[str], text_field: str = "text", max_docs: int | None = None,
               progress: bool = False, stage: str = "read") -> tuple[list[str], str]:
    """All texts of the inputs (files, folders, globs) and the sha256 of their content."""
    from itertools import islice

    from textsieve.exec.progress import Progress
    from textsieve.io.texts import input_shards, shard_documents

    shards = input_shards(inputs)
    if not shards:
        raise ValueError(f"no input documents found in {' '.join(inputs)}")
    bar = Progress(stage, sum(s.size for s in shards), enabled=progress)
    texts: list[str] = []
    sha = hashlib.sha256()
    limit = None if max_docs is None else max(max_docs, 1)  # the first document is always read
    try:
        for doc in islice(shard_documents(shards, text_field, progress=bar.update), limit):
            texts.append(doc.text)
            sha.update(doc.text.encode("utf-8", "surrogatepass"))
            sha.update(b"\x00")
    finally:
        bar.close()
    if not texts:
        raise ValueError(f"no documents in {' '.join(inputs)}")
    return texts, sha.hexdigest()


def heldout_perplexities(docs: list[list[str]], order: int, folds: int, seed: int = 0) -> np.ndarray:
    """Perplexity of every document under a model trained on the other folds."""
    n = len(docs)
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(n) % folds
    out = np.empty(n, dtype=np.float64)
    for f in range(folds):
        test = np.flatnonzero(fold_of == f)
        train = [docs[i] for i in np.flatnonzero(fold_of != f)]
        if not len(test) or not train:
            continue
        model = PerplexityModel(train_kn(train, order).tables, None)
        out[test] = _ppl_of_docs(model, [docs[i] for i in test])
    return out


def _ppl_of_docs(model: PerplexityModel, docs: list[list[str]]) -> np.ndarray:
    from textsieve.models.ngram_lm_model import hash_words

    flat = [w for d in docs for w in d]
    hashes = hash_words(flat) if flat else np.zeros(0, dtype=np.uint64)
    off = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in docs], out=off[1:])
    total, count = model.tables.doc_log10(hashes, off)
    return np.power(10.0, -total / count)


def train_lm(cfg: LMTrainConfig) -> LMTrainResult:
    """Train the LM on `cfg.corpus`, compute the bucket cutoffs and write the `.tsm` (and ARPA)."""
    if cfg.folds == 1 or cfg.folds < 0:
        raise ValueError(f"--folds must be 0 (in-sample cutoffs) or >= 2, got {cfg.folds}")
    texts, content_sha = texts_and_digest(cfg.corpus, cfg.text_field, cfg.max_docs, cfg.progress, "train lm")
    docs = [tokenize(t) for t in texts]
    docs = [d for d in docs if d]
    if not docs:
        raise ValueError(f"{' '.join(cfg.corpus)}: no document has words to train on")
    lm = train_kn(docs, cfg.order)
    model = PerplexityModel(lm.tables, None)
    if cfg.cutoff_corpus:
        other, _ = texts_and_digest(cfg.cutoff_corpus, cfg.text_field, cfg.max_docs, cfg.progress, "cutoff corpus")
        other_docs = [d for d in (tokenize(t) for t in other) if d]
        if not other_docs:
            raise ValueError(f"--cutoff-corpus {' '.join(cfg.cutoff_corpus)}: no document has words")
        ppl = _ppl_of_docs(model, other_docs)
        source = "cutoff corpus: " + " ".join(cfg.cutoff_corpus)
    elif cfg.folds >= 2 and len(docs) >= cfg.folds:
        ppl = heldout_perplexities(docs, cfg.order, cfg.folds, cfg.seed)
        source = f"{cfg.folds}-fold held-out"
    else:
        ppl = _ppl_of_docs(model, docs)
        source = "in-sample"
    lo, hi = (float(np.round(x, 1)) for x in np.percentile(ppl, CUTOFF_PERCENTILES))
    in_sample = _ppl_of_docs(model, docs)
    params = {"order": cfg.order, "tokenizer": TOKENIZER, "smoothing": "interpolated modified Kneser-Ney",
              "discounts": [list(d) for d in lm.discounts], "unk_logprob": lm.tables.unk_logprob,
              "cutoffs": [lo, hi], "cutoff_percentiles": list(CUTOFF_PERCENTILES), "cutoff_source": source,
              "vocabulary": len(lm.vocab)}
    metrics = {"tokens": lm.tokens, "ngrams": [int(len(k)) for k in lm.tables.keys],
               "median_perplexity_cutoff_documents": float(np.median(ppl)),  # held-out target or --cutoff-corpus
               "median_perplexity_in_sample": float(np.median(in_sample))}
    training = {"fingerprint": content_sha, "documents": len(texts), "inputs": list(cfg.corpus),
                "text_field": cfg.text_field}

    fp = save_model(cfg.output, KIND, params, lm.tables.arrays(), training, metrics)
    if cfg.arpa:
        import fsspec

        from textsieve.io.atomic import atomic_open

        fs, p = fsspec.core.url_to_fs(cfg.arpa)
        buf = io.StringIO()
        write_arpa(lm, buf)
        data = buf.getvalue().encode("utf-8", "surrogatepass")
        with atomic_open(fs, p, "wb") as fh:
            fh.write(gzip.compress(data, mtime=_gzip_mtime()) if cfg.arpa.endswith(".gz") else data)
    return LMTrainResult(fp, (lo, hi), metrics)


def _gzip_mtime() -> float | None:
    """`SOURCE_DATE_EPOCH` when set, so a `.arpa.gz` is byte-reproducible like the `.tsm` beside
    it (`models.format`); None (now) otherwise."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return float(epoch) if epoch.isdigit() else None


# ---------------------------------------------------------------------------------------------
# loading and signals
# ---------------------------------------------------------------------------------------------

def load_lm(path: str) -> PerplexityModel:

    if not is_model_file(path):
        return load_arpa(path)
    mf = load_model_file(path)
    if mf.kind != KIND:
        raise ModelFormatError(f"{path}: a {mf.kind!r} model, not an n-gram LM")
    p = mf.params
    if p.get("tokenizer") != TOKENIZER:
        raise ModelFormatError(f"{path}: LM tokenizer {p.get('tokenizer')!r} is not {TOKENIZER!r}")
    try:
        tables = BackoffTables.from_arrays(mf.arrays, int(p["order"]), float(p["unk_logprob"]))
        cutoffs = (float(p["cutoffs"][0]), float(p["cutoffs"][1]))
    except KeyError as exc:
        raise ModelFormatError(f"{path}: LM model lacks {exc}") from None
    return PerplexityModel(tables, cutoffs, mf.fingerprint, p)


def load_arpa(path: str) -> PerplexityModel:
    import fsspec


    compression = "gzip" if path.lower().endswith(".gz") else None
    try:
        with fsspec.open(path, "rt", encoding="utf-8", errors="surrogateescape", compression=compression) as fh:
            tables = read_arpa(fh, path)
    except FileNotFoundError:
        raise FileNotFoundError(f"ARPA model not found: {path}") from None
    except (ValueError, UnicodeDecodeError, EOFError, OSError) as exc:
        raise ModelFormatError(f"{path}: cannot read as an ARPA n-gram model: {exc}") from None
    return PerplexityModel(tables, None, file_fingerprint(path), {"order": tables.order, "format": "arpa"})


def _ppl(views, name: str) -> tuple[np.ndarray, np.ndarray]:
    key = ("perplexity", name)
    if key not in views.cache:
        views.cache[key] = views.models[name].perplexities_utf8(*views.normalized_utf8)
    return views.cache[key]


def lm_signals(name: str, model: object) -> list[Signal]:
    from textsieve.signals.registry import DocScores, Signal

    if not isinstance(model, PerplexityModel):  # the registry hands every kind's loader result as an object
        raise TypeError(f"model {name!r} is a {type(model).__name__}, not a PerplexityModel")

    def perplexity(v) -> DocScores:
        ppl, ok = _ppl(v, name)
        return DocScores(ppl, ok)

    def bucket(v) -> DocScores:
        ppl, ok = _ppl(v, name)
        return DocScores(model.buckets(ppl), ok)

    order = model.tables.order
    sigs = [Signal(f"ts_perplexity_{name}", "doc", "float", "perplexity",
                   f"Perplexity of the document (one sentence) under the {order}-gram word LM {name!r}, "
                   "10^(-sum log10 p / (words + 1)), rounded to 1 decimal (as ccnet_perplexity).", (), perplexity)]
    if model.cutoffs is not None:
        lo, hi = model.cutoffs
        sigs.append(Signal(f"ts_perplexity_{name}_bucket", "doc", "float", "perplexity",
                           f"CCNet-style bucket of ts_perplexity_{name}: 0.0 head (< {lo}), 1.0 middle (< {hi}), "
                           "2.0 tail; cutoffs = 30th/60th percentiles of the target's held-out perplexities.",
                           (), bucket))
    return sigs


def _register() -> None:
    from textsieve.models.registry import KINDS, register_model_kind

    if KIND not in KINDS:
        register_model_kind(KIND, load=load_lm, signals=lm_signals, extensions=(".arpa", ".arpa.gz"))


_register()
