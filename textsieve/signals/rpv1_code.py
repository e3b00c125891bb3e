"""RedPajama-1T's GitHub filter as signals (spec rpv1-sources §1.4, §1.7), group `rpv1_code`.

The four statistics are those the reference stores in `meta` and filters on, computed on the
document text (the `github` family's text is the cleaned text they were measured on), with the
reference's own Python operations (`dumps.github_rules`), so a recipe's thresholds compare the
same floats. `rpv1_code_num_alpha` is the numerator of the alpha-per-token filter; its
denominator is a `textsieve tokens` column (`rpv1-github` divides by `ts_tokens_pythia`). The
extension whitelist and the export query's licence test read the document's meta (`path`,
`license`, at the top of the record or under its `meta`), so they declare `needs=("meta",)`.
None of them is in `--signals all`: name the group (`--signals rpv1_code`) or the signals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textsieve.dumps.github_rules import code_stats, count_alpha, permissive, whitelisted
from textsieve.signals.registry import DocScores, signal
from textsieve.text.views import BatchViews

G = "rpv1_code"
_STATS = "rpv1_code_stats"  # BatchViews.cache key: the batch's statistics, computed once


def _stats(v: BatchViews) -> list[dict[str, Any]]:
    if _STATS not in v.cache:
        v.cache[_STATS] = [code_stats(t) for t in v.texts]
    return v.cache[_STATS]


def _column(v: BatchViews, key: str, dtype: type) -> DocScores:
    return DocScores(np.fromiter((s[key] for s in _stats(v)), dtype=dtype, count=v.n_docs))


def meta_field(meta: dict, name: str) -> Any:
    """`name` of a document's meta: under its `meta` (a `source` shard's record), else at the top
    (a JSON record's own field); None when absent."""
    inner = meta.get("meta")
    if isinstance(inner, dict) and name in inner:
        return inner[name]
    return meta.get(name)


@signal("rpv1_code_line_count", level="doc", group=G, dtype="int",
        definition="Lines of the text by Python's str.splitlines (RedPajama-1T GitHub line_count).")
def line_count(v: BatchViews) -> DocScores:
    return _column(v, "line_count", np.int64)


@signal("rpv1_code_max_line_length", level="doc", group=G, dtype="int",
        definition="Characters of the longest line, terminators excluded (RedPajama-1T GitHub max_line_length).")
def max_line_length(v: BatchViews) -> DocScores:
    return _column(v, "max_line_length", np.int64)


@signal("rpv1_code_avg_line_length", level="doc", group=G,
        definition="All characters, line terminators included, / number of lines; 0 for an empty text "
                   "(RedPajama-1T GitHub avg_line_length).")
def avg_line_length(v: BatchViews) -> DocScores:
    return _column(v, "avg_line_length", np.float64)


@signal("rpv1_code_alnum_prop", level="doc", group=G,
        definition="Characters with str.isalnum / all characters; 0 for an empty text (RedPajama-1T GitHub "
                   "alnum_prop).")
def alnum_prop(v: BatchViews) -> DocScores:
    return _column(v, "alnum_prop", np.float64)


@signal("rpv1_code_num_alpha", level="doc", group=G, dtype="int",
        definition="Characters with str.isalpha: the numerator of RedPajama-1T's alpha-per-token filter "
                   "(divide by a `textsieve tokens` column).")
def num_alpha(v: BatchViews) -> DocScores:
    return DocScores(np.fromiter((count_alpha(t) for t in v.texts), dtype=np.int64, count=v.n_docs))


def _flag(v: BatchViews, name: str, test: Any) -> DocScores:
    values = [meta_field(m, name) for m in v.metas]
    valid = np.fromiter((isinstance(x, str) for x in values), dtype=bool, count=v.n_docs)
    flags = np.fromiter((bool(ok) and test(x) for x, ok in zip(values, valid)), dtype=np.int64, count=v.n_docs)
    return DocScores(flags, valid)


@signal("rpv1_code_extension_ok", level="doc", group=G, dtype="int", needs=("meta",),
        definition="1 if meta path ends with one of RedPajama-1T's 66 whitelisted suffixes (case-sensitive), "
                   "else 0; null without a path.")
def extension_ok(v: BatchViews) -> DocScores:
    return _flag(v, "path", whitelisted)


@signal("rpv1_code_license_ok", level="doc", group=G, dtype="int", needs=("meta",),
        definition="1 if meta license starts with mit, bsd or apache (every one, when several), as the "
                   "BigQuery export query keeps, else 0; null without a licence.")
def license_ok(v: BatchViews) -> DocScores:
    return _flag(v, "license", permissive)
