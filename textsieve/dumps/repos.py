"""Code repositories as users have them, read into rows of the shape of RedPajama-1T's BigQuery
export (spec rpv1-sources §1.1), so the `github` family treats both alike.

Three layouts: a plain folder, a git checkout (a folder with `.git`: its working tree is read,
`.git` itself never), and a tarball (`.tar`, `.tar.gz`, `.tgz`; a single top folder, as GitHub's
archives and `git archive --prefix` have, is not part of the paths). One row per regular file,
in path order (a tarball's in member order), with the export's columns:

* `repo_name`: `owner/name` from `remote.origin.url` in the checkout's `.git/config` when there
  is one, else the folder's or tarball's name (`flask-3.0.tar.gz` -> `flask-3.0`);
* `id` (the git blob id of the bytes, as `git hash-object` gives it), `size` (bytes, a string as
  BigQuery writes INT64), `content`, `binary` (always false: binary files are left out), `ref`
  (the checkout's `HEAD` branch, e.g. `refs/heads/main`; absent elsewhere), `path`, `mode`
  (`33188`, or `33261` for an executable file), `license` (`licenses.repo_license` of the
  top-level licence files; None without one) and `language` (bytes per language, by file
  extension, largest first, as `github_repos.languages` lists them).

`copies` (a count over all of GitHub) and `symlink_target` are not written. Left out, and counted:
files that are not UTF-8 or hold a NUL byte (`binary`) and symbolic links (`symlink`).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import posixpath
import re
import tarfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from textsieve.dumps.licenses import is_license_file, repo_license

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")
SMALL_FILE = 1 << 20  # licence and .git files read in the first pass of a tarball are at most this big
GIT = ".git"

#: file extension -> language name (GitHub Linguist's names) for the `language` breakdown
LANGUAGES: dict[str, str] = {
    ".py": "Python", ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".hpp": "C++", ".hh": "C++",
    ".cs": "C#", ".java": "Java", ".js": "JavaScript", ".mjs": "JavaScript", ".ts": "TypeScript",
    ".tsx": "TypeScript", ".go": "Go", ".rs": "Rust", ".rb": "Ruby", ".php": "PHP", ".pl": "Perl", ".pm": "Perl",
    ".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".lua": "Lua", ".hs": "Haskell", ".scala": "Scala",
    ".kt": "Kotlin", ".swift": "Swift", ".m": "Objective-C", ".jl": "Julia", ".f90": "Fortran", ".f": "Fortran",
    ".html": "HTML", ".css": "CSS", ".tex": "TeX", ".sql": "PLpgSQL", ".ps1": "PowerShell", ".psm1": "PowerShell",
    ".vb": "Visual Basic .NET", ".asm": "Assembly", ".cmake": "CMake", ".md": "Markdown", ".rst": "reStructuredText",
    ".r": "R", ".R": "R", ".dart": "Dart", ".ex": "Elixir", ".erl": "Erlang", ".ml": "OCaml", ".clj": "Clojure",
    ".groovy": "Groovy", ".vue": "Vue", ".bat": "Batchfile", ".cmd": "Batchfile", ".xml": "XML",
}
_NAMES = {"Makefile": "Makefile", "makefile": "Makefile", "GNUmakefile": "Makefile", "Dockerfile": "Dockerfile",
          "CMakeLists.txt": "CMake"}


@dataclass
class RepoFile:
    """One file of a repository: where it is, and how to get its bytes."""

    path: str  # inside the repository, `/`-separated
    size: int
    executable: bool
    symlink: bool
    source: Any  # a local path (folders) or a tar member


class RepoSkip(Exception):
    """A file left out of a repository's rows (`reason`: binary, symlink), at `path`."""

    def __init__(self, reason: str, path: str, detail: str = "") -> None:
        super().__init__(f"{path}: {detail}" if detail else path)
        self.reason, self.path, self.detail = reason, path, detail


def is_tarball(path: str) -> bool:
    return path.lower().endswith(TAR_SUFFIXES)


def tar_stem(name: str) -> str:
    """`flask-3.0.tar.gz` -> `flask-3.0`."""
    lower = name.lower()
    for suffix in (".tar.gz", ".tgz", ".tar"):
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def language_of(path: str) -> str | None:
    base = path.rsplit("/", 1)[-1]
    if base in _NAMES:
        return _NAMES[base]
    head, dot, ext = base.rpartition(".")
    return LANGUAGES.get("." + ext) if dot and head else None


def languages(files: list[RepoFile]) -> list[dict[str, str]]:
    """[{name, bytes}] by language, largest first (bytes as strings, as BigQuery exports INT64)."""
    total: Counter[str] = Counter()
    for f in files:
        lang = None if f.symlink else language_of(f.path)
        if lang:
            total[lang] += f.size
    return [{"name": name, "bytes": str(n)} for name, n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))]


def remote_name(config_text: str) -> str | None:
    """`owner/name` of `remote "origin"`'s url in a git config (https, ssh or scp-like), or None."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(config_text)
    except configparser.Error:
        return None
    url = parser.get('remote "origin"', "url", fallback=None)
    if not url:
        return None
    url = url.strip().rstrip("/")
    url = url[:-4] if url.endswith(".git") else url
    parts = [p for p in re.split(r"[/:]", url) if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else None


def head_ref(head_text: str) -> str | None:
    """`refs/heads/main` from `.git/HEAD` (`ref: refs/heads/main`); None for a detached HEAD."""
    head_text = head_text.strip()
    return head_text[5:].strip() if head_text.startswith("ref:") else None


def decode(data: bytes, path: str) -> str:
    """The text of a file, or RepoSkip('binary') for one with a NUL byte or invalid UTF-8."""
    if b"\0" in data:
        raise RepoSkip("binary", path, "holds NUL bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RepoSkip("binary", path, f"not UTF-8 at byte {exc.start}") from None


class Repository:
    """A repository's files and what is known of it (name, ref, licence, languages)."""

    def __init__(self, name: str, files: list[RepoFile], ref: str | None, license_texts: list[str]):
        self.name = name
        self.files = files
        self.ref = ref
        self.license = repo_license(license_texts)
        self.language = languages(files)

    def row(self, f: RepoFile, data: bytes) -> dict[str, Any]:
        """The export row of `f` (raises RepoSkip for a binary file)."""
        content = decode(data, f.path)
        row: dict[str, Any] = {"repo_name": self.name, "id": blob_id(data), "size": str(len(data)),
                               "content": content, "binary": False}
        if self.ref:
            row["ref"] = self.ref
        row.update({"path": f.path, "mode": "33261" if f.executable else "33188", "license": self.license,
                    "language": self.language})
        return row


# ------------------------------------------------------------------ folders and checkouts


def is_checkout(folder: str) -> bool:
    return os.path.lexists(os.path.join(folder, GIT))


def walk_folder(folder: str) -> list[RepoFile]:
    """Every file under `folder` but those in a `.git` (checkouts and submodules), in path order."""
    out: list[RepoFile] = []
    for top, dirs, names in os.walk(folder):
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]  # os.walk lists them, never enters
        dirs[:] = sorted(d for d in dirs if d != GIT and d not in links)
        names = [*names, *links]
        for name in names:
            if name == GIT:  # a submodule's or worktree's `.git` file
                continue
            full = os.path.join(top, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            link = os.path.islink(full)
            out.append(RepoFile(rel, 0 if link else st.st_size, bool(st.st_mode & 0o111), link, full))
    out.sort(key=lambda f: f.path)
    return out


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def open_folder(folder: str, files: list[RepoFile] | None = None) -> Repository:
    """A plain folder or git checkout (its files from `walk_folder` unless given)."""
    files = walk_folder(folder) if files is None else files
    name = os.path.basename(os.path.abspath(folder))
    ref = None
    git = os.path.join(folder, GIT)
    if os.path.isdir(git):
        remote = remote_name(_read_text(os.path.join(git, "config")) or "")
        name = remote or name
        ref = head_ref(_read_text(os.path.join(git, "HEAD")) or "")
    texts = [t for f in files if "/" not in f.path and not f.symlink and is_license_file(f.path)
             for t in [_read_text(f.source)] if t is not None]
    return Repository(name, files, ref, texts)


def folder_rows(repo: Repository) -> Iterator[dict[str, Any] | RepoSkip]:
    for f in repo.files:
        if f.symlink:
            yield RepoSkip("symlink", f.path, "a symbolic link")
            continue
        with open(f.source, "rb") as fh:
            data = fh.read()
        try:
            yield repo.row(f, data)
        except RepoSkip as skip:
            yield skip


# ------------------------------------------------------------------ tarballs


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    for m in tar:
        if m.isfile() or m.issym() or m.islnk():
            yield m


def _clean(name: str) -> str:
    return posixpath.normpath(name.lstrip("/")).removeprefix("./")


def _top(names: list[str]) -> str:
    """The single top folder every member lies in (`flask-3.0/`), or ""."""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        return tops.pop() + "/"
    return ""


def open_tarball(path: str, fh: Any) -> Repository:
    """A tarball's file list, licence and `.git` data, from one pass that reads the headers and
    the few small files needed (licence files and `.git/config`/`HEAD` at the top or one folder
    down); `tar_rows` makes the second pass."""
    members: list[tuple[tarfile.TarInfo, str]] = []
    small: dict[str, str] = {}
    with tarfile.open(fileobj=fh, mode="r|*") as tar:
        for m in _members(tar):
            name = _clean(m.name)
            members.append((m, name))
            parts = name.split("/")
            wanted = (len(parts) <= 2 and is_license_file(parts[-1])) or \
                (len(parts) <= 3 and parts[-2:] in ([GIT, "config"], [GIT, "HEAD"]))
            if wanted and m.isfile() and m.size <= SMALL_FILE:
                data = tar.extractfile(m)
                small[name] = data.read().decode("utf-8", "replace") if data else ""
    top = _top([name for _, name in members])
    files: list[RepoFile] = []
    texts: list[str] = []
    for m, name in members:
        rel = name[len(top):]
        if GIT in rel.split("/"):
            continue
        files.append(RepoFile(rel, m.size, bool(m.mode & 0o111), m.issym() or m.islnk(), name))
        if "/" not in rel and name in small:
            texts.append(small[name])
    repo_name = remote_name(small.get(f"{top}{GIT}/config", "")) or tar_stem(posixpath.basename(path))
    return Repository(repo_name, files, head_ref(small.get(f"{top}{GIT}/HEAD", "")), texts)


def tar_rows(repo: Repository, fh: Any) -> Iterator[dict[str, Any] | RepoSkip]:
    """The rows of a tarball opened by `open_tarball` (`fh` rewound), in member order."""
    by_member = {f.source: f for f in repo.files}
    with tarfile.open(fileobj=fh, mode="r|*") as tar:
        for m in tar:
            f = by_member.get(_clean(m.name))
            if f is None or not (m.isfile() or m.issym() or m.islnk()):
                continue
            if f.symlink:
                yield RepoSkip("symlink", f.path, "a link")
                continue
            data = tar.extractfile(m)
            try:
                yield repo.row(f, data.read() if data else b"")
            except RepoSkip as skip:
                yield skip
