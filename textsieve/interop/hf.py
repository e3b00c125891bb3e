"""Hugging Face `datasets` as annotate input, and attributes joined back as dataset columns.

Why: most users' corpora are Hugging Face datasets, whose tables already sit on disk as Arrow
IPC files (a `save_to_disk` folder, `load_dataset`'s cache, or Parquet/Arrow shards laid out as
on the Hub). `annotate` reads those files in place (`textsieve.io.arrow_ipc`), so the text is
never copied; only a dataset that is not backed one-to-one by its files (built in memory, or a
`select`/`shuffle` view with an indices mapping) is written once, as one Parquet file named by
its fingerprint. Attribute rows keep (`shard`, `row`) into those files, so
`attributes_as_columns` puts every document's attributes at its position in the dataset and
returns the dataset with them as extra columns (concatenated beside the original table: the
text columns are still the memory-mapped ones). `select` copies every column of an Arrow or
Parquet source with its type, so a dataset's other columns survive selection.

`datasets` is an optional dependency (`pip install 'textsieve[hf]'`); it is imported only when a
`Dataset` object is handled.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve.errors import TextsieveError
from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.saved_datasets import saved_dataset_files

MATERIALIZED_SUFFIX = ".parquet"
BAND_PREFIX = "signature_sim"  # MinHash bands: binary lists, not useful as dataset columns


class HfError(TextsieveError, ValueError):
    """A Hugging Face dataset (or folder) that cannot be used as asked; one line."""


def is_dataset(obj: Any) -> bool:
    """Whether `obj` is a `datasets.Dataset`, without importing `datasets`."""
    return any(c.__name__ == "Dataset" and c.__module__.startswith("datasets") for c in type(obj).__mro__)


def _is_dataset_dict(obj: Any) -> bool:
    return any(c.__name__ in ("DatasetDict", "IterableDataset", "IterableDatasetDict")
               and c.__module__.startswith("datasets") for c in type(obj).__mro__)


def arrow_files(ds: Any) -> list[str] | None:
    """The Arrow files that hold exactly `ds`'s rows and columns, in order, or None when the
    dataset is not backed one-to-one by files (in memory, an indices mapping, added columns)."""
    if getattr(ds, "_indices", None) is not None:
        return None
    files = [c["filename"] for c in (ds.cache_files or [])]
    if not files:
        return None
    from textsieve.io.arrow_ipc import read_table

    rows = 0
    for f in files:
        table = read_table(f)  # memory-mapped: reads the schema and batch headers only
        if table.schema.names != ds.data.schema.names:
            return None
        rows += table.num_rows
    if rows != ds.num_rows or len({posixpath.basename(f) for f in files}) != len(files):
        return None
    return files


def materialized_path(ds: Any, directory: str) -> str:
    """Where a dataset that is not backed by its files is written once for annotate."""
    return f"{directory.rstrip('/')}/{ds._fingerprint}{MATERIALIZED_SUFFIX}"


def documents_dir(output: str) -> str:
    """The default folder for materialized datasets: beside annotate's `output`, never in it."""
    return f"{output.rstrip('/')}-documents"


def dataset_inputs(inputs: Any, output: str | None, directory: str | None = None) -> Any:
    """Annotate's inputs for `inputs`: a `Dataset` becomes its Arrow files (or, when it is not
    backed by them, one Parquet file written under `directory`, default `documents_dir(output)`);
    a `save_to_disk` folder becomes the Arrow files its state lists. Anything else (paths, globs,
    a folder of Hub-layout Parquet/Arrow shards) is returned unchanged."""
    if _is_dataset_dict(inputs):
        raise HfError("annotate takes one datasets.Dataset: pick a split, e.g. ds['train'] (an IterableDataset "
                      "has no files to read; load it without streaming=True)")
    if is_dataset(inputs):
        files = arrow_files(inputs)
        if files is not None:
            return files
        if output is None and directory is None:
            return inputs  # annotate reports the missing output
        target = materialized_path(inputs, directory or documents_dir(str(output)))
        fs, path = fsspec.core.url_to_fs(target)
        if not fs.exists(path):
            fs.makedirs(posixpath.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}"
            with fs.open(tmp, "wb") as fh:
                inputs.to_parquet(fh)
            fs.mv(tmp, path)
        return [target]
    if isinstance(inputs, (str, os.PathLike)):
        files = saved_dataset_files(os.fspath(inputs))
        return files if files is not None else inputs
    return inputs


def _norm(path: str) -> str:
    return os.path.realpath(path) if "://" not in path else path


def _offsets(ds: Any, sources: dict[str, str]) -> dict[str, int]:
    """{attribute shard rel: index in `ds` of its row 0}, from the source file each rel was read
    from; raises when the attributes were not made from this dataset."""
    files = arrow_files(ds)
    starts: dict[str, int] = {}
    if files is not None:
        at = 0
        from textsieve.io.arrow_ipc import read_table

        for f in files:
            starts[_norm(f)] = at
            at += read_table(f).num_rows
    own = f"{ds._fingerprint}{MATERIALIZED_SUFFIX}"
    out: dict[str, int] = {}
    for rel, src in sources.items():
        if _norm(src) in starts:
            out[rel] = starts[_norm(src)]
        elif posixpath.basename(src.split("::", 1)[0]) == own:
            out[rel] = 0
        else:
            raise HfError(f"attribute shard {rel!r} was made from {src}, which is not a file of this dataset "
                          f"(its files: {', '.join(files or []) or 'none; it was materialized as ' + own}); "
                          "pass the dataset the attributes were annotated from")
    return out


def attributes_as_columns(ds: Any, directory: str, columns: Sequence[str] | None = None, flat: bool = False) -> Any:
    """`ds` with the attributes of the annotate folder `directory` (made from `ds`) as extra
    columns, row for row; a document annotate skipped gets nulls. `columns` picks attribute
    columns (default: all but the MinHash bands). Refuses a column name `ds` already has.
    `flat`: each doc-level signal as its plain score (`io.attribute_view`'s flat view)."""
    import datasets

    from textsieve.io.attribute_view import KEYS, layout, to_arrow
    from textsieve.io.attributes import attribute_shards, read_shard_meta

    if not is_dataset(ds):
        raise HfError(f"attributes_as_columns needs a datasets.Dataset, not {type(ds).__name__}")
    fs, paths = attribute_shards(directory)
    sources: dict[str, str] = {}
    for p in paths:
        meta = read_shard_meta(fs, p)
        if "source_shard" not in meta:
            raise HfError(f"{p} records no source shard; it is not an annotate output")
        sources[meta.get("shard") or meta["source_shard"]["rel"]] = meta["source_shard"]["path"]
    offsets = _offsets(ds, sources)
    lay = layout(directory)
    wanted = list(columns) if columns is not None else [
        c for c in (lay.flat_columns if flat else lay.columns) if c not in KEYS and not c.startswith(BAND_PREFIX)]
    clash = [c for c in wanted if c in ds.column_names]
    if clash:
        raise HfError(f"the dataset already has a column {clash[0]!r}; pick columns= without it "
                      f"or rename it (ds.rename_column)")
    table = to_arrow(directory, ["shard", "row", *wanted], flat)
    shard_col = table.column("shard").to_pylist()
    pos = np.asarray(to_numpy(table.column("row")), dtype=np.int64) + np.fromiter(
        (offsets[s] for s in shard_col), np.int64, len(shard_col))
    if len(pos) and (pos.min() < 0 or pos.max() >= ds.num_rows):
        raise HfError(f"{directory}: attribute rows point past the dataset's {ds.num_rows:,} rows; "
                      "were they annotated from another version of it?")
    index = np.full(ds.num_rows, -1, dtype=np.int64)
    index[pos] = np.arange(len(pos), dtype=np.int64)
    take = pa.array(index, pa.int64(), mask=index < 0)
    extra = pa.table({c: table.column(c).take(take) for c in wanted})
    from datasets.table import InMemoryTable

    return datasets.concatenate_datasets([ds, datasets.Dataset(InMemoryTable(extra))], axis=1)
