"""The per-batch unit of `annotate`: documents in, one Arrow record batch of attributes out.

It runs in worker processes (or in-process with one worker). Process-wide state (selected
signals, word-list tables, loaded models) is set once by `init_worker`, so a task carries only
documents. Models travel as (name, path) pairs and are loaded once per worker process: loaded
models can be large and are not always picklable.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from textsieve import native
from textsieve.dedup import minhash
from textsieve.exec.arrow_memory import lean_arrow_memory
from textsieve.io.arrow_arrays import numeric_array, repeated_string, string_array
from textsieve.io.attributes import LENGTH_COLUMN, SCORE_SUFFIX
from textsieve.signals import REGISTRY, Signal
from textsieve.signals.spans import span_type, to_arrow
from textsieve.stages.annotate.lang import (
    AUTO_LANG,
    attach_counts,
    attach_lang_auto,
    confidence,
    count_lacking,
    fall_back,
    lacking_lists,
    null_where_lacking,
)
from textsieve.text.views import BatchViews, WordListTables

MINHASH_GROUP = "minhash"


@dataclass
class BatchTask:
    """A slice of one shard: parallel lists of document fields."""

    shard: str  # the shard's rel name
    ids: list[str]
    rows: list[int]
    texts: list[str]
    langs: list[str | None]  # AUTO_LANG: detect with the language-id model
    urls: list[str | None] = field(default_factory=list)  # empty: no URLs known
    metas: list[dict] = field(default_factory=list)  # empty: not shipped (no selected signal needs it)
    bytes_mark: int = 0  # reader position after this batch, for progress
    last: bool = False  # the shard's final task: its output can be closed


@dataclass(frozen=True)
class WorkerSetup:
    signals: tuple[str, ...]
    minhash: tuple[str, ...]  # MinHash modes: "rpv2" (signature_sim*), "fast" (ts_fastsig_sim*)
    stop_words: dict[str, frozenset[str]]
    bad_words: dict[str, frozenset[str]]
    models: tuple[tuple[str, str], ...] = ()  # (user name, path) of each --models
    model_signals: tuple[str, ...] = ()  # selected signals contributed by those models, in order
    lang_model: str | None = None  # name of the language-id model that resolves AUTO_LANG


_STATE: dict = {}
_LOADED: dict[tuple[tuple[str, str], ...], tuple[dict[str, object], dict[str, Signal]]] = {}


def load_models(models: tuple[tuple[str, str], ...]) -> tuple[dict[str, object], dict[str, Signal]]:
    """Load each model and collect its signals: ({name: loaded}, {signal name: Signal})."""
    if not models:
        return {}, {}
    if models in _LOADED:  # the main process loads them once for the schema and again to warm up
        return _LOADED[models]
    from textsieve.models.registry import model_signals, resolve_model

    loaded: dict[str, object] = {}
    signals: dict[str, Signal] = {}
    for name, path in models:
        kind, obj, _ = resolve_model(name, path)
        loaded[name] = obj
        for sig in model_signals(kind, name, obj):
            if sig.name in signals or sig.name in REGISTRY:
                raise ValueError(f"--models {name}={path}: signal {sig.name!r} is already produced by "
                                 "another model or a built-in signal; rename the model")
            signals[sig.name] = sig
    _LOADED.clear()
    _LOADED[models] = (loaded, signals)
    return loaded, signals


def init_worker(setup: WorkerSetup) -> None:
    lean_arrow_memory()
    _STATE["setup"] = setup
    _STATE["tables"] = WordListTables(setup.stop_words, setup.bad_words)
    _STATE["models"], _STATE["model_sigs"] = load_models(setup.models)




def minhash_columns(modes: tuple[str, ...] = ("rpv2",)) -> list[str]:
    cols = [minhash.signature_key(t) for t in minhash.THRESHOLDS] if "rpv2" in modes else []
    if "fast" in modes:
        from textsieve.dedup import fast_minhash  # numba: imported only when asked for

        cols += [fast_minhash.fast_signature_key(t) for t in minhash.THRESHOLDS]
    return cols


def score_column(signal: str) -> str:
    """The plain scalar twin of a doc-level span column: its single span's score. Rules and
    reports read it instead of decoding list<struct> spans (about 5x faster in DuckDB)."""
    return signal + SCORE_SUFFIX


def column_type(sig: Signal) -> pa.DataType:
    """Spans for float/int scores; a plain string column for `dtype="str"` model signals
    (RPv2 spans hold numbers only, so a language code cannot be a span score)."""
    return pa.string() if sig.dtype == "str" else span_type(sig.dtype)


def output_schema(signals: tuple[str, ...], with_minhash: tuple[str, ...],
                  model_sigs: dict[str, Signal] | None = None, model_signal_names: tuple[str, ...] = ()) -> pa.Schema:
    """The attribute shard schema: id, shard, row, `ts_length`, one span column per signal, the
    model signals, MinHash bands, then a scalar `<name>__score` twin of every doc-level signal."""
    fields = [pa.field("id", pa.string(), nullable=False), pa.field("shard", pa.string()),
              pa.field("row", pa.int64()), pa.field(LENGTH_COLUMN, pa.int64())]
    model_sigs = model_sigs or {}  # None: no model signals are named
    sigs = [REGISTRY[name] for name in signals] + [model_sigs[name] for name in model_signal_names]
    fields += [pa.field(sig.name, column_type(sig)) for sig in sigs]
    fields += [pa.field(col, pa.list_(pa.binary())) for col in minhash_columns(with_minhash)]
    fields += [pa.field(score_column(sig.name), pa.int64() if sig.dtype == "int" else pa.float64())
               for sig in sigs if sig.level == "doc" and sig.dtype != "str"]
    return pa.schema(fields)


def annotate_batch(task: BatchTask) -> pa.RecordBatch:
    """Compute every selected signal for the documents of `task`."""
    setup: WorkerSetup = _STATE["setup"]
    views = BatchViews(task.texts, task.langs, _STATE["tables"], task.urls or None, _STATE["models"],
                       task.metas or None)
    auto: tuple[Counter[str], dict[str, list[float]]] | None = None
    if setup.lang_model is not None and AUTO_LANG in task.langs:
        from textsieve.models.langid import batch_predictions

        detected, probs, alternatives = batch_predictions(views, setup.lang_model)
        listed = frozenset(setup.stop_words) | frozenset(setup.bad_words)
        rows = [i for i, g in enumerate(task.langs) if g == AUTO_LANG]  # others have a language of their own
        det, p = [detected[i] for i in rows], probs[rows]
        alt, alt_p = alternatives(listed)
        used, moved = fall_back(det, p, ([alt[i] for i in rows], alt_p[rows]), listed)
        langs = list(task.langs)
        for i, lang in zip(rows, used):
            langs[i] = lang
        views.langs = langs
        auto = (moved, confidence(det, p))
    n = views.n_docs
    columns: list[pa.Array] = [
        string_array(task.ids),
        repeated_string(task.shard, n),
        numeric_array(task.rows, pa.int64()),
        numeric_array(views.lengths, pa.int64()),
    ]
    model_sigs: dict[str, Signal] = _STATE["model_sigs"]
    minhash_cols: list[pa.Array] | None = None
    sigs = [REGISTRY[name] for name in setup.signals] + [model_sigs[name] for name in setup.model_signals]
    # A language without the list a signal needs gets null there, not RPv2's 0.0 (annotate_lang).
    lacking = lacking_lists(views.langs, {need for sig in sigs for need in sig.word_lists}, setup.stop_words,
                            setup.bad_words)
    # document-level signals and MinHash first, then the normalized views are dropped before
    # the line-level signals, which read only the raw scan: their span columns are the batch's
    # largest (a 30 MB document: 100 MB), and they need not sit beside the normalized copies
    outputs: list[pa.Array | None] = [None] * len(sigs)
    scalars: list[pa.Array] = []
    for i in sorted(range(len(sigs)), key=lambda i: sigs[i].level == "line"):
        sig = sigs[i]
        if sig.level == "line" and setup.minhash and minhash_cols is None:
            minhash_cols = _minhash(views, setup.minhash)
        if sig.level == "line":
            views.release("normalized_utf8", "normalized", "_words")
        scores = null_where_lacking(sig, sig.fn(views), lacking)
        if sig.dtype == "str":
            outputs[i] = string_array(list(scores.values), scores.valid)
            continue
        outputs[i] = to_arrow(sig, scores, views)
        if sig.level == "doc":
            scalars.append(numeric_array(scores.values, pa.int64() if sig.dtype == "int" else pa.float64(),
                                         scores.valid))
    columns += [c for c in outputs if c is not None]
    if setup.minhash:
        columns += minhash_cols if minhash_cols is not None else _minhash(views, setup.minhash)
    batch = attach_counts(pa.RecordBatch.from_arrays(columns + scalars, schema=_schema(setup)),
                          count_lacking(views.langs, lacking))
    return batch if auto is None else attach_lang_auto(batch, *auto)


def _minhash(views: BatchViews, modes: tuple[str, ...]) -> list[pa.Array]:
    """The MinHash band columns of `modes` (over the normalized UTF-8 view)."""
    buf, off = views.normalized_utf8
    columns: list[pa.Array] = []
    if "rpv2" in modes:
        signature, valid = minhash.signatures(buf, off)
        columns += [minhash.bands_arrow(signature, valid, t) for t in minhash.THRESHOLDS]
    if "fast" in modes:
        from textsieve.dedup import fast_minhash

        columns += list(fast_minhash.fast_minhash_columns(buf, off).values())
    return columns


def _schema(setup: WorkerSetup) -> pa.Schema:
    schema = _STATE.get("schema")
    if schema is None or _STATE.get("schema_setup") is not setup:
        schema = output_schema(setup.signals, setup.minhash, _STATE["model_sigs"], setup.model_signals)
        _STATE["schema"], _STATE["schema_setup"] = schema, setup
    return schema


#: signal groups computed by the C kernels alone when the native libraries are built
C_KERNEL_GROUPS = frozenset({"natural_language", "repetition", "lines", "content"})


def warm_up_here(setup: WorkerSetup, workers: int) -> bool:
    """Whether the main process should run `warm_up` before the pool starts. Its purpose is that
    several workers do not each compile the same numba kernels on a first run; with one worker it
    costs nothing (the first batch would pay it otherwise). When every kernel a run needs is C
    (the default signals and RPv2 MinHash, no models, the libraries built), there is nothing to
    share, and the main process of a 2-worker run paid ~0.2 s (tables, libraries, a batch) before
    the workers could start."""
    if workers <= 1 or setup.models or setup.lang_model or setup.minhash not in ((), ("rpv2",)):
        return True
    if any(REGISTRY[name].group not in C_KERNEL_GROUPS or not REGISTRY[name].builtin for name in setup.signals):
        return True
    kernels = (native.scan_raw, native.word_stats, native.normalize_collapse, native.bad_word_hits,
               native.rpv2_signatures)
    return any(kernel() is None for kernel in kernels)


def warm_up(setup: WorkerSetup) -> None:
    """Compile (or load from numba's cache) every kernel in this process, before workers start,
    so parallel workers do not all compile the same code at once on a first run."""
    init_worker(setup)
    annotate_batch(BatchTask("warm-up", ["a"], [0], ["Warm up the kernels: fourteen words are needed "
                                                     "for MinHash, so here they are, one two three."], ["en"],
                             ["https://example.com/warm-up"]))
