"""Baseline tools' own virtualenvs under ``benchmarks/.venvs/`` (datatrove, dolma), made the same way.

A baseline is never a textsieve dependency and may pin versions textsieve cannot take (dolma pins
numpy<2), so each lives in a venv of its own, ignored by git, created once and reused while its
import check passes. ``_datatrove_env.py`` and ``_dolma_env.py`` say what goes into theirs.
"""

from __future__ import annotations

import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path

VENVS = Path(__file__).resolve().parent / ".venvs"


def interpreter(env: Path) -> Path:
    """The environment's python (the environment may not exist yet)."""
    return env / "bin" / "python"


def ready(env: Path, check: str) -> bool:
    """Whether the environment exists and runs `check` (Python source) without an error."""
    exe = interpreter(env)
    return exe.exists() and subprocess.run([str(exe), "-c", check], capture_output=True).returncode == 0


def ensure(env: Path, packages: Sequence[str], check: str, pip_args: Sequence[str] = (), quiet: bool = False) -> Path:
    """Create `env` and pip-install `packages` unless `check` already passes; return its python."""
    if ready(env, check):
        return interpreter(env)
    VENVS.mkdir(parents=True, exist_ok=True)
    (VENVS / ".gitignore").write_text("*\n")
    if not interpreter(env).exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
    out = subprocess.DEVNULL if quiet else None
    py = str(interpreter(env))
    subprocess.run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, stdout=out)
    subprocess.run([py, "-m", "pip", "install", "-q", *pip_args, *packages], check=True, stdout=out)
    if not ready(env, check):
        raise RuntimeError(f"environment at {env} does not pass its import check: {check}")
    return interpreter(env)


def version(env: Path, dist: str) -> str:
    """The installed version of distribution `dist` in `env`, or ``?``."""
    res = subprocess.run([str(interpreter(env)), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                         capture_output=True, text=True)
    return res.stdout.strip() or "?"
