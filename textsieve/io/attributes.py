"""Attribute sets on storage: where stages put their columns and how to read them back.

Layout of an annotate output folder `DIR` (the "attribute store"):
  DIR/docs/<input rel with .parquet suffix>  annotate's attribute shards (signals, MinHash bands)
  DIR/sets/<name>/<same rel>             attribute sets added later by other stages, e.g.
                                         `sets/dedup_fuzzy`, `sets/dedup_exact`, `sets/dsir_wiki`
  DIR/.textsieve/annotate.json           run summary
  DIR/.textsieve/manifest.json, DIR/sets/<name>/.textsieve/manifest.json   what each stage
                                         published (`io.publish`): the only record of which
                                         files are finished outputs
Why this layout: each of `DIR/docs` and `DIR/sets/<name>` is one table that pandas, pyarrow,
polars, DuckDB, Spark and Hugging Face `datasets` read with their defaults (bookkeeping sits in
hidden `.textsieve/` folders they skip, no data file name starts with `_` or `.`), and a
recursive glob over one of them (`DIR/docs/**/*.parquet`) never mixes two tables. (Before, sets
were `DIR/_<name>/` folders under the shards, and the JSON sidecars sat among them.) A folder an
older textsieve wrote is moved into this layout the first time it is opened
(`io.legacy_layout`).
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
from textsieve.io.legacy_layout import DOCS, SETS, migrate  # DIR/docs/<rel>, DIR/sets/<name>/<rel>
from textsieve.io.publish import (
    Manifest,
    Publication,
    PublishError,
    check_file,
    content_key,
    read_manifest,
    summary_of,
)
from textsieve.io.store_readme import STORE_README, STORE_README_TEXT

log = logging.getLogger("textsieve.attributes")

META_KEY = b"textsieve"
LENGTH_COLUMN = "ts_length"  # annotate: len(text) in code points (= end of a doc-level span)
SCORE_SUFFIX = "__score"  # annotate: plain scalar twin `<signal>__score` of each doc-level span column


def attribute_shards(directory: str, attribute_set: str | None = None) -> tuple[fsspec.AbstractFileSystem, list[str]]:
    """Finished shards of annotate's output (`attribute_set` None: `DIR/docs/...`) or of the
    set `DIR/sets/<name>/`, sorted.

    A folder a textsieve stage published is read through its manifest (`io.publish`): exactly
    the `.parquet` files listed there, each checked to be intact, so a killed or running stage's
    files are never read and names decide nothing. A folder without a manifest was written by
    hand or by another tool (no textsieve stage leaves final-named files unpublished): its
    `.parquet` files are listed (those under `docs/` when it has one), minus hidden names and,
    for annotate's output, the `sets/` folder."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    base = f"{root}/{SETS}/{attribute_set}" if attribute_set else root
    manifest = read_manifest(fs, root)  # an older textsieve's folder is moved into this layout first
    if attribute_set is not None:
        manifest = read_manifest(fs, base)
    if manifest is not None and attribute_set is not None and _stale(fs, root, manifest):
        raise PublishError(f"{base}: attribute set {attribute_set!r} was made from an earlier version of the annotate "
                           f"output in {directory} (documents were annotated again since); re-run the stage that "
                           "made it (dedup exact, dedup fuzzy or dsir fit)")
    if manifest is not None:
        found = [check_file(fs, base, manifest, rel) for rel in sorted(manifest.files) if rel.endswith(".parquet")]
    else:
        scan = f"{root}/{DOCS}" if attribute_set is None and fs.isdir(f"{root}/{DOCS}") else base
        found = []
        for path in fs.find(scan) if fs.exists(scan) else []:
            parts = path[len(scan) + 1:].split("/")
            if not parts[-1].endswith(".parquet") or any(p.startswith(".") for p in parts):
                continue
            if scan == root and attribute_set is None and len(parts) > 1 and parts[0] == SETS:
                continue  # the attribute sets of a folder without docs/
            found.append(path)
        found.sort()
    if not found:
        what = f"attribute set {attribute_set!r}" if attribute_set else "attribute shards (*.parquet)"
        raise FileNotFoundError(f"no {what} under {directory}")
    return fs, found


def add_store_readme(pub: Publication) -> None:
    """Publish `STORE_README` with an annotate-like folder's generation (annotate, the imports)."""
    pub.add_file(STORE_README, STORE_README_TEXT.encode("utf-8"), "store-readme")


def shard_rel(directory_root: str, path: str) -> str:
    """The rel name of an annotate shard at `path` under the annotate folder `directory_root`
    (`DIR/docs/sub/a.parquet` -> `sub/a.parquet`): the name its rows have in every attribute
    set (`DIR/sets/<name>/sub/a.parquet`)."""
    rel = path[len(directory_root.rstrip("/")) + 1:]
    return rel[len(DOCS) + 1:] if rel.startswith(DOCS + "/") else rel


def set_files(directory: str, name: str) -> tuple[fsspec.AbstractFileSystem, dict[str, str]]:
    """(file system, {shard rel: path}) of attribute set `name`'s finished files
    (`attribute_shards`), keyed like `shard_rel` names annotate's shards."""
    fs, paths = attribute_shards(directory, name)
    set_root = fsspec.core.url_to_fs(attribute_set_dir(directory, name))[1].rstrip("/")
    return fs, {p[len(set_root) + 1:]: p for p in paths}


def _stale(fs: fsspec.AbstractFileSystem, root: str, manifest: Manifest) -> bool:
    """Whether a set's manifest says it was built from other annotate contents than the current."""
    built_from = manifest.info.get("built_from")
    return bool(built_from) and built_from != content_key(fs, root)


def attribute_set_dir(directory: str, name: str) -> str:
    """Where a stage writes its attribute set `name` inside an annotate output folder
    (`DIR/sets/<name>`). An older textsieve's folder is moved into this layout first, so the
    set it made is found there."""
    fs, root = fsspec.core.url_to_fs(directory)
    migrate(fs, root.rstrip("/"))
    return f"{directory.rstrip('/')}/{SETS}/{name}"


def set_summary(directory: str, name: str) -> dict | None:
    """The summary of attribute set `name` (`sets/<name>/.textsieve/summary.json`), checked
    against the set's manifest (`io.publish.summary_of`); None when there is none."""
    return summary_of(attribute_set_dir(directory, name))


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


def _set_names(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """The folder names under `root/sets/` (an older layout is moved into this one first)."""
    migrate(fs, root)
    sets = f"{root}/{SETS}"
    if not fs.isdir(sets):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(sets, detail=False)
                  if fs.isdir(p) and not p.rstrip("/").rsplit("/", 1)[-1].startswith("."))


def attribute_sets(directory: str) -> list[str]:
    """Names of the attribute sets other stages added to `directory` (its `sets/<name>`
    folders), less those made from an earlier annotate output (logged)."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    names = _set_names(fs, root)
    stale = set(stale_attribute_sets(directory, names))
    for name in sorted(stale):  # a set made from an earlier annotate output would join stale flags
        log.warning("%s: attribute set %r was made before the documents were annotated again; it is left out "
                    "until you re-run the stage that made it", directory, name)
    return [n for n in names if n not in stale]


def stale_attribute_sets(directory: str, names: list[str] | None = None) -> list[str]:
    """The sets (of `names`, default all) whose manifest says they were built from other
    annotate contents than the folder's current ones."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    if names is None:
        names = _set_names(fs, root)
    out = []
    for name in names:
        set_manifest = read_manifest(fs, f"{root}/{SETS}/{name}")
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
