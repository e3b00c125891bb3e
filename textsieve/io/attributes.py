"""Attribute shards on storage: finding them and reading the metadata textsieve writes into them.

Every stage that adds attributes writes Parquet files whose footer carries a JSON document under
the key `textsieve` (version, settings fingerprint, source shard, counts, skipped records).
"""

from __future__ import annotations

import json

import fsspec
import pyarrow.parquet as pq

META_KEY = b"textsieve"


def attribute_shards(directory: str) -> tuple[fsspec.AbstractFileSystem, list[str]]:
    """The finished attribute shards under a stage's output folder, sorted (temporary files,
    which start with '.', are never listed)."""
    fs, root = fsspec.core.url_to_fs(directory)
    paths = sorted(p for p in fs.find(root) if p.endswith(".parquet") and "/." not in p)
    if not paths:
        raise FileNotFoundError(f"no attribute shards (*.parquet) under {directory}")
    return fs, paths


def read_shard_meta(fs: fsspec.AbstractFileSystem, path: str) -> dict:
    """The textsieve footer metadata of one shard ({} when absent)."""
    with fs.open(path, "rb") as fh:
        meta = pq.ParquetFile(fh).metadata.metadata or {}
    raw = meta.get(META_KEY)
    return json.loads(raw) if raw else {}
