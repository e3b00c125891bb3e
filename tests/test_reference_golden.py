"""Tests for ``textsieve.signals.reference`` (pure-Python RPv2 rule signals).

* Hand-written cases for the documented quirks (spec §2, §3, §4.1-§4.4, §11); the
  expected values are derived by reading the spec and run without ``shared/``.
* Golden comparison: every record of ``rpv2_signals_dev.jsonl.gz`` and
  ``rpv2_signals_edgecases.jsonl.gz`` must match exactly, JSON types included.
"""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest
from _shared import SHARED

from textsieve.signals.reference import (
    SIGNAL_NAMES,
    load_bad_words,
    load_stop_words,
    normalize,
    raw_lines,
    raw_words,
    reference_signals,
)

LANGUAGES = ("en", "de", "fr", "es", "it")
GOLDEN_FILES = ("rpv2_signals_dev.jsonl.gz", "rpv2_signals_edgecases.jsonl.gz")

GOLDEN = SHARED / "golden"


def typed(x: Any) -> Any:
    """Replace every scalar by (type name, value) so that 1 != 1.0 and None is explicit."""
    if isinstance(x, (list, tuple)):
        return [typed(v) for v in x]
    return (type(x).__name__, x)


def score(sig: dict[str, list], name: str) -> Any:
    """The score of a document-level signal."""
    (span,) = sig[name]
    return span[2]


def sig_of(text: str, stop=frozenset(), bad=frozenset()) -> dict[str, list]:
    return reference_signals(text, stop, bad)


# ----------------------------------------------------------------------------------
# Hand-written quirk cases
# ----------------------------------------------------------------------------------


def test_signal_names_and_doc_spans() -> None:
    s = sig_of("Hello world.")
    assert tuple(s) == SIGNAL_NAMES and len(SIGNAL_NAMES) == 28
    for name in SIGNAL_NAMES:
        if name.startswith("rps_doc_"):
            assert s[name][0][:2] == [0, 12]


def test_top_ngram_overlapping_can_exceed_one() -> None:
    s = sig_of("ab ab ab ab")  # T = 8; (ab, ab) occurs 3 times overlapping: 4*3/8
    assert typed(score(s, "rps_doc_frac_chars_top_2gram")) == ("float", 1.5)
    assert typed(score(s, "rps_doc_frac_chars_top_3gram")) == ("float", 1.5)  # 6*2/8
    assert typed(score(s, "rps_doc_frac_chars_top_4gram")) == ("float", 0.0)  # count 1
    s = sig_of("a a a a a a")  # 2 * 5 / 6
    assert score(s, "rps_doc_frac_chars_top_2gram") == 1.66666667


def test_top_ngram_tie_goes_to_first_occurrence() -> None:
    # (x, yy) and (zzz, w) both occur twice; (x, yy) occurs first: 3*2/14.
    s = sig_of("x yy x yy zzz w zzz w")
    assert score(s, "rps_doc_frac_chars_top_2gram") == 0.42857143


def test_dupe_ngrams_mask() -> None:
    words = "a b c d e a b c d e"  # the 5-gram "a b c d e" repeats: every word covered
    s = sig_of(words)
    assert typed(score(s, "rps_doc_frac_chars_dupe_5grams")) == ("float", 1.0)
    assert typed(score(s, "rps_doc_frac_chars_dupe_6grams")) == ("float", 0.0)
    assert score(sig_of("a b c d"), "rps_doc_frac_chars_dupe_5grams") == 0.0  # < n words


def test_pi_is_two_sentences() -> None:
    s = sig_of("3.14")
    assert typed(score(s, "rps_doc_num_sentences")) == ("float", 2.0)
    assert raw_words("3.14") == ["3", ".", "14"]
    assert typed(score(s, "rps_doc_word_count")) == ("int", 1)  # normalized "314"
    assert typed(score(s, "rps_doc_frac_no_alph_words")) == ("float", 1.0)
    assert s["rps_lines_numerical_chars_fraction"] == [[0, 4, 1.0]]


def test_empty_document() -> None:
    s = sig_of("", None, None)
    nulls = {
        "rps_doc_mean_word_length", "rps_doc_symbol_to_word_ratio",
        "rps_doc_frac_no_alph_words", "rps_doc_frac_unique_words",
        "rps_doc_unigram_entropy", "rps_doc_frac_all_caps_words",
        "rps_doc_frac_lines_end_with_ellipsis",
    }
    for name in SIGNAL_NAMES:
        if name == "rps_lines_start_with_bulletpoint":
            assert typed(s[name]) == typed([[0, 0, None]])
        elif name.startswith("rps_lines_"):
            assert s[name] == []
        elif name == "rps_doc_word_count":
            assert typed(s[name]) == typed([[0, 0, 0]])
        elif name in nulls:
            assert typed(s[name]) == typed([[0, 0, None]])
        else:
            assert typed(s[name]) == typed([[0, 0, 0.0]]), name


def test_whitespace_only_document() -> None:
    text = "  \n "
    assert raw_lines(text) == [(0, 3, "  \n"), (3, 4, " ")]
    s = sig_of(text)
    assert typed(score(s, "rps_doc_frac_lines_end_with_ellipsis")) == ("float", 0.0)
    assert typed(score(s, "rps_doc_stop_word_fraction")) == ("float", 0.0)
    assert score(s, "rps_doc_mean_word_length") is None
    assert score(s, "rps_doc_symbol_to_word_ratio") is None
    assert typed(score(s, "rps_doc_num_sentences")) == ("float", 0.0)
    assert typed(s["rps_lines_num_words"]) == typed([[0, 3, 0], [3, 4, 0]])
    assert typed(s["rps_lines_start_with_bulletpoint"]) == typed([[0, 3, 0.0], [3, 4, 0.0]])
    assert typed(s["rps_lines_uppercase_letter_fraction"]) == typed([[0, 3, 0.0], [3, 4, 0.0]])


def test_trailing_newline_and_uppercase_denominator() -> None:
    text = "Hello.\nWorld\n"
    assert raw_lines(text) == [(0, 7, "Hello.\n"), (7, 13, "World\n")]
    s = sig_of(text)
    assert s["rps_lines_ending_with_terminal_punctution_mark"] == [[0, 7, 1.0], [7, 13, 0.0]]
    # the denominator includes "\n": 1/7 and 1/6
    assert s["rps_lines_uppercase_letter_fraction"] == [[0, 7, 0.14285714], [7, 13, 0.16666667]]
    assert raw_lines("a\n\nb") == [(0, 2, "a\n"), (2, 3, "\n"), (3, 4, "b")]


def test_bullets_en_dash_counts_hyphen_does_not() -> None:
    text = "– item\n- item\n  • item\n● item\n* item"
    s = sig_of(text)
    assert [x[2] for x in s["rps_lines_start_with_bulletpoint"]] == [1.0, 0.0, 1.0, 0.0, 0.0]


def test_terminal_punctuation_right_double_quote() -> None:
    s = sig_of('He said “hi.”\nHe said "hi."\nWait…\nOk!  ')
    assert [x[2] for x in s["rps_lines_ending_with_terminal_punctution_mark"]] == [
        1.0, 0.0, 0.0, 1.0,
    ]
    assert score(s, "rps_doc_frac_lines_end_with_ellipsis") == 0.25


def test_symbol_to_word_ratio_counts() -> None:
    # "......" counts as 2 "..." and is one raw token; "#" once; "…" once.
    s = sig_of("...... # …")
    assert raw_words("...... # …") == ["......", "#", "…"]
    assert typed(score(s, "rps_doc_symbol_to_word_ratio")) == ("float", 1.33333333)


def test_normalize_quirks() -> None:
    assert normalize("  Don't  STOP!\t“Now” ") == "dont stop “now”"
    assert normalize("É") == "e\u0301"  # NFD
    assert normalize("İ") == "i\u0307"  # full lowercasing, two code points
    assert normalize("ΟΔΟΣ") == "οδος"  # final sigma
    assert normalize("a\u2028b\u00a0c") == "a b c"
    s = sig_of("café")  # NFD: 5 code points
    assert score(s, "rps_doc_mean_word_length") == 5.0


def test_wordpunct_uses_python_re_word_chars() -> None:
    assert raw_words("¼;") == ["¼", ";"]  # "other numbers" are \w in Python re
    assert raw_words("a\u0301") == ["a", "\u0301"]  # combining marks are not
    assert raw_words("don't") == ["don", "'", "t"]


def test_ascii_alpha_and_all_caps() -> None:
    s = sig_of("À b USA 3D 42 .")
    # tokens: À b USA 3D 42 . -> ASCII-alpha: b USA 3D -> 1.0 - 3/6 = 0.5
    assert score(s, "rps_doc_frac_no_alph_words") == 0.5
    # isupper: À USA 3D -> 3/6
    assert score(s, "rps_doc_frac_all_caps_words") == 0.5


def test_stop_words_case_sensitive_raw_tokens() -> None:
    s = sig_of("The cat and the dog.", stop=frozenset({"the", "and"}))
    # raw tokens: The cat and the dog . -> "and", "the" -> 2/6
    assert score(s, "rps_doc_stop_word_fraction") == 0.33333333
    assert typed(score(sig_of("...", None, None), "rps_doc_stop_word_fraction")) == ("float", 0.0)


def test_ldnoobw_overlapping_multi_length() -> None:
    bad = frozenset({"foo", "foo bar", "bar baz", "Qux"})
    s = sig_of("Foo bar baz qux", bad=bad)  # foo + "foo bar" + "bar baz"; Qux never matches
    assert typed(score(s, "rps_doc_ldnoobw_words")) == ("float", 3.0)


def test_lorem_curly_entropy_javascript() -> None:
    s = sig_of("Lorem ipsum dolor")
    assert score(s, "rps_doc_lorem_ipsum") == 0.05882353  # 1 / 17
    assert score(sig_of("a b"), "rps_doc_unigram_entropy") == 0.69314718  # ln 2
    assert typed(score(sig_of("{}"), "rps_doc_curly_bracket")) == ("float", 1.0)
    s = sig_of("JavaScript javascript:void(0) javascript\n")
    assert typed(s["rps_lines_javascript_counts"]) == typed([[0, 41, 2.0]])
    assert typed(s["rps_lines_num_words"]) == typed([[0, 41, 3]])


# ----------------------------------------------------------------------------------
# Golden files
# ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def word_lists() -> tuple[dict, dict]:
    res = GOLDEN / "rpv2_resources"
    stop = {lang: load_stop_words(res / "stopwords" / f"{lang}.json") for lang in LANGUAGES}
    bad = {lang: load_bad_words(res / "ldnoobw" / lang) for lang in LANGUAGES}
    return stop, bad


@pytest.mark.skipif(
    not (GOLDEN / GOLDEN_FILES[0]).exists(),
    reason=f"golden files not found under {GOLDEN} (set TEXTSIEVE_SHARED)",
)
@pytest.mark.parametrize("filename", GOLDEN_FILES)
def test_golden_exact(filename: str, word_lists: tuple[dict, dict]) -> None:
    stop, bad = word_lists
    with gzip.open(GOLDEN / filename, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    mismatches: list[str] = []
    t0 = time.perf_counter()
    outputs = [
        reference_signals(r["text"], stop.get(r["language"]), bad.get(r["language"]))
        for r in records
    ]
    elapsed = time.perf_counter() - t0
    for rec, out in zip(records, outputs):
        expected = rec["quality_signals"]
        assert set(out) == set(expected), rec["id"]
        for name, spans in expected.items():
            if typed(out[name]) != typed(spans):
                mismatches.append(f"{rec['id']} {name}: got {out[name][:3]} want {spans[:3]}")
    print(f"\n{filename}: {len(records)} docs, {len(records) / elapsed:.0f} docs/s")
    assert not mismatches, f"{len(mismatches)} mismatches, e.g.\n" + "\n".join(mismatches[:10])
