"""The attribute-shard writer (`io.atomic.AtomicParquetWriter`): its files depend on the rows alone,
a huge row is written without copying it, and span offsets are not dictionary-encoded."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io import atomic
from textsieve.signals.spans import span_type


def _table(lines_per_row: list[int]) -> pa.Table:
    spans = [[{"start": 10 * i, "end": 10 * i + 9, "score": float(i % 7) / 7} for i in range(n)]
             for n in lines_per_row]
    return pa.table({"id": [f"d{i}" for i in range(len(spans))], "ts_length": [10 * n for n in lines_per_row],
                     "rps_lines_num_words": pa.array(spans, span_type("float"))})


def _write(path: Path, batches: list[pa.Table]) -> bytes:
    writer = atomic.AtomicParquetWriter(fsspec.filesystem("file"), str(path), batches[0].schema, row_group_rows=64)
    for b in batches:
        writer.write(b)
    writer.close()
    return path.read_bytes()


def test_same_rows_same_bytes_however_batched_with_a_huge_row(tmp_path: Path, monkeypatch) -> None:
    """A row over HUGE_ROW_ITEMS keeps a chunk of its own (no copy of its spans); the chunks
    around it are cut by the rows alone, so any batching gives the same file."""
    monkeypatch.setattr(atomic, "HUGE_ROW_ITEMS", 500)
    table = _table([3, 5, 0, 2000, 4, 1, 700, 2] * 20)
    assert atomic.huge_rows(table.slice(0, 8)) == [3, 6]
    one = _write(tmp_path / "one.parquet", [table])
    cuts = [0, 3, 4, 5, 17, 30, 64, 65, 100, table.num_rows]
    many = _write(tmp_path / "many.parquet", [table.slice(a, b - a) for a, b in zip(cuts, cuts[1:])])
    assert one == many
    assert pq.read_table(tmp_path / "one.parquet").equals(table)


def test_span_offsets_are_delta_coded_and_scores_use_a_dictionary(tmp_path: Path) -> None:
    """Offsets grow along a document, so a dictionary only costs (a 30 MB document's lines held
    +120 MB of dictionary pages while written) and their differences are small; scores repeat,
    so theirs stays. MinHash bands all have one length: stored once per block."""
    table = _table([40, 3, 12]).append_column("signature_sim0.8", pa.array(
        [[bytes([i, j]) * 4 for j in range(9)] for i in range(3)], pa.list_(pa.binary())))
    _write(tmp_path / "s.parquet", [table])
    meta = pq.ParquetFile(tmp_path / "s.parquet").metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    for leaf in ("start", "end"):
        assert "DELTA_BINARY_PACKED" in encodings[f"rps_lines_num_words.list.element.{leaf}"]
        assert not any("DICTIONARY" in e for e in encodings[f"rps_lines_num_words.list.element.{leaf}"])
    assert "DELTA_LENGTH_BYTE_ARRAY" in encodings["signature_sim0.8.list.element"]
    assert any("DICTIONARY" in e for e in encodings["rps_lines_num_words.list.element.score"])
    assert any("DICTIONARY" in e for e in encodings["id"])
    # every reader textsieve uses, and users' usual ones, read the delta pages back
    assert pq.read_table(tmp_path / "s.parquet").equals(table)
    import duckdb
    import polars as pl

    rows = duckdb.sql(f"SELECT rps_lines_num_words, \"signature_sim0.8\" FROM '{tmp_path / 's.parquet'}'").fetchall()
    assert [r[0] for r in rows] == table.column("rps_lines_num_words").to_pylist()
    assert [r[1] for r in rows] == table.column("signature_sim0.8").to_pylist()
    assert pl.read_parquet(tmp_path / "s.parquet")["rps_lines_num_words"].to_list() == \
        table.column("rps_lines_num_words").to_pylist()
