"""RedPajama-1T's per-file rules for GitHub code (spec rpv1-sources §1.2-§1.4, §1.7), shared by the
`github` source family (`dumps.github`) and the `rpv1_code` signals (`signals.rpv1_code`), so the
family's reference mode and a recipe over the signals measure the same thing the same way.

* `clean_copyright`: the copyright-comment cleaning (§1.3), the reference's (`fix_block=False`)
  or the default mode's, whose block rule only takes a `/*` that begins a line (§1.3 notes the
  reference also takes one inside a string or a line comment: `"src/**/*.js"`, `// /* x */`).
* `code_stats`: line count, longest line, characters per line, alphanumeric share (§1.4), with
  Python's `str.splitlines`, `isalnum` and float division, so the values are the reference's bit
  for bit; `count_alpha`: the `isalpha` characters of the alpha-per-token filter (§1.7).
* `whitelisted`: the 66-suffix extension whitelist (§1.7), plain case-sensitive `endswith`.
* `permissive`: the export query's licence test (`mit%`, `bsd%`, `apache%`, §1.1).
"""

from __future__ import annotations

import re
import string
from typing import Any

#: the filter's whitelist (spec §1.7), in the reference's order
WHITELIST: tuple[str, ...] = (
    ".asm", ".bat", ".cmd", ".c", ".h", ".cs", ".cpp", ".hpp", ".c++", ".h++", ".cc", ".hh", ".C", ".H", ".cmake",
    ".css", ".dockerfile", ".f90", ".f", ".f03", ".f08", ".f77", ".f95", ".for", ".fpp", ".go", ".hs", ".html",
    ".java", ".js", ".jl", ".lua", ".md", ".markdown", ".php", ".php3", ".php4", ".php5", ".phps", ".phpt", ".pl",
    ".pm", ".pod", ".perl", ".ps1", ".psd1", ".psm1", ".py", ".rb", ".rs", ".sql", ".scala", ".sh", ".bash",
    ".command", ".zsh", ".ts", ".tsx", ".tex", ".vb", "Dockerfile", "Makefile", ".xml", ".rst", ".m", ".smali")
#: the filter's thresholds (spec §1.7): a file is dropped above/below them
MAX_LINE_LENGTH = 1000
MAX_AVG_LINE_LENGTH = 100
MIN_ALNUM_PROP = 0.25
MIN_ALPHA_PER_TOKEN = 1.5
#: licence keys the export query keeps (`license LIKE 'mit%' OR 'bsd%' OR 'apache%'`)
PERMISSIVE = ("mit", "bsd", "apache")
#: the line rule's comment starts (§1.3)
LINE_COMMENTS = ("//", "#", "--")

_ASCII_ALNUM = (string.ascii_letters + string.digits).encode()
_ASCII_ALPHA = string.ascii_letters.encode()
_LINE_START_BLOCK = re.compile("^[\ufeff \t]*/\\*", re.MULTILINE)  # a byte-order mark may start the file
#: the reference's test (`re.IGNORECASE` also matches `COPYRİGHT`, whose `str.lower()` does not)
_COPYRIGHT = re.compile("copyright", re.IGNORECASE)


def whitelisted(path: str) -> bool:
    """Whether the reference's filter keeps a file at `path` (plain `str.endswith`, §1.7)."""
    return path.endswith(WHITELIST)


def permissive(license_key: Any) -> bool:
    """Whether every licence of `license_key` (one GitHub key, or keys joined by `,` when a
    repository has several licence files) passes the export query's `mit%`/`bsd%`/`apache%`."""
    if not isinstance(license_key, str) or not license_key:
        return False
    return all(part.strip().startswith(PERMISSIVE) for part in license_key.split(","))


def _block_comment(content: str, fix_block: bool) -> tuple[int, int] | None:
    """(start, end) of the first C block comment: `/*` up to the next `*/` (§1.3); with
    `fix_block`, the first whose `/*` begins a line (only spaces, tabs or a byte-order mark before it)."""
    if fix_block:
        m = _LINE_START_BLOCK.search(content)
        start = m.end() - 2 if m else -1
    else:
        start = content.find("/*")
    if start < 0:
        return None
    end = content.find("*/", start + 2)
    return None if end < 0 else (start, end + 2)


def clean_copyright(content: str, fix_block: bool = False) -> str:
    """The copyright-comment cleaning of §1.3.

    Block rule, when the file has a block comment: delete exactly the first one if it contains
    `copyright` (any case), else leave the file as it is; either way the line rule is not tried.
    Line rule otherwise: drop the leading lines that start with `//`, `#` or `--` or are empty
    (no copyright test: shebangs, Markdown titles and `#include` lines go too). `fix_block`
    (the default mode) only changes which `/*` starts a block comment; the line rule is the
    reference's in both modes (docs/sources.md says why).
    """
    span = _block_comment(content, fix_block)
    if span is not None:
        start, end = span
        if _COPYRIGHT.search(content, start, end):
            return content[:start] + content[end:]
        return content
    if not content.startswith(LINE_COMMENTS) and not content.startswith("\n"):
        return content  # the first line is neither a comment nor empty (and content is not "")
    lines = content.split("\n")
    n = 0
    for line in lines:
        if line == "" or line.startswith(LINE_COMMENTS):
            n += 1
        else:
            break
    return "\n".join(lines[n:])


def count_alnum(text: str) -> int:
    """Characters of `text` for which `str.isalnum` holds."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _ASCII_ALNUM))
    return sum(map(str.isalnum, text))


def count_alpha(text: str) -> int:
    """Characters of `text` for which `str.isalpha` holds (the filter's `num_alpha`, §1.7)."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _ASCII_ALPHA))
    return sum(map(str.isalpha, text))


def code_stats(text: str) -> dict[str, Any]:
    """{line_count, max_line_length, avg_line_length, alnum_prop} of §1.4: lines by
    `str.splitlines`, the mean as all characters (terminators included) over the lines; an
    empty text gives integer zeros, as the reference writes them."""
    lines = text.splitlines()
    if not lines:
        return {"line_count": 0, "max_line_length": 0, "avg_line_length": 0, "alnum_prop": 0}
    return {"line_count": len(lines), "max_line_length": max(map(len, lines)),
            "avg_line_length": len(text) / len(lines), "alnum_prop": count_alnum(text) / len(text)}


def filter_reason(text: str, path: Any, stats: dict[str, Any], num_tokens: int | None) -> str | None:
    """The reference filter's first failing test (§1.7), or None to keep: `stats` are the
    record's stored statistics, `num_tokens` the tokenizer's count of `text` (asked for only
    when the cheaper tests pass: pass None to get `alpha_per_token<1.5` left unchecked)."""
    if len(text) == 0:
        return "empty"
    if not isinstance(path, str) or not whitelisted(path):
        return "extension_not_whitelisted"
    if stats["max_line_length"] > MAX_LINE_LENGTH:
        return "max_line_length>1000"
    if stats["avg_line_length"] > MAX_AVG_LINE_LENGTH:
        return "avg_line_length>100"
    if stats["alnum_prop"] < MIN_ALNUM_PROP:
        return "alnum_prop<0.25"
    if num_tokens is not None and count_alpha(text) / num_tokens < MIN_ALPHA_PER_TOKEN:
        return "alpha_per_token<1.5"
    return None


#: the filter's reasons, in its order (the summary counts each)
FILTER_REASONS = ("empty", "extension_not_whitelisted", "max_line_length>1000", "avg_line_length>100",
                  "alnum_prop<0.25", "alpha_per_token<1.5")
