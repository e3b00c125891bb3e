"""Where an attribute folder may send a reader: source references stay inside the input roots.

Why: every annotate shard's footer names the source file its rows point into
(`source_shard.path`), and `select` copies that file's records into the selection. An attribute
folder is data like any other (downloaded, shared, edited); a footer pointing at `/etc/passwd`
or at another user's files must not make textsieve copy them. So a source is read only when it
lies inside one of the roots the folder's annotate run recorded as its inputs (`annotate.json`),
or inside a root the user names (`--source-roots`, or `TEXTSIEVE_SOURCE_ROOT`, separated by the
platform's path separator), which also serves folders whose sources moved. Checked each time a
footer is turned into a reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import fsspec

from textsieve.errors import TextsieveError
from textsieve.io.locations import source_locations
from textsieve.io.overlap import is_within, place_of
from textsieve.io.publish import ANNOTATE_JSON

SOURCE_ROOT_ENV = "TEXTSIEVE_SOURCE_ROOT"


class UntrustedSourceError(TextsieveError, ValueError):
    """A shard footer names a source outside every allowed root."""


def recorded_roots(directory: str) -> list[str]:
    """The inputs annotate recorded for `directory` (annotate.json's `input_roots`, absolute; else
    its config.inputs), [] if none."""
    return source_locations(directory)


def absolute_root(location: str) -> str:
    """`location` with a local path (or a chained URL's local archive) made absolute, so the
    recorded root means the same from any working directory."""
    if "::" in location:
        head, _, chain = location.rpartition("::")
        return f"{head}::{absolute_root(chain)}"
    if "://" in location:
        return location
    return os.path.abspath(os.path.expanduser(location))


def _env_roots() -> list[str]:
    return [p for p in os.environ.get(SOURCE_ROOT_ENV, "").split(os.pathsep) if p]


def allowed_roots(directory: str, extra: Sequence[str] | None = None) -> list[str]:
    """Recorded input roots of `directory`, plus `extra` and `$TEXTSIEVE_SOURCE_ROOT`."""
    return [*recorded_roots(directory), *(extra or ()), *_env_roots()]


def check_source(meta: dict, roots: Iterable[str], where: str) -> None:
    """Raise `UntrustedSourceError` unless the source of footer `meta` (and every member of a
    txt shard) lies inside one of `roots`. `where` names the shard for the message."""
    src = meta.get("source_shard") or {}
    paths = [str(p) for p in (src.get("members") or ())] or [str(src.get("path") or "")]
    roots = list(roots)
    places = [place_of(r) for r in roots] + [_lexical(r) for r in roots]
    for path in paths:
        # resolved (symlinks followed) or as written with `..` folded: an input folder's own
        # symlink to a file elsewhere is the user's data, and annotate followed it (item 7)
        mine = (place_of(path), _lexical(path))
        if not any(proto == rp and is_within(p, rpath) for proto, p in mine for rp, rpath in places):
            raise UntrustedSourceError(
                f"{where}: its footer names the source {path}, which lies outside the inputs recorded for this "
                f"folder ({', '.join(map(str, roots)) or 'none'}); if the sources moved there, give that folder "
                f"(`select --source-roots FOLDER`, or {SOURCE_ROOT_ENV}=FOLDER for every stage)")


def _lexical(location: str) -> tuple[str, str]:
    """(protocol, path) of a local location made absolute with `..` folded but symlinks kept."""
    if "://" in location or "::" in location:
        return place_of(location)
    from textsieve.io.overlap import GLOB_CHARS, fixed_prefix

    loc = os.path.expanduser(location)
    if any(c in GLOB_CHARS for c in loc):
        loc = fixed_prefix(loc) or "."
    return "file", os.path.normpath(os.path.abspath(loc))


def shard_roots(fs: fsspec.AbstractFileSystem, path: str, extra: Sequence[str] | None = None) -> list[str]:
    """`allowed_roots` of the annotate folder holding shard `path` (the nearest parent folder with
    an annotate.json), for readers that start from a shard rather than from its folder."""
    parent = path.rstrip("/").rpartition("/")[0]
    for _ in range(64):
        if not parent:
            break
        if fs.exists(f"{parent}/{ANNOTATE_JSON}") or fs.exists(f"{parent}/annotate.json"):  # or an older layout
            return allowed_roots(fs.unstrip_protocol(parent), extra)
        parent = parent.rpartition("/")[0]
    return [*(extra or ()), *_env_roots()]


def trusted(meta: dict, fs: fsspec.AbstractFileSystem, path: str, extra: Sequence[str] | None = None) -> dict:
    """`meta` (the footer of annotate shard `path`) after `check_source` against its folder's roots."""
    if "source_shard" in meta:
        check_source(meta, shard_roots(fs, path, extra), path)
    return meta
