"""Pure-Python reference implementation of the 28 RedPajama-V2 rule signals.

This module is the *executable specification* of ``shared/specs/rpv2-signals.md``
(§2 output representation, §3 text views, §4.1-§4.4 signal catalogue, §11 quirks).
It is written for readability, not speed: every signal is computed directly from
its definition with the standard library only. It serves two purposes:

* the "pure-Python twin" that tests use to cross-check the fast NumPy/numba kernels;
* the straightforward baseline of the benchmark.

Every score keeps the exact Python type of the original (``int``, ``float`` or
``None``) and the exact float expression form (e.g. ``1.0 - k / n``), so results
compare equal, type included, to the golden files in ``shared/golden``.
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections import Counter
from os import PathLike

__all__ = [
    "SIGNAL_NAMES",
    "normalize",
    "raw_words",
    "raw_lines",
    "normalized_words",
    "reference_signals",
    "load_stop_words",
    "load_bad_words",
]

Span = list  # [start: int, end: int, score: int | float | None]

#: round(x, PRECISION) is applied to ratio signals (§2.2).
PRECISION = 8

# --- regular expressions (all Python ``re``: \w = isalnum() or "_", \s = isspace()) ---
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)  # §3.2 step 1
_WHITESPACE_RUN = re.compile(r"\s+")  # §3.2 step 3
_WORDPUNCT = re.compile(r"\w+|[^\w\s]+")  # §3.3 NLTK WordPunctTokenizer (nltk 3.8.1)
_RAW_LINE = re.compile(r"[^\n]*\n|[^\n]+$")  # §3.4
_SENTENCE = re.compile(r"\b[^.!?]+[.!?]*")  # §4.1 num_sentences
_ASCII_ALPHA = re.compile(r"[a-zA-Z]")  # §4.1 frac_no_alph_words
_LOREM_IPSUM = re.compile(r"lorem ipsum", re.IGNORECASE)  # §4.4 lorem_ipsum

# §4.3 line rules
_TERMINAL_PUNCT = (".", "!", "?", "\u201d")
_BULLETS = (
    "\u2022",  # •
    "\u2023",  # ‣
    "\u25b6",  # ▶
    "\u25c0",  # ◀
    "\u25e6",  # ◦
    "\u25a0",  # ■
    "\u25a1",  # □
    "\u25aa",  # ▪
    "\u25ab",  # ▫
    "\u2013",  # – (en dash)
)
_ELLIPSES = ("...", "\u2026")

#: The 28 signal names of the golden files, in golden order.
SIGNAL_NAMES: tuple[str, ...] = (
    "rps_doc_ldnoobw_words",
    "rps_doc_lorem_ipsum",
    "rps_doc_curly_bracket",
    "rps_doc_stop_word_fraction",
    "rps_doc_frac_chars_dupe_10grams",
    "rps_doc_frac_chars_dupe_5grams",
    "rps_doc_frac_chars_dupe_6grams",
    "rps_doc_frac_chars_dupe_7grams",
    "rps_doc_frac_chars_dupe_8grams",
    "rps_doc_frac_chars_dupe_9grams",
    "rps_doc_frac_chars_top_2gram",
    "rps_doc_frac_chars_top_3gram",
    "rps_doc_frac_chars_top_4gram",
    "rps_doc_frac_all_caps_words",
    "rps_doc_frac_lines_end_with_ellipsis",
    "rps_doc_frac_no_alph_words",
    "rps_doc_frac_unique_words",
    "rps_doc_mean_word_length",
    "rps_doc_num_sentences",
    "rps_doc_symbol_to_word_ratio",
    "rps_doc_unigram_entropy",
    "rps_doc_word_count",
    "rps_lines_ending_with_terminal_punctution_mark",
    "rps_lines_javascript_counts",
    "rps_lines_num_words",
    "rps_lines_numerical_chars_fraction",
    "rps_lines_start_with_bulletpoint",
    "rps_lines_uppercase_letter_fraction",
)


# ----------------------------------------------------------------------------------
# Text views (§3)
# ----------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """Return the normalized view of ``text`` (§3.2).

    In order: delete the 32 ASCII ``string.punctuation`` characters, ``str.lower()``,
    strip and collapse every whitespace run (Python ``\\s``) to one ASCII space, then
    Unicode NFD. Unicode punctuation is kept.
    """
    text = text.translate(_PUNCT_TABLE)
    text = text.lower()
    text = _WHITESPACE_RUN.sub(" ", text.strip())
    return unicodedata.normalize("NFD", text)


def raw_words(text: str) -> list[str]:
    """Return the raw WordPunct tokens of ``text`` (§3.3).

    Every match of ``\\w+|[^\\w\\s]+`` compiled with Python ``re`` (as nltk 3.8.1 did),
    so ``\\w`` means ``isalnum() or "_"``: combining marks are not word characters,
    "other numbers" such as ``¼ ² ③`` are.
    """
    return _WORDPUNCT.findall(text)


def normalized_words(text: str) -> list[str]:
    """Return the normalized words of ``text``: ``normalize(text).split()`` (§3.3)."""
    return normalize(text).split()


def raw_lines(text: str) -> list[tuple[int, int, str]]:
    """Return the raw lines of ``text`` as ``(start, end, line_text)`` (§3.4).

    Each match of ``[^\\n]*\\n|[^\\n]+$``, left to right. Lines keep their ``\\n``,
    blank lines are kept, and a trailing ``\\n`` creates no empty last line. Offsets
    are code-point indices into ``text``; the spans tile it exactly.
    """
    return [(m.start(), m.end(), m.group()) for m in _RAW_LINE.finditer(text)]


def _ngrams(words: list[str], n: int) -> list[tuple[str, ...]]:
    """Return all overlapping n-gram windows of ``words`` as tuples, in order (§3.5)."""
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


# ----------------------------------------------------------------------------------
# Natural-language signals (§4.1)
# ----------------------------------------------------------------------------------


def _num_sentences(text: str) -> float:
    """Number of matches of ``\\b[^.!?]+[.!?]*`` in the raw text, as float (§4.1)."""
    return float(len(_SENTENCE.findall(text)))


def _mean_word_length(words: list[str]) -> float | None:
    """Mean NFD code-point length of the normalized words, round8; None if none (§4.1)."""
    if len(words) == 0:
        return None
    return round(sum(len(w) for w in words) / len(words), PRECISION)


def _symbol_to_word_ratio(text: str, tokens: list[str]) -> float | None:
    """(#'#' + #'...' + #'…') / number of raw tokens, round8; None if no token (§4.1)."""
    if len(tokens) == 0:
        return None
    num_symbols = text.count("#") + text.count("...") + text.count("\u2026")
    return round(num_symbols / len(tokens), PRECISION)


def _frac_lines_end_with_ellipsis(lines: list[tuple[int, int, str]]) -> float | None:
    """Fraction of raw lines whose rstripped text ends in ``...`` or ``…`` (§4.1).

    Blank lines count in the denominator; no lines gives None.
    """
    if len(lines) == 0:
        return None
    num_ellipsis = sum(1 for _, _, line in lines if line.rstrip().endswith(_ELLIPSES))
    return round(num_ellipsis / len(lines), PRECISION)


def _frac_no_alph_words(tokens: list[str]) -> float | None:
    """``1.0 - (raw tokens with an ASCII letter) / (raw tokens)``, round8 (§4.1)."""
    if len(tokens) == 0:
        return None
    num_alpha = sum(1 for t in tokens if _ASCII_ALPHA.search(t) is not None)
    return round(1.0 - num_alpha / len(tokens), PRECISION)


def _frac_unique_words(words: list[str]) -> float | None:
    """Distinct normalized words / normalized words, round8; None if none (§4.1)."""
    if len(words) == 0:
        return None
    return round(len(set(words)) / len(words), PRECISION)


def _unigram_entropy(words: list[str]) -> float | None:
    """Entropy (natural log) of the normalized word distribution, round8 (§4.1).

    Terms are summed left to right in order of first occurrence of each word.
    """
    if len(words) == 0:
        return None
    n = len(words)
    counts = Counter(words)  # insertion order = first occurrence
    entropy = sum((-c / n) * math.log(c / n) for c in counts.values())
    return round(entropy, PRECISION)


def _frac_all_caps_words(tokens: list[str]) -> float | None:
    """Raw tokens with ``str.isupper()`` / raw tokens, round8; None if none (§4.1)."""
    if len(tokens) == 0:
        return None
    return round(sum(1 for t in tokens if t.isupper()) / len(tokens), PRECISION)


# ----------------------------------------------------------------------------------
# Repetition signals (§4.2)
# ----------------------------------------------------------------------------------


def _frac_chars_top_ngram(words: list[str], n: int, total_chars: int) -> float:
    """Character share of the most frequent overlapping n-gram, round8 (§4.2).

    Ties go to the earliest first occurrence (``Counter.most_common`` is stable).
    Overlapping occurrences are counted, so the value can exceed 1.0. No n-gram, or a
    top count <= 1, gives 0.0.
    """
    grams = _ngrams(words, n)
    if len(grams) == 0:
        return 0.0
    top_gram, top_count = Counter(grams).most_common(1)[0]
    if top_count <= 1:
        return 0.0
    gram_chars = sum(len(w) for w in top_gram)
    return round(gram_chars * top_count / total_chars, PRECISION)


def _frac_chars_dupe_ngrams(words: list[str], n: int, total_chars: int) -> float:
    """Share of word characters covered by n-grams occurring more than once (§4.2).

    A 0/1 mask over word positions marks every word inside a duplicated n-gram window;
    each word is counted at most once. round8; fewer than n words (or T = 0) gives 0.0.
    """
    if len(words) < n:
        return 0.0
    grams = _ngrams(words, n)
    counts = Counter(grams)
    mask = [0] * len(words)
    for i, gram in enumerate(grams):
        if counts[gram] > 1:
            for j in range(i, i + n):
                mask[j] = 1
    if total_chars == 0:
        return 0.0
    dupe_chars = sum(len(w) for w, m in zip(words, mask) if m)
    return round(dupe_chars / total_chars, PRECISION)


# ----------------------------------------------------------------------------------
# Line-level signals (§4.3)
# ----------------------------------------------------------------------------------


def _ends_with_terminal_punctuation(line: str) -> float:
    """1.0 if the rstripped raw line ends in ``. ! ? ”``, else 0.0 (§4.3)."""
    return 1.0 if line.rstrip().endswith(_TERMINAL_PUNCT) else 0.0


def _javascript_count(norm_line: str) -> float:
    """Number of normalized-line tokens equal to ``javascript``, as float (§4.3)."""
    return float(sum(1 for w in norm_line.split() if w == "javascript"))


def _uppercase_letter_fraction(line: str) -> float:
    """Chars with ``isupper()`` / raw line length incl. ``\\n``, round8 (§4.3)."""
    if len(line) == 0:
        return 0.0
    return round(sum(1 for c in line if c.isupper()) / len(line), PRECISION)


def _numerical_chars_fraction(norm_line: str) -> float:
    """Chars with ``isnumeric()`` / normalized line length, round8; empty -> 0.0 (§4.3)."""
    if len(norm_line) == 0:
        return 0.0
    return round(sum(1 for c in norm_line if c.isnumeric()) / len(norm_line), PRECISION)


def _starts_with_bullet(line: str) -> float:
    """1.0 if the lstripped raw line starts with a bullet of §4.3 (en dash included)."""
    return 1.0 if line.lstrip().startswith(_BULLETS) else 0.0


# ----------------------------------------------------------------------------------
# Content signals (§4.4)
# ----------------------------------------------------------------------------------


def _curly_bracket(text: str) -> float:
    """(count('{') + count('}')) / len(raw text), round8; empty text -> 0.0 (§4.4)."""
    if len(text) == 0:
        return 0.0
    return round((text.count("{") + text.count("}")) / len(text), PRECISION)


def _lorem_ipsum(norm_text: str) -> float:
    """Case-insensitive ``lorem ipsum`` matches / len(normalized text), round8 (§4.4)."""
    if len(norm_text) == 0:
        return 0.0
    return round(len(_LOREM_IPSUM.findall(norm_text)) / len(norm_text), PRECISION)


def _stop_word_fraction(
    tokens: list[str], words: list[str], stop_words: frozenset[str]
) -> float:
    """Raw tokens in the stop-word set / raw tokens, round8 (§4.4, §11.3).

    Case-sensitive on raw WordPunct tokens; the empty guard tests the *normalized*
    words and gives 0.0.
    """
    if len(words) == 0:
        return 0.0
    return round(sum(1 for t in tokens if t in stop_words) / len(tokens), PRECISION)


def _ldnoobw_words(words: list[str], norm_text: str, bad_words: frozenset[str]) -> float:
    """Number of normalized n-grams found in the LDNOOBW list, as float (§4.4, §5.3).

    For each entry length n (spaces + 1) present in the list, count positions whose
    space-joined n-gram is an entry. Matches overlap and lengths add up. Not rounded.
    """
    if len(norm_text) == 0:
        return 0.0
    gram_sizes = sorted({entry.count(" ") + 1 for entry in bad_words})
    count = 0
    for n in gram_sizes:
        if n == 1:
            count += sum(1 for w in words if w in bad_words)
        else:
            count += sum(1 for g in _ngrams(words, n) if " ".join(g) in bad_words)
    return float(count)


# ----------------------------------------------------------------------------------
# All signals
# ----------------------------------------------------------------------------------


def reference_signals(
    text: str,
    stop_words: frozenset[str] | None,
    bad_words: frozenset[str] | None,
) -> dict[str, list[Span]]:
    """Compute the 28 RPv2 rule signals of one document (§2, §4.1-§4.4, §11).

    Returns signal name -> list of ``[start, end, score]``: one ``[0, len(text), s]``
    for document signals, one span per raw line for ``rps_lines_*`` (``[]`` without
    lines, except ``[[0, 0, None]]`` for the bullet signal). ``stop_words=None`` acts
    as the empty set; ``bad_words=None`` (no LDNOOBW list for the language) as well.
    """
    stop_words = stop_words if stop_words is not None else frozenset()
    bad_words = bad_words if bad_words is not None else frozenset()

    length = len(text)
    norm_text = normalize(text)
    words = norm_text.split()
    tokens = raw_words(text)
    lines = raw_lines(text)
    norm_lines = [(start, end, normalize(line)) for start, end, line in lines]
    total_chars = sum(len(w) for w in words)

    def doc(score: int | float | None) -> list[Span]:
        return [[0, length, score]]

    out: dict[str, list[Span]] = {
        "rps_doc_ldnoobw_words": doc(_ldnoobw_words(words, norm_text, bad_words)),
        "rps_doc_lorem_ipsum": doc(_lorem_ipsum(norm_text)),
        "rps_doc_curly_bracket": doc(_curly_bracket(text)),
        "rps_doc_stop_word_fraction": doc(_stop_word_fraction(tokens, words, stop_words)),
    }
    for n in (10, 5, 6, 7, 8, 9):
        out[f"rps_doc_frac_chars_dupe_{n}grams"] = doc(
            _frac_chars_dupe_ngrams(words, n, total_chars)
        )
    for n in (2, 3, 4):
        out[f"rps_doc_frac_chars_top_{n}gram"] = doc(
            _frac_chars_top_ngram(words, n, total_chars)
        )
    out["rps_doc_frac_all_caps_words"] = doc(_frac_all_caps_words(tokens))
    out["rps_doc_frac_lines_end_with_ellipsis"] = doc(_frac_lines_end_with_ellipsis(lines))
    out["rps_doc_frac_no_alph_words"] = doc(_frac_no_alph_words(tokens))
    out["rps_doc_frac_unique_words"] = doc(_frac_unique_words(words))
    out["rps_doc_mean_word_length"] = doc(_mean_word_length(words))
    out["rps_doc_num_sentences"] = doc(_num_sentences(text))
    out["rps_doc_symbol_to_word_ratio"] = doc(_symbol_to_word_ratio(text, tokens))
    out["rps_doc_unigram_entropy"] = doc(_unigram_entropy(words))
    out["rps_doc_word_count"] = doc(len(words))

    out["rps_lines_ending_with_terminal_punctution_mark"] = [
        [s, e, _ends_with_terminal_punctuation(line)] for s, e, line in lines
    ]
    out["rps_lines_javascript_counts"] = [
        [s, e, _javascript_count(nl)] for s, e, nl in norm_lines
    ]
    out["rps_lines_num_words"] = [[s, e, len(nl.split())] for s, e, nl in norm_lines]
    out["rps_lines_numerical_chars_fraction"] = [
        [s, e, _numerical_chars_fraction(nl)] for s, e, nl in norm_lines
    ]
    out["rps_lines_start_with_bulletpoint"] = [
        [s, e, _starts_with_bullet(line)] for s, e, line in lines
    ] or [[0, 0, None]]
    out["rps_lines_uppercase_letter_fraction"] = [
        [s, e, _uppercase_letter_fraction(line)] for s, e, line in lines
    ]
    return out


# ----------------------------------------------------------------------------------
# Word lists (§4.4, §5.3)
# ----------------------------------------------------------------------------------


def load_stop_words(path: str | PathLike[str]) -> frozenset[str]:
    """Load a ``stopwords/{lang}.json`` list (a JSON array of strings) as a set (§4.4)."""
    with open(path, encoding="utf-8") as f:
        return frozenset(json.load(f))


def load_bad_words(path: str | PathLike[str]) -> frozenset[str]:
    """Load an ``ldnoobw/{lang}`` file as RPv2 does (§5.3).

    The file is read line by line; each line is stripped and put in a set. Entries are
    not normalized, so some can never match (§11.11). Empty lines are dropped, since an
    empty entry can never equal a normalized word or n-gram.
    """
    with open(path, encoding="utf-8") as f:
        return frozenset(s for s in (line.strip() for line in f) if s)
