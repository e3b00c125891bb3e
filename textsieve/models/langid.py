"""Language identification: the `ts_lang` / `ts_lang_score` signals and `annotate --lang auto`.

Two models, one kind (`langid`):

* built-in `builtin:py3langid` (the `py3langid` wheel: a naive Bayes model over byte n-grams,
  97 languages, ships its weights, works offline). Its byte-DFA walk is pure Python in the
  package (~400-700 docs/s on web text); we run the same walk and the same scoring in one C pass
  over the whole batch (`native/langid_kernels.c`; numba kernels, same doubles, without the C
  library) and fall back to the package's `classify` if its internals change. The model's arrays
  are read once per machine and then mapped from the user's cache (`langid_tables`). A test
  checks that labels equal `classify`'s on the dev corpus and probabilities agree within 1e-3
  (py3langid sums float32 in BLAS order, we sum in float64).
* fastText `lid.176.bin` / `.ftz` (CCNet's model) when the user gives `--models lid=PATH` and a
  fastText wheel is installed.

Text preparation is CCNet's (spec §6): newlines are deleted, lines glued with no space.
Output, per document: `ts_lang` is a plain string column (the ISO 639 code, fastText's
`__label__` removed), not an RPv2 span column, because RPv2 span scores are numbers;
`ts_lang_score` is a doc-level span with the top-1 probability, round8 (CCNet rounds its
`ccnet_language_score` to 2 decimals; we keep full precision and let filters round). A document
whose prepared text is empty (no features) gets null in both.

Signal names: a model named `lang` or `lid` gives `ts_lang`, `ts_lang_score`; any other name N
gives `ts_lang_N`, `ts_lang_N_score`, so two language-id models can run side by side.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable

import numpy as np

from textsieve.models.fasttext_io import fasttext_labels_count, load_fasttext, predict_ranked
from textsieve.models.langid_tables import LangIdTables, cache_dir, load_cached, save, tables_from_identifier
from textsieve.models.registry import register_model_kind
from textsieve.native import langid_scores
from textsieve.signals.registry import DocScores, Signal, round8
from textsieve.text.batch_encoding import encode_batch
from textsieve.text.views import BatchViews

KIND = "langid"
PLAIN_NAMES = ("lang", "lid")
ALTERNATIVES_K = 10  # fastText: the best language of a set is looked for among the top 10

#: given a set of language codes, the most probable of them for each document and its
#: probability (None / nan where none of them is possible): `annotate --lang auto`'s fallback
Alternatives = Callable[[frozenset[str]], tuple[list[str | None], np.ndarray]]


def prepare(text: str) -> str:
    """CCNet's language-id input: the text with every '\\n' deleted."""
    return text.replace("\n", "")


class FastTextLangId:
    """A fastText language-id model (`lid.176.bin`)."""

    def __init__(self, path: str):
        self.model = load_fasttext(path)

    def predict(self, texts: list[str]) -> tuple[list[str | None], np.ndarray]:
        langs, probs, _ = self.predict_full(texts)
        return langs, probs

    def predict_full(self, texts: list[str]) -> tuple[list[str | None], np.ndarray, Alternatives]:
        """`predict` plus the best language of a given set for each text (among the top 10)."""
        prepared = [prepare(t).strip() for t in texts]
        keep = [i for i, t in enumerate(prepared) if t]
        ranked = predict_ranked(self.model, [prepared[i] for i in keep], k=ALTERNATIVES_K)
        out: list[str | None] = [None] * len(texts)
        p = np.full(len(texts), np.nan)
        top: list[list[tuple[str, float]]] = [[] for _ in texts]
        for j, i in enumerate(keep):
            top[i] = ranked[j]
            if ranked[j]:
                out[i], p[i] = ranked[j][0]

        def best_of(allowed: frozenset[str]) -> tuple[list[str | None], np.ndarray]:
            alt: list[str | None] = [None] * len(texts)
            q = np.full(len(texts), np.nan)
            for i, pairs in enumerate(top):
                for label, prob in pairs:
                    if label in allowed:
                        alt[i], q[i] = label, prob
                        break
            return alt, q

        return out, p, best_of


def _batch_scores(buf: np.ndarray, off: np.ndarray, t: LangIdTables) -> tuple[np.ndarray, np.ndarray]:
    """py3langid's raw naive Bayes scores (documents x classes, float64) of the documents
    ``buf[off[d]:off[d + 1]]`` and whether each reached any feature (none: py3langid guesses
    uniformly; we say unknown): the C kernel, or the numba pair computing the same doubles."""
    kernel = langid_scores()
    n_docs, n_classes = len(off) - 1, t.ptc.shape[1]
    if kernel is not None:
        scores = np.empty((n_docs, n_classes), dtype=np.float64)
        n_features = np.empty(n_docs, dtype=np.int64)
        arrays = (buf, off, t.nextmove, t.rowbase, t.out_feat, t.ptc, t.pc)
        assert all(a.flags.c_contiguous for a in arrays)
        if kernel(buf.ctypes.data, off.ctypes.data, n_docs, t.nextmove.ctypes.data, t.rowbase.ctypes.data,
                  t.out_feat.ctypes.data, t.ptc.shape[0], t.ptc.ctypes.data, t.pc.ctypes.data, n_classes,
                  scores.ctypes.data, n_features.ctypes.data):
            raise MemoryError("language id: no memory for the batch's feature table")
        return scores, n_features > 0
    from textsieve.models import langid_numba  # here: numba is imported only without the C library

    feats, counts, feat_off = langid_numba.walk(buf, off, t.nextmove, t.rowbase, t.out_feat, t.ptc.shape[0])
    return langid_numba.scores(feats, counts, feat_off, t.ptc, t.pc), feat_off[1:] > feat_off[:-1]


class Py3LangId:
    """The py3langid model with normalized probabilities, scored batch-wise."""

    def __init__(self) -> None:
        try:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier
        except ImportError:
            raise ValueError("language id (--lang auto, ts_lang) needs the `py3langid` package: "
                             "pip install 'py3langid>=0.4,<0.5'; or give a fastText model: --models lid=lid.176.bin") \
                from None

        folder = cache_dir()
        #: the model's arrays for the batch kernels (None: py3langid's internals changed, use `ident`)
        self.tables = load_cached(folder) if folder is not None else None
        self.ident = None
        if self.tables is None:
            self.ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            if all(hasattr(self.ident, a) for a in ("tk_nextmove", "tk_row", "tk_output", "nb_ptc", "nb_pc",
                                                    "nb_classes", "_alias_pairs")):
                self.tables = tables_from_identifier(self.ident)
                if folder is not None:
                    save(self.tables, folder)
        self.fast = self.tables is not None

    @staticmethod
    def _nfc(text: str) -> str:
        """py3langid's own input preparation before its UTF-8 encoding (lowercase all-caps text, NFC)."""
        if text.isupper():
            text = text.lower()
        return unicodedata.normalize("NFC", text)

    def predict(self, texts: list[str]) -> tuple[list[str | None], np.ndarray]:
        langs, probs, _ = self.predict_full(texts)
        return langs, probs

    def predict_full(self, texts: list[str]) -> tuple[list[str | None], np.ndarray, Alternatives]:
        """`predict` plus the best language of a given set for each text, from the same scores."""
        prepared = [prepare(t) for t in texts]
        if not self.fast:
            ident = self.ident
            assert ident is not None
            ranked = [ident.rank(t) if t.strip() else [] for t in prepared]
            slow_langs: list[str | None] = [r[0][0] if r else None for r in ranked]
            top = np.array([r[0][1] if r else math.nan for r in ranked], dtype=np.float64)

            def best_slow(allowed: frozenset[str]) -> tuple[list[str | None], np.ndarray]:
                picks = [next(((g, p) for g, p in r if g in allowed), (None, math.nan)) for r in ranked]
                return [g for g, _ in picks], np.array([p for _, p in picks], dtype=np.float64)

            return slow_langs, top, best_slow
        tables = self.tables
        assert tables is not None
        buf, off = encode_batch([self._nfc(t) for t in prepared])
        scores, has_features = _batch_scores(buf, off, tables)
        scores *= (1.0 / np.sqrt(np.maximum(np.diff(off), 1)))[:, None]  # py3langid's temperature
        scores -= scores.max(axis=1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        for i, j in tables.alias_pairs:  # labels with two columns (srl -> sr): fold into the first
            scores[:, i] += scores[:, j]
            scores[:, j] = 0.0
        best = scores.argmax(axis=1)
        langs: list[str | None] = [tables.classes[b] if ok else None for b, ok in zip(best.tolist(), has_features)]
        probs = np.where(has_features, scores[np.arange(len(texts)), best], np.nan)
        classes = tables.classes

        def best_of(allowed: frozenset[str]) -> tuple[list[str | None], np.ndarray]:
            cols = np.array([c for c, g in enumerate(classes) if g in allowed], dtype=np.int64)
            if not len(cols):
                return [None] * len(texts), np.full(len(texts), np.nan)
            pick = cols[scores[:, cols].argmax(axis=1)]
            alt = [classes[c] if ok else None for c, ok in zip(pick.tolist(), has_features)]
            return alt, np.where(has_features, scores[np.arange(len(texts)), pick], np.nan)

        return langs, probs, best_of


def batch_predictions(v: BatchViews, name: str) -> tuple[list[str | None], np.ndarray, Alternatives]:
    """(language, probability, alternatives) of each document by model `name`, once per batch."""
    key = (KIND, name)
    if key not in v.cache:
        model = v.models[name]
        if not isinstance(model, (Py3LangId, FastTextLangId)):
            raise TypeError(f"model {name!r} is a {type(model).__name__}, not a language identifier")
        v.cache[key] = model.predict_full(v.texts)
    return v.cache[key]


def batch_languages(v: BatchViews, name: str) -> tuple[list[str | None], np.ndarray]:
    """(language, probability) of each document by model `name`, computed once per batch."""
    langs, probs, _ = batch_predictions(v, name)
    return langs, probs


def signal_names(name: str) -> tuple[str, str]:
    base = "ts_lang" if name in PLAIN_NAMES else f"ts_lang_{name}"
    return base, f"{base}_score"


def _signals(name: str, loaded: Py3LangId | FastTextLangId) -> list[Signal]:
    lang_name, score_name = signal_names(name)
    which = "py3langid" if isinstance(loaded, Py3LangId) else "fastText"

    def lang_fn(v: BatchViews) -> DocScores:
        langs, _ = batch_languages(v, name)
        return DocScores(np.array(langs, dtype=object), np.array([g is not None for g in langs], dtype=bool))

    def score_fn(v: BatchViews) -> DocScores:
        _, probs = batch_languages(v, name)
        ok = ~np.isnan(probs)
        return DocScores(round8(np.where(ok, probs, 0.0)), ok)

    return [
        Signal(lang_name, "doc", "str", "langid", f"top-1 language code by model {name!r} ({which}) on the text "
               "with newlines deleted (CCNet); plain string column", (), lang_fn),
        Signal(score_name, "doc", "float", "langid", f"probability of {lang_name} (model {name!r}), round8", (),
               score_fn),
    ]


def _load(path: str) -> Py3LangId | FastTextLangId:
    if path == "builtin:py3langid":
        return Py3LangId()
    return FastTextLangId(path)


def _is_fasttext_langid(path: str) -> bool:
    n = fasttext_labels_count(path)
    return n is not None and n > 2


register_model_kind(KIND, load=_load, signals=_signals, extensions=(".bin", ".ftz"), sniff=_is_fasttext_langid,
                    builtins=("py3langid",))
