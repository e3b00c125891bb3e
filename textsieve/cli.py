"""The `textsieve` command: wires the subcommands of `textsieve.commands` and every stage's command together."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from textsieve._version import __version__
from textsieve.commands import COMMAND_MODULES


def _setup_logging(verbose: int, quiet: bool) -> None:
    from textsieve.exec.library_logs import library_level, set_library_level

    level = logging.ERROR if quiet else (logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    set_library_level(library_level(verbose, quiet))  # extraction libraries log per page: not our errors


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="textsieve", description=(
        "Curate LLM pre-training text: compute RedPajama-V2 quality signals beside your documents, "
        "then dedup and select."))
    p.add_argument("--version", action="version", version=f"textsieve {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar, errors only")
    # imported here, not at the top: they load pyarrow, which must not start before `main` has
    # chosen its memory pool (ARROW_DEFAULT_MEMORY_POOL)
    from textsieve.commands import stage_commands
    from textsieve.commands.tree import CommandTree

    tree = CommandTree(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), common)
    for name in COMMAND_MODULES:  # first: they make the groups (`dedup`, `learn`) stage commands join
        importlib.import_module(f"textsieve.commands.{name}").register(tree)
    tree.order(stage_commands.register(tree))  # help lists the stages first, in run order
    return p


def main(argv: list[str] | None = None) -> int:
    # Arrow's system allocator keeps the process peak near its live data (textsieve.exec.arrow_memory);
    # chosen before pyarrow is first imported so mimalloc never reserves its arenas.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    args = build_parser().parse_args(argv)
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
