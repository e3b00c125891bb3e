"""Writing document shards (JSON Lines .gz/.zst or Parquet), byte-deterministic and atomic.

Stages that *make* documents (`extract`) write their records through `DocShardWriter`, so the
three output formats share one set of rules: records in input order, the same JSON encoding
(UTF-8, no ASCII escapes, keys in the order given), gzip without a timestamp or file name
(`io.compression.gzip_writer`), zstd with a content checksum (so a cut or damaged file is
noticed on read, `io.compression`), and a Parquet schema fixed by the caller (a shard without
records still has every column). The file appears under its final name only when complete
(`io.atomic`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import fsspec
import pyarrow as pa

from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.compression import gzip_writer

DOC_FORMATS = ("jsonl.gz", "jsonl.zst", "parquet")
_ROW_GROUP = 2048


def doc_suffix(fmt: str) -> str:
    """The file suffix of format `fmt` (`.jsonl.gz`, `.jsonl.zst`, `.parquet`)."""
    if fmt not in DOC_FORMATS:
        raise ValueError(f"output format must be one of {', '.join(DOC_FORMATS)}, not {fmt!r}")
    return "." + fmt


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def write_doc_shard(fs: fsspec.AbstractFileSystem, path: str, fmt: str, records: Iterable[dict[str, Any]],
                    schema: pa.Schema | None = None) -> int:
    """Write `records` to `path` in format `fmt` (`schema` is required for Parquet); returns
    the number written. Records are consumed as they come, so memory stays one row group."""
    doc_suffix(fmt)
    n = 0
    if fmt == "parquet":
        if schema is None:
            raise ValueError("a Parquet document shard needs a schema")
        writer = AtomicParquetWriter(fs, path, schema)
        try:
            batch: list[dict[str, Any]] = []
            for rec in records:
                batch.append(rec)
                n += 1
                if len(batch) >= _ROW_GROUP:
                    writer.write(pa.Table.from_pylist(batch, schema=schema))
                    batch = []
            if batch or n == 0:
                writer.write(pa.Table.from_pylist(batch, schema=schema))
            writer.close()
        except BaseException as exc:
            writer.abort(exc)
            raise
        return n
    with atomic_open(fs, path, "wb") as raw:
        if fmt == "jsonl.gz":
            with gzip_writer(raw) as gz:
                for rec in records:
                    gz.write(_line(rec))
                    n += 1
        else:
            import zstandard

            with zstandard.ZstdCompressor(level=3, write_checksum=True).stream_writer(raw, closefd=False) as zw:
                for rec in records:
                    zw.write(_line(rec))
                    n += 1
    return n
