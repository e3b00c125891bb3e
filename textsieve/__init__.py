"""textsieve: curate LLM pre-training text with RedPajama-V2 quality signals, dedup and selection.

`import textsieve as ts` gives the Python API (`textsieve.api`): one function per stage
(`ts.extract`, `ts.annotate`, `ts.dedup_fuzzy`, `ts.select`, `ts.mix`, ...: whatever the stage
registry holds) plus `ts.funnel`, `ts.run`, `ts.load_recipe`, `ts.read_documents`,
`ts.attributes` and the importers. They are loaded on first use (PEP 562), so `import
textsieve` stays cheap: the CLI imports it for `__version__` on every call.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textsieve._version import __version__ as __version__

if TYPE_CHECKING:  # for type checkers and IDEs; at run time `__getattr__` loads them lazily
    from textsieve.api import *  # noqa: F403


def _api_names() -> list[str]:
    """The names `textsieve.api` exports (its stage functions come from the stage registry)."""
    return list(importlib.import_module("textsieve.api").__all__)


def _is_submodule(name: str) -> bool:
    """`from textsieve import io` asks this module's `__getattr__` first: a submodule's name
    must fall through to the import system without loading the API."""
    here = Path(__file__).parent
    return (here / name).is_dir() or (here / f"{name}.py").is_file()


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return ["__version__", *_api_names()]
    if not name.startswith("_") and not _is_submodule(name) and name in _api_names():
        value = getattr(importlib.import_module("textsieve.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'textsieve' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API and the module's dunders (`__version__`, `__doc__`, ...), nothing else: not the
    names this file imports for its own use (`Any`, `Path`, `importlib`, `TYPE_CHECKING`) nor the
    submodules Python binds here once they are loaded (`api`, `io`, `signals`, ...), so `dir(ts)`
    and a notebook's tab completion list what `import textsieve as ts` is for."""
    dunders = {name for name in globals() if name.startswith("__") and name.endswith("__")}
    return sorted(dunders | set(_api_names()))
