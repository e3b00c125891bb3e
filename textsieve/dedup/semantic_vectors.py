"""The embedding set of an annotate folder as semantic dedup reads it: in batches, by ordinal.

Why not `embedding.store.iter_embeddings`: it returns a whole shard as one float32 matrix
(1 KB per document at 256-d), so one annotate shard of a million documents would need 1 GB,
whatever `--memory` says. Semantic dedup reads each shard in fixed batches of float16 rows
instead, and checks once that the set lines up with the annotate shards (same shards, same
row counts, built from the current annotate contents), so a document's corpus *ordinal*
(`dedup.corpus`) addresses its vector too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable
from textsieve.embedding.store import EmbeddingsMissing, column_name, resolve_model, set_name
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import attribute_set_dir, attribute_shards
from textsieve.io.publish import content_key, summary_of

READ_ROWS = 4096  # rows per batch read from an embedding shard (2 MB of float16 at 256-d)


@dataclass
class VectorSet:
    """The `sets/embed_<model>` set of an annotate folder, aligned with its `ShardTable`."""

    table: ShardTable
    model: str
    column: str
    paths: list[str]  # one per annotate shard, same order
    dim: int
    info: dict  # the set's summary.json (model fingerprint, pooling, ...)
    key: str  # content key of the set's published shards (changes when the embeddings do)

    @classmethod
    def open(cls, table: ShardTable, model: str | None) -> VectorSet:
        name = resolve_model(table.directory, model)
        fs, paths = attribute_shards(table.directory, set_name(name))  # refuses a set made before re-annotation
        root = attribute_set_dir(table.directory, set_name(name))
        root_path = fsspec.core.url_to_fs(root)[1].rstrip("/") + "/"
        by_rel = {p[len(root_path):]: p for p in paths}
        missing = [r for r in table.rels if r not in by_rel]
        if missing:
            raise EmbeddingsMissing(f"{root}: no embeddings for annotate shard {missing[0]}; run "
                                    f"`textsieve embed {table.directory}` again")
        ordered = [by_rel[r] for r in table.rels]
        col = column_name(name)
        dim = 0
        for rel, p, n in zip(table.rels, ordered, table.n_rows):
            with fs.open(p, "rb") as fh:
                pf = pq.ParquetFile(fh)
                rows, schema = pf.metadata.num_rows, pf.schema_arrow
            if col not in schema.names:
                raise EmbeddingsMissing(f"{p}: no column {col}; run `textsieve embed {table.directory}` again")
            if rows != int(n):
                raise EmbeddingsMissing(f"{p}: {rows:,} embeddings for the {int(n):,} documents of {rel}; run "
                                        f"`textsieve embed {table.directory}` again")
            dim = dim or int(schema.field(col).type.list_size)
        info = summary_of(root) or {}
        key = content_key(fs, root_path.rstrip("/"), sorted(by_rel))
        return cls(table, name, col, ordered, dim, info, key)

    @property
    def fingerprint(self) -> str:
        """The embedding model's fingerprint as the set records it ('' if unrecorded)."""
        return str(self.info.get("model_fingerprint", ""))

    def batches(self, i: int, rows: int = READ_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """Shard i's vectors as float16 (n, dim) batches, each with the row offset it starts at."""
        offset = 0
        with self.table.fs.open(self.paths[i], "rb") as fh:
            for rb in pq.ParquetFile(fh, pre_buffer=False).iter_batches(batch_size=rows, columns=[self.column],
                                                                    use_threads=False):
                col = rb.column(0)
                if col.null_count:
                    raise EmbeddingsMissing(f"{self.paths[i]}: documents without an embedding in {self.column}")
                flat = col.values.slice(col.offset * self.dim, len(col) * self.dim)
                yield offset, np.asarray(to_numpy(flat), np.float16).reshape(len(col), self.dim)
                offset += rb.num_rows

    def take(self, ordinals: np.ndarray) -> dict[int, np.ndarray]:
        """float32 vectors of the given ordinals (a few: summaries, `dedup show`), one batched
        pass over the shards that hold them."""
        out: dict[int, np.ndarray] = {}
        for i, local in self.table.split(np.unique(np.asarray(ordinals, dtype=np.int64))):
            for offset, v in self.batches(i):
                sel = local[(local >= offset) & (local < offset + v.shape[0])]
                for k in sel:
                    out[int(self.table.base[i] + k)] = v[int(k) - offset].astype(np.float32)
                if local[-1] < offset + v.shape[0]:
                    break
        return out
