"""Attribute sets on storage: where stages put their columns and how to read them back.

Layout of an annotate output folder `DIR`:
  DIR/<input rel with .parquet suffix>   annotate's attribute shards (signals, MinHash bands)
  DIR/_<name>/<same rel>                 attribute sets added later by other stages, e.g.
                                         `_dedup_fuzzy`, `_dedup_exact`, `_dsir_wiki`
  DIR/annotate.json                      run summary
  DIR/manifest.json, DIR/_<name>/manifest.json   what each stage published (`io.publish`): the
                                         only record of which files are finished outputs
Annotate shards also hold `ts_length` and, for every doc-level signal `X`, a plain column
`X__score` equal to the score of X's single span: the span columns keep RPv2's representation,
the scalar twins make rule queries fast (no list<struct> decoding).
Every attribute shard has the columns `id`, `shard`, `row` (the source shard's rel name and
the record index in it) in document order, then its attributes, so sets join on (shard, row).
Every shard's footer carries a JSON document under the key `textsieve`; for annotate shards it
includes `source_shard` and `read_options`, enough to re-open the source and read the texts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import fsspec
import pyarrow.parquet as pq

from textsieve.document import Document
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.publish import Manifest, Publication, PublishError, check_file, content_key, read_manifest

log = logging.getLogger("textsieve.attributes")

META_KEY = b"textsieve"
SET_PREFIX = "_"
LENGTH_COLUMN = "ts_length"  # annotate: len(text) in code points (= end of a doc-level span)
SCORE_SUFFIX = "__score"  # annotate: plain scalar twin `<signal>__score` of each doc-level span column


def attribute_shards(directory: str, attribute_set: str | None = None) -> tuple[fsspec.AbstractFileSystem, list[str]]:
    """Finished shards of annotate's output (`attribute_set` None) or of the set `_<name>`,
    sorted.

    A folder a textsieve stage published is read through its manifest (`io.publish`): exactly
    the `.parquet` files listed there, each checked to be intact, so a killed or running stage's
    files are never read and names decide nothing (an input named `_txt` or `_2024/...` is a
    shard like any other). A folder without a manifest was written by hand or by another tool
    (no textsieve stage leaves final-named files unpublished): its `.parquet` files are listed,
    minus hidden names and, for annotate's output, the `_<name>` attribute-set folders."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    base = f"{root}/{SET_PREFIX}{attribute_set}" if attribute_set else root
    manifest = read_manifest(fs, base)
    if manifest is not None and attribute_set is not None and _stale(fs, root, manifest):
        raise PublishError(f"{base}: attribute set {attribute_set!r} was made from an earlier version of the annotate "
                           f"output in {directory} (documents were annotated again since); re-run the stage that "
                           "made it (dedup exact, dedup fuzzy or dsir fit)")
    if manifest is not None:
        found = [check_file(fs, base, manifest, rel) for rel in sorted(manifest.files) if rel.endswith(".parquet")]
    else:
        sets = set(attribute_sets(directory)) if attribute_set is None else set()
        found = []
        for path in fs.find(base) if fs.exists(base) else []:
            rel = path[len(base) + 1:]
            parts = rel.split("/")
            if not rel.endswith(".parquet") or any(p.startswith(".") for p in parts):
                continue
            if len(parts) > 1 and parts[0].startswith(SET_PREFIX) and parts[0][len(SET_PREFIX):] in sets:
                continue  # another stage's attribute set
            found.append(path)
        found.sort()
    if not found:
        what = f"attribute set {attribute_set!r}" if attribute_set else "attribute shards (*.parquet)"
        raise FileNotFoundError(f"no {what} under {directory}")
    return fs, found


def _stale(fs: fsspec.AbstractFileSystem, root: str, manifest: Manifest) -> bool:
    """Whether a set's manifest says it was built from other annotate contents than the current."""
    built_from = manifest.info.get("built_from")
    return bool(built_from) and built_from != content_key(fs, root)


def attribute_set_dir(directory: str, name: str) -> str:
    """Where a stage writes its attribute set `name` inside an annotate output folder."""
    return f"{directory.rstrip('/')}/{SET_PREFIX}{name}"


def set_place(directory: str, name: str) -> tuple[str, fsspec.AbstractFileSystem, str]:
    """(folder, file system, root) of attribute set `name` of annotate folder `directory`, with
    what killed writers left there removed (never a live run's files): the first step of every
    stage that writes a set."""
    set_dir = attribute_set_dir(directory, name)
    fs, root = fsspec.core.url_to_fs(set_dir)
    root = root.rstrip("/")
    remove_stale_temps(fs, root)
    return set_dir, fs, root


def open_set(fs: fsspec.AbstractFileSystem, root: str, name: str, key: str, directory: str | None = None,
             built_from: str | None = None) -> Publication:
    """A new generation of attribute set `name` (at `root`, see `set_place`) for the run key
    `key`, recording which generation of the annotate folder `directory` it belongs to (or
    `built_from`, when the stage has that key at hand): a set built from other annotate shards
    is stale (`_stale`)."""
    if built_from is None:
        if directory is None:
            raise ValueError("open_set: give the annotate folder or its content key")
        afs, aroot = fsspec.core.url_to_fs(directory)
        built_from = content_key(afs, aroot.rstrip("/"))
    return Publication(fs, root, name, key, info={"built_from": built_from})


def attribute_sets(directory: str) -> list[str]:
    """Names of the attribute sets other stages added to `directory`: its `_<name>` folders,
    told from input folders that happen to start with '_' by structure: a folder holding
    annotate shards (listed in annotate's manifest) is not a set."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    manifest = read_manifest(fs, root)
    owned = {rel.split("/", 1)[0] for rel in manifest.files if "/" in rel} if manifest else set()
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1][len(SET_PREFIX):] for p in fs.ls(root, detail=False)
                   if p.rstrip("/").rsplit("/", 1)[-1].startswith(SET_PREFIX) and fs.isdir(p)
                   and p.rstrip("/").rsplit("/", 1)[-1] not in owned)
    stale = set(stale_attribute_sets(directory, names))
    for name in sorted(stale):  # a set made from an earlier annotate output would join stale flags
        log.warning("%s: attribute set %r was made before the documents were annotated again; it is left out "
                    "until you re-run the stage that made it", directory, name)
    return [n for n in names if n not in stale]


def stale_attribute_sets(directory: str, names: list[str] | None = None) -> list[str]:
    """The `_<name>` sets (of `names`, default all) whose manifest says they were built from
    other annotate contents than the folder's current ones."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    if names is None:
        names = [p.rstrip("/").rsplit("/", 1)[-1][len(SET_PREFIX):] for p in fs.ls(root, detail=False)
                 if p.rstrip("/").rsplit("/", 1)[-1].startswith(SET_PREFIX) and fs.isdir(p)]
    out = []
    for name in names:
        set_manifest = read_manifest(fs, f"{root}/{SET_PREFIX}{name}")
        if set_manifest is not None and _stale(fs, root, set_manifest):
            out.append(name)
    return sorted(out)


def read_shard_meta(fs: fsspec.AbstractFileSystem, path: str) -> dict:
    """The textsieve footer metadata of one shard ({} when absent)."""
    with fs.open(path, "rb") as fh:
        meta = pq.ParquetFile(fh).metadata.metadata or {}
    raw = meta.get(META_KEY)
    return json.loads(raw) if raw else {}


def source_documents(meta: dict, on_error: str = "skip") -> Iterator[Document]:
    """Re-read the documents of the source shard an annotate shard was made from (same reader
    options), e.g. to show texts or to materialize a selection. Rows match the shard's `row`."""
    from textsieve.io.paths import Shard
    from textsieve.io.readers import ReadOptions, ShardReader

    src = dict(meta["source_shard"])
    src["members"] = tuple(src.get("members") or ())
    options = dict(meta["read_options"], on_error=on_error)
    reader = ShardReader(Shard(**src), ReadOptions(**options))
    if meta.get("renamed_ids"):  # annotate renamed repeated ids (`io.ids`): the same renaming, so ids match
        from textsieve.io.ids import UniqueIds

        yield from UniqueIds(reader.shard, "suffix").documents(reader)
        return
    yield from reader


def without_conveniences(names: list[str]) -> list[str]:
    """Column names minus annotate's scalar conveniences (`ts_length`, `X__score` twins): the
    columns that carry distinct information."""
    present = set(names)
    return [n for n in names if n != LENGTH_COLUMN
            and not (n.endswith(SCORE_SUFFIX) and n[: -len(SCORE_SUFFIX)] in present)]
