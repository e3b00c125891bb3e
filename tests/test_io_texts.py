"""textsieve.io.texts: the one reader of input texts and of an annotated folder's source texts.

The annotated folder is built by hand (key columns + the footer annotate writes), so these tests
pin the reader's contract without running annotate; the stage tests (dsir, dedup, report, eval
kl) cover it on real annotate output.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from textsieve.io.attributes import META_KEY
from textsieve.io.paths import expand_inputs
from textsieve.io.readers import ReadOptions
from textsieve.io.texts import (
    MissingSourceText,
    aligned_source_texts,
    annotated_documents,
    annotated_texts,
    corpus_documents,
    input_shards,
    input_texts,
    is_annotated,
    shard_documents,
    shard_texts,
    source_meta,
    source_texts,
)


def _jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": f"{path.stem}-{i}", "text": t}) + "\n" for i, t in enumerate(texts)))


def _annotated(tmp: Path, sources: dict[str, list[str]]) -> Path:
    """An annotate-like output folder: per source file a shard with id/shard/row and the footer
    naming the source shard and reader options."""
    src, out = tmp / "src", tmp / "ann"
    src.mkdir()
    out.mkdir()
    for name, texts in sources.items():
        _jsonl(src / name, texts)
    for shard in expand_inputs([str(src)]):
        n = len(sources[shard.rel])
        table = pa.table({"id": [f"{Path(shard.rel).stem}-{i}" for i in range(n)], "shard": [shard.rel] * n,
                          "row": pa.array(range(n), pa.int64())})
        meta = {"shard": shard.rel, "source_shard": asdict(shard), "read_options": asdict(ReadOptions())}
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        pq.write_table(table, out / (shard.rel.split(".")[0] + ".parquet"))
    # the inputs annotate records: sources are read only inside them (issue 16, item 17)
    (out / ".textsieve").mkdir()
    summary = {"stage": "annotate", "config": {"inputs": [str(src)]}}
    (out / ".textsieve" / "annotate.json").write_text(json.dumps(summary))
    return out


SOURCES = {"a.jsonl": ["alpha", "beta", "gamma", "delta"], "b.jsonl": ["one", "two"]}


def test_input_texts_in_order_and_metadata_skipped(tmp_path: Path) -> None:
    _jsonl(tmp_path / "b.jsonl", ["b0", "b1"])
    _jsonl(tmp_path / "a.jsonl", ["a0"])
    (tmp_path / "selection.json").write_text(json.dumps({"id": "meta", "text": "not a document"}) + "\n")
    assert list(input_texts([str(tmp_path)], skip_metadata=True)) == ["a0", "b0", "b1"]
    assert "not a document" in list(input_texts([str(tmp_path)]))


def test_shard_documents_hooks_see_every_shard_and_all_bytes(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a.jsonl", [f"t{i}" for i in range(2500)])
    _jsonl(tmp_path / "b.jsonl", [])
    _jsonl(tmp_path / "c.jsonl", ["last"])
    shards = input_shards([str(tmp_path)])
    seen: list[str] = []
    calls: list[tuple[int, int]] = []
    docs = list(shard_documents(shards, on_shard=lambda s: seen.append(s.rel),
                                progress=lambda d, b: calls.append((d, b))))
    assert len(docs) == 2501 and seen == ["a.jsonl", "b.jsonl", "c.jsonl"]  # the empty shard too
    assert sum(d for d, _ in calls) == 2501
    assert calls[-1][1] == sum(s.size for s in shards)
    assert [b for _, b in calls] == sorted(b for _, b in calls)


def test_annotated_folder_readers(tmp_path: Path) -> None:
    ann = _annotated(tmp_path, SOURCES)
    assert is_annotated(str(ann)) and not is_annotated(str(tmp_path / "src"))
    assert not is_annotated(str(tmp_path / "src" / "a.jsonl")) and not is_annotated(str(tmp_path / "missing"))
    assert [d.text for d in annotated_documents(str(ann))] == SOURCES["a.jsonl"] + SOURCES["b.jsonl"]
    assert annotated_texts(str(ann), {("a.jsonl", 2), ("b.jsonl", 0), ("a.jsonl", 99)}) == {
        ("a.jsonl", 2): "gamma", ("b.jsonl", 0): "one"}  # a row the source lacks is left out
    fs_path = str(ann / "a.parquet")
    fs = fsspec.filesystem("file")
    keys, texts = shard_texts(fs, fs_path)
    assert keys.column_names == ["id", "shard", "row"] and texts == SOURCES["a.jsonl"]
    meta = source_meta(fs, fs_path)
    assert source_texts(meta, [3, 1]) == {1: "beta", 3: "delta"}
    assert aligned_source_texts(meta, [3, 1, 3], fs_path) == ["delta", "beta", "delta"]
    # the pool of an evaluation: an annotated folder is re-read, anything else read as input files
    assert [d.text for d in corpus_documents([str(ann)])] == SOURCES["a.jsonl"] + SOURCES["b.jsonl"]
    assert [d.text for d in corpus_documents([str(tmp_path / "src" / "b.jsonl")])] == SOURCES["b.jsonl"]


def test_source_read_up_to_the_last_wanted_row(tmp_path: Path) -> None:
    ann = _annotated(tmp_path, {"a.jsonl": ["x", "y", "z"]})
    with (tmp_path / "src" / "a.jsonl").open("a") as fh:
        fh.write("{not json\n")  # a bad record after the rows wanted is never reached
    meta = source_meta(fsspec.filesystem("file"), str(ann / "a.parquet"))
    assert aligned_source_texts(dict(meta, read_options=dict(meta["read_options"], on_error="fail")), [1], "x") == ["y"]


def test_changed_source_is_an_input_error_naming_the_shard(tmp_path: Path) -> None:
    ann = _annotated(tmp_path, SOURCES)
    _jsonl(tmp_path / "src" / "a.jsonl", ["alpha"])  # shortened after annotate
    fs = fsspec.filesystem("file")
    with pytest.raises(MissingSourceText, match=r"a\.parquet: the source documents of rows \[1, 2, 3\]") as info:
        shard_texts(fs, str(ann / "a.parquet"))
    assert info.value.location == str(ann / "a.parquet")
    pq.write_table(pa.table({"id": ["x"]}), tmp_path / "plain.parquet")
    with pytest.raises(ValueError, match="not an annotate shard"):
        source_meta(fs, str(tmp_path / "plain.parquet"))


def test_classifier_fingerprint_names_every_shard(tmp_path: Path) -> None:
    """The classifier's training-data digest hashes each shard's name, empty shards included:
    `on_shard` must fire for them or model fingerprints would change."""
    _jsonl(tmp_path / "a.jsonl", ["x"])
    _jsonl(tmp_path / "b.jsonl", [])
    digest = hashlib.sha256()
    for doc in shard_documents(input_shards([str(tmp_path)]),
                               on_shard=lambda s: digest.update(f"\0shard:{s.rel}\0".encode())):
        digest.update(doc.text.encode() + b"\0")
    assert digest.hexdigest() == hashlib.sha256(b"\0shard:a.jsonl\0x\0\0shard:b.jsonl\0").hexdigest()
