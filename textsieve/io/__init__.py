"""Input layer: expand input arguments into shards and read Documents from them.

    shards = expand_inputs(["data/", "s3://bucket/crawl/*.warc.gz"])
    for shard in shards:
        reader = ShardReader(shard, ReadOptions(lang_field="meta.lang", on_error="skip"))
        for doc in reader:
            ...
        reader.skipped  # records left out, with file:line and reason

Formats: JSON Lines (.jsonl/.json/.ndjson, optionally .gz/.zst/.zstd), Parquet, WARC/ARC (responses),
WET (conversions) and folders of .txt files. See `paths` for the shard conventions and
`errors` for how problems are located. More formats: `register_reader("tsv", read_tsv,
suffixes=(".tsv",))` or a `textsieve.readers` entry point (docs/architecture.md, "Add a reader").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import InputError, SkippedRecord
    from .paths import Shard, detect_format, expand_inputs
    from .readers import ReadOptions, ShardReader, read_documents, register_reader, unregister_reader

#: each name's module; loaded on first use, so that importing one submodule (`io.overlap`, used
#: while the CLI builds its options) does not load pyarrow and fsspec through the readers
_WHERE = {"InputError": "errors", "SkippedRecord": "errors", "Shard": "paths", "detect_format": "paths",
          "expand_inputs": "paths", "ReadOptions": "readers", "ShardReader": "readers",
          "read_documents": "readers", "register_reader": "readers", "unregister_reader": "readers"}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "InputError",
    "ReadOptions",
    "Shard",
    "ShardReader",
    "SkippedRecord",
    "detect_format",
    "expand_inputs",
    "read_documents",
    "register_reader",
    "unregister_reader",
]
