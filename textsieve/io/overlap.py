"""Refuse output folders that overlap the inputs they are made from.

Why: a stage that writes into its own input folder either skips its work (the output names
already exist) or replaces the inputs with its outputs (`--overwrite`), and in both cases the
user learns it only after the data is gone. Every stage calls `check_apart` before it writes:
an output that equals, contains or lies inside an input is one clear error. Local paths are
compared after resolving symlinks; URLs by protocol and path.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable

from textsieve.errors import TextsieveError

GLOB_CHARS = frozenset("*?[")


class OverlapError(TextsieveError, ValueError):
    """An output location that is, contains or lies inside an input location."""


def place_of(location: str) -> tuple[str, str]:
    """(protocol, normalised absolute path) of a location; globs stand for their fixed prefix."""
    location = os.fspath(location)
    if "::" in location:  # chained (zip://x::archive.zip): a place inside an archive, compared as text
        head, _, chain = location.partition("::")
        proto, _, path = head.partition("://")
        if "://" not in chain and "::" not in chain:  # a local archive: by its resolved path
            chain = os.path.realpath(os.path.expanduser(chain))
        return f"{proto}::{chain}", posixpath.normpath("/" + fixed_prefix(path).lstrip("/"))
    if any(c in GLOB_CHARS for c in location):  # a glob stands for its fixed prefix ("*.jsonl": ".")
        location = fixed_prefix(location) or ("/" if location.startswith("/") else ".")
    if "://" in location:
        import fsspec

        fs, path = fsspec.core.url_to_fs(location)
        proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        if proto in ("file", "local"):
            return "file", os.path.realpath(path)
        return str(proto), posixpath.normpath("/" + path.lstrip("/"))
    return "file", os.path.realpath(os.path.expanduser(location))


def fixed_prefix(location: str) -> str:
    """The part of a path before its first glob character's component."""
    fixed = []
    for part in location.split("/"):
        if any(c in GLOB_CHARS for c in part):
            break
        fixed.append(part)
    return "/".join(fixed)


def is_within(inner: str, outer: str) -> bool:
    outer = outer.rstrip("/") or "/"
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def check_apart(stage: str, output: str, inputs: Iterable[str], flag: str = "--output",
                what: str = "output folder") -> None:
    """Raise `OverlapError` when `output` equals, contains or lies inside one of `inputs`."""
    out_proto, out_path = place_of(output)
    places = []
    for raw in inputs:
        if raw:  # a chained input (zip://x::archive.zip) is also the archive it reads
            places += [(raw, place_of(str(raw)))] + ([(raw, place_of(str(raw).rsplit("::", 1)[1]))] if "::" in str(raw)
                                                   else [])
    for raw, (proto, path) in places:
        if proto != out_proto:
            continue
        if is_within(out_path, path) or is_within(path, out_path):
            how = ("is" if out_path == path else "lies inside" if is_within(out_path, path) else "contains")
            raise OverlapError(f"{stage}: the {what} {output} ({flag}) {how} the input {raw}; its outputs "
                               f"would replace or mix with the inputs. Choose an {what} outside the inputs")
