"""Imports flow one way: commands -> pipeline -> stages -> domain packages -> io/exec/text.

Every `import textsieve.X` / `from textsieve.X import` in the package, at module level and
inside functions alike (an import inside a function is still a dependency; hiding one there is
how cycles used to slip past), is checked against the tiers below: a package may import only
packages in lower tiers, never one in its own tier or above, so the package graph has no cycle
by construction. The middle layer is ordered too (`recipes` sits above `learned`, which sits
above `embedding`...), not one flat layer. Two more rules: no module imports another module's
`_private` name (a name used across modules is public and says so), and the number of
function-level imports is printed and may only go down (`FUNCTION_LEVEL_CEILING`).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "textsieve"

#: textsieve's top-level modules and packages, highest tier first. A package imports only from
#: tiers after its own.
TIERS: list[set[str]] = [
    {"__init__", "cli"},  # the facade (`ts.annotate`, loaded lazily) and the command line
    {"commands", "api"},
    {"api_stages", "api_stub"},  # the API's stage functions (and their stub), made from the registry
    {"api_keywords"},
    {"pipeline"},
    {"stages"},
    # the domain packages, ordered
    {"report", "dsir", "personal_data", "eval", "export", "decontam", "dedup", "sample_crawl", "sample_sources"},
    {"recipes", "models"},
    {"learned", "signals"},
    {"dumps"},  # source dumps read into documents; the GitHub filter counts tokens (`tokenization`)
    {"embedding", "interop", "tokenization", "mixing", "extraction", "sample"},
    # the base: storage, execution, text kernels
    {"io", "exec", "text"},
    {"extensions", "units", "options", "errors", "document", "_version", "display", "native"},
]
TIER = {name: i for i, names in enumerate(TIERS) for name in names}
#: imports of textsieve modules inside functions, conditionals or `TYPE_CHECKING` blocks (509 when
#: issue 24 began; lower this when you move one to the top of its module)
FUNCTION_LEVEL_CEILING = 420


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module(path: Path) -> str:
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return module.removesuffix(".__init__")


@functools.cache  # three tests read every module's imports: parse each file once
def _imports(path: Path) -> list[tuple[int, str, list[str], bool]]:
    """(line, imported module, names taken from it, at module top level) of every textsieve import."""
    tree = ast.parse(path.read_text("utf-8"))
    top_level = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, [], id(node) in top_level) for a in node.names
                    if a.name.startswith("textsieve")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("textsieve") \
                and node.level == 0:
            if node.module == "textsieve":
                out += [(node.lineno, f"textsieve.{a.name}", [], id(node) in top_level) for a in node.names]
            else:
                out.append((node.lineno, node.module, [a.name for a in node.names], id(node) in top_level))
    return out


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_has_a_tier():
    missing = {_top(_module(p)) for p in _files()} - set(TIER)
    assert not missing, f"add to TIERS: {sorted(missing)}"


def test_imports_flow_one_way():
    bad = []
    for path in _files():
        me = _top(_module(path))
        for line, target, _, _ in _imports(path):
            them = _top(target)
            if them != me and them in TIER and TIER[them] <= TIER[me]:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {me} (tier {TIER[me]}) imports "
                           f"{target} (tier {TIER[them]})")
    assert not bad, "imports that do not flow down:\n" + "\n".join(bad)


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path in _files():
        me = _module(path)
        for line, target, names, _ in _imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and target != me:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {target}.{', '.join(private)}")
    assert not bad, "private names imported from other modules (make them public):\n" + "\n".join(bad)


def test_function_level_imports_only_go_down(capsys):
    n = sum(not top for path in _files() for _, _, _, top in _imports(path))
    with capsys.disabled():
        print(f"\n{n} function-level textsieve imports (ceiling {FUNCTION_LEVEL_CEILING})")
    assert n <= FUNCTION_LEVEL_CEILING, (f"{n} textsieve imports inside functions, more than the "
                                         f"{FUNCTION_LEVEL_CEILING} allowed: import at the top of the module")


def test_every_package_says_its_one_job():
    """A folder's `__init__` docstring says what it holds."""
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text("utf-8")))
        assert doc and len(doc.split()) >= 6, f"{init.relative_to(PACKAGE.parent)}: no docstring saying its job"
