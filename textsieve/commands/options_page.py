"""docs/options.md: every stage's settings as flag / YAML key / Python keyword, with default and help.

Generated, not written: `python -m textsieve.commands.options_page` rewrites the page from the
stage registry and the config dataclasses (the one source of every name, default and help text,
`textsieve.options`), and `--check` exits 1 when the committed page differs (what
tests/test_option_names.py asserts, so a renamed option or a changed default cannot leave the page
behind). The flags shown here are derived from the same metadata the parsers are built from; the
test checks the real parsers, pipeline schema and API signatures against it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Any, NamedTuple

from textsieve.commands.options import cli_shape
from textsieve.options import Option, default_of, flag_of, option_of, type_hints
from textsieve.pipeline.config import read_overrides
from textsieve.pipeline.twins import yaml_path
from textsieve.stages.descriptor import Stage
from textsieve.stages.registry import stages
from textsieve.stages.sources.import_dolma import ImportDolmaConfig
from textsieve.stages.sources.import_rpv2 import ImportRpv2Config
from textsieve.tokenization.train import TrainTokenizerConfig

#: where the page lives in the repository
PAGE = Path("docs") / "options.md"
GENERATOR = "python -m textsieve.commands.options_page"


class Command(NamedTuple):
    """A command whose options are a config dataclass: a stage, or one of `OTHERS`."""

    cli: str  # `textsieve <cli>`
    api: str  # `ts.<api>`
    config: type
    first: str  # the field the Python function takes positionally
    stage: Stage | None = None


#: Commands outside the pipeline built from a config dataclass the same way (CLI and Python
#: only): `textsieve.api` wires their functions by hand, so they are named here.
OTHERS = (Command("import rpv2", "import_rpv2", ImportRpv2Config, "root"),
          Command("import dolma", "import_dolma", ImportDolmaConfig, "root"),
          Command("train tokenizer", "train_tokenizer", TrainTokenizerConfig, "corpus"))


def commands() -> list[Command]:
    """Every registered stage with a command and a function (in run order), then `OTHERS`."""
    made = [Command(s.cli, s.api_name, s.config, s.first, s) for s in stages()
            if s.cli_spec is not None and s.call is not None]
    return made + list(OTHERS)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _value(value: Any) -> str:
    return "required" if value is MISSING else f"`{_cell(repr(value))}`"


def flag_cell(f: Field, opt: Option, hints: dict[str, Any]) -> str:
    """How the flag is written: `--thresholds T` (repeatable), `DIR` (positional), ..."""
    if not opt.cli:
        return f"none: {_cell(opt.cli_reason)}"
    shape, _ = cli_shape(hints[f.name])
    metavar = opt.metavar or ("{" + ",".join(map(str, opt.choices)) + "}" if opt.choices else f.name.upper())
    if opt.positional:
        return f"`{metavar}`" + (" ... (positional, one or more)" if shape == "list" else " (positional)")
    shown = ", ".join(f"`{n}`" for n in (opt.short, flag_of(f.name)) if n)
    if shape == "bool":
        out = shown
    elif shape == "dict":
        out = f"{shown} `{metavar}` (repeatable)"
    elif shape == "list":
        out = f"{shown} `{metavar}`" + (" (repeatable)" if opt.repeat else " (one or more; repeatable)")
    else:
        out = f"{shown} `{metavar}`"
    if opt.renamed_from:
        out += "; was " + ", ".join(f"`{n}`" for n in opt.renamed_from)
    return out


def yaml_cell(command: Command, name: str) -> str:
    """Where the setting goes in a pipeline file (none for a command outside the pipeline)."""
    stage = command.stage
    if stage is None:
        return "none: not a pipeline stage"
    path = yaml_path(stage.name, name)
    if path is None:
        return f"none: {_cell(stage.derived[name])}"
    if name in read_overrides(stage):
        return f"`{path}`, or `{stage.section}.{name}` for this stage only"
    if "." not in path:
        return f"`{path}` (top level)"
    return f"`{path.replace('[0]', '[]')}`"


def python_cell(command: Command, name: str) -> str:
    return f"`{name}` (1st argument)" if name == command.first else f"`{name}=`"


def table(command: Command) -> list[str]:
    """The settings of one command, one row per config field, in field order."""
    hints = type_hints(command.config)
    lines = ["| flag | YAML key | Python keyword | default | what it does |", "|---|---|---|---|---|"]
    for f in fields(command.config):
        opt = option_of(f)
        assert opt is not None, f"{command.config.__name__}.{f.name} is not declared with option()"
        lines.append(f"| {flag_cell(f, opt, hints)} | {yaml_cell(command, f.name)} | {python_cell(command, f.name)} "
                     f"| {_value(default_of(f))} | {_cell(opt.help)} |")
    return lines


def _heading(command: Command) -> list[str]:
    stage = command.stage
    where = "not in a pipeline file"
    if stage is not None:
        section = stage.section.removesuffix("[]")
        where = (f"pipeline section `{section}:`, a list (one item per {stage.name}, told apart by its label)"
                 if stage.section.endswith("[]") else f"pipeline section `{stage.section}:`")
    return [f"## {command.cli}", "",
            f"`textsieve {command.cli}` · {where} · `ts.{command.api}({command.first}, ...)`", ""]


INTRO = f"""# Options: one name per setting

<!-- Generated by `{GENERATOR}` from the stage config dataclasses: do not edit by hand.
     tests/test_option_names.py fails when this page is stale. -->

Every setting has one name, the same on the three surfaces:

* the **flag** of its command, with dashes for underscores: `textsieve dedup fuzzy attrs/ --thresholds 0.8`;
* the **YAML key** of its stage's section in a `textsieve run` pipeline file: `dedup: {{fuzzy: {{thresholds: [0.8]}}}}`;
* the **Python keyword** of its function: `ts.dedup_fuzzy("attrs/", thresholds=[0.8])`.

A setting that holds a list has a plural name, and its flag is repeated once per value
(`--thresholds 0.8 --thresholds 0.7`; flags marked "one or more" also take several values at once).
A flag's old spelling ("was ...") still works and prints a warning. In Python an unknown keyword is
a `TypeError` that suggests the nearest valid one (`dryrun` -> `dry_run`) and lists them all; in a
pipeline file an unknown key is an error naming its path and the nearest valid key.

Pipeline file rules:

* `inputs`, `overwrite`, `executor` and `address` are pipeline-wide keys at the top of the file.
* `read:` holds the reading settings (`text_field`, `id_field`, `lang_field`, `on_error`) of every
  stage that reads documents. A stage's own section may repeat one of them to override it for that
  stage only: `extract: {{on_error: skip}}` skips damaged archive records while annotate still stops
  at a bad record; `read: {{on_error: skip}}` is both.
* Settings marked "none: ..." in the YAML column are filled in by the pipeline (where each stage
  writes, progress), for the reason given.
* `dsir:` and `learn:` are lists: one item per DSIR fit (named by `name`) or learned model.

Defaults are Python values: `None` is `null` in YAML and means "not given" (the help says what
happens then). Every default has one source, the stage's config dataclass.
"""


def render() -> str:
    """The whole page."""
    cmds = commands()
    lines = [INTRO, "Commands: " + ", ".join(f"[{c.cli}](#{c.cli.replace(' ', '-')})" for c in cmds) + ".", ""]
    for command in cmds:
        lines += _heading(command) + table(command) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=GENERATOR, description="Write docs/options.md from the config dataclasses.")
    p.add_argument("path", nargs="?", default=str(PAGE), help=f"the page to write (default: {PAGE})")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page differs")
    args = p.parse_args(argv)
    page, text = Path(args.path), render()
    if args.check:
        current = page.read_text(encoding="utf-8") if page.exists() else ""
        if current != text:
            print(f"{page} is stale: run `{GENERATOR}`", file=sys.stderr)
            return 1
        return 0
    page.write_text(text, encoding="utf-8")
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
