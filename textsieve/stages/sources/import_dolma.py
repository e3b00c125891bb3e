"""The `import dolma` stage: a Dolma folder's attributes -> ordinary textsieve attribute shards.

Why: Dolma's taggers (language id, toxicity, PII, length, ...) write their results as
`ROOT/attributes/<name>/<rel>` beside `ROOT/documents/<rel>` (`textsieve.interop.dolma`). This
stage turns every documents file into one attribute shard `OUT/<rel>.parquet` whose rows point
into it (`shard` = the documents file's rel, `row` = its line), with `ts_length` and one span
column per Dolma attribute key (`list<struct<start, end, score>>`, scores as doubles) plus the
scalar twin `KEY__score` where every document has at most one span. So recipes, the funnel,
`attributes()` and `select` (which materialises the Dolma documents, every field kept) work on
Dolma's attributes unchanged, and beside textsieve's own signals when both are imported into
recipes' reach. Attribute lines are checked against the documents' ids, line by line, as
Dolma's mixer pairs them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field

import fsspec
import pyarrow as pa

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.exec.progress import Progress
from textsieve.interop import dolma as dolma_
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import DOCS, META_KEY, SCORE_SUFFIX, add_store_readme
from textsieve.io.overlap import check_apart
from textsieve.io.paths import expand_inputs
from textsieve.io.publish import ANNOTATE_JSON, FOLDER_SUMMARY
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.io.safe_paths import data_rel
from textsieve.io.source_roots import absolute_root
from textsieve.options import option, progress_option

SUMMARY = ANNOTATE_JSON  # marks an annotate-like folder and records its input roots (for select)


@dataclass
class ImportDolmaConfig:
    """Everything `textsieve import dolma` takes (CLI, YAML and `ts.import_dolma`)."""

    root: str = option(help="the Dolma root holding documents/ and attributes/<name>/ (local folder or fsspec URL)",
                       positional=True, metavar="ROOT")
    output: str = option(help="folder (or URL) for the attribute shards", short="-o", metavar="ATTRS")
    attributes: list[str] = option(help="only this attribute folder of ROOT/attributes/ (repeatable; default all)",
                                   factory=list, renamed_from=("--attribute",), repeat=True, metavar="NAME")
    text_field: str = option("text", help="documents' text field", metavar="FIELD")
    id_field: str = option("id", help="documents' id field", metavar="FIELD")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace an output folder another stage published, and re-import "
                                         "shards that are already done")


@result_display
@dataclass
class ImportDolmaResult:
    output: str
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    documents: int = 0
    columns: list[str] = field(default_factory=list)  # the Dolma attribute keys imported
    missing_files: dict[str, list[str]] = field(default_factory=dict)  # attribute name -> shard rels lacking it
    seconds: float = 0.0


def _twin(spans: pa.Array) -> pa.Array:
    """Each row's single span score (null for none)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    first = pc.list_element(pc.if_else(pc.greater(pc.list_value_length(spans), 0), spans,
                                       pa.nulls(len(spans), spans.type)), 0)
    return pc.struct_field(first, "score")


def _identity(fs: fsspec.AbstractFileSystem, paths: list[str]) -> str:
    parts = []
    for p in paths:
        info = fs.info(p)
        parts.append(f"{p}:{info.get('size')}:{info.get('mtime', info.get('created', info.get('ETag')))}")
    return "|".join(parts)


def run_import_dolma(cfg: ImportDolmaConfig) -> ImportDolmaResult:
    """Import the Dolma attributes under `cfg.root` into `cfg.output` (see the module doc)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command

    from textsieve.io.publish import Publication

    start = time.perf_counter()
    if not cfg.output:
        raise dolma_.DolmaError("import dolma: --output is required")
    root = cfg.root.rstrip("/")
    check_apart("import dolma", cfg.output, [root])
    fs, base = fsspec.core.url_to_fs(root)
    docs_dir = f"{root}/{dolma_.DOCUMENTS}"
    if not fs.isdir(f"{base}/{dolma_.DOCUMENTS}"):
        raise dolma_.DolmaError(f"{root}: no {dolma_.DOCUMENTS}/ folder; a Dolma root holds documents/ and "
                                "attributes/<name>/")
    present = dolma_.attribute_names(root)
    names = cfg.attributes or present
    unknown = [n for n in names if n not in present]
    if unknown or not names:
        raise dolma_.DolmaError(f"{root}/{dolma_.ATTRIBUTES}/: no attribute folder {unknown[0] if unknown else ''!r}"
                                f" (present: {', '.join(present) or 'none'})")
    shards = expand_inputs([docs_dir])
    opts = ReadOptions(text_field=cfg.text_field, id_field=cfg.id_field)
    ofs, out = fsspec.core.url_to_fs(cfg.output)
    out = out.rstrip("/")
    settings = hashlib.sha256(json.dumps({"version": __version__, "names": names, "read": asdict(opts)}).encode()
                              ).hexdigest()[:16]
    attr_paths = {sh.rel: {n: f"{base}/{dolma_.ATTRIBUTES}/{n}/{sh.rel}" for n in names} for sh in shards}
    fps = {}
    for sh in shards:
        here = [p for p in attr_paths[sh.rel].values() if fs.exists(p)]
        fps[sh.rel] = hashlib.sha256(f"{settings}|{_identity(fs, [sh.path.split('://')[-1], *here])}".encode()
                                     ).hexdigest()[:16]
    key = hashlib.sha256(json.dumps(sorted(fps.items())).encode()).hexdigest()[:16]
    pub = Publication(ofs, out, "import_dolma", key, info={"fingerprint": settings, "settings": settings},
                      overwrite=cfg.overwrite)
    if pub.previous is not None and pub.previous.stage != "import_dolma" and not cfg.overwrite:
        pub.abandon()
        raise dolma_.DolmaError(f"{cfg.output} holds the output of {pub.previous.stage}; choose another --output "
                                "or use --overwrite to replace it")
    result = ImportDolmaResult(output=cfg.output)
    keys: list[str] = []
    progress = Progress("import dolma", total_bytes=sum(sh.size for sh in shards), enabled=cfg.progress)
    try:
        for sh in shards:
            rel = f"{DOCS}/{data_rel(sh.rel.rsplit('.json', 1)[0])}.parquet"
            if not cfg.overwrite and pub.unchanged(rel, fps[sh.rel]):
                pub.keep(rel)
                result.shards_skipped.append(sh.rel)
                continue
            docs = list(ShardReader(sh, opts))
            ids = [d.id for d in docs]
            cols: dict[str, pa.Array] = {
                "id": pa.array(ids, pa.string()), "shard": pa.array([sh.rel] * len(docs), pa.string()),
                "row": pa.array([d.row for d in docs], pa.int64()),
                "ts_length": pa.array([len(d.text) for d in docs], pa.int64())}
            for name, path in attr_paths[sh.rel].items():
                if not fs.exists(path):
                    result.missing_files.setdefault(name, []).append(sh.rel)
                    continue
                for k, values in dolma_.read_attribute_file(fs, path, ids).items():
                    cols[k] = dolma_.span_array(values, f"{path} key {k!r}")
                    if k not in keys:
                        keys.append(k)
            for k in keys:  # a key another shard has: null here
                cols.setdefault(k, pa.nulls(len(docs), dolma_.SPAN_TYPE))
            for k in keys:
                lens = pc.list_value_length(cols[k])
                if (pc.max(lens).as_py() or 0) <= 1:
                    cols[k + SCORE_SUFFIX] = _twin(cols[k])
            table = pa.table(cols)
            meta = {"version": __version__, "stage": "import_dolma", "fingerprint": fps[sh.rel], "source": sh.path,
                    "source_shard": asdict(sh), "read_options": asdict(opts), "shard": sh.rel,
                    "documents": len(docs), "skipped_records": 0, "skipped": [], "signals": [], "minhash": [],
                    "lang": None, "dolma": {"attributes": names}}
            staged = pub.staged(rel)
            ofs.makedirs(staged.rpartition("/")[0], exist_ok=True)
            writer = AtomicParquetWriter(ofs, staged, table.schema)
            try:
                writer.write(table)
                writer.add_metadata({META_KEY: json.dumps(meta).encode()})
            except BaseException as exc:
                writer.abort(exc)
                raise
            writer.close()
            pub.add(rel, fps[sh.rel])
            result.shards_written.append(sh.rel)
            result.documents += len(docs)
            progress.update(docs=len(docs), bytes_done=sh.size, shard=sh.rel)
    except BaseException:
        pub.abandon()
        raise
    finally:
        progress.close()
    result.columns = keys
    result.seconds = time.perf_counter() - start
    summary = {"stage": "import_dolma", "version": __version__, "fingerprint": settings, "config": asdict(cfg),
               "input_roots": [absolute_root(docs_dir)], "result": asdict(result)}
    add_store_readme(pub)
    pub.commit_summary(summary, name=SUMMARY, style=FOLDER_SUMMARY)
    return result


__all__ = ["ImportDolmaConfig", "ImportDolmaResult", "run_import_dolma"]
