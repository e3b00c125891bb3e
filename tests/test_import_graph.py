"""Imports flow one way: commands -> pipeline -> stages -> domain packages -> io/exec/text.

Every `import textsieve.X` / `from textsieve.X import` in the package (module level and inside
functions alike) is checked against the layer of the importing module; a lower layer may never
import a higher one. This is the import-graph check of the restructure (issue 11).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "textsieve"

#: layer of each top-level module or package of textsieve; lower numbers sit higher up
LAYERS = {
    "cli": 0, "commands": 0, "api": 0,
    "pipeline": 1,
    "stages": 2,
    "report": 3, "export": 3, "recipes": 3, "dsir": 3, "learned": 3, "eval": 3, "dedup": 3, "models": 3,
    "signals": 3, "sample": 3, "sample_crawl": 3, "extraction": 3,
    "interop": 3, "decontam": 3, "personal_data": 3, "tokenization": 3, "mixing": 3, "embedding": 3,
    "io": 4, "exec": 4, "text": 4, "native": 4, "extensions": 4,
    "options": 5, "errors": 5, "document": 5,
    "__init__": 0,  # the package facade: `ts.annotate` etc. are loaded lazily from textsieve.api
}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text("utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("textsieve")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("textsieve") \
                and node.level == 0:
            if node.module == "textsieve":
                out += [(node.lineno, f"textsieve.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, node.module))
    return out


def _violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts)
        me = _top(module)
        assert me in LAYERS, f"{module}: add its package to LAYERS"
        for line, target in _imports(path):
            them = _top(target)
            if them == "__init__" or them not in LAYERS:
                continue
            if LAYERS[them] < LAYERS[me]:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (layer {LAYERS[me]}) imports "
                           f"{target} (layer {LAYERS[them]})")
    return bad


def test_imports_flow_one_way():
    bad = _violations()
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_every_package_says_its_one_job():
    """A folder's `__init__` docstring says what it holds."""
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert doc and len(doc.split()) >= 6, f"{init.relative_to(PACKAGE.parent)}: no docstring saying its job"
