"""The `import rpv2` stage: RedPajama-V2's released files -> ordinary textsieve attribute shards.

Why: RPv2 published signals, MinHash bands and duplicate lists for ~100B documents so that
nobody recomputes them. This stage turns one release shard key (`interop.rpv2_release`) into
one attribute shard `OUT/{snapshot}/{shard}/{lang}_{bucket}.parquet` whose rows point into
`documents/` (`shard` = the documents file's rel, `row` = its line), so every later stage
works unchanged: recipes and the funnel on the released signals (span columns + `X__score`
twins, as annotate writes them), `dedup fuzzy` on the released bands (`signature_sim*`), and
`select` materialising `raw_content` (the footer's `source_shard` and `read_options`). Ids and
`id_int` are the released ones, so cluster ids equal RPv2's. The released duplicate lists
become the attribute set `sets/dedup_exact` (`dup_exact_keep`), so recipes written for
`dedup exact` work too. A shard whose files are partly missing (the `tail` bucket has no
signals) is imported with what there is, with a warning and counts in `import.json` (written
as `annotate.json`, the file that marks an annotate folder and records its input roots).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.local import default_workers, ordered_map
from textsieve.exec.progress import Progress
from textsieve.export.rpv2_layout import STAGE as EXPORT
from textsieve.interop import rpv2_release as rel_
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import DOCS, META_KEY, SCORE_SUFFIX, add_store_readme, attribute_set_dir
from textsieve.io.overlap import check_apart
from textsieve.io.paths import Shard
from textsieve.io.publish import (
    ANNOTATE_JSON,
    BOOK,
    FOLDER_SUMMARY,
    STAGING_PREFIX,
    Publication,
    PublishError,
    SummaryStyle,
    check_file,
    content_key,
    read_manifest,
)
from textsieve.io.readers import ReadOptions
from textsieve.io.safe_paths import data_rel
from textsieve.io.source_roots import absolute_root
from textsieve.options import option, progress_option

log = logging.getLogger("textsieve.import_rpv2")

SUMMARY = ANNOTATE_JSON
EXACT_SET = "dedup_exact"
EXACT_COLUMNS = ("dup_exact_group", "dup_exact_size", "dup_exact_keep")
READ_OPTIONS = ReadOptions(text_field="raw_content", id_field="id", lang_field="language", url_field="url")


class ImportError_(TextsieveError, ValueError):
    """A user error of `import rpv2` (one line, no traceback)."""


@dataclass
class ImportRpv2Config:
    """Everything `textsieve import rpv2` takes (CLI, YAML and `ts.import_rpv2`)."""

    root: str = option(help="the release root holding documents/, quality_signals/, minhash/, duplicates/ "
                            "(local folder or fsspec URL)", positional=True, metavar="ROOT")
    output: str = option(help="folder (or URL) for the attribute shards", short="-o", metavar="ATTRS")
    snapshots: list[str] = option(help="only this snapshot, e.g. 2023-06 (repeatable)", factory=list,
                                  renamed_from=("--snapshot",), repeat=True, metavar="SNAPSHOT")
    langs: list[str] = option(help="only this language: en, de, fr, es, it (repeatable)", factory=list,
                              renamed_from=("--lang",), repeat=True, metavar="LANG")
    buckets: list[str] = option(help="only this perplexity bucket: head, middle, tail (repeatable)",
                                factory=list, renamed_from=("--bucket",), repeat=True, metavar="BUCKET")
    workers: int | None = option(None, help="processes (default: all cores, at most one per shard)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace an output folder another stage published, and re-import "
                                         "shards that are already done")
    incomplete: bool = option(False, help="import a release folder that an interrupted `export rpv2` left "
                                          "unfinished, as far as it goes (refused otherwise)")


@result_display
@dataclass
class ImportRpv2Result:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    documents: int = 0
    without_signals: int = 0  # documents with no quality_signals record (e.g. the tail bucket)
    without_minhash: int = 0  # documents with no row in a minhash file
    duplicates: int = 0  # documents listed in the released duplicates (dup_exact_keep false)
    missing_files: dict[str, list[str]] = field(default_factory=dict)  # component -> shard keys lacking it
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class _Task:
    root: str  # fsspec URL of the release root
    shard: rel_.ReleaseShard
    signals: tuple[str, ...]  # the span columns every shard has, in order
    main_path: str  # staged attribute shard (URL)
    exact_path: str  # staged sets/dedup_exact shard (URL)
    fingerprint: str


def _url(fs: fsspec.AbstractFileSystem, path: str) -> str:
    """What another process opens: a plain path for local files (as `io.paths` keeps them), else a URL."""
    if _local(fs) or "://" in path:
        return path
    return fs.unstrip_protocol(path)


def _local(fs: fsspec.AbstractFileSystem) -> bool:
    return (fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]) in ("file", "local")


def import_schema(signals: tuple[str, ...]) -> pa.Schema:
    """The attribute shard schema: keys, ts_length, id_int, a span column per signal, presence
    flags, the CCNet string fields, the bands, then the scalar twins of the doc-level signals."""
    fields = [pa.field("id", pa.string(), nullable=False), pa.field("shard", pa.string()),
              pa.field("row", pa.int64()), pa.field("ts_length", pa.int64()), pa.field("id_int", pa.uint64())]
    fields += [pa.field(n, rel_.signal_type(n)) for n in signals]
    fields += [pa.field("rpv2_signals", pa.bool_()), pa.field("rpv2_minhash", pa.bool_())]
    fields += [pa.field(f"ccnet_{f}", pa.string()) for f in rel_.DOC_STRINGS]
    fields += [pa.field(s, pa.list_(pa.binary())) for s in rel_.SIGNATURES]
    fields += [pa.field(n + SCORE_SUFFIX, pa.int64() if n in rel_.INT_SIGNALS else pa.float64())
               for n in signals if not n.startswith("rps_lines_")]
    return pa.schema(fields)


def _ccnet_spans(docs: pa.Table, name: str) -> pa.Array:
    """A ccnet_* span computed from the documents record as RPv2's worker does: [0, L, float(v)]."""
    src = docs.column(rel_.CCNET_SOURCE[name]).combine_chunks()
    if name == "ccnet_bucket":
        score = pa.array([rel_.BUCKETS.get(b) if b is not None else None for b in src.to_pylist()], pa.float64())
    else:
        score = src.cast(pa.float64())
    n = docs.num_rows
    length = docs.column("ts_length").combine_chunks()
    struct = pa.StructArray.from_arrays([pa.array(np.zeros(n, np.int64)), length, score],
                                        fields=list(rel_.signal_type(name).value_type))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), struct, type=rel_.signal_type(name))


def _doc_score(spans: pa.Array, typ: pa.DataType) -> pa.Array:
    """The scalar twin: the score of each row's first span (null for none)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    first = pc.list_element(pc.if_else(pc.greater(pc.list_value_length(spans), 0), spans, pa.nulls(len(spans),
                                                                                                   spans.type)), 0)
    return pc.struct_field(first, "score").cast(typ)


def import_shard(task: _Task) -> dict[str, Any]:
    """Read one shard key's files and write its attribute shard and `sets/dedup_exact` shard."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    fs, root = fsspec.core.url_to_fs(task.root)
    sh = task.shard
    docs = rel_.read_documents(fs, sh.path(root, "documents")) if "documents" in sh.present else None
    sig = rel_.read_signals(fs, sh.path(root, "quality_signals")) if "quality_signals" in sh.present else None
    mh = rel_.read_minhash(fs, sh.path(root, "minhash")) if "minhash" in sh.present else None
    dups = rel_.read_duplicates(fs, sh.path(root, "duplicates")) if "duplicates" in sh.present else set()
    sig_idx = rel_.line_index(sig.ids, sh.key, sh.path(root, "quality_signals")) if sig is not None else None
    mh_idx = rel_.line_index(mh.column("id").combine_chunks(), sh.key, sh.path(root, "minhash")) \
        if mh is not None else None
    if docs is not None:
        n = docs.num_rows
    else:  # no documents file: rows are the indices the other files name
        n = int(max([(i.max() + 1) if i is not None and len(i) else 0 for i in (sig_idx, mh_idx)]))
    rows = np.arange(n, dtype=np.int64)
    default_ids = [f"{sh.rel}/{r}" for r in range(n)]
    sig_pos = rel_.positions(sig_idx, n) if sig_idx is not None else None
    mh_pos = rel_.positions(mh_idx, n) if mh_idx is not None else None
    has_sig = pc.is_valid(sig_pos) if sig_pos is not None else pa.array(np.zeros(n, bool))
    has_mh = pc.is_valid(mh_pos) if mh_pos is not None else pa.array(np.zeros(n, bool))
    ids = pa.array(default_ids, pa.string())
    if sig is not None and sig_pos is not None:
        ids = pc.coalesce(pc.take(sig.ids, sig_pos), ids)
    id_int_arr = pc.take(sig.id_ints, sig_pos) if sig is not None and sig_pos is not None else pa.nulls(n, pa.uint64())
    if id_int_arr.null_count:  # documents without a released record: RPv2's rule on their ids
        lacking = np.nonzero(~np.asarray(id_int_arr.is_valid()))[0]
        own = np.zeros(n, dtype=np.uint64)
        own[lacking] = [rel_.id_int(default_ids[i]) for i in lacking]
        id_int_arr = pc.coalesce(id_int_arr, pa.array(own, pa.uint64()))
    if docs is not None:
        length = docs.column("ts_length").combine_chunks()
    else:
        length = pa.nulls(n, pa.int64())
        if sig is not None and sig_pos is not None and sig.order:
            length = pc.struct_field(pc.list_element(pc.take(sig.spans[sig.order[0]], sig_pos), 0), "end")
    schema = import_schema(task.signals)
    cols: dict[str, pa.Array] = {"id": ids, "shard": pa.array([sh.rel] * n, pa.string()), "row": pa.array(rows),
                                 "ts_length": length, "id_int": id_int_arr}
    for name in task.signals:
        typ = rel_.signal_type(name)
        arr = pc.take(sig.spans[name], sig_pos) if sig is not None and sig_pos is not None and name in sig.spans \
            else pa.nulls(n, typ)
        if name in rel_.CCNET_SOURCE and docs is not None:  # documents without a record still get CCNet's
            arr = pc.if_else(has_sig, arr, _ccnet_spans(docs, name)) if sig is not None else _ccnet_spans(docs, name)
        cols[name] = arr.cast(typ)
    cols["rpv2_signals"], cols["rpv2_minhash"] = has_sig, has_mh
    meta_cols = {"url": "url", "source_domain": "source_domain", "cc_segment": "cc_segment", "language": "language"}
    for f in rel_.DOC_STRINGS:
        arr = docs.column(f).combine_chunks() if docs is not None else pa.nulls(n, pa.string())
        if sig is not None and sig_pos is not None and f in meta_cols and f in sig.metadata:
            arr = pc.coalesce(pc.take(sig.metadata[f], sig_pos), arr)
        cols[f"ccnet_{f}"] = arr
    for s in rel_.SIGNATURES:
        cols[s] = pc.take(mh.column(s).combine_chunks(), mh_pos).cast(pa.list_(pa.binary())) \
            if mh is not None and mh_pos is not None else pa.nulls(n, pa.list_(pa.binary()))
    for f in schema:
        if f.name.endswith(SCORE_SUFFIX):
            cols[f.name] = _doc_score(cols[f.name[: -len(SCORE_SUFFIX)]], f.type)
    table = pa.table([cols[f.name] for f in schema], schema=schema)
    src = Shard(_url(fs, sh.path(root, "documents")), sh.rel, "jsonl",
                int(fs.size(sh.path(root, "documents"))) if docs is not None else 0)
    meta = {"version": __version__, "stage": "import_rpv2", "fingerprint": task.fingerprint,
            "source": src.path, "source_shard": asdict(src), "read_options": asdict(READ_OPTIONS),
            "shard": sh.rel, "documents": n, "skipped_records": 0, "skipped": [],
            "signals": [s for s in task.signals if s.startswith("rps_")], "minhash": ["rpv2"],
            "lang": None, "lang_field": "language",
            "rpv2": {"key": sh.key, "present": sorted(sh.present),
                     "signal_order": sig.order if sig is not None else None,
                     "metadata_order": sig.metadata_order if sig is not None else None}}
    _write(task.main_path, table, meta)
    dup_mask = pa.array([i in dups for i in ids.to_pylist()], pa.bool_()) if dups else pa.array(np.zeros(n, bool))
    exact = pa.table([ids, cols["shard"], cols["row"], pa.nulls(n, pa.uint64()), pa.nulls(n, pa.int64()),
                      pc.invert(dup_mask)], names=["id", "shard", "row", *EXACT_COLUMNS])
    _write(task.exact_path, exact, {"stage": EXACT_SET, "version": __version__, "mode": "rpv2-release",
                                    "set": EXACT_SET, "columns": list(EXACT_COLUMNS)})
    return {"documents": n, "without_signals": n - int(pc.sum(has_sig.cast(pa.int64())).as_py() or 0),
            "without_minhash": n - int(pc.sum(has_mh.cast(pa.int64())).as_py() or 0),
            "duplicates": int(pc.sum(dup_mask.cast(pa.int64())).as_py() or 0)}


def _write(url: str, table: pa.Table, meta: dict) -> None:
    fs, path = fsspec.core.url_to_fs(url)
    fs.makedirs(path.rpartition("/")[0], exist_ok=True)
    writer = AtomicParquetWriter(fs, path, table.schema)
    try:
        writer.write(table)
        writer.add_metadata({META_KEY: json.dumps(meta).encode()})
    except BaseException as exc:
        writer.abort(exc)
        raise
    writer.close()


def _signal_union(fs: fsspec.AbstractFileSystem, root: str, shards: list[rel_.ReleaseShard]) -> tuple[str, ...]:
    """The span columns of every output shard: ccnet_* and each released signal any shard has,
    in the released order (read from each signals file's first line only)."""
    names = list(rel_.CCNET_SIGNALS)
    for sh in shards:
        if "quality_signals" not in sh.present:
            continue
        first = rel_._first_record(fs, sh.path(root, "quality_signals"))
        for name in (first or {}).get("quality_signals") or ():
            if name not in names:
                names.append(name)
    return tuple(names)


def _identity(fs: fsspec.AbstractFileSystem, root: str, sh: rel_.ReleaseShard) -> str:
    parts = []
    for comp in sorted(sh.present):
        info = fs.info(sh.path(root, comp))
        parts.append(f"{comp}:{info.get('size')}:{info.get('mtime', info.get('created', info.get('ETag')))}")
    return "|".join(parts)


def _check_complete(location: str, allow: bool) -> None:
    """Refuse a release folder that `export rpv2` left unfinished (it publishes as one unit: a
    staging folder and no manifest of its own is a killed export; a published file missing or
    changed is a damaged one), naming what is missing; `allow` imports what is there."""
    fs, root = fsspec.core.url_to_fs(location)
    root = root.rstrip("/")
    if not fs.isdir(root):
        return
    book = f"{root}/{BOOK}"
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(book, detail=False)] if fs.isdir(book) else []
    staging = sorted(f"{BOOK}/{n}" for n in names if n.startswith(f"{STAGING_PREFIX}{EXPORT}-"))
    manifest = read_manifest(fs, root)
    problems = []
    if manifest is not None and manifest.stage == EXPORT:
        damaged = []
        for rel in sorted(manifest.files):
            try:
                check_file(fs, root, manifest, rel)
            except PublishError:
                damaged.append(rel)
        if damaged:
            problems.append(f"{len(damaged)} file(s) the export published are missing or changed (first: "
                            f"{damaged[0]})")
    elif staging:
        problems.append(f"an interrupted `export rpv2` left {root}/{staging[0]} and never published its files")
    if problems and not allow:
        raise ImportError_(f"import rpv2: {root} is not a complete release: {'; '.join(problems)}. Run the export "
                           "again, or pass --incomplete to import what is there")
    for problem in problems:
        log.warning("import rpv2: %s: %s (--incomplete)", root, problem)


def run_import_rpv2(cfg: ImportRpv2Config) -> ImportRpv2Result:
    """Import the release shards under `cfg.root` into `cfg.output` (see the module doc)."""
    start = time.perf_counter()
    bad = [b for b in cfg.buckets if b not in rel_.BUCKETS]
    if bad:
        raise ImportError_(f"--buckets {bad[0]!r}: RPv2's buckets are head, middle and tail")
    if not cfg.output:
        raise ImportError_("import rpv2: --output is required")
    check_apart("import rpv2", cfg.output, [cfg.root])
    _check_complete(cfg.root, cfg.incomplete)
    fs, root, shards = rel_.list_release(cfg.root, cfg.snapshots, cfg.langs, cfg.buckets)
    if not shards:
        raise ImportError_(f"{cfg.root}: no release shard matches --snapshots/--langs/--buckets "
                           f"({', '.join(cfg.snapshots + cfg.langs + cfg.buckets)})")
    root_url = _url(fs, root)
    ofs, out = fsspec.core.url_to_fs(cfg.output)
    out = out.rstrip("/")
    signals = _signal_union(fs, root, shards)
    settings = hashlib.sha256(json.dumps({"version": __version__, "signals": signals}).encode()).hexdigest()[:16]
    fps = {sh.key: hashlib.sha256(f"{settings}|{_identity(fs, root, sh)}".encode()).hexdigest()[:16] for sh in shards}
    key = hashlib.sha256(json.dumps(sorted(fps.items())).encode()).hexdigest()[:16]
    pub = Publication(ofs, out, "import_rpv2", key, info={"fingerprint": settings, "settings": settings},
                      overwrite=cfg.overwrite)
    if pub.previous is not None and pub.previous.stage != "import_rpv2" and not cfg.overwrite:
        pub.abandon()
        raise ImportError_(f"{cfg.output} holds the output of {pub.previous.stage}; choose another --output or "
                           "use --overwrite to replace it")
    exact_dir = attribute_set_dir(cfg.output, EXACT_SET)
    efs, eroot = fsspec.core.url_to_fs(exact_dir)
    epub = Publication(efs, eroot, EXACT_SET, key, info={})
    result = ImportRpv2Result(output=cfg.output)
    for comp in ("documents", "quality_signals", "minhash", "duplicates"):
        lacking = [sh.key for sh in shards if comp not in sh.present]
        if lacking:
            result.missing_files[comp] = lacking
            why = {"documents": "; its rows point at a file that is not there",
                   "duplicates": "; none of its documents is taken as a listed duplicate"}.get(
                comp, " (RPv2's tail bucket has documents only)" if all(k.endswith("_tail") for k in lacking)
                else "; its documents get null values there")
            log.warning("%d shard(s) have no %s file, e.g. %s/%s%s%s", len(lacking), comp, comp, lacking[0],
                        rel_.COMPONENTS[comp], why)
    tasks = []
    for sh in shards:
        rel = data_rel(sh.key) + ".parquet"  # in the exact set; `docs/` + rel among the shards
        if not cfg.overwrite and pub.unchanged(f"{DOCS}/{rel}", fps[sh.key]) and epub.unchanged(rel, fps[sh.key]):
            pub.keep(f"{DOCS}/{rel}")
            epub.keep(rel)
            result.shards_skipped.append(sh.key)
            continue
        tasks.append(_Task(root_url, sh, signals, _url(ofs, pub.staged(f"{DOCS}/{rel}")), _url(efs, epub.staged(rel)),
                           fps[sh.key]))
    local = _local(fs) and _local(ofs)
    workers = min(cfg.workers or default_workers(), max(1, len(tasks))) if local else 1
    progress = Progress("import rpv2", total_bytes=len(tasks), enabled=cfg.progress)
    try:
        for i, (task, stats) in enumerate(ordered_map(import_shard, tasks, workers=workers), start=1):
            rel = data_rel(task.shard.key) + ".parquet"
            pub.add(f"{DOCS}/{rel}", task.fingerprint)
            epub.add(rel, task.fingerprint)
            result.shards_written.append(task.shard.key)
            result.documents += stats["documents"]
            result.without_signals += stats["without_signals"]
            result.without_minhash += stats["without_minhash"]
            result.duplicates += stats["duplicates"]
            progress.update(docs=stats["documents"], bytes_done=i, shard=task.shard.key)
    except BaseException:
        pub.abandon()
        epub.abandon()
        raise
    finally:
        progress.close()
    if result.without_signals:
        log.warning("%d document(s) have no quality_signals record (their rps_* signals are null)",
                    result.without_signals)
    result.seconds = time.perf_counter() - start
    summary = {"stage": "import_rpv2", "version": __version__, "fingerprint": settings, "config": asdict(cfg),
               "input_roots": [absolute_root(f"{cfg.root.rstrip('/')}/documents")], "result": asdict(result)}
    add_store_readme(pub)
    pub.commit_summary(summary, name=SUMMARY, style=FOLDER_SUMMARY)
    epub.info["built_from"] = content_key(ofs, out)  # the set belongs to this generation of the shards
    epub.add_summary({"stage": EXACT_SET, "version": __version__, "mode": "rpv2-release", "set": EXACT_SET,
                      "columns": list(EXACT_COLUMNS), "n_docs": result.documents, "n_removed": result.duplicates,
                      "n_shards": len(shards)}, key, style=SummaryStyle(newline=False))
    epub.commit()
    return result


__all__ = ["ImportRpv2Config", "ImportRpv2Result", "import_schema", "run_import_rpv2"]
