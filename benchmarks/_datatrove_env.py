"""The benchmarks' own virtualenv with datatrove, kept apart from textsieve's dependencies.

datatrove is a *baseline* for ``dedup_quality.py``, ``dedup_speed.py`` and ``_extract_datatrove.py``;
it is never a dependency of textsieve. This module creates ``benchmarks/.venvs/datatrove/`` (ignored
by git via ``benchmarks/.venvs/.gitignore``, written here) and installs datatrove from PyPI with what
its 4-stage MinHash pipeline needs (spaCy for its English word tokenizer, xxhash for its hashes) and
what its WarcReader + Trafilatura extractor need (warcio, faust-cchardet, python-magic, trafilatura).
The benchmarks then run datatrove in a subprocess of that interpreter (``python()``).

Usage: ``python benchmarks/_datatrove_env.py`` (idempotent; prints the interpreter path).
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

VENVS = Path(__file__).resolve().parent / ".venvs"
ENV = VENVS / "datatrove"
#: What datatrove's MinhashDedupSignature/Buckets/Cluster/Filter import at run time, plus what its
#: WarcReader (warcio; faust-cchardet and python-magic, which it imports for charset and MIME-type
#: sniffing) and Trafilatura extractor (trafilatura) need for ``_extract_datatrove.py``.
PACKAGES = ("datatrove>=0.4", "spacy", "xxhash<4", "regex", "nltk", "tokenizers", "orjson", "warcio",
            "faust-cchardet", "python-magic", "trafilatura")
_CHECK = ("import datatrove, spacy, xxhash, warcio, cchardet, magic, trafilatura; "
          "from datatrove.pipeline.dedup.minhash import MinhashDedupSignature; "
          "from datatrove.pipeline.readers import WarcReader; "
          "from datatrove.pipeline.extractors import Trafilatura")


def python() -> Path:
    """Path of the environment's interpreter (the environment may not exist yet)."""
    return ENV / "bin" / "python"


def ready() -> bool:
    exe = python()
    return exe.exists() and subprocess.run([str(exe), "-c", _CHECK], capture_output=True).returncode == 0


def ensure(quiet: bool = False) -> Path:
    """Create the environment and install datatrove unless it already works; return the python."""
    if ready():
        return python()
    VENVS.mkdir(parents=True, exist_ok=True)
    (VENVS / ".gitignore").write_text("*\n")
    if not python().exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(ENV)
    out = subprocess.DEVNULL if quiet else None
    subprocess.run([str(python()), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, stdout=out)
    subprocess.run([str(python()), "-m", "pip", "install", "-q", *PACKAGES], check=True, stdout=out)
    if not ready():
        raise RuntimeError(f"datatrove environment at {ENV} does not import: {_CHECK}")
    return python()


def version() -> str:
    res = subprocess.run([str(python()), "-c", "import datatrove, importlib.metadata as m; "
                          "print(m.version('datatrove'))"], capture_output=True, text=True)
    return res.stdout.strip() or "?"


if __name__ == "__main__":
    print(ensure())
    print("datatrove", version())
    sys.exit(0)
