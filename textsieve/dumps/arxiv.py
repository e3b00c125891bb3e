"""The `arxiv` source family: LaTeX submissions into documents, as RedPajama-1T's `arxiv_cleaner.py`.

Units are the reference's bulk source tars (`arXiv_src_<yymm>_<n>.tar`, one shard each) and what
users have: a folder of unpacked projects, one project's folder, a single `.tex` file, one
submission's archive (`arxiv_read`). Each project is loaded as the reference loads it, cleaned
(`arxiv_tex`: the reference's cleaning with `--reference rp_v1`, the fixed one by default) and
written as `{id, text, meta}` with the reference's meta (`timestamp, yymm, arxiv_id, language,
url, source`; `language` is fastText LID-176's top label, `lid176`).

A project gives no record, in both modes, where the reference gives none: its loader returned
nothing (`load_failed`: a `.tex` member that is not UTF-8, a member that is neither tar nor
gzip), cleaning raised (`clean_failed`: a macro value that is not plain ASCII), or the text is
empty (`empty`: no `.tex` file, no sectioning command). The reference has no other filter, so
`rpv1-arxiv` keeps every record. A bulk tar that cannot be read is bad input (`bad_archive`):
an error naming the tar and member, or a counted skip with `--on-error skip`.

`timestamp` is the member's modification time as a UTC ISO time: the reference printed the
processing machine's local time (`datetime.fromtimestamp`), which would make the output depend
on where it ran; the goldens were made with `TZ=UTC`.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Iterator
from typing import Any

import fsspec
import pyarrow as pa

from textsieve.dumps import lid176
from textsieve.dumps.arxiv_read import (
    Project,
    archive_project,
    bulk_members,
    bulk_project,
    folder_kinds,
    folder_of_projects,
    folder_project,
    is_archive,
    tex_file_project,
)
from textsieve.dumps.arxiv_tex import clean_project
from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.io.errors import InputError

SOURCE = "arxiv"
META_FIELDS = ("timestamp", "yymm", "arxiv_id", "language", "url", "source")
_GLOB = frozenset("*?[")
_BAD_TAR = (tarfile.TarError, OSError, EOFError, zlib.error)


def project_outcome(project: Project, rp_v1: bool) -> SourceRecord | Skip:
    """A loaded project's record, or why it has none (`load_failed`, `clean_failed`, `empty`)."""
    loaded = project.loaded
    if loaded.failure:
        return Skip("load_failed", project.location, loaded.failure)
    cleaned = clean_project([text for _, text in loaded.files], rp_v1)
    if cleaned.text is None:
        return Skip("clean_failed", project.location, cleaned.failure)
    if not cleaned.text:
        why = "no .tex file" if not loaded.files else "no sectioning command (\\section ...) in any .tex file"
        return Skip("empty", project.location, why)
    arxiv_id = project.arxiv_id
    meta = {"timestamp": project.timestamp, "yymm": project.yymm, "arxiv_id": arxiv_id,
            "language": lid176.top_language(cleaned.text), "url": project.url, "source": SOURCE}
    return SourceRecord(arxiv_id, cleaned.text, meta)


class ArxivFamily(SourceFamily):
    name = "arxiv"
    help = ("arXiv LaTeX sources: bulk source tars (arXiv_src_*.tar), folders of projects, project folders, "
            ".tex files, submission archives (.tar.gz, .gz)")
    reasons = ("load_failed", "clean_failed", "empty", "bad_archive")
    reference_reasons = ()  # the reference has no filter beyond what reading decides
    meta_schema = pa.struct([(name, pa.string()) for name in META_FIELDS])
    version = "1"

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        lid176.check_available()
        out: list[Unit] = []
        for raw in inputs:
            fs, path = fsspec.core.url_to_fs(raw)
            paths = sorted(fs.glob(path)) if _GLOB & set(path) else [path]
            if not paths or not fs.exists(paths[0]):
                raise SourceError(f"arxiv: {raw}: no such file or folder")
            for p in paths:
                out += self._folder_units(fs, p) if fs.isdir(p) else [self._file_unit(fs, p)]
        return out

    def _file_unit(self, fs: Any, path: str) -> Unit:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        low = name.lower()
        kind = "bulk" if low.endswith(".tar") else "tex" if name.endswith(".tex") else \
            "archive" if is_archive(name) else None
        if kind is None:
            raise SourceError(f"arxiv: {fs.unstrip_protocol(path)}: not an arXiv source tar (.tar), a submission "
                              "archive (.tar.gz, .tgz, .gz), a .tex file or a folder of them")
        return Unit(fs.unstrip_protocol(path), name, int(fs.size(path) or 0), {"kind": kind})

    def _folder_units(self, fs: Any, path: str) -> list[Unit]:
        tars, is_project, holds = folder_kinds(fs, path)
        out = [self._file_unit(fs, t["name"]) for t in tars]
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if is_project or holds:
            out.append(Unit(fs.unstrip_protocol(path), name, int(fs.du(path) or 0),
                            {"kind": "project" if is_project else "projects"}))
        return out

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        for item in self.projects(unit, opts):
            yield item if isinstance(item, Skip) else project_outcome(item, opts.rp_v1)

    def projects(self, unit: Unit, opts: SourceOptions) -> Iterator[Project | Skip]:
        """The unit's projects, loaded, in order (a bulk tar: member order; a folder: names)."""
        kind = unit.info.get("kind")
        fs, path = fsspec.core.url_to_fs(unit.path)
        if kind == "bulk":
            yield from self._bulk(fs, path, unit, opts)
        elif kind == "project":
            yield folder_project(fs, path, unit.rel)
        elif kind == "projects":
            yield from folder_of_projects(fs, path, unit.rel)
        elif kind == "tex":
            yield tex_file_project(fs, path, unit.rel)
        else:
            yield archive_project(fs, path, unit.rel)

    def _bulk(self, fs: Any, path: str, unit: Unit, opts: SourceOptions) -> Iterator[Project | Skip]:
        """A bulk tar's projects; a tar that cannot be read (not a tar, cut, damaged) is bad
        input, located at the member where reading stopped."""
        with fs.open(path, "rb") as fh:
            try:
                tf = tarfile.open(fileobj=fh)  # noqa: SIM115 - closed by the `with` below, once opened
            except _BAD_TAR as exc:
                yield self._bad(unit.rel, exc, opts)
                return
            with tf:
                members, error = bulk_members(tf)
                for member in members:
                    try:
                        project = bulk_project(tf, member, unit.rel)
                    except _BAD_TAR as exc:
                        yield self._bad(f"{unit.rel}:{member.name}", exc, opts)
                        return
                    yield project
                if error:
                    yield self._bad(unit.rel, tarfile.ReadError(error), opts)

    @staticmethod
    def _bad(where: str, exc: BaseException, opts: SourceOptions) -> Skip:
        reason = f"not a readable tar archive ({type(exc).__name__}: {exc})"
        if opts.on_error == "fail":
            raise InputError.at(where, reason)
        return Skip("bad_archive", where, reason)

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        return {"lid176_sha256": lid176.model_sha256()}


FAMILY = ArxivFamily()
register_family(FAMILY)
