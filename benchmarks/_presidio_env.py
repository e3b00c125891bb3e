"""The benchmarks' own virtualenv with presidio-analyzer, the baseline of ``benchmarks/pii.py``.

presidio-analyzer is never a dependency of textsieve. Its pattern recognizers (EmailRecognizer,
IpRecognizer, PhoneRecognizer, CreditCardRecognizer, IbanRecognizer) are plain regex/validator
classes that `analyze(text, entities, None)` runs without its spaCy NLP engine, so no spaCy model
is downloaded; the package still imports spaCy, which pip installs with it.

Usage: ``python benchmarks/_presidio_env.py`` (idempotent; prints the interpreter path).
"""

from __future__ import annotations

import sys
from pathlib import Path

import _venv

ENV = _venv.VENVS / "presidio"
PACKAGES = ("presidio-analyzer>=2.2",)
_CHECK = ("from presidio_analyzer.predefined_recognizers import EmailRecognizer, IpRecognizer, PhoneRecognizer, "
          "CreditCardRecognizer, IbanRecognizer")


def python() -> Path:
    """Path of the environment's interpreter (the environment may not exist yet)."""
    return _venv.interpreter(ENV)


def ensure(quiet: bool = False) -> Path:
    """Create the environment and install presidio-analyzer unless it already works; return the python."""
    return _venv.ensure(ENV, PACKAGES, _CHECK, ("--only-binary", ":all:"), quiet)


def version() -> str:
    """Installed presidio-analyzer version, or ``?``."""
    return _venv.version(ENV, "presidio-analyzer")


if __name__ == "__main__":
    print(ensure())
    print("presidio-analyzer", version())
    sys.exit(0)
