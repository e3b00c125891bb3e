"""Cleaning one arXiv project's LaTeX into a document, as RedPajama-1T did (rpv1-sources spec 2.3-2.5) or fixed.

A project is its list of `.tex` texts. The reference (`clean_tex_files`) collects argument-less
macros from every raw file, cleans each file on its own (cut the preamble at the first
sectioning command, drop comments, cut the back matter, expand the macros) and joins the files
with newlines. `clean_project(files, rp_v1=True)` does exactly that, quirks included (spec 9,
items 6-10): the `\\paragraph`/`\\subparagraph` alternatives glued by a missing `|`, the
heading search before comment removal, the character before an inline `%` eaten, everything
from `\\appendix` on dropped, and a project failing whole when a macro's value is not plain
ASCII (the value becomes a regex replacement template in which `\\x`, `\\u` are invalid).

The default mode (`rp_v1=False`) fixes how the text is cleaned and keeps every decision the
reference makes about a project (whether it fails, whether its text is empty), so that the
`rpv1-arxiv` recipe selects the reference's set from a default run:

* the body starts at the first *live* sectioning command of any level (`\\paragraph` and
  `\\subparagraph` alone included); a file whose only headings are commented out keeps the
  reference's start, and a file the reference finds no heading in stays empty;
* comments are removed without eating the character before `%`; `\\\\%` is a comment, `\\%`
  is not; a line holding only a comment goes with its newline;
* appendices are kept: only the bibliography (`thebibliography`/`references` environments,
  `\\bibliography{..}`, `\\bibliographystyle{..}`, `\\printbibliography`) and whatever follows
  `\\end{document}` are removed;
* a macro is expanded at the very end of a file too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# --- the reference's patterns (rpv1-sources spec 2.4, 2.5), kept as it wrote them --------------------------


def _heading(command: str) -> str:
    return rf"\\\b{command}\b\*?(?:\[(?:.*?)\])?\{{(?:.*?)\}}"


#: the reference's heading alternatives: `\paragraph` and `\subparagraph` glued by a missing `|`
HEADING_RP_V1 = re.compile("|".join([*(_heading(c) for c in ("chapter", "part", "section", "subsection",
                                                                "subsubsection")),
                                     _heading("paragraph") + _heading("subparagraph")]), re.DOTALL)
#: the same with the `|`: a lone `\paragraph{..}` or `\subparagraph{..}` is a heading too
HEADING = re.compile("|".join(_heading(c) for c in ("chapter", "part", "section", "subsection", "subsubsection",
                                                    "paragraph", "subparagraph")), re.DOTALL)
_LINE_COMMENT_RP_V1 = re.compile(r"^%.*\n?", re.MULTILINE)
_INLINE_COMMENT_RP_V1 = re.compile(r"[^\\]%.+$", re.MULTILINE)
_BACK_MATTER_RP_V1 = re.compile(r"\\appendix|\\begin\{references\}|\\begin\{REFERENCES\}|"
                                r"\\begin\{thebibliography\}|\\bibliography\{.*\}", re.DOTALL)
_NEWCOMMAND = re.compile(r"\\\bnewcommand\b\*?\{(\\[a-zA-Z0-9]+?)\}\{(.*?)\}$", re.MULTILINE)
_DEF = re.compile(r"\\def\s*(\\[a-zA-Z0-9]+?)\s*\{(.*?)\}$", re.MULTILINE)
#: what `unicode_escape` writes as `\x..`, `\u....` or `\U........`: escapes a replacement
#: template rejects (every character but printable ASCII, tab, newline and carriage return)
_TEMPLATE_BREAKER = re.compile(r"[^\t\n\r\x20-\x7e]")

# --- the default mode's patterns ----------------------------------------------------------------

#: a line whose first non-blank character starts a comment: the whole line, newline included
_COMMENT_LINE = re.compile(r"^[ \t]*%.*(?:\n|\Z)", re.MULTILINE)
#: `%` after an even number of backslashes (none, or `\\`) and the rest of its line
_COMMENT = re.compile(r"(?<!\\)((?:\\\\)*)%.*$", re.MULTILINE)
_END_DOCUMENT = re.compile(r"\\end\{document\}")
_BIB_ENVIRONMENT = re.compile(r"\\begin\{(thebibliography|references|REFERENCES)\}.*?(?:\\end\{\1\}|\Z)", re.DOTALL)
_BIB_COMMAND = re.compile(r"\\(?:bibliography|bibliographystyle|nobibliography|addbibresource)\{[^{}]*\}"
                          r"|\\printbibliography\b(?:\[[^\]]*\])?")


class MacroValueError(ValueError):
    """The reference's failure on a macro value with a non-ASCII or control character."""


@dataclass
class CleanedProject:
    """One project's cleaning: the text (None if cleaning failed, as the reference's did) and
    what the goldens record of it."""

    text: str | None
    macros: dict[str, str] = field(default_factory=dict)  # as the reference holds them (unicode_escape'd)
    per_file: list[int] = field(default_factory=list)  # cleaned characters per file (empty if failed)
    failure: str = ""  # why cleaning failed


def macros_of(text: str) -> dict[str, str]:
    """One file's argument-less macros `{name: value}` as the reference holds them: `\\newcommand`
    definitions first, then `\\def`, names and values through `unicode_escape` (every backslash
    doubled), read from the raw text (commented-out definitions count)."""
    out: dict[str, str] = {}
    for pattern in (_NEWCOMMAND, _DEF):
        for m in pattern.finditer(text):
            out[_escape(m.group(1))] = _escape(m.group(2))
    return out


def project_macros(files: Sequence[str]) -> dict[str, str]:
    """The project's merged macro table: files in order, a later definition replacing the value
    and keeping the name's first position."""
    table: dict[str, str] = {}
    for text in files:
        table.update(macros_of(text))
    return table


def _escape(s: str) -> str:
    return s.encode("unicode_escape").decode("utf-8")


def _unescape(s: str) -> str:
    """What an escaped value stands for in a replacement template (backslashes, \\t, \\n, \\r)."""
    return s.encode("utf-8").decode("unicode_escape")


def template_breaker(escaped_value: str) -> str | None:
    """The first character of a macro value that makes the reference's replacement template
    invalid, or None."""
    m = _TEMPLATE_BREAKER.search(_unescape(escaped_value))
    return m.group(0) if m else None


# --- reference mode -----------------------------------------------------------------------------


def clean_file_rp_v1(text: str, macros: dict[str, str]) -> str:
    """The reference's `_clean_tex_file` (rpv1-sources spec 2.5), quirks included. Raises `MacroValueError`
    where the reference's `re.sub` raises on a macro value."""
    head = HEADING_RP_V1.search(text)
    if head is None:
        return ""
    text = text[head.start():]  # the heading search ran before comment removal
    text = _LINE_COMMENT_RP_V1.sub("", text)
    text = _INLINE_COMMENT_RP_V1.sub("", text)  # eats the character before `%`
    back = _BACK_MATTER_RP_V1.search(text)
    if back is not None:
        text = text[:back.start()]
    for name, value in macros.items():
        try:
            text = re.sub(f"({name})([^a-zA-Z0-9])", value + r"\2", text)
        except re.error as exc:
            raise MacroValueError(f"macro {_unescape(name)}: its value {_unescape(value)!r} is not a valid "
                                  f"replacement template ({exc})") from None
    return text


# --- default mode -------------------------------------------------------------------------------


def strip_comments(text: str) -> str:
    """TeX comments removed: lines holding only a comment (with their newline), then every
    unescaped `%` to the end of its line (the character before it kept)."""
    if "%" not in text:
        return text
    return _COMMENT.sub(r"\1", _COMMENT_LINE.sub("", text))


def strip_bibliography(text: str) -> str:
    """The bibliography removed, appendices kept; nothing after `\\end{document}`."""
    end = _END_DOCUMENT.search(text)
    if end is not None:
        text = text[:end.start()]
    return _BIB_COMMAND.sub("", _BIB_ENVIRONMENT.sub("", text))


def expand_macros(text: str, macros: dict[str, str]) -> str:
    """Every macro replaced by its value, in table order (a value holding a macro defined later
    is expanded again, as in the reference), also at the very end of the text."""
    for name, value in macros.items():
        literal = _unescape(value).replace("\\", "\\\\")  # a template that is the value itself
        text = re.sub(f"{name}(?![a-zA-Z0-9])", literal, text)
    return text


def clean_file(text: str, macros: dict[str, str]) -> str:
    """The default mode's cleaning of one file (the module doc lists what it fixes). A file is
    empty exactly when the reference's is."""
    ref_head = HEADING_RP_V1.search(text)
    if ref_head is None:
        return ""
    live = strip_comments(text)
    head = HEADING.search(live)
    body = live[head.start():] if head is not None else strip_comments(text[ref_head.start():])
    return expand_macros(strip_bibliography(body), macros)


# --- a project ----------------------------------------------------------------------------------


def clean_project(files: Sequence[str], rp_v1: bool) -> CleanedProject:
    """Clean a project's `.tex` texts (in order) and join them with newlines. An empty list gives
    `""`; a failure (the reference's non-ASCII macro value) gives `text=None` in both modes."""
    if not files:
        return CleanedProject("")
    macros = project_macros(files)
    if not rp_v1:
        broken = next(((n, b) for n, v in macros.items() if (b := template_breaker(v)) is not None), None)
        if broken is not None and any(HEADING_RP_V1.search(t) for t in files):
            name, char = broken
            return CleanedProject(None, macros, [], f"macro {_unescape(name)}'s value holds {char!r}: the reference "
                                                    "fails such a project, so it is left out in both modes")
    per_file: list[str] = []
    for text in files:
        try:
            per_file.append(clean_file_rp_v1(text, macros) if rp_v1 else clean_file(text, macros))
        except MacroValueError as exc:
            return CleanedProject(None, macros, [], str(exc))
    return CleanedProject("\n".join(per_file), macros, [len(t) for t in per_file])
