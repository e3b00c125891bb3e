"""Learned quality filters: logistic regression over stored signals, applied as a recipe rule.

Why logistic regression on standardised features: it is what RPv2 suggests for learning a
filter from its signals, it trains in milliseconds on thousands of labelled documents, its
coefficients say which signals matter, and - the reason it is the only model here - its
probability is a closed formula that compiles to one SQL expression, so `select` applies it
inside the same DuckDB query as the hand-written rules without reading any text.

The model of one document with feature values x_i (see `textsieve.learned.features`):

    z_i = (coalesce(x_i, impute_i) - mean_i) / scale_i
    p   = 1 / (1 + exp(-(intercept + sum_i coef_i * z_i)))

`impute_i` is the training median of the feature (missing values are rare: e.g. the mean word
length of a document without words). `predict` (NumPy) and `predict_sql` (DuckDB) evaluate the
same operations in the same order, so they agree to ~1e-15.

The model file is JSON: {"kind": "textsieve.learned_filter", "version": 1, "textsieve_version",
"training": {"fingerprint", sources, counts}, "parameters", "cv": {metrics},
"features": [{"name", "impute", "mean", "scale", "coef"}], "intercept", "top_signals"}.
Training (`train`, scikit-learn, imported lazily so applying a model never needs it) reads
labelled documents from annotate output folders: whole folders as one class (`--positive`,
`--negative`, each optionally narrowed by a SQL WHERE over its attribute columns), or one folder
whose source records carry a 0/1 label field (`--label-field meta.human_quality_label`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from textsieve._version import __version__
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.parquet_read import read_table
from textsieve.learned.features import columns_of, compute_features, feature_sql, parse_feature, sql_literal

KIND = "textsieve.learned_filter"
VERSION = 1


class ModelFileError(ValueError):
    """A model file that is missing, not JSON, or not a textsieve learned filter."""


@dataclass
class LearnedModel:
    """A fitted logistic-regression filter over document features (one entry per feature)."""

    features: list[str]
    impute: list[float]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    header: dict[str, Any] = field(default_factory=dict)  # training, parameters, cv, top_signals

    def __post_init__(self) -> None:
        n = len(self.features)
        if not all(len(v) == n for v in (self.impute, self.mean, self.scale, self.coef)):
            raise ModelFileError("features, impute, mean, scale and coef must have the same length")
        for name in self.features:
            parse_feature(name)  # fail early on a feature the SQL compiler cannot express

    @property
    def columns(self) -> list[str]:
        """The attribute columns the model reads."""
        return columns_of(self.features)

    def predict(self, features: dict[str, np.ndarray]) -> np.ndarray:
        """Probability of the positive class per document, given each feature's values
        (NaN = missing, imputed like SQL NULL)."""
        missing = [n for n in self.features if n not in features]
        if missing:
            raise KeyError(f"predict needs the features {missing}")
        z = np.full(len(features[self.features[0]]) if self.features else 0, float(self.intercept))
        for name, imp, mu, sd, w in zip(self.features, self.impute, self.mean, self.scale, self.coef):
            x = np.asarray(features[name], dtype=np.float64)
            x = np.where(np.isnan(x), imp, x)
            z = z + w * ((x - mu) / sd)
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(-z))

    def predict_table(self, table) -> np.ndarray:
        """Probabilities for the documents of an attribute table (pyarrow.Table)."""
        return self.predict(compute_features(table, self.features))

    def predict_sql(self, feature_sql_fn: Callable[[str], str] | None = None) -> str:
        """A DuckDB SQL expression for the probability of the positive class. `feature_sql_fn`
        maps a feature name to SQL for its value (NULL when missing); by default each feature
        is compiled over the attribute columns by name (`features.feature_sql`)."""
        fn = feature_sql_fn or feature_sql
        z = [sql_literal(self.intercept)]
        for name, imp, mu, sd, w in zip(self.features, self.impute, self.mean, self.scale, self.coef):
            x = f"COALESCE({fn(name)}, {sql_literal(imp)})"
            z.append(f"{sql_literal(w)} * (({x} - {sql_literal(mu)}) / {sql_literal(sd)})")
        return f"(1.0 / (1.0 + exp(-({' + '.join(z)}))))"

    def top_signals(self, k: int = 10) -> list[tuple[str, float]]:
        """Features by |standardised coefficient|, largest first, with the signed coefficient
        (positive: more of it makes the positive class likelier)."""
        order = np.argsort(-np.abs(np.asarray(self.coef)), kind="stable")[:k]
        return [(self.features[i], float(self.coef[i])) for i in order]

    def to_dict(self) -> dict[str, Any]:
        h = dict(self.header)
        return {
            "kind": KIND, "version": VERSION, "textsieve_version": h.pop("textsieve_version", __version__),
            **{k: h[k] for k in ("training", "parameters", "cv") if k in h},
            "features": [{"name": n, "impute": i, "mean": m, "scale": s, "coef": c} for n, i, m, s, c
                         in zip(self.features, self.impute, self.mean, self.scale, self.coef)],
            "intercept": self.intercept,
            "top_signals": [{"name": n, "coef": c} for n, c in self.top_signals()],
        }

    def save(self, path: str | Path) -> None:
        """Write the model file atomically (temp file + rename)."""
        import fsspec

        from textsieve.io.atomic import atomic_open

        fs, p = fsspec.core.url_to_fs(str(path))
        with atomic_open(fs, p, "wb") as fh:
            fh.write((json.dumps(self.to_dict(), indent=1) + "\n").encode("utf-8"))


def load_model(path: str | Path) -> Any:
    """The model of a file: a `LearnedModel` (version 1, SQL) or a `fusion.FusedModel` (version 2)."""
    """Read a model file written by `LearnedModel.save` / `textsieve learn`."""
    import fsspec

    try:
        with fsspec.open(str(path), "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError as exc:
        raise ModelFileError(f"{path}: model file not found") from exc
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path}: not a JSON model file ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ModelFileError(f"{path}: not a textsieve learned filter (kind must be {KIND!r})")
    if doc.get("version") == 2:
        from textsieve.learned.fusion import from_dict

        try:
            return from_dict(doc)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: malformed model file ({exc!r})") from exc
    if doc.get("version") != VERSION:
        raise ModelFileError(f"{path}: model file version {doc.get('version')!r} is not supported "
                             f"(this textsieve reads version {VERSION})")
    try:
        feats = doc["features"]
        header = {k: doc[k] for k in ("textsieve_version", "training", "parameters", "cv") if k in doc}
        return LearnedModel([f["name"] for f in feats], [float(f["impute"]) for f in feats],
                            [float(f["mean"]) for f in feats], [float(f["scale"]) for f in feats],
                            [float(f["coef"]) for f in feats], float(doc["intercept"]), header)
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: malformed model file ({exc!r})") from exc


# --------------------------------------------------------------------------- training


@dataclass
class LabelledSource:
    """Where labelled documents come from: an annotate output folder whose documents all get
    `label`, or (label None) whose source records hold the label in `label_field`. `where` is an
    optional DuckDB WHERE clause over the attribute columns (id, shard, row, signals; and
    `label` in label-field mode) selecting which documents take part."""

    directory: str
    label: int | None = None
    label_field: str | None = None
    where: str | None = None

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class LearnConfig:
    """What `textsieve learn` fills. `features` None = `features.default_features`."""

    sources: list[LabelledSource]
    output: str | None = None
    features: list[str] | None = None
    C: float | str = 0.1  # or "auto": chosen by nested CV inside the training rows (`learned.regularisation`)
    class_weight: str | None = "balanced"
    folds: int = 5
    seed: int = 0
    # feature sets (`learned.views`): signals alone with logistic = the SQL model above; any other
    # combination or `model="boosted"` = a `fusion.FusedModel`, applied by `textsieve learn apply`
    feature_sets: list[str] | None = None  # None = ["signals"]
    model: str = "logistic"  # logistic | boosted
    embed_model: str | None = None  # which sets/embed_<model> set (None: the folder's only one)
    name: str | None = None  # the fused model's name (its set sets/learned_NAME); default: the output's stem


@dataclass
class LearnResult:
    model: Any  # LearnedModel, or fusion.FusedModel
    n_positive: int
    n_negative: int
    unlabelled: int
    oof_probability: np.ndarray  # out-of-fold probability of every training document
    labels: np.ndarray


def _label(value: Any, where: str) -> int | None:
    """0/1 from a record's label value; None when absent (the document is not used)."""
    from textsieve.io.fields import MISSING

    if value is MISSING or value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false"):
        return int(value.strip().lower() in ("1", "true"))
    raise ValueError(f"{where}: label {value!r} is not 0/1 (or true/false)")


def read_source(src: LabelledSource, features: list[str] | None, need_signals: bool = True) -> tuple[Any, list[str]]:
    """The attribute table of one source (labels in a `label` column, filtered by `where`; each
    row's annotate shard and position in `__rel`, `__pos`, for the other feature sets)."""
    import duckdb
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    from textsieve.io.attributes import attribute_shards, read_shard_meta, shard_rel, source_documents
    from textsieve.io.fields import FieldPath
    from textsieve.learned.features import default_features

    fs, shards = attribute_shards(src.directory)
    with fs.open(shards[0], "rb") as fh:
        schema = pq.ParquetFile(fh).schema_arrow
    names = list(features) if features is not None else default_features(schema)
    if not names and need_signals:
        raise ValueError(f"{src.directory}: no signal columns to learn from (was it annotated with --signals?)")
    cols = ["id", "shard", "row"] + [c for c in columns_of(names) if c not in ("id", "shard", "row")]
    missing = [c for c in cols if c not in schema.names]
    if missing:
        raise ValueError(f"{src.directory}: attribute column(s) {missing} not found; features "
                         f"can use: {', '.join(n for n in schema.names if n not in ('id', 'shard', 'row'))}")
    tables = []
    root = fsspec.core.url_to_fs(src.directory)[1].rstrip("/")
    for path in shards:
        with fs.open(path, "rb") as fh:
            t = read_table(fh, columns=cols)
        t = t.append_column("__rel", pa.array([shard_rel(root, path)] * t.num_rows, pa.string()))
        t = t.append_column("__pos", pa.array(np.arange(t.num_rows, dtype=np.int64)))
        if src.label is not None:
            labels = np.full(t.num_rows, src.label, dtype=np.int64)
            t = t.append_column("label", pa.array(labels))
        elif src.label_field is not None:
            fp = FieldPath(src.label_field)
            by_row = {d.row: _label(fp.get(d.meta), f"{path}: source row {d.row} field {src.label_field}")
                      for d in source_documents(read_shard_meta(fs, path))}
            t = t.append_column("label", pa.array([by_row.get(r) for r in t.column("row").to_pylist()],
                                                  type=pa.int64()))
        else:
            raise ValueError(f"{src.directory}: a labelled source needs a label or a label field")
        tables.append(t)
    table = pa.concat_tables(tables, promote_options="permissive")
    if src.where:
        from textsieve.io.duckdb_spill import point_spill

        con = point_spill(duckdb.connect())
        con.register("attributes", table)
        try:
            table = con.sql(f"SELECT * FROM attributes WHERE {src.where}").to_arrow_table()
        except duckdb.Error as exc:
            raise ValueError(f"{src.directory}: bad --where clause {src.where!r}: {exc}") from exc
    return table, names


def train(cfg: LearnConfig) -> LearnResult:
    """Fit the filter, estimate its quality by stratified k-fold cross-validation (imputation
    and scaling refit inside every fold), refit on all documents, and save it if `output`."""
    import xxhash
    from sklearn.impute import SimpleImputer
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, log_loss, roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import StandardScaler

    if not cfg.sources:
        raise ValueError("learn needs labelled documents: --positive and --negative, or --input with --label-field")
    from textsieve.learned.views import parse_views

    views = parse_views(cfg.feature_sets)
    if cfg.model not in ("logistic", "boosted"):
        raise ValueError(f"unknown model {cfg.model!r}; choose from logistic, boosted")
    from textsieve.learned.regularisation import AUTO, C_GRID, INNER_FOLDS, fitted_C, logistic, parse_C

    parse_C(cfg.C)
    if views != ["signals"] or cfg.model != "logistic":
        from textsieve.learned.train_fused import train_fused

        return train_fused(cfg, views)
    names: list[str] = []  # set by the first source (cfg.features or its defaults); the others must have them
    blocks, ys, ids = [], [], []
    unlabelled = 0
    for src in cfg.sources:
        table, names = read_source(src, names or cfg.features)
        y = to_numpy(table.column("label"))
        known = ~np.isnan(y.astype(np.float64))
        unlabelled += int((~known).sum())
        feats = compute_features(table, names)
        blocks.append(np.column_stack([feats[n] for n in names])[known])
        ys.append(y[known].astype(np.int64))
        ids += [i for i, k in zip(table.column("id").to_pylist(), known) if k]
    X, y = np.vstack(blocks), np.concatenate(ys)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if min(n_pos, n_neg) < 2:
        raise ValueError(f"need at least 2 labelled documents of each class, got {n_pos} positive and "
                         f"{n_neg} negative")
    folds = max(2, min(cfg.folds, n_pos, n_neg))

    inner_min = min(n_pos, n_neg) * (folds - 1) // folds  # the smaller class in an outer training fold

    def make() -> Pipeline:
        return make_pipeline(SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler(),
                             logistic(cfg.C, cfg.class_weight, cfg.seed, inner_min))

    cv = StratifiedKFold(folds, shuffle=True, random_state=cfg.seed)
    from threadpoolctl import threadpool_limits

    # One BLAS/OpenMP thread (as `fusion.fit_fused`): on a busy machine more threads made the
    # 210 small fits of C = "auto" take 25 s instead of 2 s.
    with threadpool_limits(1):
        oof = cross_val_predict(make(), X, y, cv=cv, method="predict_proba")[:, 1]
        pipe = make().fit(X, y)
    fold_acc = [float(accuracy_score(y[te], oof[te] > 0.5)) for _, te in cv.split(X, y)]
    metrics = {"folds": folds, "accuracy": float(accuracy_score(y, oof > 0.5)),
               "balanced_accuracy": float(balanced_accuracy_score(y, oof > 0.5)),
               "auc": float(roc_auc_score(y, oof)), "log_loss": float(log_loss(y, oof)),
               "majority_baseline": max(n_pos, n_neg) / len(y), "fold_accuracy": fold_acc}
    imp, sc, lr = pipe.steps[0][1], pipe.steps[1][1], pipe.steps[2][1]
    h = xxhash.xxh64()
    for part in (json.dumps(ids).encode(), y.tobytes(), np.ascontiguousarray(X).tobytes(), json.dumps(names).encode()):
        h.update(part)
    header = {
        "textsieve_version": __version__,
        "training": {"fingerprint": h.hexdigest(), "sources": [s.describe() for s in cfg.sources],
                     "n_positive": n_pos, "n_negative": n_neg, "unlabelled_skipped": unlabelled},
        "parameters": {"model": "logistic_regression", "C": fitted_C(lr),
                       **({"C_search": {"grid": list(C_GRID), "inner_folds": INNER_FOLDS, "scoring": "roc_auc"}}
                          if cfg.C == AUTO else {}), "class_weight": cfg.class_weight,
                       "impute": "median", "cv_folds": folds, "seed": cfg.seed},
        "cv": metrics,
    }
    model = LearnedModel(list(names), [float(v) for v in imp.statistics_], [float(v) for v in sc.mean_],
                         [float(v) for v in sc.scale_], [float(v) for v in lr.coef_[0]],
                         float(lr.intercept_[0]), header)
    if cfg.output:
        model.save(cfg.output)
    return LearnResult(model, n_pos, n_neg, unlabelled, oof, y)
