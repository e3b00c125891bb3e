"""Dolma's layout, read and written: `documents/` and `attributes/<name>/` beside them.

Dolma (AI2's toolkit) keeps documents as JSON Lines under `ROOT/documents/<rel>` (records with
`id`, `text`, `source`, ...) and each tagger run's output as a file at the *same* rel under
`ROOT/attributes/<name>/<rel>`: one line per document line, in the same order, each
`{"id", "attributes": {"<name>__<tagger>__<attr>": [[start, end, score], ...]}}`. Its mixer
finds a document's attributes by that path rule and line order and filters on them with
JSONPath or jq expressions.

Why this module: textsieve's attributes (span columns keep RPv2's [start, end, score] lists, the
rest are scalars) map onto Dolma's spans one to one, so

- `export_attributes` writes an annotate folder's attributes (and its attribute sets:
  `dup_exact_keep`, cluster ids, DSIR weights) as `attributes/<name>/...`, keys
  `<name>__<column>`: span columns as they are, a scalar `v` as one document span
  `[[0, ts_length, v]]`. When the documents already lie at `ROOT/documents/<rel>` only the
  attributes are written (each file then needs every line of its documents file: a shard
  annotate skipped records of is refused); otherwise the documents are written there too
  (`documents="auto"`), as Dolma records with the text and the source record's other fields;
- `read_attribute_file` / `attribute_table` read Dolma attribute files back as Arrow span
  columns (`list<struct<start, end, score>>`, scores as doubles), checked line by line against
  the documents' ids, for `import dolma` (`textsieve.stages.sources.import_dolma`).
"""

from __future__ import annotations

import json
import math
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.io.atomic import atomic_open

DOCUMENTS = "documents"
ATTRIBUTES = "attributes"
SPAN_TYPE = pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64())]))
DOC_SUFFIXES = (".json.gz", ".jsonl.gz", ".json.zst", ".jsonl.zst", ".json", ".jsonl", ".json.zstd",
                ".jsonl.zstd")
DOCUMENTS_MODES = ("auto", "always", "never")


class DolmaError(TextsieveError, ValueError):
    """A Dolma folder or export that cannot be done as asked; one line."""


# ---------------------------------------------------------------- reading

def open_lines(fs: fsspec.AbstractFileSystem, path: str) -> Iterator[bytes]:
    """The lines of a (gzip or zstd, by suffix) JSON Lines file, as Dolma reads them."""
    with fs.open(path, "rb", compression="infer") as fh:
        for line in fh:
            if line.strip():
                yield line


def read_attribute_file(fs: fsspec.AbstractFileSystem, path: str, ids: Sequence[str]) -> dict[str, list[Any]]:
    """{attribute key: per-document span lists (None where a line lacks the key)} of one Dolma
    attribute file, whose lines must pair with `ids` (its documents file's ids, in order)."""
    values: dict[str, list[Any]] = {}
    n = 0
    for n, line in enumerate(open_lines(fs, path), start=1):
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise DolmaError(f"{path}:{n}: not a JSON record ({exc})") from None
        if n > len(ids):
            raise DolmaError(f"{path}: has more lines than its documents file ({len(ids)} documents)")
        if str(rec.get("id")) != ids[n - 1]:
            raise DolmaError(f"{path}:{n}: id {rec.get('id')!r} but line {n} of the documents file is {ids[n - 1]!r}; "
                             "Dolma pairs attribute lines with document lines, in order")
        for key, spans in (rec.get("attributes") or {}).items():
            col = values.get(key)
            if col is None:
                col = values[key] = [None] * len(ids)
            col[n - 1] = spans
    if n != len(ids):
        raise DolmaError(f"{path}: {n} lines for {len(ids)} documents; Dolma needs one attribute line per document")
    return values


def span_array(values: list[Any], where: str) -> pa.Array:
    """Dolma span lists as a `list<struct<start, end, score>>` array (bool and int scores become
    doubles; a value that is not a list of [start, end, score] is refused)."""
    out: list[list[dict[str, Any]] | None] = []
    for i, spans in enumerate(values):
        if spans is None:
            out.append(None)
            continue
        try:
            out.append([{"start": int(s[0]), "end": int(s[1]),
                         "score": None if s[2] is None else float(s[2])} for s in spans])
        except (TypeError, ValueError, IndexError):
            raise DolmaError(f"{where}: document {i} has {json.dumps(spans)[:80]}, not a list of "
                             "[start, end, score] spans") from None
    return pa.array(out, SPAN_TYPE)


def attribute_names(root: str) -> list[str]:
    """The attribute folders under `ROOT/attributes/`."""
    fs, base = fsspec.core.url_to_fs(f"{root.rstrip('/')}/{ATTRIBUTES}")
    if not fs.isdir(base):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(base, detail=False) if fs.isdir(p))


# ---------------------------------------------------------------- writing

@result_display
@dataclass
class DolmaExport:
    """What `export_attributes` wrote."""

    output: str
    name: str
    documents: int = 0
    attribute_files: list[str] = field(default_factory=list)
    document_files: list[str] = field(default_factory=list)  # documents written (not already in place)
    keys: list[str] = field(default_factory=list)  # the Dolma attribute keys, e.g. textsieve__rps_doc_word_count


def _local_real(path: str) -> str:
    return os.path.realpath(path) if "://" not in path else path


def _doc_rel(rel: str) -> str:
    """A written documents file's rel: the shard's rel with its suffix replaced by `.json.gz`."""
    lower = rel.lower()
    for suffix in (*DOC_SUFFIXES, ".parquet", ".arrow", ".warc.gz", ".warc", ".wet.gz", ".wet"):
        if lower.endswith(suffix):
            return rel[: -len(suffix)] + ".json.gz"
    return rel + ".json.gz"


def _is_span(typ: pa.DataType) -> bool:
    return pa.types.is_list(typ) and pa.types.is_struct(typ.value_type) and \
        {typ.value_type.field(i).name for i in range(typ.value_type.num_fields)} == {"start", "end", "score"}


def _exportable(typ: pa.DataType) -> bool:
    """Spans and plain numbers/booleans/strings; MinHash bands (binary lists) and other nested
    values have no Dolma span form."""
    return _is_span(typ) or pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ) \
        or pa.types.is_string(typ) or pa.types.is_large_string(typ)


def default_columns(directory: str) -> list[str]:
    """The attribute columns exported by default: every column of the joined view with a Dolma
    form, minus annotate's conveniences (`ts_length`, `X__score` twins of span columns)."""
    from textsieve.io.attribute_view import KEYS, layout
    from textsieve.io.attributes import without_conveniences

    lay = layout(directory)
    types: dict[str, pa.DataType] = {}
    for s in lay.sets:
        with fsspec.open(s.files[0], "rb") as fh:
            schema = pq.ParquetFile(fh).schema_arrow
        for stored, shown in s.columns.items():
            types[shown] = schema.field(stored).type
    names = [c for c in without_conveniences(lay.columns) if c not in KEYS]
    return [c for c in names if _exportable(types[c])]


def _value(v: Any, length: int) -> list | None:
    """A textsieve value as Dolma spans (None: leave the key out)."""
    if v is None:
        return None
    if isinstance(v, list):  # spans
        return [[s["start"], s["end"], s["score"]] for s in v
                if not (isinstance(s["score"], float) and not math.isfinite(s["score"]))]
    if isinstance(v, float) and not math.isfinite(v):
        return None  # NaN/inf are not JSON; Dolma's mixer could not parse them
    return [[0, length, v]]


def export_attributes(directory: str, output: str, name: str = "textsieve", columns: Sequence[str] | None = None,
                      documents: str = "auto") -> DolmaExport:
    """Write the attributes of the annotate folder `directory` in Dolma's layout under `output`
    (module doc). `documents`: "auto" writes a shard's documents to `output/documents/` unless
    they already lie there, "always" always writes them, "never" requires them in place."""
    from textsieve.io.attribute_view import layout, to_duckdb
    from textsieve.io.attributes import LENGTH_COLUMN, attribute_shards, read_shard_meta, source_documents

    if documents not in DOCUMENTS_MODES:
        raise DolmaError(f"documents={documents!r}: expected one of {', '.join(DOCUMENTS_MODES)}")
    if not name or "/" in name or name.startswith((".", "_")):
        raise DolmaError(f"--name {name!r}: Dolma's attribute name must be a plain folder name")
    from textsieve.io.overlap import check_apart

    check_apart("export dolma", output, [directory])
    cols = list(columns) if columns else default_columns(directory)
    if not cols:
        raise DolmaError(f"{directory}: no attribute column has a Dolma form (spans, numbers, booleans, strings)")
    lay = layout(directory)
    length_col = LENGTH_COLUMN if LENGTH_COLUMN in lay.columns else None
    fs, shards = attribute_shards(directory)
    ofs, out = fsspec.core.url_to_fs(output)
    out = out.rstrip("/")
    docs_root = f"{_local_real(out)}/{DOCUMENTS}/"
    result = DolmaExport(output, name, keys=[f"{name}__{c}" for c in cols])
    rel_name = to_duckdb(directory, ["id", "shard", "row", *([length_col] if length_col else []), *cols])
    for path in shards:
        meta = read_shard_meta(fs, path)
        if "source_shard" not in meta:
            raise DolmaError(f"{path} records no source shard; export dolma needs an annotate (or import) output")
        shard = meta.get("shard") or meta["source_shard"]["rel"]
        src = _local_real(meta["source_shard"]["path"])
        in_place = src.startswith(docs_root) and documents != "always"
        if not in_place and documents == "never":
            raise DolmaError(f"{src} is not under {docs_root}; Dolma's mixer finds attributes by the documents' path "
                             "(documents/<rel> -> attributes/<name>/<rel>): use documents='auto' to write them there")
        picked = rel_name.filter(f"shard = '{shard.replace(chr(39), chr(39) * 2)}'")
        table = (getattr(picked, "to_arrow_table", None) or picked.fetch_arrow_table)()
        rows = table.column("row").to_pylist()
        doc_rel = src[len(docs_root):] if in_place else _doc_rel(shard)
        if in_place and (meta.get("skipped_records") or rows != list(range(len(rows)))):
            raise DolmaError(f"{path}: annotate left out {meta.get('skipped_records') or 'some'} record(s) of {src}, "
                             "but Dolma pairs every attribute line with a document line; export with "
                             "documents='always' (the kept documents are written with their attributes)")
        ids = table.column("id").to_pylist()
        lengths = table.column(length_col).to_pylist() if length_col else [0] * len(ids)
        values = {c: table.column(c).to_pylist() for c in cols}
        attr_path = f"{out}/{ATTRIBUTES}/{name}/{doc_rel}"
        ofs.makedirs(posixpath.dirname(attr_path), exist_ok=True)
        with atomic_open(ofs, attr_path, "wb") as raw, _compressed(raw, attr_path) as fh:
            for i, doc_id in enumerate(ids):
                attrs = {}
                for c in cols:
                    spans = _value(values[c][i], lengths[i] or 0)
                    if spans is not None:
                        attrs[f"{name}__{c}"] = spans
                fh.write(json.dumps({"id": doc_id, "attributes": attrs}, ensure_ascii=False).encode() + b"\n")
        result.attribute_files.append(attr_path)
        result.documents += len(ids)
        if not in_place:
            want = dict(zip(rows, ids))
            doc_path = f"{out}/{DOCUMENTS}/{doc_rel}"
            ofs.makedirs(posixpath.dirname(doc_path), exist_ok=True)
            with atomic_open(ofs, doc_path, "wb") as raw, _compressed(raw, doc_path) as fh:
                written = 0
                for doc in source_documents(meta, on_error="skip"):
                    if doc.row not in want:
                        continue
                    rec = {"id": want[doc.row], "text": doc.text, "source": shard,
                           "metadata": {k: v for k, v in doc.meta.items() if k not in ("id", "text")}}
                    fh.write(json.dumps(rec, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
                             + b"\n")
                    written += 1
            if written != len(want):
                raise DolmaError(f"{src}: found {written} of the {len(want)} annotated documents; the source changed "
                                 "since annotate")
            result.document_files.append(doc_path)
    return result


class _compressed:
    """A writable binary stream over `raw`, gzip- or zstd-compressed by the file's suffix."""

    def __init__(self, raw: Any, path: str):
        self.raw, self.path = raw, path.lower()
        self.fh: Any = None

    def __enter__(self) -> Any:
        if self.path.endswith(".gz"):
            import gzip

            self.fh = gzip.GzipFile(fileobj=self.raw, mode="wb", mtime=0, filename="")
        elif self.path.endswith((".zst", ".zstd")):
            import zstandard

            self.fh = zstandard.ZstdCompressor().stream_writer(self.raw, closefd=False)
        else:
            self.fh = None
            return self.raw
        return self.fh

    def __exit__(self, *exc: Any) -> None:
        if self.fh is not None:
            self.fh.close()
