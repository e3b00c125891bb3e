"""Third-party libraries' log records, routed through textsieve's levels.

Why: the extraction libraries log per page (trafilatura's `ERROR trafilatura.utils: lxml parsing
failed` for an empty page, htmldate's and courlan's warnings), so `extract -q` printed lines that
are no errors of the run: extract already counts every page it could not use, by reason. Their
loggers get a level from the command line's: hidden by default and under `-q`, warnings with
`-v`, everything with `-vv`. Worker processes do not share this process's loggers (spawned, or
forked by a fork server that started earlier), so the level travels in the environment
(`LEVEL_ENV`, which every worker takes from its pool's owner) and every worker applies it when it
loads an engine.
"""

from __future__ import annotations

import logging
import os

#: the libraries whose loggers follow textsieve's levels
LIBRARIES = ("trafilatura", "htmldate", "courlan", "justext", "readability", "charset_normalizer")
LEVEL_ENV = "TEXTSIEVE_LIBRARY_LOG_LEVEL"
#: above CRITICAL: not even a library's critical record is shown
SILENT = logging.CRITICAL + 10


def library_level(verbose: int, quiet: bool) -> int:
    """The libraries' level for a command line's `-v` count and `-q`."""
    if quiet or verbose <= 0:
        return SILENT
    return logging.WARNING if verbose == 1 else logging.DEBUG


def set_library_level(level: int) -> None:
    """Apply `level` here and in every worker this process starts."""
    os.environ[LEVEL_ENV] = str(level)
    apply_library_level()


def apply_library_level() -> None:
    """Set the libraries' loggers to the level the command line chose (silent when none did, as
    for a script calling the API: its own logging configuration then decides the rest)."""
    try:
        level = int(os.environ.get(LEVEL_ENV, SILENT))
    except ValueError:
        level = SILENT
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(level)
