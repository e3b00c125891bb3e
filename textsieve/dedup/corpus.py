"""Access to an annotate output folder for the dedup stages: shard table, ids, texts, writing.

Documents are addressed by a corpus *ordinal*: shards in sorted relative-path order, rows in
file order. Ordinals are internal (they never reach an output); anything written is keyed by
`id`, `shard`, `row` and RPv2's `id_int`, so outputs do not depend on shard names or order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.dedup.partitions import as_bytes
from textsieve.exec.local import ordered_map
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.atomic import AtomicParquetWriter
from textsieve.io.attributes import META_KEY, attribute_shards, shard_rel, source_documents
from textsieve.io.diskfull import disk_full_as_error
from textsieve.io.parquet_read import read_table
from textsieve.io.texts import aligned_source_texts, missing_rows, source_meta


@dataclass
class ShardTable:
    """The annotate shards of a folder, their row counts and first ordinals."""

    directory: str
    fs: fsspec.AbstractFileSystem
    root: str
    paths: list[str]
    rels: list[str]
    n_rows: np.ndarray
    base: np.ndarray  # base[i] = ordinal of shard i's row 0; base[-1] = total

    @classmethod
    def open(cls, directory: str) -> ShardTable:
        fs, paths = attribute_shards(directory)
        root = fsspec.core.url_to_fs(directory)[1].rstrip("/")
        n_rows = []
        for path in paths:
            with fs.open(path, "rb") as fh:
                n_rows.append(pq.ParquetFile(fh).metadata.num_rows)
        n = np.asarray(n_rows, dtype=np.int64)
        return cls(directory, fs, root, paths, [shard_rel(root, p) for p in paths], n,
                   np.concatenate([[0], np.cumsum(n)]).astype(np.int64))

    @property
    def n_docs(self) -> int:
        return int(self.base[-1])

    def content_key(self) -> str:
        """A fingerprint of the shards' published contents (their manifest hashes): what a stage
        reading them must re-run for when it changes, whatever the file names and sizes say."""
        from textsieve.io.publish import content_key

        return content_key(self.fs, self.root, [p[len(self.root) + 1:] for p in self.paths])

    def schema(self, i: int) -> pa.Schema:
        with self.fs.open(self.paths[i], "rb") as fh:
            return pq.ParquetFile(fh).schema_arrow

    def split(self, ordinals: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Group sorted ordinals by shard: [(shard index, local rows)], shards in order."""
        ordinals = np.asarray(ordinals, dtype=np.int64)
        cuts = np.searchsorted(ordinals, self.base)
        return [(i, ordinals[cuts[i]:cuts[i + 1]] - self.base[i])
                for i in range(len(self.paths)) if cuts[i + 1] > cuts[i]]

    def read(self, i: int, columns: list[str]) -> pa.Table:
        with self.fs.open(self.paths[i], "rb") as fh:
            return read_table(fh, columns=columns)

    def batches(self, i: int, columns: list[str], rows: int = 32768) -> Iterator[tuple[int, pa.RecordBatch]]:
        """Shard i's `columns` in batches of at most `rows`, each with the row offset it starts
        at: a pass over a large shard holds one batch, not the shard (ids become Python strings
        to hash, ~100 B each)."""
        offset = 0
        with self.fs.open(self.paths[i], "rb") as fh:
            for rb in pq.ParquetFile(fh).iter_batches(batch_size=rows, columns=columns, use_threads=False):
                yield offset, rb
                offset += rb.num_rows


def id_ints(ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """RPv2 `id_int` (§2.3: first 8 SHA-1 bytes of the UTF-8 id, little-endian) of a whole
    string column. hashlib (OpenSSL) costs ~0.4 us per id, a small share of a dedup pass, and
    keeps numba (~130 MB resident once its JIT is loaded) out of the dedup processes."""
    if ids.null_count:
        raise ValueError("dedup: documents without an id; annotate with --id-field")
    if len(ids) == 0:
        return np.zeros(0, dtype=np.uint64)
    sha1 = hashlib.sha1
    digests = b"".join([sha1(x.encode("utf-8")).digest()[:8] for x in ids.to_pylist()])
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


def _texts_task(task: tuple[dict, list[int], str]) -> list[str]:
    """One worker task of `gather_texts`: (source metadata, rows, annotate shard path) -> texts."""
    return aligned_source_texts(*task)


def source_rows(table: ShardTable, ordinals: np.ndarray) -> Iterable[tuple[int, np.ndarray, dict, list[int]]]:
    """Per shard holding some of the sorted `ordinals`: (shard index, local rows, its source
    metadata, the documents' source row numbers), for tasks that re-read texts."""
    for i, local in table.split(ordinals):
        rows = to_numpy(table.read(i, ["row"]).column("row"))[local]
        yield i, local, source_meta(table.fs, table.paths[i]), [int(r) for r in rows]


def gather_texts(table: ShardTable, ordinals: np.ndarray, workers: int = 1) -> dict[int, str]:
    """Texts of the given documents, re-read from their source shards: one task per shard, each
    reading its source once up to the last row wanted, `workers` shards at a time."""
    ordinals = np.unique(np.asarray(ordinals, dtype=np.int64))
    tasks, keys = [], []
    for i, local, meta, rows in source_rows(table, ordinals):
        tasks.append((meta, rows, table.paths[i]))
        keys.append(local + table.base[i])
    out: dict[int, str] = {}
    for (_, texts), key in zip(ordered_map(_texts_task, tasks, workers=min(workers, max(1, len(tasks)))), keys):
        out.update(zip((int(k) for k in key), texts))
    return out


def wanted_shingles(meta: dict, rows: list[int]) -> Iterator[tuple[int, np.ndarray]]:
    """Stream one source shard: (k, shingle hashes) for each wanted row `rows[k]`, in source
    order, each once; a located error when a wanted row is not in the source."""
    from textsieve.dedup.verify import shingle_hashes

    want = {r: k for k, r in enumerate(rows)}
    seen = np.zeros(len(rows), dtype=bool)
    for doc in source_documents(meta):
        k = want.get(doc.row)
        if k is None or seen[k]:
            continue
        seen[k] = True
        yield k, shingle_hashes(doc.text)
    missing = [rows[k] for k in np.flatnonzero(~seen)]
    if missing:
        raise missing_rows(str(meta["source_shard"].get("rel")), meta, missing)


def _shingles_task(task: tuple[dict, list[int], str]) -> tuple[np.ndarray, np.ndarray]:
    """Stream one source shard, writing the shingle hashes of the wanted rows to `path`;
    return (start, count) per wanted row, in the order of `rows`."""
    meta, rows, path = task
    start = np.full(len(rows), -1, dtype=np.int64)
    count = np.zeros(len(rows), dtype=np.int64)
    at = 0
    with disk_full_as_error(path, written=lambda: 8 * at), open(path, "wb") as fh:  # io.diskfull
        for k, h in wanted_shingles(meta, rows):
            fh.write(as_bytes(h.astype("<u8", copy=False)))  # not `tofile`: no errno on a full disk
            start[k], count[k] = at, h.shape[0]
            at += h.shape[0]
    return start, count


def shingle_store(table: ShardTable, ordinals: np.ndarray, work: str, workers: int = 1, progress=None):
    """A `verify.ShingleStore` of the given documents (sorted unique ordinals; store index k is
    ordinals[k]), built by streaming their source shards, one task per shard. `progress` (a
    `stages.progress.Progress` counting documents) advances as each shard finishes."""
    from textsieve.dedup.verify import ShingleStore

    ordinals = np.asarray(ordinals, dtype=np.int64)
    tasks, keys = [], []
    for i, local, meta, rows in source_rows(table, ordinals):
        tasks.append((meta, rows, os.path.join(work, f"s{i:06d}.bin")))
        keys.append(np.searchsorted(ordinals, local + table.base[i]))
    n = ordinals.shape[0]
    file_of, start, count = (np.zeros(n, dtype=np.int64) for _ in range(3))
    files = []
    for f, ((task, (st, ct)), key) in enumerate(zip(ordered_map(_shingles_task, tasks,
                                                                 workers=min(workers, max(1, len(tasks)))), keys)):
        files.append(task[2])
        file_of[key], start[key], count[key] = f, st, ct
        if progress is not None:
            progress.update(len(key), progress.docs + len(key))
    return ShingleStore(work, files, file_of, start, count)


def write_set(table: ShardTable, set_dir: str, i: int, columns: dict[str, pa.Array], info: dict,
              base: pa.Table | None = None) -> str:
    """Write shard i's attribute set file: id, shard, row (copied) + `columns`, atomically."""
    base = base if base is not None else table.read(i, ["id", "shard", "row"])
    out = base.select(["id", "shard", "row"])
    for name, arr in columns.items():
        out = out.append_column(name, arr)
    fs, root = fsspec.core.url_to_fs(set_dir)
    final = f"{root.rstrip('/')}/{table.rels[i]}"
    writer = AtomicParquetWriter(fs, final, out.schema)
    try:
        writer.write(out)
        writer.add_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    except BaseException as exc:
        writer.abort(exc)
        raise
    writer.close()
    return final


def first_lines(text: str, n: int = 2, width: int = 160) -> str:
    """The first `n` non-blank lines, each cut to `width` characters (for show and summaries)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:n]
    return " | ".join(ln if len(ln) <= width else ln[: width - 1] + "…" for ln in lines)


def iter_chunks(n: int, size: int) -> Iterable[tuple[int, int]]:
    for s in range(0, n, size):
        yield s, min(n, s + size)
