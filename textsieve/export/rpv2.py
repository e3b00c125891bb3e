"""Export annotate output as RedPajama-V2 quality-signal JSONL (spec §2.3, golden README §2).

One object per document: `{"id", "quality_signals": {name: [[start, end, score], ...]},
"minhash": {"signature_sim1.0": [hex band, ...] | null, ...}}`. Scores keep their JSON type
(int signals are int64 columns, the rest doubles), and Python's `json` prints floats with the
shortest round-trip repr, as RPv2's msgspec does.
"""

from __future__ import annotations

import gzip
import json

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io.atomic import atomic_open
from textsieve.io.attributes import attribute_shards


def _is_span_column(typ: pa.DataType) -> bool:
    """RPv2 span columns are list<struct<start, end, score>>; scalar twins, lengths, language
    codes and MinHash bands are textsieve conveniences that RPv2's records do not have."""
    if not pa.types.is_list(typ) or not pa.types.is_struct(typ.value_type):
        return False
    return {typ.value_type.field(i).name for i in range(typ.value_type.num_fields)} == {"start", "end", "score"}


def export_rpv2(directory: str, output: str, overwrite: bool = False) -> int:
    """Write every document of every shard under `directory` to `output` (gzip if .gz): one
    JSONL record file when `output` ends in .jsonl or .jsonl.gz, else RPv2's released layout
    in the folder `output` (`export_rpv2_release`)."""
    if not output.rstrip("/").endswith((".jsonl", ".jsonl.gz")):
        return export_rpv2_release(directory, output, overwrite)
    from textsieve.io.locations import source_locations
    from textsieve.io.overlap import check_apart

    check_apart("export rpv2", output, [directory, *source_locations(directory)])
    fs, paths = attribute_shards(directory)
    out_fs, out_path = fsspec.core.url_to_fs(output)
    n = 0
    with atomic_open(out_fs, out_path, "wb") as raw:
        fh = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") if out_path.endswith(".gz") else raw
        for path in paths:
            with fs.open(path, "rb") as src:
                pf = pq.ParquetFile(src)
                schema = pf.schema_arrow
                signal_cols = [f.name for f in schema if _is_span_column(f.type)]
                minhash_cols = [f.name for f in schema if f.name.startswith("signature_sim")]
                for batch in pf.iter_batches(batch_size=2000):
                    cols = batch.to_pydict()
                    for i, doc_id in enumerate(cols["id"]):
                        record = {"id": doc_id, "quality_signals": {
                            name: None if cols[name][i] is None else  # a document without that signal
                            [[s["start"], s["end"], s["score"]] for s in cols[name][i]]
                            for name in signal_cols}}
                        if minhash_cols:
                            record["minhash"] = {
                                name: None if cols[name][i] is None else [b.hex() for b in cols[name][i]]
                                for name in minhash_cols}
                        fh.write(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
                        fh.write(b"\n")
                        n += 1
        if fh is not raw:
            fh.close()
    return n


def export_rpv2_release(directory: str, output: str, overwrite: bool = False) -> int:
    """Write the attribute shards under `directory` in RPv2's released layout under `output`
    (`quality_signals/`, `minhash/` and, from the `sets/dedup_exact` set, `duplicates/`; the
    documents stay where they are). A shard made by `import rpv2` is written back exactly as it
    was released (same files, records, key order); an annotate shard whose input lies in the
    layout (`{snapshot}/{shard}/{lang}_{bucket}.json.gz`) gets records with what it knows. The
    files are published as one unit; a folder holding other files needs `overwrite`."""
    from textsieve.export.rpv2_layout import write_release

    return write_release(directory, output, overwrite)
