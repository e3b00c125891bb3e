"""Whether a command line gets its workers from a warm fork server (`exec.warm_start`).

Why here, before the command line is parsed: parsing imports the command's modules (~0.3 s for a
stage), and the server's own imports should run beside those, not after them. So this reads only
what decides whether the command will run a local pool of several workers: the command words,
`--workers`, `--executor` and `--help`, with a parser of those few options that follows
argparse's own rules (abbreviations, `--workers=2`, the last of a repeated option wins). A line it
misjudges costs a server nobody uses (killed at exit) or spawned workers, never a wrong result.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from textsieve.commands.index import command_word, needs
from textsieve.exec import warm_start

#: stage commands that run no local pool: no --workers option. tests/test_warm_start.py derives
#: this from the parsers.
NO_POOL = frozenset({"dedup semantic", "dedup show", "dsir fit", "dsir resample"})
#: stage commands whose --workers defaults to 1: a pool only when the line asks for more (derived
#: by the same test)
ONE_WORKER = frozenset({"dedup fuzzy"})


class _Unreadable(Exception):
    """The few options read here do not parse; the command's own parser will say why."""


class _PoolOptions(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unreadable(message)


def _pool_options(argv: list[str]) -> argparse.Namespace | None:
    parser = _PoolOptions(add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--executor")
    try:
        return parser.parse_known_args(argv)[0]
    except _Unreadable:
        return None


def runs_a_pool(argv: list[str]) -> tuple[str, ...] | None:
    """The stage modules to preload when `argv`'s command will run a local pool of 2 or more
    workers on this machine, else None. `run` (a pipeline file) counts: its stages' settings are
    in the file, and most run pools."""
    word = command_word(argv)
    spec = needs(word)
    if spec is None or not (spec.stage_modules or word == "run"):
        return None
    path = " ".join([arg for arg in argv if not arg.startswith("-")][:2])
    options = _pool_options(argv)
    if path in NO_POOL or options is None or options.help or options.dry_run or options.executor == "ray":
        return None
    workers = options.workers
    if not workers:  # unset, or 0: the stage's default (`cfg.workers or default_workers()`)
        workers = 1 if path in ONE_WORKER else warm_start.usable_cores()
    if workers < 2 or warm_start.usable_cores() < 2:
        return None
    return spec.stage_modules


def warm_workers(argv: list[str]) -> bool:
    """Start the fork server before `argv`'s command imports its modules, when the command will
    run a local pool of several workers (`runs_a_pool`) and `$TEXTSIEVE_WORKER_START` allows it
    (ValueError on a bad value). Returns whether the server runs."""
    modules = runs_a_pool(argv)
    if modules is None or not warm_start.wanted():
        return False
    return warm_start.start(modules)
