"""The installed release's version, in a module of its own so that any layer can name it
without importing the package facade (which loads the API lazily and sits at the top)."""

from __future__ import annotations

__version__ = "0.1.0"
"""The one source of the version: pyproject.toml reads it from here (`[tool.setuptools.dynamic]`).
A literal, not `importlib.metadata.version("textsieve")`: that lookup costs ~60 ms in every
process (the CLI and each worker) and is wrong in a source tree that is not installed."""
