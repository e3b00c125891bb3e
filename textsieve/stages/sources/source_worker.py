"""One input unit of `source`, in a worker: phase 1 (read) and phase 2 (decide and write).

Phase 1 reads the unit with its family and stages every record in a work file of the run's
staging folder (Parquet: id, text, meta and key as JSON), beside a small `.done.json` with the
unit's fingerprint, counts and keys, so a re-run after a kill adopts finished units without
reading them again. Phase 2 reads the work file back, drops what the whole-input decision and
the family's per-record filter say, and writes the document shard. Records keep input order,
so the output is byte-identical whatever the number of workers.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.dumps.family import SourceOptions, SourceRecord, Unit, get_family, iter_records
from textsieve.io.arrow_arrays import string_array
from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.doc_shards import write_doc_shard

WORK_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("meta", pa.string()), ("key", pa.string())])
_ROWS = 1024  # records per work-file row group
EXAMPLES = 5  # located skips kept per unit for the summary


@dataclass(frozen=True)
class ReadTask:
    family: str
    unit: Unit
    opts: SourceOptions
    output: str  # the output folder's URL (the worker opens its own filesystem)
    work: str  # where the work file goes (a path of that filesystem)
    fingerprint: str  # what the unit's phase-1 result depends on


@dataclass(frozen=True)
class WriteTask:
    family: str
    unit: Unit
    opts: SourceOptions
    output: str
    work: str
    staged: str  # where the document shard goes
    fmt: str
    drops: dict[int, str]  # record index -> reason, from the whole-input decision


def done_path(work: str) -> str:
    head, _, name = work.rpartition("/")
    return f"{head}/.{name}.done.json"


def read_done(fs: fsspec.AbstractFileSystem, work: str, fingerprint: str) -> dict[str, Any] | None:
    """The phase-1 result a killed run left for this unit, when made with this fingerprint."""
    try:
        with fs.open(done_path(work), "rb") as fh:
            value = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("fingerprint") != fingerprint or not fs.exists(work):
        return None
    return value


def _work_table(rows: list[tuple[str, str, str, str]]) -> pa.Table:
    """`rows` (id, text, meta JSON, key JSON) as a WORK_SCHEMA table, built from buffers:
    `pa.Table.from_pylist` (any `pa.array` of Python values) imports pandas where it is installed,
    ~0.25 s in every process that reads a source (io.arrow_arrays)."""
    columns = list(zip(*rows)) if rows else [(), (), (), ()]
    return pa.Table.from_arrays([string_array(list(c)) for c in columns], schema=WORK_SCHEMA)


def read_unit(task: ReadTask) -> dict[str, Any]:
    """Phase 1: {counts, keys, examples} of the unit; its records staged in `task.work`."""
    family = get_family(task.family)
    fs = fsspec.core.url_to_fs(task.output)[0]
    skipped: Counter[str] = Counter()
    examples: list[dict[str, str]] = []
    keys: list[Any] = []
    batch: list[tuple[str, str, str, str]] = []
    writer = AtomicParquetWriter(fs, task.work, WORK_SCHEMA)
    try:
        for item in iter_records(family, task.unit, task.opts):
            if not isinstance(item, SourceRecord):
                skipped[item.reason] += 1
                if len(examples) < EXAMPLES:
                    examples.append({"reason": item.reason, "location": item.location, "detail": item.detail})
                continue
            keys.append(item.key)
            batch.append((item.id, item.text, json.dumps(item.meta, ensure_ascii=False), json.dumps(item.key)))
            if len(batch) >= _ROWS:
                writer.write(_work_table(batch))
                batch = []
        writer.write(_work_table(batch))
        writer.close()
    except BaseException as exc:
        writer.abort(exc)
        raise
    result = {"fingerprint": task.fingerprint, "records": len(keys), "skipped": dict(sorted(skipped.items())),
              "examples": examples, "keys": keys}
    with atomic_open(fs, done_path(task.work), "w") as fh:
        json.dump(result, fh)
    return result


_STATE: dict[str, Any] = {}  # per process: the family's `prepare` state, by family and options


def _state(family: Any, opts: SourceOptions) -> Any:
    key = json.dumps([family.name, repr(opts)])
    if key not in _STATE:
        _STATE.clear()
        _STATE[key] = family.prepare(opts)
    return _STATE[key]


def _records(fs: fsspec.AbstractFileSystem, work: str) -> Iterator[SourceRecord]:
    with fs.open(work, "rb") as fh:
        pf = pq.ParquetFile(fh)
        for i in range(pf.num_row_groups):
            for row in pf.read_row_group(i).to_pylist():
                yield SourceRecord(row["id"], row["text"], json.loads(row["meta"]), json.loads(row["key"]))


def write_unit(task: WriteTask) -> dict[str, Any]:
    """Phase 2: write the unit's document shard; {kept, dropped: {reason: n}, examples}."""
    family = get_family(task.family)
    fs = fsspec.core.url_to_fs(task.output)[0]
    state = _state(family, task.opts)
    dropped: Counter[str] = Counter()
    examples: list[dict[str, str]] = []

    def kept() -> Iterator[dict[str, Any]]:
        for i, rec in enumerate(_records(fs, task.work)):
            why = task.drops.get(i) or family.keep(rec, task.opts, state)
            if why:
                dropped[why] += 1
                if len(examples) < EXAMPLES:
                    examples.append({"reason": why, "location": f"{task.unit.rel} record {i}", "detail": rec.id})
                continue
            as_json = task.fmt == "parquet" and family.meta_schema is None
            yield {"id": rec.id, "text": rec.text, "meta": json.dumps(rec.meta, ensure_ascii=False) if as_json
                   else rec.meta}

    n = write_doc_shard(fs, task.staged, task.fmt, kept(), schema=output_schema(family))
    return {"kept": n, "dropped": dict(sorted(dropped.items())), "examples": examples}


def output_schema(family: Any) -> pa.Schema:
    """The Parquet schema of a family's document shards: meta as its struct, or JSON text."""
    meta = family.meta_schema if family.meta_schema is not None else pa.string()
    return pa.schema([("id", pa.string()), ("text", pa.string()), ("meta", meta)])
