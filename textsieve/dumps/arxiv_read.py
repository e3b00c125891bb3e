"""Finding and loading arXiv projects: bulk source tars as the reference reads them, and what users have.

A *project* is one submission's list of `.tex` texts plus where it came from. The reference
(`ArxivCleaner.arxiv_iterator`, `_tex_proj_loader`, rpv1-sources spec 2.2) reads bulk tars
`arXiv_src_<yymm>_<n>.tar` whose members `<yymm>/<id>.gz` are a gzipped tar of the submission or
a gzipped single `.tex`. `load_archive` repeats its loader step by step on a member's bytes,
with Python's own `tarfile` and `gzip` in the same order and with the same exceptions caught,
so every odd case decides as it did there: a `.tex` member that is not UTF-8 (a Latin-1 source,
a macOS `._x.tex` resource fork) drops the whole project; a member that is neither tar nor gzip
is dropped; members are taken in tar order, `.tex` by a case-sensitive suffix.

Beyond the bulk tars, users have unpacked projects: a folder holding a project's `.tex` files, a
folder of such folders, a single `.tex` file, or one submission's archive (`.tar.gz`, `.tgz`,
`.gz`, as arXiv serves it). Those are read into the same kind of project (`.tex` files in sorted
path order, strict UTF-8 as the reference), named after the folder or file.
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

#: what a project archive's name ends with (checked lower-cased)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".gz")
TEX = ".tex"
_REFERENCE_ID = re.compile(r"^([a-zA-Z-]*)([\d.]+)$")
#: an arXiv identifier in a file or folder name: new style `1801.03879`, old style `math0601001`
#: or `math_0601001` (the reference's bulk names glue archive and number; old-style numbers are
#: yymmnnn from 1991-08 to 2007-03), a version, an `arXiv-` / `arXiv_` prefix as in arXiv's
#: download names
_NEW_ID = re.compile(r"(?:arxiv[-_:])?(\d{2}(?:0[1-9]|1[0-2])\.\d{4,5})(v\d+)?", re.IGNORECASE)
_OLD_ID = re.compile(r"(?:arxiv[-_:])?([a-z]+(?:-[a-z]+)*(?:\.[a-z]{2})?)_?((?:9[1-9]|0[0-7])(?:0[1-9]|1[0-2])\d{3})"
                     r"(v\d+)?", re.IGNORECASE)


@dataclass
class Loaded:
    """A project's `.tex` files as the reference's loader returns them, or why it returned none."""

    files: list[tuple[str | None, str]] = field(default_factory=list)  # (member name or None, text)
    container: str = "tar"  # "tar" or "gzip-single" (the reference's two ways of reading)
    tex_members: list[str] = field(default_factory=list)  # every member name ending in `.tex`, in order
    failure: str = ""  # non-empty: the loader returned nothing (the project is `load_failed`)


@dataclass
class Project:
    """One submission to clean, with the reference's meta inputs."""

    location: str  # where a person finds it: "arXiv_src_1801_001.tar:1801/1801.03879.gz"
    raw_id: str  # the reference's raw id (file name without `.gz`) or the folder/file name
    yymm: str | None
    mtime: float | None  # seconds since the epoch (the reference's timestamp source)
    loaded: Loaded
    bulk: bool = True  # from a bulk tar (the reference's id rules) or a user's folder/file

    @property
    def arxiv_id(self) -> str:
        return format_arxiv_id(self.raw_id) if self.bulk else (canonical_arxiv_id(self.raw_id) or self.raw_id)

    @property
    def url(self) -> str | None:
        if self.bulk or canonical_arxiv_id(self.raw_id):
            return f"https://arxiv.org/abs/{self.arxiv_id}"
        return None

    @property
    def timestamp(self) -> str | None:
        return iso_utc(self.mtime)


def iso_utc(mtime: float | None) -> str | None:
    """`datetime.fromtimestamp(mtime).isoformat()` in UTC (the goldens' `TZ=UTC`; the reference
    used the processing machine's local time zone, which no output should depend on)."""
    if mtime is None:
        return None
    return datetime.fromtimestamp(mtime, UTC).replace(tzinfo=None).isoformat()


def format_arxiv_id(raw: str) -> str:
    """The reference's `format_arxiv_id`: `math0601001` -> `math/0601001`, `1801.03879` kept;
    any other form is kept raw (the reference warns and does the same)."""
    m = _REFERENCE_ID.search(raw)
    if m is None:
        return raw
    return m.group(2) if m.group(1) == "" else f"{m.group(1)}/{m.group(2)}"


def canonical_arxiv_id(name: str) -> str | None:
    """The arXiv id a user's folder or file name spells (`arXiv-1801.03879v2` -> `1801.03879v2`,
    `math0601001` -> `math/0601001`), or None when the name is not one."""
    m = _NEW_ID.fullmatch(name)
    if m:
        return m.group(1) + (m.group(2) or "")
    m = _OLD_ID.fullmatch(name)
    if m:
        return f"{m.group(1)}/{m.group(2)}{m.group(3) or ''}"
    return None


def yymm_of(canonical_id: str) -> str:
    """`1801` for `1801.03879v2` and for `math/0601001` (a `canonical_arxiv_id`)."""
    return canonical_id.rsplit("/", 1)[-1][:4]


# --- the reference's loader ---------------------------------------------------------------------


def load_archive(data: bytes) -> Loaded:
    """`_tex_proj_loader` on a project archive's bytes: a tar (any compression) gives its `.tex`
    members in member order, anything else is gunzipped as one file; every text strict UTF-8.
    The try/except structure is the reference's, so partial reads fall through the same way (a
    tar that fails mid-read with `ReadError` is then gunzipped whole, after the files read)."""
    out = Loaded()
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            members = tf.getmembers()
            out.tex_members = [m.name for m in members if m.name.endswith(TEX)]
            for member in members:
                if member.name.endswith(TEX):
                    handle = tf.extractfile(member)
                    raw = handle.read()  # type: ignore[union-attr]  # None (a folder) fails the project
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        out.failure = f"UnicodeDecodeError in {member.name} ({exc.reason} at byte {exc.start})"
                        return out
                    out.files.append((member.name, text))
    except tarfile.ReadError:
        out.container = "gzip-single"
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
                raw = gz.read()
        except Exception as exc:  # the reference gives up on anything that is not gzip either
            out.failure = f"neither a tar nor a gzip file ({type(exc).__name__}: {exc})"
            return out
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.failure = f"UnicodeDecodeError ({exc.reason} at byte {exc.start})"
            return out
        out.files.append((None, text))
    except Exception as exc:  # e.g. a `.tex` member that is a folder: the reference returns None
        out.failure = f"{type(exc).__name__}: {exc}"
    return out


def bulk_members(tf: tarfile.TarFile) -> tuple[list[tarfile.TarInfo], str]:
    """The members the reference visits (`rglob("*.gz")` after extracting the tar): every entry
    whose last path part ends in `.gz`, in member order; a name given twice is the last copy
    (extraction overwrote the first). Second: why the member list stops early ("" if it does
    not: a cut or damaged tar gives the members read before the damage)."""
    try:
        members, error = tf.getmembers(), ""
    except tarfile.ReadError as exc:
        members = list(getattr(tf, "members", []))  # those read before the damage
        error = f"{exc}, after member {members[-1].name}" if members else str(exc)
    last: dict[str, tarfile.TarInfo] = {}
    for member in members:
        name = PurePosixPath(member.name.lstrip("/"))
        if name.name.endswith(".gz") and ".." not in name.parts:
            last.pop(str(name), None)
            last[str(name)] = member
    return list(last.values()), error


def bulk_project(tf: tarfile.TarFile, member: tarfile.TarInfo, tar_name: str) -> Project:
    """One member of a bulk tar, loaded."""
    name = PurePosixPath(member.name.lstrip("/"))
    where = f"{tar_name}:{member.name}"
    yymm = name.parent.stem if str(name.parent) != "." else ""
    if member.isdir():
        return Project(where, name.stem, yymm, member.mtime, Loaded(failure="a folder, not a file"))
    try:
        handle = tf.extractfile(member)
    except KeyError:  # a link to a member the tar does not hold
        missing = Loaded(failure=f"a link to {member.linkname}, which the tar does not hold")
        return Project(where, name.stem, yymm, member.mtime, missing)
    data = handle.read() if handle is not None else b""
    return Project(where, name.stem, yymm, member.mtime, load_archive(data))


# --- what users have ----------------------------------------------------------------------------


def decode_files(items: list[tuple[str, bytes]]) -> Loaded:
    """A user's `.tex` files (name, bytes) in order, strict UTF-8 as the reference."""
    out = Loaded(container="folder", tex_members=[n for n, _ in items])
    for name, raw in items:
        try:
            out.files.append((name, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            out.files = []
            out.failure = f"UnicodeDecodeError in {name} ({exc.reason} at byte {exc.start})"
            break
    return out


def project_name(filename: str) -> str:
    """A project's name from its folder or file name (archive and `.tex` suffixes removed)."""
    low = filename.lower()
    for suffix in (*ARCHIVE_SUFFIXES, TEX):
        if low.endswith(suffix) and len(filename) > len(suffix):
            return filename[: -len(suffix)]
    return filename


def user_project(location: str, name: str, mtime: float | None, loaded: Loaded, yymm: str | None = None) -> Project:
    """A project from a user's folder or file: the arXiv id when the name spells one."""
    canonical = canonical_arxiv_id(name)
    return Project(location, name, yymm_of(canonical) if canonical else yymm, mtime, loaded, bulk=False)


def mtime_of(info: dict[str, Any]) -> float | None:
    """A file's modification time from an fsspec `info` dict (local: `mtime`; object stores:
    `LastModified` / `last_modified` / `updated`)."""
    value = info.get("mtime")
    if value is None:
        value = info.get("LastModified") or info.get("last_modified") or info.get("updated")
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return float(value) if isinstance(value, int | float) else None



def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES) and not name.lower().endswith(".tar")


def tex_files_under(fs: Any, path: str) -> list[str]:
    """Every `.tex` file under a folder, at any depth, in sorted path order."""
    return sorted(p for p in fs.find(path) if p.endswith(TEX))


def folder_project(fs: Any, path: str, location: str) -> Project:
    """A folder holding one project's `.tex` files (sub-folders included); its timestamp is its
    newest `.tex` file's."""
    paths = tex_files_under(fs, path)
    items, times = [], []
    for p in paths:
        with fs.open(p, "rb") as fh:
            items.append((p[len(path.rstrip("/")) + 1:], fh.read()))
        times.append(mtime_of(fs.info(p)))
    known = [t for t in times if t is not None]
    return user_project(location, path.rstrip("/").rsplit("/", 1)[-1], max(known) if known else None,
                        decode_files(items))


def tex_file_project(fs: Any, path: str, location: str) -> Project:
    """A single `.tex` file: a project of one file."""
    with fs.open(path, "rb") as fh:
        raw = fh.read()
    name = path.rsplit("/", 1)[-1]
    return user_project(location, project_name(name), mtime_of(fs.info(path)), decode_files([(name, raw)]))


def archive_project(fs: Any, path: str, location: str, yymm: str | None = None) -> Project:
    """One submission's archive (`.tar.gz`, `.tgz`, `.gz`), loaded as a bulk tar's member is."""
    with fs.open(path, "rb") as fh:
        data = fh.read()
    name = project_name(path.rsplit("/", 1)[-1])
    return user_project(location, name, mtime_of(fs.info(path)), load_archive(data), yymm)


def folder_of_projects(fs: Any, path: str, rel: str) -> Iterator[Project]:
    """A folder's projects in name order: each archive is one; each sub-folder is one (a
    project without `.tex` files is `empty`, as in the reference), except a sub-folder holding
    archives and no `.tex` file (an unpacked bulk tar's `yymm/`), which gives its archives with
    the sub-folder's name as `yymm`."""
    for entry in sorted(fs.ls(path, detail=True), key=lambda e: e["name"]):
        full, name = entry["name"], entry["name"].rstrip("/").rsplit("/", 1)[-1]
        if entry["type"] == "directory":
            archives = [sub["name"] for sub in sorted(fs.ls(full, detail=True), key=lambda e: e["name"])
                        if sub["type"] == "file" and is_archive(sub["name"])]
            if not archives or tex_files_under(fs, full):
                yield folder_project(fs, full, f"{rel}/{name}")
                continue
            for sub_path in archives:
                sub_name = sub_path.rsplit("/", 1)[-1]
                yield archive_project(fs, sub_path, f"{rel}/{name}/{sub_name}", yymm=name)
        elif is_archive(name):
            yield archive_project(fs, full, f"{rel}/{name}")


def folder_kinds(fs: Any, path: str) -> tuple[list[dict[str, Any]], bool, bool]:
    """What a folder holds: (its bulk `.tar` files, whether it is itself a project — `.tex` files
    directly inside —, whether it holds projects: sub-folders or archives)."""
    entries = sorted(fs.ls(path, detail=True), key=lambda e: e["name"])
    files = [e for e in entries if e["type"] == "file"]
    tars = [e for e in files if e["name"].lower().endswith(".tar")]
    is_project = any(e["name"].endswith(TEX) for e in files)
    holds = any(e["type"] == "directory" for e in entries) or any(is_archive(e["name"]) for e in files)
    return tars, is_project, holds
