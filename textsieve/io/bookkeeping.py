"""textsieve's own bookkeeping files, which are never documents, and the output folders they mark.

Every stage writes JSON bookkeeping into its output folder's hidden ``.textsieve/`` folder
(``manifest.json``, ``annotate.json``, ``selection.json``, ``summary.json``), which input
expansion never lists; an older textsieve wrote them beside its outputs, where they are still
recognised by name. Their ``.json`` suffix reads as JSON Lines, so before this module a
folder holding a previous stage's output (an output folder nested in an input, or an input that
is a previous stage's output) had them read as documents, failing on a pretty-printed summary or
taking a one-line one for a record.

A file is bookkeeping only by name AND content: its name is one of `NAMES` and it is one JSON
object with a ``"stage"`` key (every stage writes that key first). A user's JSON Lines file that
happens to be called ``summary.json`` is still read. A folder below an input folder that holds
a bookkeeping file is a textsieve output folder (attribute shards, a selection, a dedup set):
none of its files are documents of that input, so `drop_bookkeeping` leaves the whole folder
out, with a log line. The input folder itself may be a stage's output (a `select` output read
as documents): there only the bookkeeping files are left out; so may a folder a glob input
matches by name (`out/sources/[g]ithub`, how a pipeline reads its `sources:` items), whose
files carry its name (`root`).
"""

from __future__ import annotations

import json
import logging
import posixpath
from typing import Protocol, TypeVar

import fsspec

from textsieve.io.publish import MANIFEST  # `.textsieve/manifest.json`: marks a published folder

NAMES = frozenset({"annotate.json", "extract.json", "selection.json", "summary.json", "manifest.json", ".state.json",
                   ".publish.json"})
MAX_BYTES = 64 << 20  # larger files are never bookkeeping (textsieve's are kilobytes to a few MB)

log = logging.getLogger("textsieve.io")


class _Found(Protocol):
    path: str
    rel: str
    size: int


F = TypeVar("F", bound=_Found)


def bookkeeping_stage(fs: fsspec.AbstractFileSystem, path: str, size: int | None = None) -> str | None:
    """The stage that wrote `path` when it is a textsieve bookkeeping file (see the module doc),
    else None. Only files named in `NAMES` are opened; an unreadable one is not bookkeeping."""
    if posixpath.basename(path.rstrip("/")) not in NAMES:
        return None
    try:
        if size is None:
            size = int(fs.info(path).get("size") or 0)
        if size > MAX_BYTES:
            return None
        with fs.open(path, "rb") as fh:
            head = fh.read(1)
            if head.lstrip() not in (b"{", b""):
                return None
            value = json.loads(head + fh.read())
    except (OSError, ValueError, RecursionError):  # not JSON (e.g. JSON Lines), or unreadable
        return None
    if type(value) is dict and isinstance(value.get("stage"), str):
        return str(value["stage"])
    return None


def drop_bookkeeping(fs: fsspec.AbstractFileSystem, found: list[F], where: str) -> list[F]:
    """`found` (the files of one input, rel names relative to it) without textsieve's
    bookkeeping files and without every file of an output folder nested below the input.
    `where` names the input in the log lines."""
    named = {root for f in found if (root := getattr(f, "root", ""))}  # folders a glob matched
    outputs: dict[str, str] = _marked_folders(fs, found, named)  # rel folder -> stage, below the input
    marked: set[str] = set()
    for f in found:
        stage = bookkeeping_stage(fs, f.path, f.size)
        if stage is None:
            continue
        marked.add(f.path)
        folder = posixpath.dirname(f.rel)
        if folder and folder not in named:
            outputs.setdefault(folder, stage)
        else:
            log.info("%s: %s is textsieve's %s bookkeeping, not documents; not read", where, f.rel, stage)
    for folder, stage in sorted(outputs.items()):
        if not any(folder.startswith(f"{other}/") for other in outputs):  # log the outermost only
            log.warning("%s: %s/ is a textsieve output folder (%s) inside this input; its files are not "
                        "documents and are not read", where, folder, stage)
    return [f for f in found if f.path not in marked and not _inside_any(f.rel, outputs)]


def _marked_folders(fs: fsspec.AbstractFileSystem, found: list[F], named: set[str]) -> dict[str, str]:
    """The folders below the input (rel -> stage) that a textsieve stage published: they hold
    `.textsieve/manifest.json` (`io.publish`), which input listings never show (hidden). The
    `named` folders (a glob's matches) are inputs themselves, so never in the result."""
    folders: set[str] = set()
    for f in found:
        parts = f.rel.split("/")[:-1]
        folders.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    out: dict[str, str] = {}
    for folder in sorted(folders, key=lambda x: (x.count("/"), x)):
        if _inside_any(folder + "/x", out) or folder in named:
            continue  # inside an output folder found already, or named by the input
        sample = next(f for f in found if f.rel.startswith(folder + "/"))
        base = sample.path[: len(sample.path) - len(sample.rel)] + folder
        stage = bookkeeping_stage(fs, f"{base}/{MANIFEST}")
        if stage is not None:
            out[folder] = stage
    return out


def _inside_any(rel: str, folders: dict[str, str]) -> bool:
    parts = rel.split("/")
    return any("/".join(parts[:i]) in folders for i in range(1, len(parts)))
