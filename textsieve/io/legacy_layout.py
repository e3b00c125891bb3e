"""Folders an older textsieve published, moved into the current layout the first time they are read.

Before, a published folder kept its bookkeeping beside its outputs (`ROOT/manifest.json`,
`ROOT/annotate.json`, `ROOT/summary.json`, `ROOT/.publish.json`, `ROOT/.staging-*`), and an
annotate output held its shards at the top with the attribute sets under it (`ROOT/x.parquet`,
`ROOT/_dedup_exact/x.parquet`). No dataset reader could open such a folder (the JSON files are
not Parquet; pyarrow and Spark skip `_`-prefixed names; a recursive glob mixed every set). Now
(`io.publish`, `io.attributes`):

    ROOT/.textsieve/{manifest,annotate,summary,...}.json   bookkeeping, hidden
    ROOT/docs/x.parquet                                     annotate's shards
    ROOT/sets/NAME/x.parquet (+ sets/NAME/.textsieve/)      attribute sets

`migrate` moves an old folder into this layout in place. It is idempotent and safe to kill: the
old manifest is removed last, so until then every later read runs the migration again, and every
step ("move A to B when A exists and B does not") can be repeated. The sets' `built_from` keys
(the annotate contents they were made from, `io.attributes`) are carried over to the new names,
so a set that was current stays current and a stale one stays stale. Run keys of stages are not
rewritten: a stage re-run once after the move computes again instead of finding its work done.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import fsspec

from textsieve.io.atomic import atomic_open
from textsieve.io.publish import BOOK, MANIFEST, PublishError, book, contents_key, file_sha256
from textsieve.io.store_readme import STORE_README, STORE_README_TEXT

log = logging.getLogger("textsieve.publish")

OLD_MANIFEST = "manifest.json"
OLD_JOURNAL = ".publish.json"
OLD_STAGING = ".staging-"
#: the bookkeeping an older textsieve kept beside the outputs: run summaries, and the DSIR models
#: a `dsir fit` set holds (the new layout keeps them in the set's `.textsieve/` too)
OLD_SUMMARIES = frozenset({"annotate.json", "extract.json", "selection.json", "summary.json", "model.dsir",
                           "model.tsm"})
OLD_SET_PREFIX = "_"
DOCS, SETS = "docs", "sets"  # io.attributes.DOCS / SETS (that module imports this one)


def _old_manifest(fs: fsspec.AbstractFileSystem, root: str) -> dict[str, Any] | None:
    """The old-layout manifest of `root`, or None (none, or a user's file of that name)."""
    path = f"{root}/{OLD_MANIFEST}"
    if not fs.exists(path):
        return None
    try:
        with fs.open(path, "r") as fh:
            data = json.load(fh)
    except ValueError:
        return None
    if not isinstance(data, dict) or "textsieve_manifest" not in data or not isinstance(data.get("files"), dict):
        return None
    return data


def needs_migration(fs: fsspec.AbstractFileSystem, root: str) -> bool:
    """Whether `root` is a folder in the old layout (not yet moved)."""
    return not fs.exists(f"{root}/{MANIFEST}") and _old_manifest(fs, root) is not None


def _move(fs: fsspec.AbstractFileSystem, src: str, dst: str) -> None:
    if fs.exists(src) and not fs.exists(dst):
        parent = dst.rsplit("/", 1)[0]
        fs.makedirs(parent, exist_ok=True)
        fs.mv(src, dst, recursive=True)


def _write_manifest(fs: fsspec.AbstractFileSystem, root: str, data: dict[str, Any]) -> None:
    with atomic_open(fs, f"{root}/{MANIFEST}", "w") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


def _remove_old(fs: fsspec.AbstractFileSystem, root: str) -> None:
    """The old bookkeeping and staging of `root`, once its new manifest is written."""
    for path in fs.ls(root, detail=False) if fs.exists(root) else []:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name.startswith((OLD_STAGING, ".lock")) or name == OLD_JOURNAL:
            fs.rm(path, recursive=True)
    if fs.exists(f"{root}/{OLD_MANIFEST}"):
        fs.rm(f"{root}/{OLD_MANIFEST}")


def _migrate_folder(fs: fsspec.AbstractFileSystem, root: str, data: dict[str, Any],
                    rename: dict[str, str] | None = None) -> None:
    """Move `root`'s bookkeeping (and the files `rename` maps) and switch to the new manifest."""
    rename = dict(rename or {})
    for rel in data["files"]:
        if rel in OLD_SUMMARIES:
            rename[rel] = book(rel)
    for old, new in rename.items():
        _move(fs, f"{root}/{old}", f"{root}/{new}")
    data = dict(data, files={rename.get(rel, rel): entry for rel, entry in data["files"].items()})
    _write_manifest(fs, root, data)  # the switch: from here on the folder is in the new layout
    _remove_old(fs, root)


def _set_folders(fs: fsspec.AbstractFileSystem, root: str, owned: set[str]) -> dict[str, str]:
    """Old set folder name (`_NAME`) -> new (`sets/NAME`), for the `_`-prefixed folders of an old
    annotate output that hold a set (not input folders of annotate's own shards, `owned`)."""
    out = {}
    for path in fs.ls(root, detail=False):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name.startswith(OLD_SET_PREFIX) and name not in owned and fs.isdir(path):
            out[name] = f"{SETS}/{name[len(OLD_SET_PREFIX):]}"
    return out


def _migrate_store(fs: fsspec.AbstractFileSystem, root: str, data: dict[str, Any]) -> None:
    """An old annotate output: sets to `sets/NAME`, shards to `docs/`, bookkeeping to `BOOK`."""
    files = data["files"]
    shards = [rel for rel in files if rel not in OLD_SUMMARIES]
    old_key = contents_key({rel: files[rel]["sha256"] for rel in shards if rel.endswith(".parquet")})
    new_key = contents_key({f"{DOCS}/{rel}": files[rel]["sha256"] for rel in shards if rel.endswith(".parquet")})
    owned = {rel.split("/", 1)[0] for rel in shards if "/" in rel}
    for rel in shards:  # the shards first: an input folder named `sets` cannot then meet the sets
        _move(fs, f"{root}/{rel}", f"{root}/{DOCS}/{rel}")
    for old, new in _set_folders(fs, root, owned).items():
        _move(fs, f"{root}/{old}", f"{root}/{new}")
    for path in fs.ls(f"{root}/{SETS}", detail=False) if fs.exists(f"{root}/{SETS}") else []:
        set_root = path.rstrip("/")
        set_data = _old_manifest(fs, set_root)
        if set_data is None:
            continue
        info = dict(set_data.get("info") or {})
        if info.get("built_from") == old_key:  # made from the current shards: still current under their new names
            info["built_from"] = new_key
        _migrate_folder(fs, set_root, dict(set_data, info=info))
    readme = f"{root}/{STORE_README}"
    if not fs.exists(readme):  # what the new layout publishes at a store's top (io.store_readme)
        with atomic_open(fs, readme, "wb") as fh:
            fh.write(STORE_README_TEXT.encode("utf-8"))
    size, sha = file_sha256(fs, readme)
    files[STORE_README] = {"size": size, "sha256": sha, "fingerprint": "store-readme"}
    _migrate_folder(fs, root, data, {rel: f"{DOCS}/{rel}" for rel in shards})
    for top in owned - {DOCS, SETS, BOOK}:  # the input folders the shards left, now empty
        path = f"{root}/{top}"
        if fs.isdir(path) and not fs.find(path):
            fs.rm(path, recursive=True)


def migrate(fs: fsspec.AbstractFileSystem, root: str) -> bool:
    """Move the folder at `root` from the old layout into the current one (see the module
    doc); whether it was in the old layout. A location that cannot be written gets a
    PublishError saying what to do."""
    root = root.rstrip("/") or "/"
    if BOOK in root.split("/"):
        return False  # bookkeeping itself (its manifest.json is the new layout's), never a folder to move
    data = _old_manifest(fs, root)
    if data is None or fs.exists(f"{root}/{MANIFEST}"):
        return False
    try:
        fs.makedirs(f"{root}/{BOOK}", exist_ok=True)
        if "annotate.json" in data["files"]:
            _migrate_store(fs, root, data)
        else:
            _migrate_folder(fs, root, data)
    except (OSError, PermissionError) as exc:
        raise PublishError(f"{root}: made by an older textsieve (bookkeeping beside the outputs) and cannot be moved "
                           f"into the current layout here ({exc}); copy the folder somewhere writable, or re-run "
                           "the stage that made it") from exc
    log.info("%s: moved a folder of an older textsieve into the current layout (%s/, docs/, sets/)", root, BOOK)
    return True
