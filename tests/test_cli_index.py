"""`textsieve X` builds only command X's parser (textsieve.commands.index): the table must match
what the full build makes, and each command's parser must be the same either way."""

from __future__ import annotations

import argparse
import pprint
import subprocess
import sys

import pytest

from textsieve.cli import build_parser
from textsieve.commands.index import COMMANDS, command_word, derive

FULL = build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser, path: str = "") -> dict[str, str]:
    """Every command's help text under `parser`, by path (`dedup fuzzy`)."""
    out = {path: parser.format_help()} if path else {}
    for name, sub in _subparsers(parser).items():
        out.update(_helps(sub, f"{path} {name}".strip()))
    return out


def test_the_index_is_what_the_full_build_registers():
    derived = derive()
    assert derived == COMMANDS, ("textsieve.commands.index.COMMANDS is out of date; the full build gives:\n"
                                 + pprint.pformat(derived, width=110, sort_dicts=False))
    assert set(COMMANDS) == set(_subparsers(FULL))  # every top-level command has an entry


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_built_alone_has_the_same_parsers_as_in_the_full_build(command):
    alone = build_parser(command)
    assert list(_subparsers(alone)) == [command]
    full = {path: text for path, text in _helps(FULL).items() if path.split(" ")[0] == command}
    assert _helps(alone) == full


@pytest.mark.parametrize(("argv", "word"), [
    (["annotate", "x.jsonl", "-o", "out"], "annotate"),
    (["--version"], None), ([], None), (["-h", "annotate"], None), (["--help"], None),
    (["dedup", "fuzzy", "attrs"], "dedup"), (["anotate", "x"], "anotate"),
])
def test_the_command_word_is_the_first_word_that_is_not_an_option(argv, word):
    assert command_word(argv) == word


def test_an_unknown_command_still_lists_every_command(capsys):
    from textsieve.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["anotate", "x.jsonl"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'anotate'" in err and "'annotate'" in err and "'select'" in err


def test_a_stale_index_never_turns_a_valid_command_away(monkeypatch):
    """A stage added to a group the index lists without it (here: fuzzy left out of `dedup`) is
    still parsed, by the full build."""
    from textsieve import cli
    from textsieve.commands import index

    cmds, mods = COMMANDS["dedup"]
    monkeypatch.setitem(index.COMMANDS, "dedup", (cmds, tuple(m for m in mods if not m.endswith(".fuzzy"))))
    with pytest.raises(Exception, match="invalid choice"):  # the one-command parser alone refuses it
        cli.build_parser("dedup").parse_args(["dedup", "fuzzy", "attrs"])
    args = cli._parse(["dedup", "fuzzy", "attrs", "--thresholds", "0.9"])
    assert (args.command, args.mode, args.thresholds) == ("dedup", "fuzzy", [0.9])
    monkeypatch.setitem(index.COMMANDS, "pii", ((), ("textsieve.stages.training.moved_away",)))
    assert cli._parse(["pii", "attrs"]).command == "pii"


def test_version_and_a_light_command_load_no_pyarrow_numpy_or_stage_modules():
    code = ("import sys, contextlib, io\n"
            "from textsieve.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    main(['recipes'])\n"
            "assert 'c4' in out.getvalue()\n"
            "heavy = [m for m in ('pyarrow', 'numpy', 'fsspec', 'textsieve.stages.annotate.annotate') "
            "if m in sys.modules]\n"
            "print(heavy)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
    version = subprocess.run([sys.executable, "-X", "importtime", "-m", "textsieve.cli", "--version"],
                             capture_output=True, text=True, timeout=120, check=True)
    assert version.stdout.startswith("textsieve ")
    loaded = {line.rsplit("|", 1)[-1].strip() for line in version.stderr.splitlines()}
    assert not loaded & {"pyarrow", "numpy", "fsspec", "importlib.metadata", "textsieve.commands.stage_commands"}


def test_main_lets_openblas_threads_sleep_at_once_unless_told_otherwise(monkeypatch, capsys):
    """OpenBLAS's threads busy-wait 2^28 cycles after NumPy loads (~0.1 CPU-s of the other core
    per command, 1.9% of a one-worker annotate of the dev corpus); `main` asks for 2^4 first,
    keeping a value the user set."""
    import os

    from textsieve.cli import main

    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    assert main(["recipes"]) == 0
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == "4"
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "20")
    assert main(["recipes"]) == 0
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == "20"
    capsys.readouterr()
