"""The `textsieve` command: wires the subcommands of `textsieve.commands` and every stage's command together."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import NoReturn

from textsieve._version import __version__
from textsieve.commands import COMMAND_MODULES
from textsieve.commands.index import command_word, needs
from textsieve.commands.tree import CommandTree
from textsieve.commands.warm import warm_workers


def _setup_logging(verbose: int, quiet: bool) -> None:
    from textsieve.exec.library_logs import library_level, set_library_level

    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    set_library_level(library_level(verbose, quiet))  # extraction libraries log per page: not our errors


class _Stale(Exception):
    """A parser built for one command turned the command line away."""


class _OneCommandParser(argparse.ArgumentParser):
    """The parser of `build_parser(command)` and of every subcommand under it: an error raises
    instead of printing, and `main` parses again with every command. So an index that lags
    behind the code (a new stage joining the `dedup` group) can never turn a valid command line
    away, and errors read as they always did (`invalid choice`, with the full list)."""

    def error(self, message: str) -> NoReturn:
        raise _Stale(message)


def _top_parser(cls: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`textsieve` without its commands: enough for `--version`."""
    p = cls(prog="textsieve", description=(
        "Curate LLM pre-training text: compute RedPajama-V2 quality signals beside your documents, "
        "then dedup and select."))
    p.add_argument("--version", action="version", version=f"textsieve {__version__}")
    return p


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `textsieve` parser: every command, or, given a top-level `command` the index knows
    (`commands.index`), only that command's (the rest are not imported; see the index on why)."""
    only = needs(command)
    p = _top_parser(argparse.ArgumentParser if only is None else _OneCommandParser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar, errors only")
    tree = CommandTree(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), common)
    # the modules are imported here, not at the top: they load pyarrow, which must not start
    # before `main` has chosen its memory pool (ARROW_DEFAULT_MEMORY_POOL)
    for name in COMMAND_MODULES if only is None else only.command_modules:
        # first: they make the groups (`dedup`, `learn`) stage commands join
        importlib.import_module(f"textsieve.commands.{name}").register(tree)
    if only is None or only.stage_modules:
        from textsieve.commands import stage_commands

        some = None if only is None else [importlib.import_module(m).STAGE for m in only.stage_modules]
        tree.order(stage_commands.register(tree, some))  # help lists the stages first, in run order
    return p


def process_defaults() -> None:
    """The environment `main` sets before pyarrow and NumPy first load (a value already set is
    kept). Benchmarks that call the stages directly call this first, to run as the command does."""
    # Arrow's system allocator keeps the process peak near its live data (textsieve.exec.arrow_memory);
    # chosen before pyarrow is first imported so mimalloc never reserves its arenas.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # OpenBLAS starts a thread per core when NumPy loads, and each busy-waits 2^28 cycles before it
    # sleeps: ~0.1 CPU-s of the other core for nothing in every command (and again after each BLAS
    # call). 2^4 cycles: the same threads for the stages that multiply big matrices, asleep at once.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")


def _parse(argv: list[str]) -> argparse.Namespace:
    """`argv` parsed by its command's parser alone, or by the full one where that fails (an
    error to print, a command the index does not know, a module it names that moved)."""
    word = command_word(argv)
    if needs(word) is not None:
        try:
            return build_parser(word).parse_args(argv)
        except (_Stale, ImportError, AttributeError):
            pass
    return build_parser().parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The `textsieve` command. Run as the process's command (`argv` None: the console script,
    `python -m textsieve.cli`), a multi-worker stage gets its workers from a warm fork server
    (`commands.warm`); called with `argv` from a host process (tests, notebooks), it spawns them."""
    process_defaults()
    if argv is None:
        argv = sys.argv[1:]
        try:
            warm_workers(argv)
        except ValueError as exc:  # a bad $TEXTSIEVE_WORKER_START
            print(f"textsieve: error: {exc}", file=sys.stderr)
            return 2
    if argv == ["--version"]:
        _top_parser().parse_args(argv)  # prints the version and exits
    try:
        args = _parse(argv)  # imports the command's modules: ~0.3 s in which Ctrl-C may come
    except KeyboardInterrupt:
        print("textsieve: interrupted", file=sys.stderr)
        return 130
    _setup_logging(getattr(args, "verbose", 0), getattr(args, "quiet", False))
    from textsieve.errors import TextsieveError

    try:
        from textsieve.commands.options import check_writes

        check_writes(args)  # an output that is, holds or lies in an input: refused before anything runs
        return args.func(args)
    except (TextsieveError, ValueError, FileNotFoundError) as exc:
        print(f"textsieve: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `textsieve ... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except OSError as exc:  # a full disk in a write no stage turned into DiskFullError (io.diskfull)
        from textsieve.io.diskfull import describe, is_disk_full

        if not is_disk_full(exc):
            raise
        print(f"textsieve: error: {describe(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("textsieve: interrupted; finished shards are kept, re-run to continue", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
