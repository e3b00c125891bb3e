"""`textsieve dsir fit`: fit DSIR's two n-gram models and store a log importance weight per
document of an annotated pool, as the attribute set ``DIR/_dsir_<name>/``.

Columns of every shard of the set (besides `id`, `shard`, `row`):

* ``ts_dsir_<name>``        the reference's log importance weight, the *sum* over the document's
                            n-grams of ``log p_target - log p_raw``. It grows with length (about
                            -120,000 to +2,000 on the dev pool), so sampling with it is top-k;
* ``ts_dsir_<name>_norm``   the length-normalised weight: the *mean* log ratio per n-gram (null for
                            a document without n-grams). What `resample` uses by default;
* ``ts_dsir_<name>_tokens`` the document's word/punctuation token count (DSIR's 'length'), used
                            for token budgets and minimum lengths.

Deduplicate the pool first (`textsieve dedup`): identical texts get identical weights, so a
duplicated document is drawn as many times as it has copies.

Unlike the reference, the raw model is fit on the whole pool (not a prefix of each shard), in two
passes: count all n-grams, then weigh each document. The pool's n-gram ids are kept in memory
between the passes up to `memory_mb`, beyond that the texts are read again. The model file
(`model.dsir` in the set folder) is written before the weights, so a re-run reuses it and only
computes the shards not yet written.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import META_KEY, attribute_set_dir, attribute_shards, read_shard_meta, source_documents
from textsieve.io.paths import expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.select.dsir_features import HashedNgramParams, NgramBatch, batched, bucket_counts, doc_sums, featurize
from textsieve.select.dsir_model import DsirModel
from textsieve.stages.progress import Progress

NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
MODEL_FILE = "model.dsir"


def set_name(name: str) -> str:
    """Attribute-set name of the DSIR target `name` (folder ``_dsir_<name>``)."""
    return f"dsir_{name}"


def column_names(name: str) -> tuple[str, str, str]:
    """(sum log weight, normalised log weight, token count) columns for target `name`."""
    return f"ts_dsir_{name}", f"ts_dsir_{name}_norm", f"ts_dsir_{name}_tokens"


def check_name(name: str) -> str:
    if not NAME_RE.match(name or ""):
        raise ValueError(f"DSIR name {name!r} must be letters, digits and '_' only (it becomes a column name)")
    return name


@dataclass
class DsirFitConfig:
    targets: list[str]  # target documents: files, folders or globs (JSONL, Parquet, ...)
    raw: str  # annotated folder (output of `textsieve annotate`) of the pool
    name: str
    buckets: int = 10_000
    ngrams: int = 2
    hash_seed: int = 0
    smoothing: float = 1.0
    text_field: str = "text"
    model_path: str | None = None  # default: RAW/_dsir_<name>/model.dsir
    overwrite: bool = False
    memory_mb: int = 1024
    progress: bool = True


@dataclass
class DsirFitResult:
    model_path: str
    set_dir: str
    columns: tuple[str, str, str]
    documents: int
    target_docs: int
    model_reused: bool
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    weight_range: tuple[float, float] = (0.0, 0.0)


def read_texts(inputs: list[str], text_field: str = "text") -> list[str]:
    """Texts of all documents of the inputs (files, folders, globs), in order."""
    opts = ReadOptions(text_field=text_field)
    return [d.text for s in expand_inputs(inputs) for d in ShardReader(s, opts)]


def _shard_texts(fs, path: str) -> tuple[pa.Table, list[str]]:
    """The (id, shard, row) columns of an annotate shard and its source texts, row-aligned."""
    keys = pq.read_table(fs.open(path, "rb"), columns=["id", "shard", "row"])
    meta = read_shard_meta(fs, path)
    if "source_shard" not in meta:
        raise ValueError(f"{path}: not an annotate shard (no source_shard in its metadata)")
    rows = keys.column("row").to_numpy()
    ids = keys.column("id").to_pylist()
    by_row: dict[int, str] = {}
    want = set(rows.tolist())
    for doc in source_documents(meta):
        if doc.row in want:
            by_row[doc.row] = doc.text
    texts = []
    for r, i in zip(rows.tolist(), ids):
        t = by_row.get(r)
        if t is None:
            raise ValueError(f"{path}: the source document of row {r} (id {i!r}) could not be read; "
                             f"was {meta['source_shard'].get('path')} changed after annotate?")
        texts.append(t)
    return keys, texts


def score_texts(model: DsirModel, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sum log weight, normalised log weight (NaN without n-grams), tokens) of arbitrary texts
    under a fitted model: the values `run_fit` stores, for documents outside the pool."""
    lr = model.log_ratio()
    fbs = _featurize_all(texts, model.params)
    if not fbs:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
    sums = np.concatenate([doc_sums(fb, lr) for fb in fbs])
    ngr = np.concatenate([fb.ngram_counts for fb in fbs])
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(ngr > 0, sums / np.maximum(ngr, 1), np.nan)
    return sums, norm, np.concatenate([fb.tokens for fb in fbs])


def _featurize_all(texts: list[str], params: HashedNgramParams) -> list[NgramBatch]:
    return [featurize(b, params) for b in batched(texts)]


def _model_matches(model: DsirModel, params: HashedNgramParams, smoothing: float, target_fp: str,
                   raw_shards: list) -> bool:
    return (model.params == params and model.smoothing == smoothing and model.target_fingerprint == target_fp
            and model.info.get("raw_shards") == raw_shards)


def run_fit(cfg: DsirFitConfig) -> DsirFitResult:
    t0 = time.perf_counter()
    check_name(cfg.name)
    params = HashedNgramParams(cfg.buckets, cfg.ngrams, cfg.hash_seed)
    fs, shards = attribute_shards(cfg.raw)
    root = fs._strip_protocol(cfg.raw).rstrip("/")
    set_dir = attribute_set_dir(cfg.raw, set_name(cfg.name))
    set_root = fs._strip_protocol(set_dir)
    model_path = cfg.model_path or f"{set_dir}/{MODEL_FILE}"
    cols = column_names(cfg.name)

    target_texts = read_texts(cfg.targets, cfg.text_field)
    if not target_texts:
        raise ValueError(f"no target documents in {', '.join(cfg.targets)}")
    target_counts, target_docs = bucket_counts(target_texts, params)
    del target_texts
    raw_shards = [[p[len(root) + 1:], pq.ParquetFile(fs.open(p, "rb")).metadata.num_rows] for p in shards]
    total_rows = sum(n for _, n in raw_shards)

    model = None
    mfs, mpath = fsspec.core.url_to_fs(model_path)
    if not cfg.overwrite and mfs.exists(mpath):
        model = DsirModel.load(model_path)
        from textsieve.select.dsir_model import counts_fingerprint

        if not _model_matches(model, params, cfg.smoothing, counts_fingerprint(target_counts, target_docs), raw_shards):
            raise ValueError(f"{model_path} was fit with other settings or data (params {model.params}, "
                             f"smoothing {model.smoothing}); pass --overwrite to refit")
    reused = model is not None
    cache: dict[str, tuple[pa.Table, list[NgramBatch]]] = {}
    if model is None:
        raw_counts = np.zeros(params.buckets, dtype=np.int64)
        budget = cfg.memory_mb * 2**20
        used = 0
        prog = Progress("dsir fit (count)", total_rows, cfg.progress)
        for path, (rel, _) in zip(shards, raw_shards):
            keys, texts = _shard_texts(fs, path)
            fbs = _featurize_all(texts, params)
            for fb in fbs:
                raw_counts += np.bincount(fb.buckets, minlength=params.buckets)
            used += sum(fb.buckets.nbytes for fb in fbs)
            if used <= budget:
                cache[rel] = (keys, fbs)
            prog.update(len(texts), prog.docs + len(texts))
        prog.close()
        model = DsirModel(params, target_counts, raw_counts, target_docs, total_rows, cfg.smoothing,
                          info={"targets": list(cfg.targets), "raw_shards": raw_shards, "name": cfg.name})
        model.save(model_path)
    fingerprint = f"{model.target_fingerprint}:{model.raw_fingerprint}:{model.smoothing}"

    lr = model.log_ratio()
    res = DsirFitResult(model_path, set_dir, cols, total_rows, target_docs, reused)
    lo, hi = np.inf, -np.inf
    prog = Progress("dsir fit (weigh)", total_rows, cfg.progress)
    for path, (rel, nrows) in zip(shards, raw_shards):
        out = f"{set_root}/{rel}"
        if not cfg.overwrite and fs.exists(out):
            meta = read_shard_meta(fs, out)
            if meta.get("model") == fingerprint:
                res.shards_skipped.append(rel)
                prog.update(nrows, prog.docs + nrows)
                continue
        if rel in cache:
            keys, fbs = cache.pop(rel)
        else:
            keys, texts = _shard_texts(fs, path)
            fbs = _featurize_all(texts, params)
        sums = np.concatenate([doc_sums(fb, lr) for fb in fbs]) if fbs else np.zeros(0)
        ngr = np.concatenate([fb.ngram_counts for fb in fbs]) if fbs else np.zeros(0, np.int64)
        toks = np.concatenate([fb.tokens for fb in fbs]) if fbs else np.zeros(0, np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            norm = sums / ngr
        if len(sums):
            lo, hi = min(lo, float(sums.min())), max(hi, float(sums.max()))
        table = keys.append_column(cols[0], pa.array(sums, pa.float64()))
        table = table.append_column(cols[1], pa.array(norm, pa.float64(), mask=ngr == 0))
        table = table.append_column(cols[2], pa.array(toks, pa.int64()))
        writer = AtomicParquetWriter(fs, out, table.schema)
        try:
            writer.write(table)
            writer.add_metadata({META_KEY: json.dumps({"stage": "dsir", "name": cfg.name, "model": fingerprint,
                                                       "columns": list(cols)}).encode()})
        except BaseException as exc:
            writer.abort(exc)
            raise
        writer.close()
        res.shards_written.append(rel)
        prog.update(nrows, prog.docs + nrows)
    prog.close()
    res.weight_range = (lo, hi) if res.shards_written else (0.0, 0.0)
    res.seconds = time.perf_counter() - t0
    return res
