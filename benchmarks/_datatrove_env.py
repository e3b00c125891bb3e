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

import sys
from pathlib import Path

import _venv

ENV = _venv.VENVS / "datatrove"
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
    return _venv.interpreter(ENV)


def ready() -> bool:
    return _venv.ready(ENV, _CHECK)


def ensure(quiet: bool = False) -> Path:
    """Create the environment and install datatrove unless it already works; return the python."""
    return _venv.ensure(ENV, PACKAGES, _CHECK, (), quiet)


def version() -> str:
    """Installed datatrove version, or ``?``."""
    return _venv.version(ENV, "datatrove")


if __name__ == "__main__":
    print(ensure())
    print("datatrove", version())
    sys.exit(0)
