"""Training shards of a fixed size: JSONL.zst, Parquet, or tokenized binary (`.bin` + `.idx`).

Why a module of its own: these files are what a trainer reads, so each layout is exactly one
documented format. A shard is closed as soon as it holds at least the shard size (tokens, or
uncompressed bytes of its records: the JSON lines, or the token bytes for `bin`); documents are
never split, so every shard but the last is at least the size and at most one document over.

- `jsonl.zst`: one JSON object per line, `{"id", "source", "shard", "row", "lang", "tokens",
  "text"}` (`source`: the mix source's name; `shard`/`row`: where the document came from),
  zstd level 3, single-threaded (so the bytes are the same on every machine).
- `parquet`: the same fields as columns (zstd), 10,000 rows per row group.
- `bin`: Megatron-LM's `MMapIndexedDataset` layout (megatron/core/datasets/indexed_dataset.py),
  the one nanoGPT-style and Megatron/NeMo loaders memory-map. `shard-N.bin` holds every
  document's token ids back to back (each document followed by the tokenizer's EOS id when it
  has one), little-endian `uint16` when the vocabulary has < 65,536 ids, else 32-bit. `shard-N.idx`:
  magic `MMIDIDX\\x00\\x00`, `<Q` version 1, `<B` dtype code (8 = uint16, 4 = int32: Megatron has
  no uint32 code; ids < 2³¹ have the same bytes), `<Q` sequence count, `<Q` document-index count,
  then `int32` sequence lengths (tokens, EOS included), `int64` byte offsets of each sequence,
  and `int64` document indices `[0, 1, ..., n]` (one sequence per document). `read_idx` and
  `read_bin` read it back. `shard-N.docs.jsonl` says which document each sequence is
  (`{"id", "source", "shard", "row", "tokens"}`, line i = sequence i).
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_VERSION = 1
DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4, np.dtype(np.uint32): 4}
CODE_DTYPES = {8: np.dtype(np.uint16), 4: np.dtype(np.int32)}
ROW_GROUP = 10_000
PAYLOAD = struct.Struct("<II")  # document tokens, length of the provenance JSON that follows


def payload(tokens: int, body: bytes, meta: bytes = b"") -> bytes:
    """A record for `RollingShards.add`: the document's tokens, its provenance JSON (`bin`: written
    to the `.docs.jsonl` sidecar) and its body (the JSON line, or the token bytes for `bin`)."""
    return PAYLOAD.pack(tokens, len(meta)) + meta + body


def token_dtype(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab < 65,536), else uint32 (written with Megatron's int32 code)."""
    return np.dtype(np.uint16) if vocab_size < 65536 else np.dtype(np.uint32)


def shard_names(fmt: str, n: int) -> list[str]:
    """The file names of shard `n` in format `fmt` (`bin`: data, index, provenance sidecar)."""
    stem = f"shard-{n:05d}"
    return [f"{stem}.bin", f"{stem}.idx", f"{stem}.docs.jsonl"] if fmt == "bin" else [f"{stem}.{fmt}"]


def parquet_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("id", pa.string()), ("source", pa.string()), ("shard", pa.string()), ("row", pa.int64()),
                      ("lang", pa.string()), ("tokens", pa.int64()), ("text", pa.string())])


def write_idx(path: str, lengths: np.ndarray, dtype: np.dtype) -> None:
    """A Megatron `.idx` for sequences of `lengths` tokens, one sequence per document."""
    lengths = np.asarray(lengths, np.int32)
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(len(lengths), np.int64)
    if len(lengths) > 1:
        pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64)) * itemsize
    docs = np.arange(len(lengths) + 1, dtype=np.int64)
    with open(path, "wb") as fh:
        fh.write(IDX_MAGIC)
        fh.write(struct.pack("<Q", IDX_VERSION))
        fh.write(struct.pack("<B", DTYPE_CODES[np.dtype(dtype)]))
        fh.write(struct.pack("<Q", len(lengths)))
        fh.write(struct.pack("<Q", len(docs)))
        fh.write(lengths.astype("<i4").tobytes())
        fh.write(pointers.astype("<i8").tobytes())
        fh.write(docs.astype("<i8").tobytes())


def read_idx(path: str) -> dict[str, Any]:
    """A Megatron `.idx` file: dtype, sequence lengths, byte pointers, document indices."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:9] != IDX_MAGIC:
        raise ValueError(f"{path}: not a Megatron index (magic {data[:9]!r})")
    version, = struct.unpack_from("<Q", data, 9)
    code, = struct.unpack_from("<B", data, 17)
    nseq, ndoc = struct.unpack_from("<QQ", data, 18)
    off = 34
    lengths = np.frombuffer(data, "<i4", nseq, off)
    off += 4 * nseq
    pointers = np.frombuffer(data, "<i8", nseq, off)
    off += 8 * nseq
    docs = np.frombuffer(data, "<i8", ndoc, off)
    return {"version": version, "dtype": CODE_DTYPES[code], "lengths": lengths, "pointers": pointers,
            "document_indices": docs}


def read_bin(prefix: str) -> list[np.ndarray]:
    """The token ids of every sequence of `prefix.bin`, as the index says (for tests and checks)."""
    idx = read_idx(prefix + ".idx")
    data = np.fromfile(prefix + ".bin", idx["dtype"])
    item = idx["dtype"].itemsize
    return [data[p // item: p // item + n] for p, n in zip(idx["pointers"].tolist(), idx["lengths"].tolist())]


@dataclass
class ShardInfo:
    """One written shard: its file names, records, tokens, bytes measured, and per-source counts."""

    files: list[str]
    documents: int = 0
    tokens: int = 0
    size: int = 0
    by_source: dict[str, list[int]] = field(default_factory=dict)  # name -> [documents, tokens]


class RollingShards:
    """Writes records into consecutive shards of `size` (`unit`: tokens | bytes) under `folder`.

    `add(source, payload)` takes what `payload` packs."""

    def __init__(self, folder: str, fmt: str, size: int, unit: str, source_names: list[str],
                 dtype: np.dtype | None = None):
        self.folder, self.fmt, self.size, self.unit = folder, fmt, size, unit
        self.names = source_names
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.done: list[ShardInfo] = []
        self._cur: ShardInfo | None = None
        self._fh: Any = None
        self._zw: Any = None
        self._rows: list[dict] = []
        self._pq: Any = None
        self._lengths: list[int] = []
        self._docs: Any = None

    def _tmp(self, name: str) -> str:
        return os.path.join(self.folder, f".{name}.tmp")

    def _open(self) -> ShardInfo:
        files = shard_names(self.fmt, len(self.done))
        info = ShardInfo(files)
        self._fh = open(self._tmp(files[0]), "wb")  # noqa: SIM115 - open across add() calls, closed in _close
        if self.fmt == "jsonl.zst":
            import zstandard

            self._zw = zstandard.ZstdCompressor(level=3, threads=0).stream_writer(self._fh, closefd=False)
        elif self.fmt == "parquet":
            import pyarrow.parquet as pq

            self._pq = pq.ParquetWriter(self._fh, parquet_schema(), compression="zstd")
        else:
            self._docs = open(self._tmp(files[2]), "wb")  # noqa: SIM115 - closed in _close
        self._cur = info
        return info

    def add(self, source: int, payload: bytes) -> None:
        info = self._cur or self._open()
        tokens, meta_len = PAYLOAD.unpack_from(payload)
        meta = payload[PAYLOAD.size:PAYLOAD.size + meta_len]
        body = payload[PAYLOAD.size + meta_len:]
        if self.fmt == "bin":
            self._fh.write(body)
            self._docs.write(meta + b"\n")
            self._lengths.append(len(body) // self.dtype.itemsize if self.dtype is not None else 0)
            size = len(body)
        else:
            size = len(body) + 1
            if self.fmt == "jsonl.zst":
                self._zw.write(body + b"\n")
            else:
                self._rows.append(json.loads(body))
                if len(self._rows) >= ROW_GROUP:
                    self._flush_rows()
        info.documents += 1
        info.tokens += tokens
        info.size += size
        counts = info.by_source.setdefault(self.names[source], [0, 0])
        counts[0] += 1
        counts[1] += tokens
        if (info.tokens if self.unit == "tokens" else info.size) >= self.size:
            self._close()

    def _flush_rows(self) -> None:
        import pyarrow as pa

        if self._rows:
            self._pq.write_table(pa.Table.from_pylist(self._rows, schema=parquet_schema()), row_group_size=ROW_GROUP)
            self._rows = []

    def _close(self) -> None:
        info = self._cur
        if info is None:
            return
        if self.fmt == "jsonl.zst":
            self._zw.close()
        elif self.fmt == "parquet":
            self._flush_rows()
            self._pq.close()
        self._fh.close()
        os.replace(self._tmp(info.files[0]), os.path.join(self.folder, info.files[0]))
        if self.fmt == "bin":
            assert self.dtype is not None
            write_idx(self._tmp(info.files[1]), np.asarray(self._lengths, np.int64), self.dtype)
            os.replace(self._tmp(info.files[1]), os.path.join(self.folder, info.files[1]))
            self._docs.close()
            os.replace(self._tmp(info.files[2]), os.path.join(self.folder, info.files[2]))
            self._lengths = []
        self.done.append(info)
        self._cur = None
        self._fh = self._zw = self._pq = self._docs = None

    def close(self) -> list[ShardInfo]:
        """Finish the last shard; the shards written, in order."""
        self._close()
        return self.done


__all__ = ["IDX_MAGIC", "PAYLOAD", "RollingShards", "ShardInfo", "parquet_schema", "payload", "read_bin", "read_idx",
           "shard_names", "token_dtype", "write_idx"]
