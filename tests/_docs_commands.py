"""Shell commands of the docs and of `--help` texts, as the docs test runs them.

Why a parser of our own: the README and `docs/*.md` are the first thing a user runs, and they
rot silently (a renamed flag, a path no earlier command makes). `test_docs_commands.py` runs
every command they show; this module finds them and says how each is to be run.

What counts as a command:

* Lines of fenced code blocks tagged ```` ```sh ````, ```` ```bash ````, ```` ```shell ```` or
  ```` ```console ```` (in a console block only the `$ ` lines; the rest is output). A line
  ending in `\\` continues on the next. A trailing `# comment` is dropped.
* Example lines of argparse descriptions and epilogs that start with `textsieve ` (or
  `$ textsieve `), found by walking `textsieve.cli.build_parser()`.

Illustrative commands (shown but not run) carry their reason in the doc, in one of two forms:

* a trailing comment on the line: `textsieve annotate s3://bucket/ ...  # illustrative: needs an S3 bucket`;
* an HTML comment just before the block's opening fence: `<!-- illustrative: needs a Ray cluster -->`,
  which marks every command of the block.

Install steps are not illustrative: in an `&&` chain, `python3 -m venv ...` and
`... pip install ...` are dropped (the package under test is already installed) and the rest
runs, with `.venv/bin/textsieve` read as `textsieve`.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGS = frozenset({"sh", "bash", "shell", "console"})
MARKER = "illustrative:"
_BLOCK_MARKER = re.compile(r"^<!--\s*illustrative:(?P<reason>.*?)-->\s*$")
_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")
_INSTALL = re.compile(r"^(python3?\s+-m\s+venv\b|(\S*/)?pip3?\s+install\b|(\S*/)?python3?\s+-m\s+pip\s+install\b)")
_VENV_BIN = re.compile(r"(^|(?<=\s))\.venv/bin/")
_COMMANDISH = re.compile(r"^\s*(\$\s+)?(textsieve|python3?|\.venv/bin/)\S*\s")


@dataclass
class Command:
    """One command line as the doc shows it and as the test runs it."""

    source: str  # "README.md:42" or "--help of `textsieve dsir fit`"
    shown: str  # the line as written, comment included
    run: str  # what the test runs ("" when nothing is left to run after dropping install steps)
    illustrative: str | None = None  # the reason, when the doc marks it as not runnable here
    dropped: list[str] = field(default_factory=list)  # install steps left out of `run`


@dataclass
class Block:
    """One shell code block (or all `--help` examples of one command)."""

    doc: str  # path relative to the repository, or "--help"
    index: int  # position among the doc's shell blocks, from 0
    line: int  # 1-based line of the opening fence
    heading: str  # the nearest Markdown heading above it, for readable test ids
    commands: list[Command]
    illustrative: str | None = None  # reason of a block marker

    @property
    def test_id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-")[:40] or "top"
        return f"{self.doc}#{self.index}-{slug}"


def split_comment(line: str) -> tuple[str, str | None]:
    """(command, comment) of a shell line: the comment starts at the first `#` outside quotes
    that begins a word, as in the shell (`a#b` and `'#'` are not comments)."""
    quote: str | None = None
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev.isspace():
            return line[:i].rstrip(), line[i + 1:].strip()
        prev = ch
    return line.rstrip(), None


def split_and(command: str) -> list[str]:
    """The parts of a `a && b && c` chain (outside quotes)."""
    parts, quote, start = [], None, 0
    i = 0
    while i < len(command):
        ch = command[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif command.startswith("&&", i):
            parts.append(command[start:i].strip())
            start = i + 2
            i += 1
        i += 1
    parts.append(command[start:].strip())
    return [p for p in parts if p]


def runnable(command: str) -> tuple[str, list[str]]:
    """(what to run, install steps dropped): install steps leave an `&&` chain, and
    `.venv/bin/` prefixes go (the tools under test are on PATH)."""
    kept, dropped = [], []
    for part in split_and(command):
        (dropped if _INSTALL.match(part) else kept).append(part)
    return " && ".join(_VENV_BIN.sub("", p) for p in kept), dropped


def _command(source: str, text: str) -> Command:
    cmd, comment = split_comment(text)
    reason = None
    if comment is not None and comment.lower().startswith(MARKER):
        reason = comment[len(MARKER):].strip()
    run, dropped = runnable(cmd)
    return Command(source=source, shown=text, run=run, illustrative=reason, dropped=dropped)


def doc_blocks(path: Path, root: Path) -> tuple[list[Block], list[str]]:
    """The shell blocks of one Markdown file, and the untagged blocks that look like commands
    (`file:line`), which would otherwise escape the test."""
    rel = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    untagged: list[str] = []
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        m = _FENCE.match(line)
        if not m:
            i += 1
            continue
        start = i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1  # past the closing fence
        lang = m.group("lang").lower()
        if lang not in SHELL_LANGS:
            if not lang and any(_COMMANDISH.match(text) for _, text in body):
                untagged.append(f"{rel}:{start + 1}")
            continue
        prev = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _BLOCK_MARKER.match(prev)
        commands = _block_commands(rel, body, console=lang == "console")
        blocks.append(Block(doc=rel, index=len(blocks), line=start + 1, heading=heading, commands=commands,
                            illustrative=marker.group("reason").strip() if marker else None))
    return blocks, untagged


def _block_commands(rel: str, body: list[tuple[int, str]], console: bool) -> list[Command]:
    commands: list[Command] = []
    pending: tuple[int, str] | None = None
    for lineno, raw in body:
        text = raw.strip()
        if pending is None:
            if console:
                if not text.startswith("$ "):
                    continue
                text = text[2:].strip()
            if not text or text.startswith("#"):
                continue
            pending = (lineno, text)
        else:
            pending = (pending[0], pending[1] + " " + text)
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1].rstrip())
            continue
        commands.append(_command(f"{rel}:{pending[0]}", pending[1]))
        pending = None
    if pending is not None:
        commands.append(_command(f"{rel}:{pending[0]}", pending[1]))
    return commands


def help_examples(parser: argparse.ArgumentParser, prog: str = "textsieve") -> list[Block]:
    """One block per (sub)command whose description or epilog has example lines starting with
    `textsieve ` (optionally after `$ `)."""
    blocks: list[Block] = []

    def walk(p: argparse.ArgumentParser, name: str) -> None:
        found = []
        for text in (p.description or "", p.epilog or ""):
            for line in text.splitlines():
                s = line.strip()
                s = s[2:].strip() if s.startswith("$ ") else s
                if s.startswith("textsieve "):
                    found.append(_command(f"--help of `{name}`", s))
        if found:
            blocks.append(Block(doc="--help", index=len(blocks), line=0, heading=name, commands=found))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    if sub is not p:
                        walk(sub, f"{name} {sub_name}")

    walk(parser, prog)
    return blocks
