"""The text of a StackExchange record: `post_processing.py`'s, and the default mode's fixes.

A record is one question and its answers: `Q: <question>` then `\\nA: <answer>` per answer,
best answer first. The reference turns HTML into text with BeautifulSoup over lxml's HTML
parser (`get_text()`), after four literal replacements that make list items bullets; we get the
same text from lxml's parser events (`stackexchange_html`). What the reference gets wrong, the
default mode fixes:

* answers ordered by score as strings (`"9"` before `"10"`, `"-1"` after `"0"`): the default
  orders by the number;
* `<ol>` becomes a bullet like `<li>` (a stray `*` line before every ordered list), and an
  `<li>` with attributes or in capitals gets none: the default bullets every `<li>`, only;
* the title is parsed as HTML with the body (`What does <br> do?` loses `<br>`): the default
  keeps the title as the dump has it (XML-decoded plain text) and cleans the body alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from textsieve.dumps.stackexchange_html import html_text

_LI_OPEN = re.compile(r"<li(?:\s[^>]*)?>", re.IGNORECASE)
_LI_CLOSE = re.compile(r"</li\s*>", re.IGNORECASE)


def clean_reference(html: str) -> str:
    """`cleanhtml` of post_processing.py: `<li>` and `<ol>` become `\\n*`, `</li>` and `</ol>`
    go (these exact spellings only), then the text of the HTML."""
    html = html.replace("<li>", "\n*").replace("</li>", "").replace("<ol>", "\n*").replace("</ol>", "")
    return html_text(html)


def clean_default(html: str) -> str:
    """The default mode's cleaning: every list item, whatever its spelling, starts a `\\n*`
    line; list tags themselves add nothing (no stray bullet before an ordered list)."""
    return html_text(_LI_CLOSE.sub("", _LI_OPEN.sub("\n*", html)))


def score_as_string(answer: dict[str, Any]) -> str:
    """The reference's sort key: the score as the dump spells it."""
    return answer["score"]


def score_as_number(answer: dict[str, Any]) -> int:
    """The default mode's sort key: the score as a number (a damaged row never gets here)."""
    return int(answer["score"])


def ordered(answers: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """Best first, equal keys in file order (Python's sort is stable under `reverse=True`)."""
    return sorted(answers, key=key, reverse=True)


def reference_text(question_text: str, answers: Sequence[dict[str, Any]] | None) -> str:
    """`process_qa_pair`'s text of a qa pair (question text = title, space, body)."""
    question = clean_reference(question_text)
    if answers is None:
        return f"Q: {question}"
    joined = "\nA: ".join(clean_reference(a["text"]) for a in ordered(answers, score_as_string))
    return f"Q: {question}\nA: {joined}"


def default_text(title: str, body: str, answers: Sequence[dict[str, Any]] | None) -> str:
    """The default mode's text: the title as written, the HTML cleaned with every `<li>` a
    bullet, answers best first by their score as a number."""
    question = f"{title} {clean_default(body)}"
    if not answers:
        return f"Q: {question}"
    joined = "\nA: ".join(clean_default(a["text"]) for a in ordered(answers, score_as_number))
    return f"Q: {question}\nA: {joined}"


def language_input(text: str) -> str:
    """What the reference gives LID-176: the text with newlines as spaces (case kept)."""
    return text.replace("\n", " ")
