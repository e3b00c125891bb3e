"""Turn the user's input arguments (files, folders, globs; local paths or fsspec URLs) into shards.

A shard is the unit every stage maps one-to-one to an output shard, so two things matter here:
the order must be deterministic (sorted by `Shard.rel`) and `rel` must be stable and unique,
because output paths and default document ids are derived from it.

Conventions:
- ``rel`` is relative to the folder for folder inputs, relative to the non-magic prefix for globs
  (``data/**/*.jsonl`` -> ``2024/a.jsonl``), and the basename for a named file.
- Every input file is one shard, except ``.txt`` files (and likewise ``.html``/``.htm``/``.html.gz``
  pages, as ``_html`` shards of format "html"): all .txt files of one folder form one shard
  whose ``rel`` is ``<folder rel>/_txt`` (just ``_txt`` for the top folder or for named files), whose
  ``path`` is the folder, and whose ``members`` are the files, sorted. Each file is one document with
  id = the file's rel path (``sub/a.txt``) and row = its index in ``members``. ``_txt`` rather than
  ``*.txt`` keeps glob characters out of the output paths mirrored from ``rel``.
- Inside folders and globs, files with unknown extensions and names starting with ``.`` are
  ignored; a named file with an unknown extension is an error.
- Symbolic links inside a folder (local file systems) are followed: a linked file or folder
  is read under the link's name, unless its real path is read already; a link loop or a broken
  link is left out with one log line (`_Links`).
- textsieve's bookkeeping files (``annotate.json``, ``summary.json``... told by name and content)
  are never shards, and a textsieve output folder below an input folder is left out whole, with
  a log line (`textsieve.io.bookkeeping`).
- A chained URL keeps its target: the members of ``zip://*.jsonl::data.zip`` are
  ``zip://a.jsonl::/abs/data.zip`` (`_chain_rest`).
- Local inputs keep plain absolute paths in ``Shard.path``; URL inputs (``file://``, ``memory://``,
  ``s3://``...) keep URLs, so the shard can be opened in another process or on another machine.
- The suffix table can grow: `textsieve.io.register_reader` (or a `textsieve.readers` entry
  point, loaded on the first lookup) adds a format and the suffixes it claims, through
  `register_suffixes`; a suffix belongs to one format only.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.core import url_to_fs

from textsieve import extensions

from .bookkeeping import bookkeeping_stage, drop_bookkeeping
from .compression import ZSTD_SUFFIXES
from .errors import InputError
from .saved_datasets import saved_dataset_paths

# Longest suffix first: ".warc.wet.gz" must win over ".gz"-style matches of shorter entries.
# A list, grown in place by `register_suffixes`, so every module holding it sees added formats.
SUFFIX_FORMATS: list[tuple[str, str]] = sorted(
    {
        **{f".{ext}{comp}": "jsonl" for ext in ("jsonl", "json", "ndjson") for comp in ("", ".gz", *ZSTD_SUFFIXES)},
        ".parquet": "parquet",
        ".arrow": "arrow",
        ".warc": "warc",
        ".warc.gz": "warc",
        ".arc": "warc",
        ".arc.gz": "warc",
        ".wet": "wet",
        ".wet.gz": "wet",
        ".warc.wet": "wet",
        ".warc.wet.gz": "wet",
        ".txt": "txt",
        **{f".{ext}{comp}": "html" for ext in ("html", "htm") for comp in ("", ".gz")},
    }.items(),
    key=lambda item: -len(item[0]),
)
FORMATS = ("jsonl", "parquet", "wet", "warc", "txt", "html", "arrow")  # the built-in formats
GROUPED = {"txt": "_txt", "html": "_html"}  # formats whose files are one document each, a shard per folder
_FORMAT_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
TXT_SHARD_NAME = GROUPED["txt"]
_MAGIC = frozenset("*?[")

log = logging.getLogger("textsieve.io")


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
        name = posixpath.basename(self.members[index].split("::", 1)[0].rstrip("/"))
        return posixpath.join(folder, name) if folder else name


def detect_format(name: str) -> str | None:
    """Format of a file from its name (case-insensitive), or None when the extension is unknown."""
    extensions.load_entry_points(extensions.READERS)
    lower = name.lower()
    for suffix, fmt in SUFFIX_FORMATS:
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
    via_link: bool = False  # reached through a symbolic link: the file's real path, if found too, wins
    root: str = ""  # the rel of the folder a glob matched, when the file lies in one (see io.bookkeeping)


def expand_inputs(inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Shard]:
    """Expand files, folders (recursive) and globs into shards, sorted by `rel`.

    Raises `InputError` for an input that matches nothing readable, for a named file with an
    unknown extension, and when two different files would get the same `rel` (their outputs
    would overwrite each other). A file reached through several inputs (or symbolic links) is
    kept once, with the rel given by the first input that reaches it (by its real path rather than
    through a link, when both reach it). Symbolic links inside a
    folder are followed, with loop detection (`_Links`); textsieve's own bookkeeping files and
    output folders inside an input are never documents (`textsieve.io.bookkeeping`).
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]  # a lone string is a common slip; treating it as one input is unambiguous
    found: dict[str, tuple[str, _Found]] = {}  # public path -> (input, file)
    for raw in inputs:
        raw = os.fspath(raw)
        for f in _expand_one(raw):
            key = _identity(f.path)
            if key not in found or (found[key][1].via_link and not f.via_link):
                found[key] = (raw, f)
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
    if len(found) == 1 and found[0].path.rstrip("/") == path.rstrip("/"):  # a named file
        stage = bookkeeping_stage(fs, found[0].path, found[0].size)
        if stage is not None:
            raise InputError.at(raw, f"this is textsieve's bookkeeping file of a {stage} output, not documents; "
                                     "pass the documents (or the folder holding them)")
    else:
        found = drop_bookkeeping(fs, found, raw)
        if not found:
            raise InputError.at(raw, "holds only textsieve output folders and bookkeeping files, no documents")
    if is_url:
        chain = _chain_rest(spec)
        for f in found:
            f.path = fs.unstrip_protocol(f.path) + chain
    return found


def _chain_rest(spec: str) -> str:
    """The ``::target`` part a member URL must keep (``zip://a.jsonl::archive.zip``): the member
    path names a file inside the target, so without it the member cannot be opened. A local
    target is made absolute, so the shard opens from any working directory. "" when the input
    is not such a chain (``simplecache::s3://...`` stays as fsspec's filesystem strips it)."""
    head, sep, rest = spec.partition("::")
    if not sep or "://" not in head:
        return ""
    if "://" not in rest and "::" not in rest:
        rest = os.path.abspath(os.path.expanduser(rest))
    return f"::{rest}"


def _find(fs: fsspec.AbstractFileSystem, path: str, raw: str) -> list[_Found]:
    """The readable files an input stands for, with rel names; raises when there are none."""
    if fs.isfile(path):
        fmt = detect_format(path)
        if fmt is None:
            raise InputError.at(raw, f"unknown file extension; readable: {_known_suffixes()}")
        return [_Found(path, posixpath.basename(path.rstrip("/")), _size(fs.info(path)), fmt)]
    if fs.isdir(path):
        saved = saved_dataset_paths(fs, path, raw)
        if saved is not None:  # a `save_to_disk` folder: its Arrow files, not its state/info JSON
            return [_Found(p, posixpath.basename(p), _size(fs.info(p)), detect_format(p) or "arrow") for p in saved]
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


def _walk(fs: fsspec.AbstractFileSystem, root: str, rel_prefix: str, links: _Links | None = None) -> list[_Found]:
    root = root.rstrip("/")
    links = _Links(root) if links is None else links.enter(root)
    found = []
    for name, info in fs.find(root, detail=True).items():
        if info.get("type", "file") != "file" and not info.get("islink"):  # fsspec lists a link as "other"
            continue
        rel = posixpath.relpath(name, root) if name != root else posixpath.basename(name)
        rel = _inside(posixpath.join(rel_prefix, rel) if rel_prefix else rel, name, root)
        if _hidden(rel):
            continue
        if info.get("islink"):  # fsspec does not follow symbolic links; they are followed here
            info = links.follow(fs, name, info)
            if info.get("type") == "directory":
                found.extend(_linked(_walk(fs, name, rel, links)))
                continue
            if info.get("type") != "file":
                continue
        fmt = detect_format(name)
        if fmt is not None:
            found.append(_Found(name, rel, _size(info), fmt, via_link=bool(info.get("islink"))))
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
        rel = _inside(posixpath.relpath(name, prefix) if prefix else name.lstrip("/"), name, prefix or "/")
        if _hidden(rel):
            continue
        if info.get("islink"):  # a glob lists the link itself: read what it points to
            info = _link_target(fs, name, info)
            if info.get("type") not in ("file", "directory"):
                continue
        if info.get("type") == "directory":
            inside = _linked(_walk(fs, name, rel)) if info.get("islink") else _walk(fs, name, rel)
            for f in inside:
                f.root = rel
            found.extend(inside)
            continue
        fmt = detect_format(name)
        if fmt is not None:
            found.append(_Found(name, rel, _size(info), fmt, via_link=bool(info.get("islink"))))
    return found


def _group(found: list[tuple[str, _Found]]) -> list[tuple[str, Shard]]:
    """One shard per file, except .txt and .html files, which are grouped per folder (see module doc)."""
    shards = []
    txt: dict[tuple[str, str, str], list[tuple[str, _Found]]] = {}
    for raw, f in found:
        if f.format in GROUPED:
            base, sep, chain = f.path.partition("::")  # a chained URL keeps its target (see `_chain_rest`)
            folder = base.rstrip("/").rsplit("/", 1)[0] + sep + chain
            txt.setdefault((f.format, folder, posixpath.dirname(f.rel)), []).append((raw, f))
        else:
            shards.append((raw, Shard(f.path, f.rel, f.format, f.size)))
    for (fmt, folder, folder_rel), files in txt.items():
        files.sort(key=lambda item: item[1].rel)
        name = GROUPED[fmt]
        shard = Shard(
            path=folder,
            rel=posixpath.join(folder_rel, name) if folder_rel else name,
            format=fmt,
            size=sum(f.size for _, f in files),
            members=tuple(f.path for _, f in files),
        )
        shards.append((files[0][0], shard))
    return shards


class _Links:
    """The symbolic links met while walking one input folder, followed with loop detection.

    `roots` holds the real paths of the folders walked so far (the input folder, then each
    linked folder). A link is followed to a file or folder outside all of them; one pointing
    inside them is left out (its files are read through their real path, so following it would
    read them twice), one whose target holds a walked folder is a loop (following it would never
    end), and a broken one has nothing to read: each of these is reported once, in the log.
    """

    def __init__(self, root: str):
        self.roots = [os.path.realpath(root)]
        self.files: set[str] = set()  # real paths of the linked files taken

    def enter(self, root: str) -> _Links:
        self.roots.append(os.path.realpath(root))
        return self

    def follow(self, fs: fsspec.AbstractFileSystem, name: str, info: dict[str, Any]) -> dict[str, Any]:
        """The info of the link's target (type "file" or "directory") when it is to be read, else
        an info of type "other", which the walk passes over."""
        skip = {"type": "other"}
        target = _link_target(fs, name, info)
        kind = target.get("type")
        if kind not in ("file", "directory"):
            return skip
        real = os.path.realpath(name)
        if kind == "directory" and any(_within(root, real) for root in self.roots):
            log.warning("%s: symbolic link loop (it points to %s, which holds a folder being read); not followed",
                        name, real)
            return skip
        if any(_within(real, root) for root in self.roots) or real in self.files:
            log.info("%s: symbolic link to %s, which is read already; not read twice", name, real)
            return skip
        if kind == "file":
            self.files.add(real)
        return target


def _linked(found: list[_Found]) -> list[_Found]:
    for f in found:
        f.via_link = True
    return found


def _identity(path: str) -> str:
    """What tells two found files apart: the real path of a local file (so a file reached through
    a symbolic link, or through two inputs, is one shard), the URL otherwise."""
    return path if "://" in path or "::" in path else os.path.realpath(path)


def _link_target(fs: fsspec.AbstractFileSystem, name: str, info: dict[str, Any]) -> dict[str, Any]:
    """The info of what the symbolic link `name` points to (named `name`); type "other", and a
    log line, for a broken link."""
    try:
        return {**fs.info(name), "name": name}  # a path string: fsspec's local info follows the link
    except OSError:
        log.warning("%s: broken symbolic link (to %s); nothing to read there, left out", name,
                    info.get("destination", "?"))
        return {"type": "other"}


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _inside(rel: str, name: str, root: str) -> str:
    """`rel` when it stays inside the listed folder; a listed key with `..` in it (object stores
    and memory:// allow `data/sub/../../x`) would name an output outside the output folder."""
    from .safe_paths import UnsafePathError, safe_rel

    try:
        return safe_rel(rel, "input name")
    except UnsafePathError:
        raise InputError.at(name, f"this listed name leads outside {root} ('..' in it), so its output would "
                                  "leave the output folder; rename it") from None


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/") if part not in ("", ".", ".."))


def _size(info: dict[str, Any]) -> int:
    return int(info.get("size") or 0)


def _known_suffixes() -> str:
    extensions.load_entry_points(extensions.READERS)
    return ", ".join(sorted({s for s, _ in SUFFIX_FORMATS}))


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
    taken = dict(SUFFIX_FORMATS)
    clash = [f"{s} ({taken[s]})" for s in wanted if taken.get(s, fmt) != fmt]
    if clash:
        raise ValueError(f"reader {fmt!r}: suffixes already read as another format: {', '.join(clash)}")
    SUFFIX_FORMATS.extend((s, fmt) for s in dict.fromkeys(wanted) if s not in taken)
    SUFFIX_FORMATS.sort(key=lambda item: -len(item[0]))  # stable: equal lengths keep their order


def unregister_suffixes(fmt: str) -> None:
    """Forget every suffix of format `fmt` (see `textsieve.io.unregister_reader`)."""
    SUFFIX_FORMATS[:] = [item for item in SUFFIX_FORMATS if item[1] != fmt]
