"""RPv2 line-level signals (spec §4.3): one span per raw line."""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import LineScores, ratio, round8, signal
from textsieve.text import raw_kernel as rk
from textsieve.text.views import BatchViews

G = "lines"


@signal("rps_lines_ending_with_terminal_punctution_mark", level="line", group=G,
        definition="1.0 if the right-stripped line ends in . ! ? or ” (name misspelled as in RPv2).")
def ending_with_terminal_punctuation(v: BatchViews) -> LineScores:
    return LineScores(v.line(rk.L_TERMINAL).astype(np.float64))


@signal("rps_lines_javascript_counts", level="line", group=G,
        definition="Number of normalized words of the line equal to 'javascript'.")
def javascript_counts(v: BatchViews) -> LineScores:
    return LineScores(v.line(rk.L_JAVASCRIPT).astype(np.float64))


@signal("rps_lines_num_words", level="line", group=G, dtype="int",
        definition="Number of normalized words in the line.")
def num_words(v: BatchViews) -> LineScores:
    return LineScores(v.line(rk.L_NORM_WORDS).copy())


@signal("rps_lines_uppercase_letter_fraction", level="line", group=G,
        definition="Upper-case characters / raw line length (newline included).")
def uppercase_letter_fraction(v: BatchViews) -> LineScores:
    value, _ = ratio(v.line(rk.L_UPPER), v.line(rk.L_END) - v.line(rk.L_START))
    return LineScores(round8(value))


@signal("rps_lines_numerical_chars_fraction", level="line", group=G,
        definition="Numeric characters / length of the normalized line (0.0 if empty).")
def numerical_chars_fraction(v: BatchViews) -> LineScores:
    value, _ = ratio(v.line(rk.L_NORM_NUMERIC), v.line(rk.L_NORM_LEN))
    return LineScores(round8(value))


@signal("rps_lines_start_with_bulletpoint", level="line", group=G,
        definition="1.0 if the left-stripped line starts with a bullet (• ‣ ▶ ◀ ◦ ■ □ ▪ ▫ –).")
def start_with_bulletpoint(v: BatchViews) -> LineScores:
    return LineScores(v.line(rk.L_BULLET).astype(np.float64), null_span_when_no_lines=True)
