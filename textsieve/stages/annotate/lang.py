"""Languages and word lists in `annotate`: which `lang` values are valid, and what a document
whose language has no word list gets.

RPv2 computes `rps_doc_stop_word_fraction` and `rps_doc_ldnoobw_words` against per-language
lists and gives 0.0 where a language has none. A 0.0 looks like a measurement, so a stop-word
rule would silently drop every such document. textsieve therefore writes a null score for the
signals that need a list wherever the document's language has none (a null score fails every
recipe rule, see `textsieve.recipes.language`), counts those documents per language, and warns
once per run. Documents in languages with lists keep RPv2's exact values.

With `lang: auto` a detected language without lists is often a near miss on short or odd text:
English Usenet headers and news briefs come out as Nigerian Pidgin (`pcm`), Latin or Welsh at a
low probability with English close behind. The fallback rule (`fall_back`): a document whose
detected language has no word list takes the most probable language that has one when that
language's probability is at least `FALLBACK_SHARE` (half) of the detected one's; otherwise it
keeps its language and gets nulls. `ts_lang` still holds what the model said; the fallbacks
(`pcm->en: 13`) and each detected language's documents and mean probability are counted in the
shard footers and `annotate.json` (`lang_fallbacks`, `lang_confidence`).

The counting happens in the workers (only they know a language that `lang: auto` detected);
the counts travel back to the main process in the record batch's schema metadata, so
`annotate_batch` keeps returning one plain record batch, through any executor.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.signals.registry import REGISTRY, DocScores, Scores, Signal
from textsieve.signals.resources import RPV2_LANGS, WordLists, load_word_lists, resolve_resources_dir

AUTO_LANG = "auto"  # `lang: auto`: detect each document's language with the language-id model
NO_LANG = "(none)"  # the count key of documents without any language (no field, nothing detected)
BATCH_META_KEY = b"textsieve.langs_without_word_lists"
LANG_META_KEY = b"textsieve.lang_auto"  # a batch's fallbacks and per-language confidence (`lang: auto`)
#: `lang: auto` falls back to the best language with word lists when its probability is at least
#: this share of the detected language's (see the module doc); part of annotate's fingerprint
FALLBACK_SHARE = 0.5
FALLBACK_RULE = f"best-listed>={FALLBACK_SHARE}*top"

# English and native names people type for RPv2's languages, for a "did you mean".
_NAMES = {"english": "en", "german": "de", "deutsch": "de", "french": "fr", "francais": "fr",
          "français": "fr", "spanish": "es", "espanol": "es", "español": "es", "castellano": "es",
          "italian": "it", "italiano": "it"}


class LanguageError(TextsieveError, ValueError):
    """`lang` is neither a language with word lists nor `auto`."""


def valid_langs(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The values `lang` accepts: RPv2's five, the other languages with installed lists, `auto`."""
    return RPV2_LANGS + tuple(extra) + (AUTO_LANG,)


def check_lang(lang: str | None, resources: str | None) -> None:
    """Raise `LanguageError` (one line, listing the valid codes) unless `lang` is None (no
    fallback language), `auto`, one of RPv2's five, or a language the resources folder has a
    list for. An unknown code used to give every document a 0.0 stop-word fraction."""
    if lang is None or lang in RPV2_LANGS or lang == AUTO_LANG:
        return
    extra = load_word_lists(resolve_resources_dir(resources)).extra_langs
    if lang in extra:
        return
    valid = valid_langs(extra)
    typed = lang.strip().lower()
    guess = typed if typed in valid else _NAMES.get(typed)
    hint = f" (did you mean {guess!r}?)" if guess else ""
    raise LanguageError(
        f"lang (--lang) {lang!r} is not a language code textsieve has word lists for{hint}; valid codes: "
        f"{', '.join(valid)} ('auto' detects each document's language; add lists for another language "
        "with `textsieve resources add DIR`)")


# --------------------------------------------------------------------------- in the workers


def fall_back(detected: list[str | None], probs: np.ndarray, alternatives: tuple[list[str | None], np.ndarray],
              listed: frozenset[str]) -> tuple[list[str | None], Counter[str]]:
    """(the languages word-list signals use, {"pcm->en": documents}) under the fallback rule
    (module doc): `alternatives` is the most probable language of `listed` per document and its
    probability."""
    alt, alt_probs = alternatives
    out = list(detected)
    moved: Counter[str] = Counter()
    for i, lang in enumerate(detected):
        if lang is None or lang in listed or alt[i] is None:
            continue
        if alt_probs[i] >= FALLBACK_SHARE * probs[i]:
            out[i] = alt[i]
            moved[f"{lang}->{alt[i]}"] += 1
    return out, moved


def confidence(detected: list[str | None], probs: np.ndarray) -> dict[str, list[float]]:
    """{language: [documents, sum of top-1 probabilities]} of a batch, for `lang_confidence`."""
    out: dict[str, list[float]] = {}
    for lang, p in zip(detected, probs.tolist()):
        entry = out.setdefault(lang or NO_LANG, [0, 0.0])
        entry[0] += 1
        entry[1] += 0.0 if p != p else p  # nan: no features
    return out


def attach_lang_auto(batch: pa.RecordBatch, moved: Counter[str], conf: dict[str, list[float]]) -> pa.RecordBatch:
    """`batch` carrying a `lang: auto` batch's fallbacks and confidence in its schema metadata."""
    meta = dict(batch.schema.metadata or {})
    meta[LANG_META_KEY] = json.dumps({"fallbacks": dict(moved), "confidence": conf}).encode()
    return batch.replace_schema_metadata(meta)


def pop_lang_auto(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict]:
    """(`batch` without them, {"fallbacks": ..., "confidence": ...} or {})."""
    meta = batch.schema.metadata
    if not meta or LANG_META_KEY not in meta:
        return batch, {}
    meta = dict(meta)
    found = json.loads(meta.pop(LANG_META_KEY))
    return batch.replace_schema_metadata(meta or None), found


class LangTally:
    """Fallbacks and per-language confidence summed over batches (a shard, a run)."""

    def __init__(self) -> None:
        self.fallbacks: Counter[str] = Counter()
        self.docs: Counter[str] = Counter()
        self.prob_sum: dict[str, float] = {}

    def add(self, found: dict) -> None:
        self.fallbacks.update(found.get("fallbacks") or {})
        for lang, (n, total) in (found.get("confidence") or {}).items():
            self.docs[lang] += int(n)
            self.prob_sum[lang] = self.prob_sum.get(lang, 0.0) + float(total)

    def merge(self, other: LangTally) -> None:
        self.fallbacks.update(other.fallbacks)
        self.docs.update(other.docs)
        for lang, total in other.prob_sum.items():
            self.prob_sum[lang] = self.prob_sum.get(lang, 0.0) + total

    def record(self) -> dict:
        """{"lang_fallbacks": {...}, "lang_confidence": {lang: {docs, mean_score}}}, sorted."""
        conf = {lang: {"docs": n, "mean_score": round(self.prob_sum.get(lang, 0.0) / n, 4)}
                for lang, n in sorted(self.docs.items(), key=lambda kv: (-kv[1], kv[0]))}
        return {"lang_fallbacks": dict(sorted(self.fallbacks.items(), key=lambda kv: (-kv[1], kv[0]))),
                "lang_confidence": conf}


def lacking_lists(langs: list[str | None], needs: set[str], stop_words: dict[str, frozenset[str]],
                  bad_words: dict[str, frozenset[str]]) -> dict[str, np.ndarray]:
    """{need: mask of the documents whose language has no list of that kind} for each word-list
    kind (`Signal.needs`: "stop_words", "bad_words") that a selected signal needs."""
    tables = {"stop_words": stop_words, "bad_words": bad_words}
    return {need: np.fromiter((not lang or lang not in tables[need] for lang in langs), dtype=bool,
                              count=len(langs)) for need in sorted(needs)}


def null_where_lacking(sig: Signal, scores: Scores, lacking: dict[str, np.ndarray]) -> Scores:
    """`scores` with a null score for every document whose language lacks a list `sig` needs."""
    if not sig.word_lists or not isinstance(scores, DocScores):
        return scores
    mask = np.zeros(len(scores.values), dtype=bool)
    for need in sig.word_lists:
        mask |= lacking[need]
    if not mask.any():
        return scores
    valid = np.ones(len(mask), dtype=bool) if scores.valid is None else np.asarray(scores.valid, dtype=bool).copy()
    valid &= ~mask
    return DocScores(scores.values, valid)


def count_lacking(langs: list[str | None], lacking: dict[str, np.ndarray]) -> dict[str, int]:
    """{language: documents} of the documents that got a null word-list signal."""
    if not lacking:
        return {}
    mask = np.logical_or.reduce(list(lacking.values()))
    return dict(Counter(langs[i] or NO_LANG for i in np.flatnonzero(mask)))


def attach_counts(batch: pa.RecordBatch, counts: dict[str, int]) -> pa.RecordBatch:
    """`batch` carrying `counts` in its schema metadata (nothing when there are none)."""
    if not counts:
        return batch
    meta = dict(batch.schema.metadata or {})
    meta[BATCH_META_KEY] = json.dumps(counts).encode()
    return batch.replace_schema_metadata(meta)


def pop_counts(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[str, int]]:
    """(`batch` without the counts, the counts): the writer's schema has no such metadata."""
    meta = batch.schema.metadata
    if not meta or BATCH_META_KEY not in meta:
        return batch, {}
    meta = dict(meta)
    counts = json.loads(meta.pop(BATCH_META_KEY))
    return batch.replace_schema_metadata(meta or None), counts


# --------------------------------------------------------------------------- in the main process


def no_lists_warning(counts: dict[str, int], signals: list[str], lists: WordLists) -> str:
    """The run's one warning: how many documents of which languages got null word-list signals,
    and how to give a language lists. A language with only some lists (a user-supplied stop-word
    list without an LDNOOBW one) is marked with the signals it lacks."""
    tables = {"stop_words": lists.stop_words, "bad_words": lists.bad_words}

    def label(lang: str, n: int) -> str:
        nulled = [s for s in signals if any(lang not in tables[need] for need in REGISTRY[s].word_lists)]
        return f"{lang} {n}" + (f" (only {', '.join(nulled)})" if nulled != signals else "")

    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(label(lang, n) for lang, n in ranked[:20])
    if len(ranked) > 20:
        shown += f", and {len(ranked) - 20} more language(s)"
    have = [g for g in RPV2_LANGS if g in lists.stop_words or g in lists.bad_words] + list(lists.extra_langs)
    return (f"{total} document(s) are in a language without word lists, so their {', '.join(signals)} "
            f"are null, not 0.0 (a null score fails every recipe rule): {shown}. Lists are installed for: "
            f"{', '.join(have) or 'none'}. To cover another language, put stopwords/{{lang}}.json and/or "
            "ldnoobw/{lang} in a folder DIR and run `textsieve resources add DIR` (or pass --resources DIR).")
