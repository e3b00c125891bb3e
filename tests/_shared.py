"""Where the shared test data lives (RPv2 golden values, dev corpora, real WARCs): one lookup
for every test module, so a moved checkout skips the same tests for the same stated reason.

Looked up at `$TEXTSIEVE_SHARED`, else at `shared/` beside the repository (`../shared` from the
repository root, the layout the team works in). Tests that need it skip with a reason ending in
`SKIP_TAG`; `conftest.pytest_terminal_summary` counts those skips in one closing line.

Import it as `from _shared import SHARED` (pytest puts `tests/` on `sys.path`), or use the
`shared_dir` fixture of `conftest.py`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SHARED", "SKIP_TAG", "find_shared", "missing_reason"]

#: Every shared-data skip reason contains this, which is how the closing summary finds them.
SKIP_TAG = "(set TEXTSIEVE_SHARED)"


#: The folder holding this module, the default `tests_dir` of `find_shared`.
TESTS_DIR = Path(__file__).resolve().parent


def find_shared(environ: Mapping[str, str] = os.environ, tests_dir: Path = TESTS_DIR) -> Path:
    """`$TEXTSIEVE_SHARED` if set (even to a missing folder: then the tests skip and say so),
    else `shared/` next to the repository that holds `tests_dir`."""
    env = environ.get("TEXTSIEVE_SHARED")
    return Path(env) if env else tests_dir.parent.parent / "shared"


SHARED: Path = find_shared()


def missing_reason(path: Path | str = SHARED, what: str = "shared data") -> str:
    """The skip reason for absent shared data: what is missing, where it was looked for, and the
    variable that points elsewhere."""
    return f"{what} not found at {path} {SKIP_TAG}"
