"""`textsieve dsir fit --features embed|combined`: DSIR weights from a target-vs-pool classifier
on the pool's embeddings (`textsieve.dsir.embed_model` says what is fit and why).

The result is the same attribute set ``DIR/sets/dsir_<name>/`` with the same three columns as the
n-gram fit (`stages.dsir_fit`), so `select --dsir NAME` draws from it unchanged (Gumbel top-k,
ESS, several targets mixed, recipes, token budgets):

* ``ts_dsir_<name>``        the log importance weight ``log p(x)/q(x)``, per document (no length
                            growth): `--dsir-weight raw --temperature 1` is plain importance
                            resampling;
* ``ts_dsir_<name>_norm``   that weight divided by `embed_model.DOC_NGRAMS` (a document counts as
                            that many n-grams in the shrinkage), so the default resample settings
                            draw ``∝ w ** 2`` (null for a document without tokens);
* ``ts_dsir_<name>_tokens`` word/punctuation tokens, as the n-gram fit stores them.

Pool embeddings are read from the folder's `sets/embed_<model>` set (`textsieve embed`); the target
is embedded with the model that set was made with (its fingerprint must match). The model file
(`.textsieve/model.tsm` in the set, or `--model-path PATH`) records the features, the embedding model's
fingerprint and the data's, so a re-run with the same inputs keeps the finished shards and a
changed input refits.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.dsir import embed_model as em
from textsieve.dsir.names import check_name, column_names, set_name
from textsieve.exec.progress import Progress
from textsieve.io.atomic import write_parquet_with_metadata
from textsieve.io.attributes import (
    META_KEY,
    attribute_set_dir,
    attribute_shards,
    open_set,
    read_shard_meta,
    set_place,
    shard_rel,
)
from textsieve.io.leftovers import remove_stale_siblings
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import SUMMARY, book, content_key, contents
from textsieve.io.texts import input_texts, shard_texts

if TYPE_CHECKING:
    from textsieve.dsir.model import DsirModel
    from textsieve.embedding.models import Embedder
    from textsieve.stages.select.dsir_fit import DsirFitConfig, DsirFitResult
    from textsieve.text.hashed_ngrams import HashedNgramParams

#: the classifier model published with the weights, in the set's bookkeeping folder (the set
#: then reads as one table): `.textsieve/model.tsm`
SET_MODEL = book(em.MODEL_FILE)


def _embedder(raw: str, model: str | None) -> tuple[str, Embedder, str]:
    """(set model name, the embedder that made the set, the set's folder); clear errors when the
    folder has no embeddings or the model changed since."""
    from textsieve.embedding.models import EmbeddingModelError, load_embedder
    from textsieve.embedding.store import resolve_model
    from textsieve.embedding.store import set_name as embed_set

    name = resolve_model(raw, model)  # EmbeddingsMissing: "run `textsieve embed RAW` first"
    folder = attribute_set_dir(raw, embed_set(name))
    fs, root = fsspec.core.url_to_fs(folder)
    info = json.loads(fs.cat_file(f"{root.rstrip('/')}/{SUMMARY}"))
    emb = load_embedder(info.get("model_path"), name)
    if emb.fingerprint != info.get("model_fingerprint"):
        raise EmbeddingModelError(f"{folder} was embedded with model fingerprint {info.get('model_fingerprint')}, "
                                  f"but {info.get('model_path')} is now {emb.fingerprint}; re-run "
                                  f"`textsieve embed {raw} --overwrite` so pool and target share a model")
    return name, emb, folder


def _ngram_scores(model: DsirModel, texts: list[str], mu: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log-ratio sums, n-gram counts, tokens) of `texts`; with `mu`, the sums become the shrunk
    per-n-gram score (`resample.shrunk`'s rule with n0 = DEFAULT_PRIOR_NGRAMS)."""
    from textsieve.dsir.defaults import DEFAULT_PRIOR_NGRAMS
    from textsieve.text.hashed_ngrams import batched, doc_sums, featurize

    lr = model.log_ratio()
    fbs = [featurize(b, model.params) for b in batched(texts)]
    if not fbs:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    sums = np.concatenate([doc_sums(fb, lr) for fb in fbs])
    ngr = np.concatenate([fb.ngram_counts for fb in fbs])
    toks = np.concatenate([fb.tokens for fb in fbs])
    if mu is not None:
        sums = (sums + DEFAULT_PRIOR_NGRAMS * mu) / (ngr + DEFAULT_PRIOR_NGRAMS)
    return sums, ngr, toks


def _tokens(texts: list[str], params: HashedNgramParams) -> np.ndarray:
    from textsieve.text.hashed_ngrams import batched, featurize

    fbs = [featurize(b, params) for b in batched(texts)]
    return np.concatenate([fb.tokens for fb in fbs]) if fbs else np.zeros(0, np.int64)


class _Pool:
    """The pool, shard by shard: keys, texts and embeddings, checked to be the same documents."""

    def __init__(self, cfg: DsirFitConfig, model: str) -> None:
        from textsieve.embedding.store import column_name
        from textsieve.embedding.store import set_name as embed_set

        self.fs, self.shards = attribute_shards(cfg.raw)
        self.root = self.fs._strip_protocol(cfg.raw).rstrip("/")
        self.rels = [shard_rel(self.root, p) for p in self.shards]  # as the embedding set names them
        self.content_rels = [p[len(self.root) + 1:] for p in self.shards]  # as annotate's manifest does
        efs, epaths = attribute_shards(cfg.raw, embed_set(model))  # refuses a set older than the annotate output
        eroot = efs._strip_protocol(attribute_set_dir(cfg.raw, embed_set(model))).rstrip("/")
        self.efs, self.emb_paths = efs, {p[len(eroot) + 1:]: p for p in epaths}
        self.column = column_name(model)
        self.embed_key = content_key(efs, eroot)
        self.raw = cfg.raw
        missing = [r for r in self.rels if r not in self.emb_paths]
        if missing:
            raise ValueError(f"{cfg.raw}: the embeddings lack shard {missing[0]}; re-run `textsieve embed {cfg.raw}`")

    def embeddings(self, rel: str, keys: pa.Table) -> np.ndarray:
        from textsieve.embedding.store import to_numpy

        with self.efs.open(self.emb_paths[rel], "rb") as fh:
            t = read_table(fh, columns=["id", self.column])
        if t.column("id").to_pylist() != keys.column("id").to_pylist():
            raise ValueError(f"{self.raw}: the embeddings of {rel} are of other documents than its annotate "
                             f"shard; re-run `textsieve embed {self.raw} --overwrite`")
        return to_numpy(t.column(self.column)) if t.num_rows else np.zeros((0, 1), np.float32)


def _identity(cfg: DsirFitConfig, emb: Embedder, pool: _Pool, target_fp: str, raw_shards: list,
              params: HashedNgramParams) -> str:
    key: list[Any] = [cfg.features, em.C, em.FOLDS, em.MAX_FIT_POOL, em.DOC_NGRAMS, emb.name, emb.fingerprint,
                      pool.embed_key, target_fp, raw_shards, cfg.model_path]
    if cfg.features == "combined":
        key += [repr(params), cfg.smoothing]
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:16]


def _fit_model(cfg: DsirFitConfig, emb: Embedder, pool: _Pool, target_texts: list[str], total: int,
               params: HashedNgramParams, identity: str, model_path: str, training: dict) -> None:
    """Fit and save the model: target embeddings (and n-gram scores, leave-fold-out) vs the pool sample."""
    from textsieve.dsir.model import DsirModel
    from textsieve.text.hashed_ngrams import bucket_counts

    stride = max(1, -(-total // em.MAX_FIT_POOL))
    target = np.concatenate([emb.embed(target_texts[i:i + 1000]) for i in range(0, len(target_texts), 1000)])
    ngram: DsirModel | None = None
    mu = None
    arrays: dict[str, np.ndarray] = {}
    if cfg.features == "combined":
        tcounts, tdocs = bucket_counts(target_texts, params)
        rcounts = np.zeros(params.buckets, np.int64)
        for path in pool.shards:
            rcounts += bucket_counts(shard_texts(pool.fs, path)[1], params)[0]
        ngram = DsirModel(params, tcounts, rcounts, tdocs, total, cfg.smoothing)
        arrays = {"target_counts": tcounts, "raw_counts": rcounts}
    rows, ng_rows, sums, ngrs = [], [], 0.0, 0
    start = 0
    prog = Progress("dsir fit (embed: read pool)", total, cfg.progress)
    for path, rel in zip(pool.shards, pool.rels):
        keys, texts = shard_texts(pool.fs, path)
        pos = np.arange(start, start + len(texts))
        take = pos % stride == 0
        if take.any():
            rows.append(pool.embeddings(rel, keys)[take])
        if ngram is not None:
            s, n, _ = _ngram_scores(ngram, texts, None)
            sums, ngrs = sums + float(s[n > 0].sum()), ngrs + int(n.sum())
            ng_rows.append((s[take], n[take]))
        start += len(texts)
        prog.update(len(texts), start)
    prog.close()
    X_pool = np.concatenate(rows) if rows else np.zeros((0, emb.dim), np.float32)
    X_target = target
    if ngram is not None:
        from textsieve.dsir.defaults import DEFAULT_PRIOR_NGRAMS

        mu = sums / max(ngrs, 1)
        s = np.concatenate([a for a, _ in ng_rows])
        n = np.concatenate([b for _, b in ng_rows])
        X_pool = em.features_matrix(X_pool, (s + DEFAULT_PRIOR_NGRAMS * mu) / (n + DEFAULT_PRIOR_NGRAMS))
        X_target = em.features_matrix(target, _target_ngram_scores(ngram, target_texts, params, mu))
    model, metrics = em.fit(cfg.features, X_target, X_pool, stride)
    head = {"embed_model": emb.name, "embed_fingerprint": emb.fingerprint, "dim": emb.dim, "identity": identity,
            "ngram_params": params.to_json() if ngram is not None else None, "smoothing": cfg.smoothing,
            "ngram_mu": mu}
    em.save(model_path, model, head, training, metrics, arrays)


def _target_ngram_scores(ngram: DsirModel, texts: list[str], params: HashedNgramParams, mu: float) -> np.ndarray:
    """Each target fold's shrunk n-gram score under the target counts without that fold."""
    from textsieve.dsir.model import DsirModel
    from textsieve.text.hashed_ngrams import bucket_counts

    folds = np.arange(len(texts)) % em.FOLDS
    out = np.zeros(len(texts))
    for f in range(em.FOLDS):
        part = [t for t, g in zip(texts, folds) if g == f]
        if not part:
            continue
        c, d = bucket_counts(part, params)
        rest = ngram.target_counts - c
        if rest.sum() == 0:  # a one-fold target: nothing is left out
            rest = ngram.target_counts
        held = DsirModel(params, rest, ngram.raw_counts, max(ngram.target_docs - d, 1), ngram.raw_docs,
                         ngram.smoothing)
        out[folds == f] = _ngram_scores(held, part, mu)[0]
    return out


def run_fit_embed(cfg: DsirFitConfig) -> DsirFitResult:
    """Weigh every document of `cfg.raw` with the embedding (or combined) classifier (module doc)."""
    from textsieve.dsir.model import DsirModel
    from textsieve.stages.select.dsir_fit import DsirFitResult
    from textsieve.text.hashed_ngrams import HashedNgramParams

    t0 = time.perf_counter()
    check_name(cfg.name)
    if cfg.recipe is not None:
        raise ValueError(f"dsir fit --features {cfg.features}: --recipe is only supported with --features ngram "
                         "(the classifier is fit on the whole pool); filter with the recipe at select time")
    params = HashedNgramParams(cfg.buckets, cfg.ngrams, cfg.hash_seed)
    model_name, emb, _ = _embedder(cfg.raw, cfg.embed_model)
    pool = _Pool(cfg, model_name)
    fs, root = pool.fs, pool.root
    set_dir, _, set_root = set_place(cfg.raw, set_name(cfg.name))  # a killed fit's temporary files removed
    cols = column_names(cfg.name)
    if cfg.model_path:
        remove_stale_siblings(*fsspec.core.url_to_fs(cfg.model_path))
    target_texts = list(input_texts(cfg.targets, cfg.text_field))
    if not target_texts:
        raise ValueError(f"no target documents in {', '.join(cfg.targets)}")
    annotated = contents(fs, root, pool.content_rels)
    raw_shards = [[rel, pq.ParquetFile(fs.open(p, "rb")).metadata.num_rows,
                   hashlib.sha256(annotated[content_rel].encode()).hexdigest()[:16]]
                  for p, rel, content_rel in zip(pool.shards, pool.rels, pool.content_rels)]
    total = sum(n for _, n, _ in raw_shards)
    target_fp = em.texts_fingerprint(target_texts)
    identity = _identity(cfg, emb, pool, target_fp, raw_shards, params)
    pub = open_set(fs, set_root, set_name(cfg.name), identity, built_from=content_key(fs, root))
    in_set = cfg.model_path is None
    if in_set and not cfg.overwrite and pub.unchanged(SET_MODEL, identity):
        pub.keep(SET_MODEL)
        model_path = f"{set_dir}/{SET_MODEL}"
    elif in_set:
        model_path = fs.unstrip_protocol(pub.staged(SET_MODEL))
    else:
        model_path = cfg.model_path or ""
    mfs, mpath = fsspec.core.url_to_fs(model_path)
    reused = not cfg.overwrite and mfs.exists(mpath)
    if reused:
        from textsieve.models.format import read_header

        have = read_header(model_path).get("params", {}).get("identity")
        if have != identity:
            raise ValueError(f"{model_path} was fit with other settings or data; pass --overwrite to refit")
    else:
        training = {"fingerprint": identity, "documents": total, "target_documents": len(target_texts),
                    "target_fingerprint": target_fp, "targets": list(cfg.targets), "raw_shards": raw_shards,
                    "embeddings": pool.embed_key}
        _fit_model(cfg, emb, pool, target_texts, total, params, identity, model_path, training)
    if in_set and SET_MODEL not in pub.kept:
        pub.add(SET_MODEL, identity)
    model, head, arrays = em.load(model_path)
    ngram = None
    mu = head["params"].get("ngram_mu")
    if model.features == "combined":
        ngram = DsirModel(params, arrays["target_counts"], arrays["raw_counts"], len(target_texts), total,
                          cfg.smoothing)
    res = DsirFitResult(cfg.model_path or f"{set_dir}/{SET_MODEL}", set_dir, cols, total, len(target_texts),
                        reused, raw_documents=total)
    lo, hi = np.inf, -np.inf
    meta = {"stage": "dsir", "name": cfg.name, "model": identity, "columns": list(cols), "features": cfg.features,
            "embed_model": emb.name, "embed_fingerprint": emb.fingerprint, "doc_ngrams": em.DOC_NGRAMS}
    prog = Progress(f"dsir fit ({cfg.features}: weigh)", total, cfg.progress)
    start = 0
    for path, (rel, nrows, content) in zip(pool.shards, raw_shards):
        out = pub.staged(rel)
        shard_fp = f"{identity}:{content}"
        pos = np.arange(start, start + nrows)
        start += nrows
        done = not cfg.overwrite and pub.unchanged(rel, shard_fp)
        if done or (pub.adoptable(rel) and read_shard_meta(fs, out).get("model") == identity):
            if done:
                pub.keep(rel)
            else:
                pub.add(rel, shard_fp)
            res.shards_skipped.append(rel)
            prog.update(nrows, prog.docs + nrows)
            continue
        keys, texts = shard_texts(fs, path)
        E = pool.embeddings(rel, keys)
        if ngram is not None:
            ng, _, toks = _ngram_scores(ngram, texts, float(mu))
            X = em.features_matrix(E, ng)
        else:
            X, toks = E, _tokens(texts, params)
        lw = model.log_weights(X, pos) if len(texts) else np.zeros(0)
        if len(lw):
            lo, hi = min(lo, float(lw.min())), max(hi, float(lw.max()))
        table = keys.append_column(cols[0], pa.array(lw, pa.float64()))
        table = table.append_column(cols[1], pa.array(lw / em.DOC_NGRAMS, pa.float64(), mask=toks == 0))
        table = table.append_column(cols[2], pa.array(toks, pa.int64()))
        write_parquet_with_metadata(fs, out, table, {META_KEY: json.dumps(meta).encode()})
        pub.add(rel, shard_fp)
        res.shards_written.append(rel)
        prog.update(nrows, prog.docs + nrows)
    prog.close()
    pub.commit()
    res.weight_range = (lo, hi) if res.shards_written else (0.0, 0.0)
    res.seconds = time.perf_counter() - t0
    return res
