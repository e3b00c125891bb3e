"""The installed release's version, in a module of its own so that any layer can name it
without importing the package facade (which loads the API lazily and sits at the top)."""

from __future__ import annotations

import importlib.metadata as _metadata

try:  # one source: the version in pyproject.toml, as installed
    __version__ = _metadata.version("textsieve")
except _metadata.PackageNotFoundError:  # a source tree on sys.path without an install
    __version__ = "0.0.0+unknown"
