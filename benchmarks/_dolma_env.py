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

import subprocess
import sys
import venv
from pathlib import Path

VENVS = Path(__file__).resolve().parent / ".venvs"
ENV = VENVS / "dolma"
PACKAGES = ("dolma>=1.0",)
#: The mixer is dolma's Rust extension; its CLI (``dolma mix``) is what a user runs.
_CHECK = "import dolma; from dolma.cli.__main__ import main; import dolma.core.runtime"


def python() -> Path:
    """Path of the environment's interpreter (the environment may not exist yet)."""
    return ENV / "bin" / "python"


def dolma_cli() -> Path:
    """Path of the environment's ``dolma`` console script."""
    return ENV / "bin" / "dolma"


def ready() -> bool:
    """Whether the environment exists and imports dolma's CLI."""
    exe = python()
    return exe.exists() and subprocess.run([str(exe), "-c", _CHECK], capture_output=True).returncode == 0


def ensure(quiet: bool = False) -> Path:
    """Create the environment and install dolma unless it already works; return the python."""
    if ready():
        return python()
    VENVS.mkdir(parents=True, exist_ok=True)
    (VENVS / ".gitignore").write_text("*\n")
    if not python().exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(ENV)
    out = subprocess.DEVNULL if quiet else None
    subprocess.run([str(python()), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, stdout=out)
    subprocess.run([str(python()), "-m", "pip", "install", "-q", "--only-binary", ":all:", *PACKAGES],
                   check=True, stdout=out)
    if not ready():
        raise RuntimeError(f"dolma environment at {ENV} does not import: {_CHECK}")
    return python()


def version() -> str:
    """Installed dolma version, or ``?``."""
    res = subprocess.run([str(python()), "-c", "import importlib.metadata as m; print(m.version('dolma'))"],
                         capture_output=True, text=True)
    return res.stdout.strip() or "?"


if __name__ == "__main__":
    print(ensure())
    print("dolma", version())
    sys.exit(0)
