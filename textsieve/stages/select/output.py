"""Writing selected documents so that nothing of the source is lost.

Why a module of its own: `select` is where a curated corpus leaves textsieve, and a selection
that drops columns (a Hugging Face dataset's metadata, a crawl's `source` and `meta`) forces
users to join the data back by hand. So every output record is the source record, unchanged,
with three key fields added in front: `id` (string), `shard` (source shard rel name, string)
and `row` (record index in that shard, int64), which join it to every attribute set. Line rules
(C4-style line removal) change only the text field, in place (a dotted `--text-field` such as
`content.body` is replaced inside its struct/object).

Per input and output format:

- JSONL → JSONL: every key and its value as parsed; the text field follows the key fields.
- Parquet → Parquet: the source's Arrow schema (nested structs, lists, timestamps...), column
  order and types, after the key fields. Schema metadata (pandas, Hugging Face features) is
  dropped, since it would no longer describe the columns.
- Arrow IPC (`.arrow`, a Hugging Face dataset's files) → Parquet or JSONL: as Parquet sources.
- Parquet → JSONL: each row JSON-encoded with all columns; timestamps, dates and times become
  ISO 8601 strings, binary values base64 strings, decimals strings, durations seconds.
- JSONL → Parquet: an Arrow schema inferred from the selected records of the shard (a first
  pass reads them, a second writes), nested objects as structs and arrays as lists; a key
  absent from a record is null, and missing struct fields read back as null. A field whose
  values have no common Arrow type (a number here, a string there) or that is an empty object
  is written as a JSON-encoded string column.
- WARC/WET/ARC and .txt sources have no record: `text`, `url` and the reader's fields
  (`warc_date`, `content_type`, ...) are written as top-level fields.

Name clashes: `id` is textsieve's document id as a string; when the source's id field is `id`
itself, that value is it (an integer id becomes its decimal string). A source field named
`shard` or `row`, or an `id` that is not the id field, is kept as `source_shard`, `source_row`,
`source_id`.

Redaction (`select --redact`, `textsieve.personal_data.redact`): the text field gets the spans replaced
(after the line cut, in the original text's offsets), and every record gets one more field at
its end, `ts_redacted`: the spans replaced per label, every label present (zeros included), so
JSONL objects and the Parquet struct column have one shape. A source field of that name is
replaced by it.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.document import Document
from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.attributes import source_documents
from textsieve.io.compression import gzip_writer
from textsieve.io.fields import FieldPath
from textsieve.personal_data.redact import Region, redact
from textsieve.personal_data.redact_plan import REDACTED_FIELD, load_regions

if TYPE_CHECKING:
    from textsieve.stages.select.select import ShardTask

KEYS = ("id", "shard", "row")
KEY_TYPES = (pa.string(), pa.string(), pa.int64())
BATCH = 2000  # records per Arrow batch / row lookup
Selected = tuple[Document, str, int]  # (source document, text to write, times to write it)
T = TypeVar("T")


def renamed(name: str, id_field: str) -> str | None:
    """The output name of source field `name` (None: it is the id field `id`, written as the key)."""
    if name == "id":
        return None if id_field == "id" else "source_id"
    return f"source_{name}" if name in KEYS else name


def json_default(value: Any) -> Any:
    """JSON form of the Arrow values `json` cannot encode (see the module doc)."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write a {type(value).__name__} value as JSON")


def _dumps(rec: dict) -> bytes:
    return json.dumps(rec, ensure_ascii=False, default=json_default).encode("utf-8") + b"\n"


# ---------------------------------------------------------------- record sources (JSONL, WARC, txt)

def _put_text(record: dict, field: FieldPath, text: str) -> bool:
    """Put `text` back where the JSONL reader took it from (see `FieldPath.take`); False when that
    is the top level (the caller places it)."""
    if not field.dotted:
        return False
    parent: Any = record
    for part in field.parts[:-1]:
        parent = parent.get(part) if type(parent) is dict else None
    if type(parent) is not dict:
        return False  # the text was under the literal dotted key
    parent[field.parts[-1]] = text
    return True


def record_of(doc: Document, text: str, shard: str | None, source_format: str, text_field: FieldPath,
              id_field: str) -> dict[str, Any]:
    """The output record of a document from a record-less or JSON Lines source (module doc)."""
    rec: dict[str, Any] = {"id": doc.id, "shard": shard, "row": doc.row}
    if source_format == "jsonl":
        body = doc.meta  # the parsed record minus its text field (owned by this document)
        if not _put_text(body, text_field, text):
            rec[text_field.name] = text
    else:
        body = dict(doc.meta)
        rec["text"] = text
        if doc.url is not None:
            body.setdefault("url", doc.url)
        if doc.lang is not None:
            body.setdefault("lang", doc.lang)
    for key, value in body.items():
        name = renamed(key, id_field)
        if name is not None:
            rec[name] = value
    return rec


def _has_empty_struct(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_has_empty_struct(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_empty_struct(t.value_type)
    return False


class InferredSchema:
    """An Arrow schema for JSON records, grown batch by batch (pass 1 of JSONL → Parquet)."""

    def __init__(self, text_key: str | None):
        self.types: dict[str, pa.DataType] = dict(zip(KEYS, KEY_TYPES))
        if text_key is not None:
            self.types[text_key] = pa.string()
        self.fixed = set(self.types)
        self.as_json: set[str] = set()

    def add(self, batch: list[dict[str, Any]]) -> None:
        keys = dict.fromkeys(k for r in batch for k in r)
        for key in keys:
            if key in self.fixed or key in self.as_json:
                continue
            try:
                t = pa.array([r.get(key) for r in batch]).type
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
                self.as_json.add(key)
                continue
            prev = self.types.get(key)
            if prev is None or prev == t:
                self.types[key] = t
                continue
            try:
                self.types[key] = pa.unify_schemas([pa.schema([(key, prev)]), pa.schema([(key, t)])],
                                                   promote_options="permissive").field(key).type
            except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
                self.as_json.add(key)

    def schema(self) -> pa.Schema:
        self.as_json |= {k for k, t in self.types.items() if k not in self.fixed and _has_empty_struct(t)}
        return pa.schema([(k, pa.string() if k in self.as_json else t) for k, t in self.types.items()]
                         + [(k, pa.string()) for k in self.as_json if k not in self.types])

    def table(self, batch: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
        if self.as_json:
            batch = [{k: (json.dumps(v, ensure_ascii=False) if k in self.as_json and v is not None else v)
                      for k, v in r.items()} for r in batch]
        return pa.Table.from_pylist(batch, schema=schema)


# ---------------------------------------------------------------- Parquet sources

class ParquetRows:
    """Every column of selected rows of a Parquet source, in the output layout (module doc).

    The text column comes from the documents (cut by line rules); the other columns are read
    by row group, each at most once, as rows arrive in ascending order."""

    def __init__(self, path: str, text_field: str, id_field: str, redacted: tuple[str, ...] = ()):
        self._fh: Any = None
        self.redacted = redacted
        if path.lower().endswith(".arrow"):  # a Hugging Face dataset's Arrow file, memory-mapped
            from textsieve.io.arrow_ipc import ArrowFile

            self.pf: Any = ArrowFile(path)
        else:
            self._fh = fsspec.open(path, "rb").open()
            self.pf = pq.ParquetFile(self._fh)
        src = self.pf.schema_arrow
        field = FieldPath(text_field)
        whole = field.name in src.names  # the text is a column, else a field inside a struct column
        self.text_col: str = field.name if whole else field.parts[0]
        self.text_inner: tuple[str, ...] = () if whole else field.parts[1:]
        self.out: list[tuple[str, str, pa.DataType]] = []  # (output name, source column, type)
        for f in src:
            name = renamed(f.name, id_field)
            if name is not None and not (redacted and name == REDACTED_FIELD):
                self.out.append((name, f.name, f.type))
        self.read_cols = [c for _, c, _ in self.out if not (c == self.text_col and not self.text_inner)]
        self.schema = pa.schema(list(zip(KEYS, KEY_TYPES)) + [(n, t) for n, _, t in self.out])
        if redacted:
            self.schema = self.schema.append(pa.field(REDACTED_FIELD, pa.struct([(k, pa.int64()) for k in redacted])))
        md = self.pf.metadata
        self.starts = np.cumsum([0] + [md.row_group(i).num_rows for i in range(md.num_row_groups)])
        self._group: tuple[int, pa.Table] | None = None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()

    def _rows(self, rows: np.ndarray) -> pa.Table:
        groups = np.searchsorted(self.starts, rows, side="right") - 1
        parts: list[pa.Table] = []
        for g in dict.fromkeys(groups.tolist()):
            group = self._group
            if group is None or group[0] != g:
                group = self._group = (g, self.pf.read_row_group(g, columns=self.read_cols, use_threads=False))
            local = rows[groups == g] - self.starts[g]
            parts.append(group[1].take(pa.array(local, pa.int64())))
        return pa.concat_tables(parts)

    def table(self, selected: list[Selected], shard: str | None) -> pa.Table:
        """The output rows of `selected` (each repeated by its count)."""
        docs = [(d, t) for d, t, n in selected for _ in range(n)]
        rows = np.fromiter((d.row for d, _ in docs), np.int64, len(docs))
        texts = [t for _, t in docs]
        taken = self._rows(rows) if self.read_cols else None
        arrays: list[pa.Array] = [pa.array([d.id for d, _ in docs], pa.string()),
                                  pa.array([shard] * len(docs), pa.string()), pa.array(rows, pa.int64())]
        for _, col, typ in self.out:
            if col == self.text_col and not self.text_inner:
                arrays.append(pa.array(texts, typ))
                continue
            if taken is None:  # every column but a top-level text column is in read_cols, so was read
                raise AssertionError(f"column {col!r} was not read")
            if col == self.text_col:
                values = taken.column(col).to_pylist()
                for value, text in zip(values, texts):
                    for part in self.text_inner[:-1]:
                        value = value[part]
                    value[self.text_inner[-1]] = text
                arrays.append(pa.array(values, typ))
            else:
                arrays.append(taken.column(col).combine_chunks())
        if self.redacted:
            arrays.append(pa.array([d.meta[REDACTED_FIELD] for d, _ in docs], self.schema.field(REDACTED_FIELD).type))
        return pa.Table.from_arrays(arrays, schema=self.schema)


# ---------------------------------------------------------------- writing one shard

def _chunks(items: Iterator[T], size: int = BATCH) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def write_selected(task: ShardTask, selected) -> tuple[int, int]:
    """Write the output shard of `task`; `selected()` streams its (document, text, count) triples
    (called twice for JSONL → Parquet). Returns (records, characters)."""
    fs, _ = fsspec.core.url_to_fs(task.final)
    opts = task.meta.get("read_options", {})
    text_field, id_field = FieldPath(opts.get("text_field", "text")), opts.get("id_field", "id")
    source_format = task.meta.get("source_shard", {}).get("format", "jsonl")
    shard = task.meta.get("shard")
    records = chars = 0
    if source_format in ("parquet", "arrow"):  # columnar: every column copied with its Arrow type
        rows = ParquetRows(task.meta["source_shard"]["path"], text_field.name, id_field, task.redact_labels)
        try:
            if task.fmt == "parquet":
                writer = AtomicParquetWriter(fs, task.final, rows.schema)
                try:
                    for chunk in _chunks(selected()):
                        writer.write(rows.table(chunk, shard))
                        records += sum(n for _, _, n in chunk)
                        chars += sum(len(t) * n for _, t, n in chunk)
                except BaseException as exc:
                    writer.abort(exc)
                    raise
                writer.close()
            else:
                with atomic_open(fs, task.final) as raw, \
                        gzip_writer(raw) as gz:
                    for chunk in _chunks(selected()):
                        for rec in rows.table(chunk, shard).to_pylist():
                            gz.write(_dumps(rec))
                        records += sum(n for _, _, n in chunk)
                        chars += sum(len(t) * n for _, t, n in chunk)
        finally:
            rows.close()
        return records, chars

    def recs() -> Iterator[tuple[dict, str]]:
        for doc, text, n in selected():
            rec = record_of(doc, text, shard, source_format, text_field, id_field)
            for _ in range(n):
                yield rec, text

    if task.fmt == "parquet":
        top = None if source_format == "jsonl" and text_field.dotted else (
            text_field.name if source_format == "jsonl" else "text")
        inferred = InferredSchema(top)
        for chunk in _chunks(recs()):
            inferred.add([r for r, _ in chunk])
        schema = inferred.schema()
        writer = AtomicParquetWriter(fs, task.final, schema)
        try:
            for chunk in _chunks(recs()):
                writer.write(inferred.table([r for r, _ in chunk], schema))
                records += len(chunk)
                chars += sum(len(t) for _, t in chunk)
        except BaseException as exc:
            writer.abort(exc)
            raise
        writer.close()
    else:
        with atomic_open(fs, task.final) as raw, gzip_writer(raw) as gz:
            for rec, text in recs():
                gz.write(_dumps(rec))
                records += 1
                chars += len(text)
    return records, chars


def stream_selected(task: ShardTask, error: type[Exception]) -> tuple[Any, Any]:
    """(`selected`, `check`): `selected()` streams the task's rows from its source shard as
    (document, text with line rules applied and spans redacted, count), verifying each against
    the attributes; `check()` raises `error` unless the last stream found every selected row,
    and returns the spans it redacted per label."""
    want = {int(r): i for i, r in enumerate(task.rows.tolist())}
    found: set[int] = set()
    starts, ends = task.starts, task.ends  # kept line spans per row, when line rules cut
    regions: list[list[Region]] = []
    redacted: dict[str, int] = dict.fromkeys(task.redact_labels, 0)
    if task.redact and want:
        regions = load_regions(task.redact, task.rows)

    def selected() -> Iterator[Selected]:
        found.clear()
        redacted.update(dict.fromkeys(redacted, 0))
        if not want:
            return
        last = int(task.rows[-1])
        for doc in source_documents(task.meta, on_error="skip"):
            if doc.row > last:
                break
            i = want.get(doc.row)
            if i is None:
                continue
            found.add(doc.row)
            if doc.id != task.ids[i] or (task.lengths[i] >= 0 and len(doc.text) != task.lengths[i]):
                raise error(f"{task.meta['source']}: row {doc.row} is {doc.id!r} with {len(doc.text)} "
                            f"characters, but the attributes say {task.ids[i]!r} with {task.lengths[i]}; "
                            f"the source changed since `textsieve annotate`, re-annotate it")
            if task.redact:
                keep = None if starts is None or ends is None else list(zip(starts[i].tolist(), ends[i].tolist()))
                text, counts = redact(doc.text, regions[i], keep, task.redact_labels)
                doc.meta[REDACTED_FIELD] = counts
                for label, k in counts.items():
                    redacted[label] += k * int(task.counts[i])
            else:
                text = doc.text if starts is None or ends is None else _cut(doc.text, starts[i], ends[i])
            yield doc, text, int(task.counts[i])

    def check() -> dict[str, int]:
        if len(found) != len(want):
            missing = sorted(set(want) - found)[:3]
            raise error(f"{task.meta['source']}: only {len(found)} of {len(want)} selected rows were found "
                        f"(e.g. rows {missing}); the source changed since `textsieve annotate`")
        return dict(redacted)

    return selected, check


def _cut(text: str, starts: np.ndarray, ends: np.ndarray) -> str:
    """C4-style line removal: the kept lines' raw slices [start, end), newlines included."""
    return "".join(text[s:e] for s, e in zip(starts.tolist(), ends.tolist()))


__all__ = ["InferredSchema", "ParquetRows", "json_default", "record_of", "renamed", "stream_selected",
           "write_selected"]
