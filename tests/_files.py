"""Readers for the corpora and outputs tests look at, gzip-compressed or not (by the name's
`.gz`), that close what they open: a handle left to the garbage collector is a ResourceWarning
(an error under `-W error`), and an open file keeps Windows from removing the test's tmp dir.

Import them as `from _files import read_jsonl, read_text` (pytest puts `tests/` on `sys.path`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

__all__ = ["read_jsonl", "read_text"]


def read_text(path: Path | str, encoding: str = "utf-8") -> str:
    """The whole file as text, decompressed when `path` ends in `.gz`."""
    if str(path).endswith(".gz"):
        with gzip.open(path, "rt", encoding=encoding) as fh:
            return fh.read()
    with open(path, encoding=encoding) as fh:
        return fh.read()


def read_jsonl(path: Path | str) -> list[Any]:
    """One parsed JSON value per line of a JSON-lines file (UTF-8), decompressed when `path`
    ends in `.gz`. Lines are split the way iterating the file splits them (on newlines only)."""
    if str(path).endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def web_docs(dev_dir: Path, n: int) -> list[dict[str, Any]]:
    """The first `n` records of the dev corpus's web pool (`web_sample.jsonl.gz`), as dicts."""
    import gzip
    import itertools
    import json

    with gzip.open(Path(dev_dir) / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, n)]
