"""Output paths that cannot leave their output folder.

Why: output names mirror input names (`sub/a.jsonl` -> `OUT/sub/a.parquet`), and input names
come from listings we do not control: an object-store key or a `memory://` path may contain
`..` (`data/sub/../../../escape.jsonl`), and an attribute folder's footers may have been edited.
Every output path is therefore built from a rel path that is normalised and refused when it
would climb out (`safe_rel`), and joined onto its root with a final containment check
(`join_inside`).

Output names also never start with `_` or `.` in any part (`data_rel`): pyarrow, Spark and Hive
skip such files and folders when reading a folder as a dataset, so the shard made from a folder
of `.html` pages (input rel `_html`) was silently left out of `pd.read_parquet(folder)`.
"""

from __future__ import annotations

import posixpath

from textsieve.errors import TextsieveError


class UnsafePathError(TextsieveError, ValueError):
    """A relative name that would put an output outside its folder."""


def safe_rel(rel: str, what: str = "output name") -> str:
    """`rel` normalised (`a/./b` -> `a/b`), or `UnsafePathError` when it is empty, absolute or
    climbs out of its folder (`../x`, `a/../../x`); backslashes count as separators."""
    raw = rel
    rel = rel.replace("\\", "/")
    if not rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise UnsafePathError(f"{what} {raw!r} is not a relative path inside the output folder")
    norm = posixpath.normpath(rel)
    if norm == "." or norm == ".." or norm.startswith("../") or any(p == ".." for p in rel.split("/")):
        raise UnsafePathError(f"{what} {raw!r} would leave the output folder ('..' in the path)")
    return norm


def join_inside(root: str, rel: str) -> str:
    """`root/rel` after `safe_rel`, checked to lie inside `root` (a file-system path or URL path)."""
    root = root.rstrip("/") or "/"
    path = posixpath.join(root, safe_rel(rel))
    if not (path == root or path.startswith(root.rstrip("/") + "/")):
        raise UnsafePathError(f"{rel!r} would be written outside {root}")
    return path


#: what `data_rel` puts before a part of an output name that starts with `_` or `.`
HIDDEN_PART_PREFIX = "x"


def data_rel(rel: str) -> str:
    """`rel` with every part that starts with `_` or `.` prefixed by `HIDDEN_PART_PREFIX`
    (`_html.parquet` -> `x_html.parquet`, `_2024/a.parquet` -> `x_2024/a.parquet`): a data file's
    name that dataset readers do not skip (see the module doc). Two inputs that map to one
    output name are refused by the stage, as for any other clash."""
    return "/".join(HIDDEN_PART_PREFIX + part if part.startswith(("_", ".")) else part for part in rel.split("/"))
