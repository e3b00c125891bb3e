"""Which modules make each top-level `textsieve` command, so one command imports only its own.

Why a table: building every command's parser imports every stage module and, through them,
pyarrow, NumPy, fsspec and the rest (~0.8 s before any work; ~0.1 s of it is Python itself).
`textsieve annotate ...` needs annotate's modules only, and `textsieve --version` none. The
table is derived, not written by hand: `derive()` builds the full tree the way `cli` always did
and records which command module or stage module added each top-level name, and a test
(tests/test_cli_index.py) fails, printing the new table, when a command or stage is added,
renamed or moved without updating it (`python -m textsieve.commands.index` prints it too). The
full tree is still built for `textsieve --help`, an unknown command, and every caller of
`cli.build_parser()` without a command.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass

from textsieve.commands import COMMAND_MODULES
from textsieve.commands.tree import CommandTree

#: top-level command -> (modules of `textsieve.commands` that register into it, stage modules
#: whose STAGE has a command under it), in the order the full build registers them
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "annotate": ((), ("textsieve.stages.annotate.annotate",)),
    "decontaminate": ((), ("textsieve.stages.training.decontaminate",)),
    "dedup": (("dedup",), ("textsieve.stages.dedup.exact", "textsieve.stages.dedup.fuzzy",
                           "textsieve.stages.dedup.simhash", "textsieve.stages.dedup.lines",
                           "textsieve.stages.dedup.paragraphs", "textsieve.stages.dedup.substring",
                           "textsieve.stages.dedup.semantic")),
    "dsir": (("dsir",), ("textsieve.stages.select.dsir_fit",)),
    "embed": ((), ("textsieve.stages.annotate.embed",)),
    "eval": (("eval",), ()),
    "export": (("export",), ()),
    "extract": ((), ("textsieve.stages.sources.extract",)),
    "import": (("import_cmd",), ()),
    "learn": (("learn",), ("textsieve.stages.annotate.learn_apply",)),
    "mix": ((), ("textsieve.stages.training.mix",)),
    "models": (("models",), ()),
    "pii": ((), ("textsieve.stages.training.pii",)),
    "recipes": (("recipes",), ()),
    "report": (("report",), ()),
    "resources": (("resources",), ()),
    "run": (("run",), ()),
    "sample": (("sample",), ()),
    "select": ((), ("textsieve.stages.select.select",)),
    "signals": (("signals",), ()),
    "source": ((), ("textsieve.stages.sources.source",)),
    "tokens": ((), ("textsieve.stages.training.tokens",)),
    "train": (("train",), ()),
}


@dataclass(frozen=True)
class Needs:
    """What one top-level command's parser needs imported."""

    command_modules: tuple[str, ...]
    stage_modules: tuple[str, ...]


def needs(command: str | None) -> Needs | None:
    """The modules behind `command`, or None when the full tree must be built (no command, an
    unknown one)."""
    found = COMMANDS.get(command or "")
    return Needs(*found) if found is not None else None


def command_word(argv: list[str]) -> str | None:
    """The top-level command in `argv`: its first word that is not an option. The top level takes
    no option with a value (`-h`, `--version`), so nothing before the command can be one; None
    when `-h`/`--help` comes first, as the whole list is then printed."""
    for arg in argv:
        if arg in ("-h", "--help"):
            return None
        if not arg.startswith("-"):
            return arg
    return None


def derive() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The table as the full build makes it (slow: imports every command and stage module)."""
    from textsieve.stages.registry import stage_modules  # here: it imports every stage module

    common = argparse.ArgumentParser(add_help=False)
    tree = CommandTree(argparse.ArgumentParser().add_subparsers(dest="command"), common)
    table: dict[str, tuple[list[str], list[str]]] = {}
    for name in COMMAND_MODULES:  # a module's commands: the parsers and groups it added
        before = _made(tree)
        importlib.import_module(f"textsieve.commands.{name}").register(tree)
        for word in sorted(_made(tree) - before):
            table.setdefault(word, ([], []))[0].append(name)
    for module, stage in stage_modules():
        if stage.cli_spec is not None:
            table.setdefault(stage.cli.split(" ")[0], ([], []))[1].append(module)
    return {word: (tuple(dict.fromkeys(cmds)), tuple(dict.fromkeys(mods)))
            for word, (cmds, mods) in sorted(table.items())}


def _made(tree: CommandTree) -> set[str]:
    """The top-level words of every command and group made so far; a command module may add its
    parser to the top level directly (`tree.top.add_parser`) or through the tree."""
    return {path.split(" ")[0] for path in tree.paths()} | set(tree.top.choices)


if __name__ == "__main__":
    import pprint

    pprint.pprint(derive(), width=110, sort_dicts=False)
