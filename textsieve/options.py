"""Stage options: one definition per setting, read by the CLI, the pipeline file and the API.

A stage's config dataclass (`AnnotateConfig`, `ExactConfig`, ...) declares every field with
`option(...)`. The field's default is *the* default, and its metadata holds what the other
entry points need: the help text, the CLI flag, the allowed values. `textsieve.commands.options`
generates each stage command's argparse options from it, `textsieve.pipeline.config` the YAML
schema, and `textsieve.api` the keyword arguments, so a default or a choice cannot drift
between them (the `select --dsir` crash came from a CLI flag whose default disagreed with the
library's). This module sits at the bottom of the import graph: it imports nothing of textsieve.

One name per setting, on every surface: the field's name is the Python keyword, the YAML key and,
with `-` for `_`, the long flag (`thresholds` / `thresholds:` / `--thresholds`). A list setting
has a plural name (or a word that needs none: `against`, `redact`, `corpus`) and its flag is
repeatable (`--thresholds 0.8 --thresholds 0.7`). There is no
way to give a flag another spelling: a spelling users relied on before it was unified is kept in
`renamed_from`, where it still works and warns (`--threshold` -> `--thresholds`). Why: the CLI
said `--threshold`, `--field`, `--target` while YAML and Python said `thresholds`, `fields`,
`targets`, so a setting learnt on one surface failed on the next. `docs/options.md` lists every
stage's settings on the three surfaces (generated: `python -m textsieve.commands.options_page`).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import Any

METADATA_KEY = "textsieve.option"


@dataclass(frozen=True)
class Option:
    """How one config field is offered to users.

    The long flag is always `--field-name` (`flag_of`). `short`: an extra short flag (`-o`);
    `cli=False`: no CLI option (say why in `cli_reason`); `positional`: a positional argument;
    `repeat`: a list filled by repeating the flag, one value each (without it a list flag takes
    one or more values, and may be repeated too); `parse`: how one CLI string becomes a value
    (default: from the type hint); `group`: the title of the `--help` group it is listed under;
    `renamed_from`: old flag spellings that still work but print a warning (`renamed_message`)."""

    help: str
    short: str | None = None
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    positional: bool = False
    repeat: bool = False
    parse: Callable[[str], Any] | None = None
    cli: bool = True
    cli_reason: str = ""
    group: str | None = None
    renamed_from: tuple[str, ...] = ()


def flag_of(name: str) -> str:
    """The long CLI flag of config field `name`: the same word, `-` for `_`."""
    return "--" + name.replace("_", "-")


def renamed_message(old: str, new: str, name: str) -> str:
    """What a renamed option says when its old spelling `old` is used: printed to stderr by the
    CLI's parser (a Python warning would print the source line of argparse's caller instead)."""
    return (f"{old} is deprecated and will be removed; use {new} (the setting is `{name}` on every surface: "
            f"flag, pipeline file and Python keyword)")


def option(default: Any = MISSING, *, help: str, factory: Callable[[], Any] | None = None,
           **spec: Any) -> Any:
    """A dataclass field whose metadata describes its option (see `Option`)."""
    metadata = {METADATA_KEY: Option(help=help, **spec)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def option_of(f: dataclasses.Field) -> Option | None:
    """The `Option` of a dataclass field, or None for a field declared without `option()`."""
    return f.metadata.get(METADATA_KEY)


def default_of(f: dataclasses.Field) -> Any:
    """A field's default value (a fresh one for factories); MISSING when it is required."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def config_defaults(cls: type) -> dict[str, Any]:
    """{field: default} of a config dataclass (required fields are left out)."""
    out = {}
    for f in dataclasses.fields(cls):
        d = default_of(f)
        if d is not MISSING:
            out[f.name] = d
    return out


def choices_of(cls: type) -> dict[str, tuple[Any, ...]]:
    """{field: allowed values} for the fields of `cls` that have a fixed set of values."""
    return {f.name: opt.choices for f in dataclasses.fields(cls) if (opt := option_of(f)) and opt.choices}


def check_choices(cfg: Any) -> None:
    """Raise ValueError for a field holding a value outside its choices (API and YAML callers
    get the CLI's check)."""
    for f in dataclasses.fields(cfg):
        opt = option_of(f)
        if opt is None or not opt.choices:
            continue
        value = getattr(cfg, f.name)
        if value is not None and value not in opt.choices:
            raise ValueError(f"{f.name}={value!r} ({flag_of(f.name)}): expected one of "
                             f"{', '.join(map(str, opt.choices))}")


def type_hints(cls: type) -> dict[str, Any]:
    """Resolved type hints of a config dataclass (its module's names in scope)."""
    import sys

    module = sys.modules[cls.__module__]
    return typing.get_type_hints(cls, vars(module))


#: Help text of the `memory` option that several stages share; the numbers are
#: `exec.budget.PROCESS_ALLOWANCE`, `PANDAS_ALLOWANCE` and `MIN_SHARE` (this module imports nothing of textsieve;
#: tests/test_resource_limits.py checks they agree).
MEMORY_HELP = ("working memory of the whole process tree (the main process and its workers, split evenly), e.g. "
               "2GB, 512MB; on top of ~100 MB per process for the interpreter (~150 MB where pandas is installed: "
               "pyarrow loads it); at least 32 MB per process (less is refused)")
#: The one default of every stage's `memory` (`--memory`): a laptop's share. Every stage reads
#: it through `exec.budget.memory_plan`, which parses, checks and splits it; no stage's output
#: depends on it except decontaminate's choice of an exact index or Bloom filters.
DEFAULT_MEMORY = "1GB"


def memory_option(spent_on: str) -> Any:
    """The `memory` field of a stage: `DEFAULT_MEMORY`, the shared help and what this stage spends it on."""
    return option(DEFAULT_MEMORY, help=f"{MEMORY_HELP}; {spent_on}", metavar="SIZE")

EXECUTORS = ("local", "ray")


def progress_option() -> Any:
    """The `progress` field every stage has: on by default, turned off by the CLI's -q."""
    return option(True, help="show a progress bar", cli=False, cli_reason="-q turns it off")


def executor_option(help: str) -> Any:
    """The `executor` field of a stage that runs on Ray too; `help` says what runs where."""
    return option("local", help=help, choices=EXECUTORS)


def address_option() -> Any:
    """The `address` field that goes with `executor`."""
    return option(None, help="with --executor ray: the Ray cluster to join ('auto', or host:port); default: "
                             "start a local Ray", metavar="ADDR")
