"""A virtualenv of its own with AI2's ``dolma`` toolkit, kept apart from textsieve's dependencies.

``dolma`` is the *reference* for textsieve's Dolma interop (``tests/test_dolma.py`` runs its mixer
over attributes written by ``textsieve export dolma``); it is never a dependency of textsieve. It
cannot share textsieve's virtualenv: dolma 1.2 pins ``numpy<2`` and ``s3fs==2023.6.0`` (hence
``fsspec==2023.6.0``), which would downgrade what textsieve needs. This module creates
``benchmarks/.venvs/dolma/`` (ignored by git via ``benchmarks/.venvs/.gitignore``) and installs the
``dolma`` wheel from PyPI there; tests then run ``dolma mix`` in a subprocess of that interpreter.

Usage: ``python benchmarks/_dolma_env.py`` (idempotent; prints the interpreter path).
"""

from __future__ import annotations

import sys
from pathlib import Path

import _venv

ENV = _venv.VENVS / "dolma"
PACKAGES = ("dolma>=1.0",)
#: The mixer is dolma's Rust extension; its CLI (``dolma mix``) is what a user runs.
_CHECK = "import dolma; from dolma.cli.__main__ import main; import dolma.core.runtime"


def python() -> Path:
    """Path of the environment's interpreter (the environment may not exist yet)."""
    return _venv.interpreter(ENV)


def dolma_cli() -> Path:
    """Path of the environment's ``dolma`` console script."""
    return ENV / "bin" / "dolma"


def ready() -> bool:
    return _venv.ready(ENV, _CHECK)


def ensure(quiet: bool = False) -> Path:
    """Create the environment and install dolma unless it already works; return the python."""
    return _venv.ensure(ENV, PACKAGES, _CHECK, ("--only-binary", ":all:"), quiet)


def version() -> str:
    """Installed dolma version, or ``?``."""
    return _venv.version(ENV, "dolma")


if __name__ == "__main__":
    print(ensure())
    print("dolma", version())
    sys.exit(0)
