"""Publishing a stage's outputs as one unit: staged beside the old ones, switched by a manifest.

Why: a stage writes many files (one per shard plus a summary). Writing them in place means a
killed run leaves some files of the new settings beside files of the old ones, and anything
that trusts "the file exists" (a re-run's skip test, a later stage) serves a mix no single run
made. So every stage writes through a `Publication`:

Everything that is not an output file (manifest, journal, staging, lock, the stage's summary
JSON) lives in one hidden folder, `ROOT/.textsieve/` (`BOOK`), so a published folder holds only
its data files and reads as a dataset with any tool's defaults: pyarrow, pandas, Spark and
Hugging Face `datasets` skip hidden folders; DuckDB and polars globs (`ROOT/**/*.parquet`) match
only data. (Before, `manifest.json` and `annotate.json` sat among the shards and broke every
one of them.) A folder an older textsieve wrote, with its bookkeeping at the top, is moved into
this layout the first time it is read (`io.legacy_layout`).

1. New files go to a staging folder `ROOT/.textsieve/staging-STAGE-KEY/` (KEY: the run's
   fingerprint, so a re-run with the same settings adopts what a killed run finished there).
   Readers never look there. The published files stay untouched.
2. `commit()` hashes every staged file and writes a journal `ROOT/.textsieve/publish.json` (atomically):
   the moves to make, the files of the old generation to remove and the new manifest. Writing
   the journal is the switch: before it the old generation is the result, after it the new one.
3. The journal is applied: files renamed into place, stale ones removed, `ROOT/.textsieve/manifest.json`
   written, journal and staging folder removed. A kill during this step is finished by the next
   run or reader (`recover`), which applies the journal again (every step is idempotent).

The manifest lists each published file with its size, SHA-256 and the fingerprint of
what it was made from. It is the only record of what is finished: a file not in it, or whose
size differs, is not an output (`published`, `check_file`). Later stages fingerprint their inputs
by the manifest's hashes, so a changed upstream result changes their keys.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import fsspec

from textsieve._version import __version__
from textsieve.errors import TextsieveError
from textsieve.io import write_lock
from textsieve.io.atomic import atomic_open
from textsieve.io.leftovers import writer_gone, writer_tag
from textsieve.io.safe_paths import join_inside

log = logging.getLogger("textsieve.publish")

BOOK = ".textsieve"  # every published folder's bookkeeping (see the module doc)


def book(name: str) -> str:
    """The rel name of bookkeeping file `name` of a published folder (`.textsieve/NAME`)."""
    return f"{BOOK}/{name}"


MANIFEST = book("manifest.json")
SUMMARY = book("summary.json")  # a published generation's summary: what a re-run that changes nothing returns
JOURNAL = book("publish.json")
STAGING_PREFIX = "staging-"  # STAGING_PREFIX + STAGE-KEY: a staging folder inside BOOK
#: the top-level bookkeeping an older textsieve wrote among the outputs (`io.legacy_layout`)
LEGACY_MANIFEST, LEGACY_JOURNAL, LEGACY_STAGING = "manifest.json", ".publish.json", ".staging-"
#: the run summaries that mark what kind of folder a published one is
ANNOTATE_JSON, EXTRACT_JSON, SELECTION_JSON = book("annotate.json"), book("extract.json"), book("selection.json")
_WRITER_MARK = ".writer-"  # `STAGING/.writer-PID@HOST`: who stages there, for removing dead runs' folders
_INFO = ".info.json"  # `STAGING/.info.json`: the run's info (its settings fingerprint)
FORMAT = 1


class PublishError(TextsieveError, RuntimeError):
    """A published output that is missing, incomplete or changed since it was published."""


@dataclass
class Manifest:
    """What one published generation of a stage's outputs holds."""

    stage: str
    key: str  # the run's fingerprint (settings and inputs)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # rel -> {size, sha256, fingerprint}
    info: dict[str, Any] = field(default_factory=dict)  # stage-specific (e.g. the settings fingerprint)

    def to_json(self) -> dict[str, Any]:
        return {"textsieve_manifest": FORMAT, "stage": self.stage, "key": self.key, "version": __version__,
                "info": self.info, "files": dict(sorted(self.files.items()))}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return cls(str(data.get("stage")), str(data.get("key")), dict(data.get("files") or {}),
                   dict(data.get("info") or {}))

    def fingerprint_of(self, rel: str) -> str | None:
        entry = self.files.get(rel)
        return None if entry is None else entry.get("fingerprint")


def _root(fs: fsspec.AbstractFileSystem, root: str) -> str:
    return root.rstrip("/") or "/"


def file_sha256(fs: fsspec.AbstractFileSystem, path: str) -> tuple[int, str]:
    """(size, SHA-256 hex) of a file, streamed."""
    h, size = hashlib.sha256(), 0
    with fs.open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _apply(fs: fsspec.AbstractFileSystem, root: str, journal: dict[str, Any], journal_rel: str = JOURNAL,
           manifest_rel: str = MANIFEST) -> None:
    """Make the journal's generation the published one (idempotent; see module doc, step 3).
    `journal_rel`/`manifest_rel` differ only for a journal an older textsieve left."""
    files = journal["manifest"]["files"]
    for staged, rel in journal["moves"]:
        src, dst = join_inside(root, staged), join_inside(root, rel)
        if fs.exists(src):
            parent = dst.rpartition("/")[0]
            if parent:
                fs.makedirs(parent, exist_ok=True)
            fs.mv(src, dst)
        elif not fs.exists(dst) or int(fs.size(dst)) != int(files[rel]["size"]):
            raise PublishError(f"{root}: cannot finish publishing: {src} and {dst} are both missing or "
                               "incomplete; re-run the stage with --overwrite")
    for rel in journal["remove"]:
        path = join_inside(root, rel)
        if fs.exists(path):
            fs.rm(path)
    with atomic_open(fs, f"{root}/{manifest_rel}", "w") as fh:
        json.dump(journal["manifest"], fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    try:
        fs.rm(f"{root}/{journal_rel}")
    except FileNotFoundError:
        pass  # a reader's `recover` finished the same journal meanwhile
    staging = journal.get("staging")
    if staging and fs.exists(join_inside(root, staging)):
        fs.rm(join_inside(root, staging), recursive=True)


def recover(fs: fsspec.AbstractFileSystem, root: str) -> bool:
    """Finish a publish that was switched (journal written) but not applied when the run died.
    Returns whether there was one. Safe to call from any reader: applying is idempotent."""
    root = _root(fs, root)
    for journal_rel, manifest_rel in ((JOURNAL, MANIFEST), (LEGACY_JOURNAL, LEGACY_MANIFEST)):
        if _recover_one(fs, root, journal_rel, manifest_rel):
            return True
    return False


def _recover_one(fs: fsspec.AbstractFileSystem, root: str, journal_rel: str, manifest_rel: str) -> bool:
    path = f"{root}/{journal_rel}"
    if not fs.exists(path):
        return False
    try:
        with fs.open(path, "r") as fh:
            journal = json.load(fh)
        _check_journal(journal)
    except (ValueError, KeyError, TypeError) as exc:  # written atomically: only damage from outside does this
        raise PublishError(f"{path}: a damaged publish journal ({type(exc).__name__}: {exc}), so the interrupted "
                           "publish cannot be finished; re-run the stage with --overwrite") from None
    log.info("%s: finishing the publish of an interrupted run", root)
    _apply(fs, root, journal, journal_rel, manifest_rel)
    return True


def _check_journal(journal: Any) -> None:
    """A journal's shape, checked before anything moves (TypeError/KeyError/ValueError if bad)."""
    if not isinstance(journal, dict) or not isinstance(journal["manifest"], dict):
        raise TypeError("not a journal object")
    files = journal["manifest"]["files"]
    if not isinstance(files, dict) or not all(isinstance(v, dict) and "size" in v for v in files.values()):
        raise TypeError("its manifest's files are not a mapping of file records")
    def path(value: Any) -> None:  # a str a file system can take (UnicodeEncodeError is a ValueError)
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a path")
        value.encode("utf-8")

    for staged, rel in journal["moves"]:
        path(staged)
        path(rel)
        if rel not in files:
            raise ValueError(f"a move {staged!r} -> {rel!r} outside its manifest")
        int(files[rel]["size"])
    for rel in [*files, *journal["remove"]]:
        path(rel)
    if journal.get("staging"):
        path(journal["staging"])
    json.dumps(journal["manifest"], ensure_ascii=False).encode("utf-8")  # the manifest it will write


def read_manifest(fs: fsspec.AbstractFileSystem, root: str) -> Manifest | None:
    """The published manifest of `root` (after finishing an interrupted publish and moving an
    older textsieve's layout into `BOOK`), or None."""
    root = _root(fs, root)
    try:
        recover(fs, root)
    except (OSError, PermissionError) as exc:  # a read-only location: report, do not guess
        raise PublishError(f"{root}: an interrupted publish could not be finished ({exc})") from exc
    path = f"{root}/{MANIFEST}"
    if not fs.exists(path):
        from textsieve.io.legacy_layout import migrate  # that module builds on this one

        if not migrate(fs, root):
            return None
    with fs.open(path, "r") as fh:
        try:
            data = json.load(fh)
        except ValueError as exc:
            raise PublishError(f"{path}: not a textsieve manifest ({exc})") from exc
    if not isinstance(data, dict) or "textsieve_manifest" not in data:
        raise PublishError(f"{path}: not a textsieve manifest")
    return Manifest.from_json(data)


def holds(fs: fsspec.AbstractFileSystem, root: str, rel: str) -> bool:
    """Whether folder `root` has bookkeeping file `rel` (e.g. `ANNOTATE_JSON`: an annotate
    output), after finishing an interrupted publish and moving an older layout into `BOOK`."""
    root = _root(fs, root)
    if not fs.isdir(root):
        return False
    if not fs.exists(f"{root}/{MANIFEST}"):
        read_manifest(fs, root)
    return bool(fs.exists(f"{root}/{rel}"))


def published(fs: fsspec.AbstractFileSystem, root: str, what: str) -> Manifest:
    """The manifest of `root`, or a clear error saying the outputs were never published whole."""
    manifest = read_manifest(fs, root)
    if manifest is None:
        raise PublishError(f"{root}: no {MANIFEST}, so {what} was never published completely (a run that was "
                           "interrupted, still running, or made by an older textsieve); run that stage again")
    return manifest


def check_file(fs: fsspec.AbstractFileSystem, root: str, manifest: Manifest, rel: str) -> str:
    """The path of published file `rel`, checked to exist with its published size."""
    path = join_inside(_root(fs, root), rel)
    entry = manifest.files.get(rel)
    if entry is None:
        raise PublishError(f"{path}: not among the published outputs of {root}")
    try:
        size = int(fs.size(path))
    except FileNotFoundError:
        raise PublishError(f"{path}: published but missing; run {manifest.stage} again") from None
    if size != int(entry["size"]):
        raise PublishError(f"{path}: changed since it was published ({size:,} bytes, published {int(entry['size']):,});"
                           f" run {manifest.stage} again")
    return path


#: bookkeeping files already checked against their manifest in this process: (file, its SHA-256,
#: the manifest's size) -> True, so a reader opening many shards of one folder checks it once
_CHECKED: dict[tuple[str, str, int], bool] = {}


def read_bookkeeping(fs: fsspec.AbstractFileSystem, root: str, rel: str) -> bytes:
    """The bytes of bookkeeping file `rel` under `root` (`annotate.json`, `summary.json`, ...),
    checked against `root`'s manifest. Why: these files steer readers (`annotate.json`'s
    `input_roots` say which files `select` may copy records from), so an edited one must not be
    believed; the manifest records every published file's SHA-256. A folder without a manifest
    (written by an older textsieve or by hand) is read as is. FileNotFoundError when the file
    is missing; PublishError naming it when it is not the published one."""
    root = _root(fs, root)
    if not fs.exists(f"{root}/{MANIFEST}"):
        read_manifest(fs, root)  # moves an older textsieve's layout into BOOK first
    path = join_inside(root, rel)
    data = fs.cat_file(path)
    try:
        manifest_size = int(fs.size(f"{root}/{MANIFEST}"))
    except FileNotFoundError:
        return data
    digest = hashlib.sha256(data).hexdigest()
    key = (fs.unstrip_protocol(path), digest, manifest_size)
    if key not in _CHECKED:
        manifest = read_manifest(fs, root)
        if manifest is not None:
            entry = manifest.files.get(rel)
            if entry is None:
                raise PublishError(f"{path}: not among the files {root}/{MANIFEST} lists, so it was not written by "
                                   f"the stage that published {root} and is not trusted; remove it or run "
                                   f"{manifest.stage} again")
            if entry.get("sha256") != digest:
                raise PublishError(f"{path}: changed since it was published (its SHA-256 is not the one "
                                   f"{root}/{MANIFEST} records), so it is not trusted; restore it or run "
                                   f"{manifest.stage} again")
        _CHECKED[key] = True
    return data


def summary_of(location: str, rel: str = SUMMARY) -> dict | None:
    """Summary JSON `rel` of the published folder at `location` (path or URL), checked against
    its manifest (`read_bookkeeping`); None when it is missing or not a JSON object."""
    fs, root = fsspec.core.url_to_fs(location)
    try:
        value = json.loads(read_bookkeeping(fs, root.rstrip("/"), rel))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def contents(fs: fsspec.AbstractFileSystem, root: str, rels: list[str] | None = None) -> dict[str, str]:
    """rel -> content fingerprint of the output files under `root` (`rels`, default: every
    `.parquet` shard, not the run summaries, which a re-run that changed nothing rewrites).
    Published files give their manifest's SHA-256; a folder no textsieve stage published
    (written by hand or another tool) gives size + modification time instead."""
    root = _root(fs, root)
    manifest = read_manifest(fs, root)
    if manifest is not None:
        chosen = sorted(r for r in manifest.files if r.endswith(".parquet")) if rels is None else rels
        return {rel: str(manifest.files[rel]["sha256"]) for rel in chosen if rel in manifest.files}
    if rels is None:
        rels = sorted(p[len(root) + 1:] for p in fs.find(root) if p.endswith(".parquet")
                      and not any(part.startswith(".") for part in p[len(root) + 1:].split("/")))
    out = {}
    for rel in rels:
        info = fs.info(join_inside(root, rel))
        out[rel] = f"stat:{info.get('size')}:{info.get('mtime', info.get('created'))}"
    return out


def settings_diff(fs: fsspec.AbstractFileSystem, set_root: str, info: dict[str, Any], keys: list[str]) -> list[str]:
    """`key=old (now new)` for each result-changing setting in `keys` that the published set at
    `set_root` (its summary.json) was made with differently; [] when there is no readable set.
    Finishes an interrupted publish first, so the comparison is with the current set. Stages
    whose sets are named by their settings use it to refuse a silent replacement."""
    read_manifest(fs, set_root)
    path = f"{set_root}/{SUMMARY}"
    if not fs.exists(path):
        return []
    try:
        old = json.loads(fs.cat_file(path))
    except (OSError, ValueError):
        return []  # unreadable summary: a broken earlier run, replace it
    return [f"{k}={old.get(k)!r} (now {info.get(k)!r})" for k in keys if old.get(k) != info.get(k)]


def content_key(fs: fsspec.AbstractFileSystem, root: str, rels: list[str] | None = None) -> str:
    """One fingerprint of `contents(fs, root, rels)`, for later stages' keys."""
    return contents_key(contents(fs, root, rels))


def contents_key(found: Mapping[str, str]) -> str:
    """The fingerprint of a rel -> content fingerprint mapping (`content_key`)."""
    return hashlib.sha256(json.dumps(sorted(found.items())).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SummaryStyle:
    """How a summary file's JSON is laid out. Kept per kind of output so that summaries stay
    byte-identical across releases (their hashes are in manifests that later stages key on)."""

    indent: int = 1
    ensure_ascii: bool = False
    newline: bool = True
    default: Callable[[Any], Any] | None = None  # for values JSON lacks (`str` for paths, dates)

    def dumps(self, summary: Mapping[str, Any]) -> bytes:
        text = json.dumps(summary, indent=self.indent, ensure_ascii=self.ensure_ascii, default=self.default)
        return (text + ("\n" if self.newline else "")).encode("utf-8")


#: an attribute set's summary.json (`sets/dedup_fuzzy`, `sets/pii`, ...): one-space indent, UTF-8, a final newline
SET_SUMMARY = SummaryStyle()
#: an output folder's summary.json (annotate, the imports): two-space indent, ASCII, no final newline
FOLDER_SUMMARY = SummaryStyle(indent=2, ensure_ascii=True, newline=False)


def _listing(fs: fsspec.AbstractFileSystem, folder: str) -> list[str]:
    return fs.ls(folder, detail=False) if fs.exists(folder) else []


class Publication:
    """One run's new generation of outputs under `root` (see the module doc).

    The lifecycle every stage follows: `pub = Publication(fs, root, stage, key)` opens a
    generation for the run's fingerprint (`io.attributes.open_set` for an attribute set);
    `pub.up_to_date(fingerprints)` returns the published summary when nothing changed (the run is
    then a no-op); otherwise write each file to `pub.staged(rel)` and `pub.add(rel, fingerprint)`
    it, carry unchanged published files over with `pub.keep(rel)`, and finish with
    `pub.commit_summary(summary)` (or `pub.commit()` for a set without a summary). `pub.previous`
    is the published manifest (or None) for skip and refusal decisions; `pub.adoptable(rel)`
    says whether a killed run with the same key left `rel` finished in staging."""

    def __init__(self, fs: fsspec.AbstractFileSystem, root: str, stage: str, key: str,
                 info: dict[str, Any] | None = None, protect: bool = False, overwrite: bool = False):
        """`info["settings"]` (optional) fingerprints the user's settings apart from the inputs.
        With `protect`, finished work that a killed run with *other settings* staged is not
        discarded silently: the run refuses unless `overwrite` (that work resumes if the user
        re-runs those settings). Without it, such staging folders are removed."""
        self.fs, self.root, self.stage, self.key = fs, _root(fs, root), stage, key
        self.info = dict(info or {})
        self._lock = write_lock.take(fs, self.root, stage)  # one writer per output (io.write_lock)
        self.previous = read_manifest(fs, self.root)
        self.staging_rel = book(f"{STAGING_PREFIX}{stage}-{key}")
        self.staging = f"{self.root}/{self.staging_rel}"
        self._files: dict[str, dict[str, Any]] = {}
        self._moves: list[tuple[str, str]] = []
        self.kept: set[str] = set()  # rels carried over from the published generation
        self._blocked: list[str] = []  # killed runs' staged work of other settings (with `protect`)
        self._remove_dead_staging(protect and not overwrite)
        fs.makedirs(self.staging, exist_ok=True)
        self._mark = f"{self.staging}/{_WRITER_MARK}{writer_tag()}"
        with fs.open(self._mark, "wb"):
            pass
        with fs.open(f"{self.staging}/{_INFO}", "w") as fh:
            json.dump(self.info, fh)

    def _remove_dead_staging(self, protect: bool) -> None:
        """Staging folders of this stage whose writers are all gone and whose key differs: a killed
        run of other settings or inputs. (Those of this key are adopted.)"""
        fs = self.fs
        own = self.staging_rel.rsplit("/", 1)[-1]
        candidates = [(p, f"{STAGING_PREFIX}{self.stage}-") for p in _listing(fs, f"{self.root}/{BOOK}")]
        candidates += [(p, f"{LEGACY_STAGING}{self.stage}-") for p in _listing(fs, self.root)]  # an older textsieve's
        for path, prefix in candidates:
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if not name.startswith(prefix) or name == own or not fs.isdir(path):
                continue
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)]
            alive = False
            for mark in (n for n in names if n.startswith(_WRITER_MARK)):
                pid, _, host = mark[len(_WRITER_MARK):].partition("@")
                try:
                    mtime = fs.modified(f"{path}/{mark}").timestamp()
                except (OSError, NotImplementedError, AttributeError, ValueError):
                    mtime = None
                if pid.isdigit() and not writer_gone(int(pid), host or None, mtime, time.time()):
                    alive = True
            if alive:
                continue
            work = [n for n in names if not n.startswith(_WRITER_MARK) and n != _INFO]
            if protect and work:
                try:
                    with fs.open(f"{path}/{_INFO}", "r") as fh:
                        settings = json.load(fh).get("settings")
                except (OSError, ValueError):
                    settings = None
                if settings != self.info.get("settings"):
                    self._blocked.append(path)  # refused by `claim`, only if this run writes anything
                    continue
            log.info("removing %s, left by an interrupted run with other settings or inputs", path)
            fs.rm(path, recursive=True)

    def claim(self) -> None:
        """Call before computing anything: with `protect`, refuses when a killed run with other
        settings left finished work here (a run that has nothing to compute leaves it alone, so
        re-running the published settings stays a no-op)."""
        if self._blocked:
            self.abandon()
            raise PublishError(
                f"{self.root}: an interrupted run with other settings left finished work in {self._blocked[0]}; "
                "re-run with those settings to resume it, or use --overwrite (or delete that folder) to discard it")

    def staged(self, rel: str) -> str:
        """Where to write output `rel` of this generation."""
        return join_inside(self.staging, rel)

    def adoptable(self, rel: str) -> bool:
        """Whether a killed run with this key finished `rel` in staging (files there are written
        atomically, so an existing name is a complete file)."""
        return bool(self.fs.exists(self.staged(rel)))

    def unchanged(self, rel: str, fingerprint: str | None) -> bool:
        """Whether the published generation holds `rel`, made from `fingerprint`, intact."""
        prev = self.previous
        if prev is None or rel not in prev.files or prev.fingerprint_of(rel) != fingerprint:
            return False
        try:
            check_file(self.fs, self.root, prev, rel)
        except PublishError:
            return False
        return True

    def add(self, rel: str, fingerprint: str | None = None, **extra: Any) -> None:
        """Record staged file `rel` (written to `staged(rel)`) as part of this generation."""
        size, sha = file_sha256(self.fs, self.staged(rel))
        self._files[rel] = {"size": size, "sha256": sha, "fingerprint": fingerprint, **extra}
        self._moves.append((posixpath.join(self.staging_rel, rel), rel))

    def keep(self, rel: str) -> None:
        """Carry published file `rel` over into this generation unchanged."""
        if self.previous is None or rel not in self.previous.files:
            raise KeyError(rel)
        self._files[rel] = dict(self.previous.files[rel])
        self.kept.add(rel)

    def commit(self) -> Manifest:
        """Switch to this generation (atomically) and apply it; returns its manifest."""
        manifest = Manifest(self.stage, self.key, dict(self._files), self.info)
        old = set(self.previous.files) if self.previous else set()
        journal = {"manifest": manifest.to_json(), "moves": self._moves,
                   "remove": sorted(old - set(self._files)), "staging": self.staging_rel}
        with atomic_open(self.fs, f"{self.root}/{JOURNAL}", "w") as fh:
            json.dump(journal, fh, ensure_ascii=False)
        _apply(self.fs, self.root, journal)
        self.previous = manifest
        write_lock.release(self._lock)
        return manifest

    def up_to_date(self, fingerprints: Mapping[str, str | None], summary: str = SUMMARY,
                   summary_fingerprint: str | None = None) -> dict | None:
        """The published summary when the generation under `root` has this run's key and holds
        every file of `fingerprints` (rel -> what it was made from) and the summary (made from
        `summary_fingerprint`, by default the key) intact: the whole output is up to date, the
        publication is abandoned and the caller returns that summary. None when something must
        be computed."""
        wanted = {**fingerprints, summary: self.key if summary_fingerprint is None else summary_fingerprint}
        if self.previous is None or self.previous.key != self.key or not all(
                self.unchanged(r, fp) for r, fp in wanted.items()):
            return None
        self.abandon()
        with self.fs.open(f"{self.root}/{summary}", "rb") as fh:
            return json.loads(fh.read())

    def unchanged_summary(self, rels: list[str], summary: str = SUMMARY) -> dict | None:
        """`up_to_date` for outputs whose files are all made from the run's key."""
        return self.up_to_date({r: self.key for r in rels}, summary)

    def add_file(self, rel: str, data: bytes, fingerprint: str | None = None) -> None:
        """Stage file `rel` with contents `data` (written atomically) and add it."""
        with atomic_open(self.fs, self.staged(rel), "wb") as fh:
            fh.write(data)
        self.add(rel, fingerprint)

    def add_summary(self, summary: Mapping[str, Any], fingerprint: str | None = None, *, name: str = SUMMARY,
                    style: SummaryStyle = SET_SUMMARY) -> None:
        """Stage `summary` as the generation's summary file and add it."""
        self.add_file(name, style.dumps(summary), fingerprint)

    def commit_summary(self, summary: Mapping[str, Any], fingerprint: str | None = None, *, name: str = SUMMARY,
                       style: SummaryStyle = SET_SUMMARY) -> Manifest:
        """Stage and add the summary, then commit the generation (the last step of a run)."""
        self.add_summary(summary, fingerprint, name=name, style=style)
        return self.commit()

    def abandon(self) -> None:
        """Give up before writing anything: remove the staging folder if it holds no work (no
        file but the writer mark and the info; empty folders are not work)."""
        fs = self.fs
        if fs.exists(self.staging) and all(n.startswith(_WRITER_MARK) or n == _INFO for n in (
                p.rstrip("/").rsplit("/", 1)[-1] for p in fs.find(self.staging))):
            fs.rm(self.staging, recursive=True)
        self._tidy()
        write_lock.release(self._lock)

    def discard(self) -> None:
        """Drop this run's staging folder (e.g. when the stage found nothing to do)."""
        if self.fs.exists(self.staging):
            self.fs.rm(self.staging, recursive=True)
        self._tidy()
        write_lock.release(self._lock)

    def _tidy(self) -> None:
        """Remove `ROOT/.textsieve/` when this run leaves nothing in it but its lock (a first run
        that failed before publishing leaves the folder as it found it)."""
        book_dir = f"{self.root}/{BOOK}"
        try:
            left = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(book_dir, detail=False)]
        except (FileNotFoundError, NotADirectoryError):
            return
        if all(n == write_lock.LOCK.rsplit("/", 1)[-1] for n in left):
            write_lock.release(self._lock)
            self._lock = None
            self.fs.rm(book_dir, recursive=True)
