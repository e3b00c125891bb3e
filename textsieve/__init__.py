"""textsieve: curate LLM pre-training text with RedPajama-V2 quality signals, dedup and selection.

`import textsieve as ts` gives the Python API (`textsieve.api`): `ts.extract`, `ts.annotate`, `ts.dedup_exact`,
`ts.dedup_fuzzy`, `ts.dedup_lines`, `ts.dedup_semantic`, `ts.decontaminate`, `ts.pii`, `ts.tokens`, `ts.embed`,
`ts.train_tokenizer`, `ts.dsir_fit`, `ts.select`, `ts.mix`, `ts.funnel`, `ts.run`, `ts.load_recipe`,
`ts.read_documents` and `ts.attributes`. They are loaded on first use (PEP 562), so `import
textsieve` stays cheap: the CLI imports it for `__version__` on every call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from textsieve._version import __version__

__all__ = ["__version__", "extract", "annotate", "import_rpv2", "dedup_exact", "dedup_fuzzy", "dedup_lines",
           "dedup_semantic", "decontaminate", "pii", "tokens", "embed", "learn_apply", "train_tokenizer", "dsir_fit",
           "select", "mix",
           "funnel", "run",
           "load_recipe", "read_documents", "attributes", "attributes_as_columns", "export_dolma", "import_dolma"]
#: the names `textsieve.api` exports at the top level
_API = tuple(__all__[1:])

if TYPE_CHECKING:  # for type checkers and IDEs; at run time `__getattr__` loads them lazily
    from textsieve.api import (
        annotate,
        attributes,
        attributes_as_columns,
        decontaminate,
        dedup_exact,
        dedup_fuzzy,
        dedup_lines,
        dedup_semantic,
        dsir_fit,
        embed,
        export_dolma,
        extract,
        funnel,
        import_dolma,
        import_rpv2,
        learn_apply,
        load_recipe,
        mix,
        pii,
        read_documents,
        run,
        select,
        tokens,
        train_tokenizer,
    )


def __getattr__(name: str) -> Any:
    if name in _API:
        value = getattr(importlib.import_module("textsieve.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'textsieve' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
