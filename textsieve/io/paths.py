"""Turn the user's input arguments (files, folders, globs; local paths or fsspec URLs) into shards.

A shard is the unit every stage maps one-to-one to an output shard, so two things matter here:
the order must be deterministic (sorted by `Shard.rel`) and `rel` must be stable and unique,
because output paths and default document ids are derived from it.

Conventions:
- ``rel`` is relative to the folder for folder inputs, relative to the non-magic prefix for globs
  (``data/**/*.jsonl`` -> ``2024/a.jsonl``), and the basename for a named file.
- Every input file is one shard, except ``.txt`` files: all .txt files of one folder form one shard
  whose ``rel`` is ``<folder rel>/_txt`` (just ``_txt`` for the top folder or for named files), whose
  ``path`` is the folder, and whose ``members`` are the files, sorted. Each file is one document with
  id = the file's rel path (``sub/a.txt``) and row = its index in ``members``. ``_txt`` rather than
  ``*.txt`` keeps glob characters out of the output paths mirrored from ``rel``.
- Inside folders and globs, files with unknown extensions and names starting with ``.`` are
  ignored; a named file with an unknown extension is an error.
- Local inputs keep plain absolute paths in ``Shard.path``; URL inputs (``file://``, ``memory://``,
  ``s3://``...) keep URLs, so the shard can be opened in another process or on another machine.
- The suffix table can grow: `textsieve.io.register_reader` (or a `textsieve.readers` entry
  point, loaded on the first lookup) adds a format and the suffixes it claims, through
  `register_suffixes`; a suffix belongs to one format only.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.core import url_to_fs

from textsieve import extensions

from .compression import ZSTD_SUFFIXES
from .errors import InputError

# Longest suffix first: ".warc.wet.gz" must win over ".gz"-style matches of shorter entries.
# A list, grown in place by `register_suffixes`, so every module holding it sees added formats.
_SUFFIX_FORMATS: list[tuple[str, str]] = sorted(
    {
        **{f".{ext}{comp}": "jsonl" for ext in ("jsonl", "json", "ndjson") for comp in ("", ".gz", *ZSTD_SUFFIXES)},
        ".parquet": "parquet",
        ".warc": "warc",
        ".warc.gz": "warc",
        ".arc": "warc",
        ".arc.gz": "warc",
        ".wet": "wet",
        ".wet.gz": "wet",
        ".warc.wet": "wet",
        ".warc.wet.gz": "wet",
        ".txt": "txt",
    }.items(),
    key=lambda item: -len(item[0]),
)
FORMATS = ("jsonl", "parquet", "wet", "warc", "txt")  # the built-in formats
_FORMAT_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
TXT_SHARD_NAME = "_txt"
_MAGIC = frozenset("*?[")


@dataclass(frozen=True)
class Shard:
    """One unit of input. `members` is only used by "txt" shards (the files of the folder)."""

    path: str  # what fsspec opens (local path or URL such as file:///x/a.jsonl.gz, memory://c/a.jsonl)
    rel: str  # stable relative name, used to mirror output paths and to derive ids, e.g. "sub/a.jsonl.gz"
    format: str  # "jsonl" | "parquet" | "wet" | "warc" | "txt", or a registered reader's format
    size: int  # bytes on storage (compressed), for progress/ETA
    members: tuple[str, ...] = ()  # txt shards: the files (paths/URLs like `path`), sorted

    def member_rel(self, index: int) -> str:
        """The rel path of member `index` of a txt shard, which is also that document's id."""
        folder = posixpath.dirname(self.rel)
        name = posixpath.basename(self.members[index].rstrip("/"))
        return posixpath.join(folder, name) if folder else name


def detect_format(name: str) -> str | None:
    """Format of a file from its name (case-insensitive), or None when the extension is unknown."""
    extensions.load_entry_points(extensions.READERS)
    lower = name.lower()
    for suffix, fmt in _SUFFIX_FORMATS:
        if lower.endswith(suffix):
            return fmt
    return None


@dataclass
class _Found:
    """A file found for one input, before .txt files are grouped into shards."""

    path: str  # path as the filesystem sees it (protocol stripped)
    rel: str
    size: int
    format: str


def expand_inputs(inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Shard]:
    """Expand files, folders (recursive) and globs into shards, sorted by `rel`.

    Raises `InputError` for an input that matches nothing readable, for a named file with an
    unknown extension, and when two different files would get the same `rel` (their outputs
    would overwrite each other). A file reached through several inputs is kept once, with the
    rel given by the first input that reaches it.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]  # a lone string is a common slip; treating it as one input is unambiguous
    found: dict[str, tuple[str, _Found]] = {}  # public path -> (input, file)
    for raw in inputs:
        raw = os.fspath(raw)
        for f in _expand_one(raw):
            found.setdefault(f.path, (raw, f))
    by_rel: dict[str, tuple[str, Shard]] = {}
    for raw, shard in _group(list(found.values())):
        other = by_rel.get(shard.rel)
        if other is not None:
            raise InputError.at(
                raw,
                f"two inputs map to the same relative name {shard.rel!r}: {other[1].path} and {shard.path}; "
                "pass their common parent folder instead so the names stay distinct",
            )
        by_rel[shard.rel] = (raw, shard)
    return sorted((shard for _, shard in by_rel.values()), key=lambda s: s.rel)


def _expand_one(raw: str) -> list[_Found]:
    """The readable files of one input, with `path` already in its public form (URL or local)."""
    is_url = "://" in raw or "::" in raw
    spec = raw if is_url else os.path.expanduser(raw)
    try:
        fs, path = url_to_fs(spec)
    except (ValueError, ImportError) as exc:
        raise InputError.at(raw, f"cannot open this location ({exc})") from exc
    found = _find(fs, path, raw)
    if is_url:
        for f in found:
            f.path = fs.unstrip_protocol(f.path)
    return found


def _find(fs: fsspec.AbstractFileSystem, path: str, raw: str) -> list[_Found]:
    """The readable files an input stands for, with rel names; raises when there are none."""
    if fs.isfile(path):
        fmt = detect_format(path)
        if fmt is None:
            raise InputError.at(raw, f"unknown file extension; readable: {_known_suffixes()}")
        return [_Found(path, posixpath.basename(path.rstrip("/")), _size(fs.info(path)), fmt)]
    if fs.isdir(path):
        found = _walk(fs, path, "")
        what = "folder contains"
    elif any(c in _MAGIC for c in path):
        found = _glob(fs, path)
        what = "pattern matches"
    else:
        raise InputError.at(raw, "no such file or folder")
    if not found:
        raise InputError.at(raw, f"{what} no readable files ({_known_suffixes()})")
    return found


def _walk(fs: fsspec.AbstractFileSystem, root: str, rel_prefix: str) -> list[_Found]:
    root = root.rstrip("/")
    found = []
    for name, info in fs.find(root, detail=True).items():
        if info.get("type", "file") != "file":
            continue
        rel = posixpath.relpath(name, root) if name != root else posixpath.basename(name)
        rel = posixpath.join(rel_prefix, rel) if rel_prefix else rel
        if _hidden(rel):
            continue
        fmt = detect_format(name)
        if fmt is not None:
            found.append(_Found(name, rel, _size(info), fmt))
    return found


def _glob(fs: fsspec.AbstractFileSystem, pattern: str) -> list[_Found]:
    parts = pattern.split("/")
    fixed = []
    for part in parts:
        if any(c in _MAGIC for c in part):
            break
        fixed.append(part)
    prefix = "/".join(fixed)
    found = []
    for name, info in fs.glob(pattern, detail=True).items():
        rel = posixpath.relpath(name, prefix) if prefix else name.lstrip("/")
        if _hidden(rel):
            continue
        if info.get("type") == "directory":
            found.extend(_walk(fs, name, rel))
            continue
        fmt = detect_format(name)
        if fmt is not None:
            found.append(_Found(name, rel, _size(info), fmt))
    return found


def _group(found: list[tuple[str, _Found]]) -> list[tuple[str, Shard]]:
    """One shard per file, except .txt files, which are grouped per folder (see module doc)."""
    shards = []
    txt: dict[tuple[str, str], list[tuple[str, _Found]]] = {}
    for raw, f in found:
        if f.format == "txt":
            folder = f.path.rstrip("/").rsplit("/", 1)[0]
            txt.setdefault((folder, posixpath.dirname(f.rel)), []).append((raw, f))
        else:
            shards.append((raw, Shard(f.path, f.rel, f.format, f.size)))
    for (folder, folder_rel), files in txt.items():
        files.sort(key=lambda item: item[1].rel)
        shard = Shard(
            path=folder,
            rel=posixpath.join(folder_rel, TXT_SHARD_NAME) if folder_rel else TXT_SHARD_NAME,
            format="txt",
            size=sum(f.size for _, f in files),
            members=tuple(f.path for _, f in files),
        )
        shards.append((files[0][0], shard))
    return shards


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/") if part not in ("", ".", ".."))


def _size(info: dict[str, Any]) -> int:
    return int(info.get("size") or 0)


def _known_suffixes() -> str:
    extensions.load_entry_points(extensions.READERS)
    return ", ".join(sorted({s for s, _ in _SUFFIX_FORMATS}))


def register_suffixes(fmt: str, suffixes: tuple[str, ...]) -> None:
    """Read files whose name ends in one of `suffixes` (case-insensitive) as format `fmt`.

    Called by `textsieve.io.register_reader`, which owns the format's read function. A suffix
    already read as another format is a `ValueError`: which reader a file gets must not depend
    on registration order. Re-registering the same suffixes for the same format is a no-op."""
    if not _FORMAT_NAME.match(fmt):
        raise ValueError(f"reader format {fmt!r}: lower-case letters, digits and '_', starting with a letter")
    wanted = tuple(s.lower() for s in suffixes)
    if not wanted or any(not s.startswith(".") or len(s) < 2 for s in wanted):
        raise ValueError(f"reader {fmt!r}: suffixes must be given and start with '.', e.g. ('.tsv', '.tsv.gz')")
    taken = dict(_SUFFIX_FORMATS)
    clash = [f"{s} ({taken[s]})" for s in wanted if taken.get(s, fmt) != fmt]
    if clash:
        raise ValueError(f"reader {fmt!r}: suffixes already read as another format: {', '.join(clash)}")
    _SUFFIX_FORMATS.extend((s, fmt) for s in dict.fromkeys(wanted) if s not in taken)
    _SUFFIX_FORMATS.sort(key=lambda item: -len(item[0]))  # stable: equal lengths keep their order


def unregister_suffixes(fmt: str) -> None:
    """Forget every suffix of format `fmt` (see `textsieve.io.unregister_reader`)."""
    _SUFFIX_FORMATS[:] = [item for item in _SUFFIX_FORMATS if item[1] != fmt]
