"""docs/architecture.md and docs/signals.md stay true: the package tree names every package and
no module that is gone, the Python examples of the extension points run as written, and every
`§N` the code cites has a section (or numbered note) of that number in docs/signals.md.

The shell commands of both pages are run by `test_docs_commands.py`, like every doc's."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "textsieve"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SIGNALS = ROOT / "docs" / "signals.md"
_NAME = re.compile(r"[A-Za-z_][\w.]*(\.pyi?|/)\Z")


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def _tree_paths() -> set[str]:
    """Every file and folder the ```text tree of "The package tree" names, as paths relative
    to the repository (`textsieve/io/paths.py`, `textsieve/io/`). Names come first on a line,
    two spaces of indent per level; several names may share a line; the rest is description."""
    block = _section(ARCHITECTURE.read_text(encoding="utf-8"), "## The package tree")
    lines = block.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()
    paths: set[str] = set()
    stack: list[str] = []
    for line in lines:
        depth = (len(line) - len(line.lstrip(" "))) // 2
        names = []
        for token in line.split():
            if not _NAME.match(token):
                break
            names.append(token)
        assert names, f"tree line names nothing: {line!r}"
        stack = stack[:depth]
        parent = "".join(stack)
        for name in names:
            paths.add(parent + name)
        if names[-1].endswith("/"):
            stack.append(names[-1])
    return paths


def test_the_package_tree_names_every_module_and_only_modules_that_exist():
    """A package stands for its `__init__.py`; every other module needs its own line."""
    listed = _tree_paths()
    packages = {f"{p.parent.relative_to(ROOT).as_posix()}/" for p in PACKAGE.rglob("__init__.py")
                if "__pycache__" not in p.parts}
    assert packages - listed == set(), "packages missing from docs/architecture.md's tree"
    stale = {p for p in listed if not (ROOT / p).exists()}
    assert stale == set(), "docs/architecture.md's tree names files that do not exist"
    unlisted = sorted(rel for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts
                      and (rel := p.relative_to(ROOT).as_posix()) not in listed and p.name != "__init__.py")
    assert unlisted == [], "modules missing from docs/architecture.md's tree (add a line for each)"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)


@pytest.mark.slow  # three scripts, each with a worker pool
def test_the_extension_examples_run_as_written(tmp_path):
    """Files (`# NAME.py` blocks) are written, the other blocks run as scripts in order, with the
    sample corpus at hand and the default worker count, so registrations reach spawned workers."""
    from textsieve.sample import build_sample

    build_sample(tmp_path / "sample.jsonl.gz", max_docs=60)
    scripts = 0
    for i, block in enumerate(_python_blocks(ARCHITECTURE.read_text(encoding="utf-8"))):
        first = block.splitlines()[0]
        named = re.fullmatch(r"# (\w+\.py)", first)
        if named:
            (tmp_path / named.group(1)).write_text(block, encoding="utf-8")
            continue
        script = tmp_path / f"example_{i}.py"
        script.write_text(block, encoding="utf-8")
        run = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, f"docs/architecture.md python block {i}:\n{block}\n{run.stderr[-3000:]}"
        scripts += 1
    assert scripts == 3  # signal, model kind, reader
    assert (tmp_path / "digits-attrs" / "docs" / "sample.parquet").exists()
    shutil.rmtree(tmp_path / "digits-attrs")


def _cited() -> dict[str, list[str]]:
    """Each section number the code cites (`spec §4.2`, `(§11.3)`, `§4.1-§4.4`) -> where. The
    source-dump families (`dumps/`) cite the RedPajama-1T sources spec instead, whose sections
    docs/sources.md retells per family, so they are left out here, with the signals and recipes
    named after it (`rpv1_*.py`, `rpv1-*.yaml`)."""
    found: dict[str, list[str]] = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.yaml")]):
        if "__pycache__" in path.parts or "dumps" in path.relative_to(PACKAGE).parts \
                or path.name.startswith(("rpv1_", "rpv1-")):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            line = re.sub(r"golden README §\d+", "", line)  # the golden data's own README
            for ref in re.findall(r"§(\d+(?:\.\d+)?)", line):
                found.setdefault(ref, []).append(f"{path.relative_to(ROOT)}:{n}")
    return found


def test_every_section_the_code_cites_is_on_the_signals_page():
    text = SIGNALS.read_text(encoding="utf-8")
    anchors = set(re.findall(r"^#+ §(\d+(?:\.\d+)?) ", text, re.M)) | set(re.findall(r"\*\*§(\d+\.\d+)\*\*", text))
    cited = _cited()
    assert len(cited) > 20  # the pattern still finds the code's references
    missing = {ref: where[:3] for ref, where in cited.items() if ref not in anchors}
    assert missing == {}, "cited in the code, no such section in docs/signals.md"


@pytest.mark.parametrize("page", [ARCHITECTURE, SIGNALS], ids=lambda p: p.name)
def test_the_pages_link_only_to_pages_that_exist(page):
    for target in re.findall(r"\]\(([\w./-]+\.md)\)", page.read_text(encoding="utf-8")):
        assert (page.parent / target).exists(), f"{page.name} links to {target}"


def test_the_add_a_stage_example_is_the_real_stage():
    """The `STAGE` shown under "Add a stage" is stages/training/pii.py's, as it is."""
    section = _section(ARCHITECTURE.read_text(encoding="utf-8"), "## Add a stage")
    shown = section.split("```python\n# pii.py\n", 1)[1].split("\n```", 1)[0]
    source = (PACKAGE / "stages" / "training" / "pii.py").read_text(encoding="utf-8")
    assert shown in source, "docs/architecture.md's STAGE example differs from stages/training/pii.py"
