"""The input layer on real text: shard expansion, every format, URLs, ids, fields, real archives."""

from __future__ import annotations

import gzip
import json
import sysconfig
import time
import uuid
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from _shared import SHARED

from textsieve.io import InputError, ReadOptions, Shard, ShardReader, detect_format, expand_inputs, read_documents

DEV = SHARED / "corpora" / "dev"
RAW = DEV / "raw"
WEB = DEV / "web_sample.jsonl.gz"
needs_corpora = pytest.mark.skipif(not WEB.exists(),
                                   reason=f"shared dev corpora not found at {DEV} (set TEXTSIEVE_SHARED)")
needs_raw = pytest.mark.skipif(not RAW.is_dir(),
                               reason=f"real WARC/WET/ARC files not found at {RAW} (set TEXTSIEVE_SHARED)")


@pytest.fixture(scope="module")
def web_lines() -> list[bytes]:
    """The first 300 raw lines of the real web sample (skips when the corpora are absent)."""
    if not WEB.exists():
        pytest.skip(f"shared dev corpora not found at {DEV} (set TEXTSIEVE_SHARED)")
    lines = []
    with gzip.open(WEB, "rb") as fh:
        for line in fh:
            lines.append(line.rstrip(b"\n"))
            if len(lines) == 300:
                break
    return lines


@pytest.fixture(scope="module")
def license_paragraphs() -> list[str]:
    """Paragraphs of the running Python's LICENSE.txt: real text that is always available."""
    path = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    return [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def _jsonl(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _read_all(shard: Shard, **options) -> tuple[list, ShardReader]:
    reader = ShardReader(shard, ReadOptions(**options))
    return list(reader), reader


# ---------------------------------------------------------------- expand_inputs


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("a.jsonl", "jsonl"), ("a.JSON.gz", "jsonl"), ("a.ndjson.zst", "jsonl"), ("a.parquet", "parquet"),
        ("c.warc", "warc"), ("c.warc.gz", "warc"), ("c.arc.gz", "warc"), ("c.wet", "wet"),
        ("c.warc.wet.gz", "wet"), ("r.txt", "txt"), ("c.warc.wat.gz", None), ("a.csv", None), ("a.gz", None),
    ],
)
def test_detect_format(name: str, fmt: str | None) -> None:
    assert detect_format(name) == fmt


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_folder_is_recursive_sorted_and_ignores_unknown_and_hidden(tmp_path: Path, license_paragraphs) -> None:
    line = json.dumps({"text": license_paragraphs[0]}).encode() + b"\n"
    _tree(tmp_path, {"b.jsonl": line, "a/z.jsonl.gz": gzip.compress(line), "a/notes.md": b"x",
                     ".hidden/c.jsonl": line, "a/.d.jsonl": line, "a/y.parquet": b""})
    shards = expand_inputs([str(tmp_path)])
    assert [(s.rel, s.format) for s in shards] == [
        ("a/y.parquet", "parquet"), ("a/z.jsonl.gz", "jsonl"), ("b.jsonl", "jsonl")]
    assert shards[1].path == str(tmp_path / "a/z.jsonl.gz")
    assert shards[1].size == (tmp_path / "a/z.jsonl.gz").stat().st_size
    # Same result whatever the input order or duplication; a named file gets its basename.
    again = expand_inputs([str(tmp_path / "b.jsonl"), str(tmp_path)])
    assert [s.rel for s in again] == [s.rel for s in shards]
    assert expand_inputs([str(tmp_path / "a" / "z.jsonl.gz")])[0].rel == "z.jsonl.gz"


def test_glob_rel_is_relative_to_the_non_magic_prefix(tmp_path: Path) -> None:
    line = b'{"text": "x"}\n'
    _tree(tmp_path, {"2024/01/a.jsonl": line, "2024/02/b.jsonl": line, "2024/02/c.txt": b"t", "2023/d.jsonl": line})
    shards = expand_inputs([str(tmp_path / "2024" / "**" / "*.jsonl")])
    assert [s.rel for s in shards] == ["01/a.jsonl", "02/b.jsonl"]
    # A glob matching folders walks them.
    shards = expand_inputs([str(tmp_path / "202*")])
    assert [s.rel for s in shards] == ["2023/d.jsonl", "2024/01/a.jsonl", "2024/02/_txt", "2024/02/b.jsonl"]


def test_txt_files_of_a_folder_form_one_shard(tmp_path: Path, license_paragraphs) -> None:
    paras = license_paragraphs[:3]
    _tree(tmp_path, {"docs/b.txt": paras[1].encode(), "docs/a.txt": paras[0].encode(),
                     "docs/sub/c.txt": paras[2].encode(), "top.txt": b"", "docs/x.jsonl": b""})
    shards = expand_inputs([str(tmp_path)])
    assert [(s.rel, s.format) for s in shards] == [("_txt", "txt"), ("docs/_txt", "txt"), ("docs/sub/_txt", "txt"),
                                                  ("docs/x.jsonl", "jsonl")]
    docs_shard = shards[1]
    assert docs_shard.path == str(tmp_path / "docs")
    assert docs_shard.members == (str(tmp_path / "docs/a.txt"), str(tmp_path / "docs/b.txt"))
    assert docs_shard.size == len(paras[0]) + len(paras[1])
    docs = list(read_documents(docs_shard, ReadOptions()))
    assert [(d.id, d.row, d.text) for d in docs] == [("docs/a.txt", 0, paras[0]), ("docs/b.txt", 1, paras[1])]
    top = list(read_documents(shards[0], ReadOptions()))
    assert [(d.id, d.text) for d in top] == [("top.txt", "")]  # an empty file is a valid, empty document
    # Named .txt files of one folder are one shard too, with basenames as ids.
    named = expand_inputs([str(tmp_path / "docs/b.txt"), str(tmp_path / "docs/a.txt")])
    assert [(s.rel, len(s.members)) for s in named] == [("_txt", 2)]
    assert [d.id for d in read_documents(named[0], ReadOptions())] == ["a.txt", "b.txt"]


def test_memory_and_file_urls(tmp_path: Path, license_paragraphs) -> None:
    records = [{"id": f"lic-{i}", "text": p} for i, p in enumerate(license_paragraphs[:5])]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    root = f"ts-{uuid.uuid4().hex}"
    mem = fsspec.filesystem("memory")
    mem.pipe(f"/{root}/c/a.jsonl", data)
    mem.pipe(f"/{root}/c/d/b.jsonl.zst", zstandard.ZstdCompressor().compress(data))
    mem.pipe(f"/{root}/c/d/t.txt", license_paragraphs[7].encode())
    try:
        shards = expand_inputs([f"memory://{root}/c"])
        assert [(s.rel, s.format) for s in shards] == [
            ("a.jsonl", "jsonl"), ("d/_txt", "txt"), ("d/b.jsonl.zst", "jsonl")]
        assert shards[0].path == f"memory:///{root}/c/a.jsonl"
        for shard in (shards[0], shards[2]):
            assert [(d.id, d.text) for d in read_documents(shard, ReadOptions())] == [
                (r["id"], r["text"]) for r in records]
        assert [d.text for d in read_documents(shards[1], ReadOptions())] == [license_paragraphs[7]]
        assert [s.rel for s in expand_inputs([f"memory://{root}/c/**/*.zst"])] == ["d/b.jsonl.zst"]
    finally:
        mem.rm(f"/{root}", recursive=True)

    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    shards = expand_inputs([(tmp_path / "a.jsonl.gz").as_uri()])
    assert shards[0].path == (tmp_path / "a.jsonl.gz").as_uri()
    assert [d.id for d in read_documents(shards[0], ReadOptions())] == [r["id"] for r in records]


# ---------------------------------------------------------------- JSON Lines


@pytest.mark.parametrize("suffix, compress", [
    (".jsonl", lambda b: b), (".jsonl.gz", gzip.compress), (".ndjson.zst", zstandard.ZstdCompressor().compress),
])
def test_jsonl_formats_read_real_web_text(tmp_path: Path, web_lines, suffix, compress) -> None:
    path = tmp_path / f"web{suffix}"
    path.write_bytes(compress(_jsonl(web_lines)))
    [shard] = expand_inputs([str(path)])
    docs, reader = _read_all(shard, lang_field="meta.lang")
    expected = [json.loads(line) for line in web_lines]
    assert [d.id for d in docs] == [r["id"] for r in expected]
    assert [d.text for d in docs] == [r["text"] for r in expected]
    assert [d.lang for d in docs] == [r["meta"]["lang"] for r in expected]
    assert [d.url for d in docs] == [r.get("url") for r in expected]
    assert [d.row for d in docs] == list(range(len(expected)))
    # meta is the record without its text, not a copy of it.
    assert docs[0].meta == {k: v for k, v in expected[0].items() if k != "text"}
    assert reader.bytes_read == shard.size and reader.skipped == []


def test_ids_rows_and_blank_lines(tmp_path: Path, license_paragraphs) -> None:
    p = license_paragraphs
    lines = [
        json.dumps({"id": "given", "text": p[0]}),
        "",
        json.dumps({"text": p[1]}),  # no id
        "   ",
        json.dumps({"id": None, "text": p[2]}),
        json.dumps({"id": 42, "text": ""}),  # integer id, empty text (valid)
    ]
    path = tmp_path / "sub" / "x.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines))  # no final newline
    [shard] = expand_inputs([str(tmp_path)])
    docs, _ = _read_all(shard)
    assert [(d.id, d.row) for d in docs] == [("given", 0), ("sub/x.jsonl/2", 2), ("sub/x.jsonl/4", 4), ("42", 5)]
    assert docs[-1].text == ""
    # Stable: a second read gives the same ids.
    assert [d.id for d in read_documents(shard, ReadOptions())] == [d.id for d in docs]


def test_dotted_fields_and_literal_keys(tmp_path: Path, license_paragraphs) -> None:
    records = [
        {"doc": {"body": license_paragraphs[0], "key": "k0"}, "meta": {"lang": "en"}, "link": "https://www.python.org/psf/"},
        {"doc": {"body": license_paragraphs[1], "key": "k1"}, "meta.lang": "de"},  # flat dotted key wins
        {"doc": {"body": license_paragraphs[2]}, "meta": "not an object"},  # path through a non-object: absent
    ]
    path = tmp_path / "n.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    [shard] = expand_inputs([str(path)])
    docs, _ = _read_all(shard, text_field="doc.body", id_field="doc.key", lang_field="meta.lang", url_field="link")
    assert [(d.id, d.lang, d.url, d.text) for d in docs] == [
        ("k0", "en", "https://www.python.org/psf/", license_paragraphs[0]),
        ("k1", "de", None, license_paragraphs[1]),
        ("n.json/2", None, None, license_paragraphs[2]),
    ]
    assert docs[0].meta["doc"] == {"key": "k0"}  # the text was taken out of the record


def test_large_document_and_concatenated_gzip_members(tmp_path: Path, license_paragraphs) -> None:
    big = ("\n\n".join(license_paragraphs) + "\n") * (20_000_000 // sum(map(len, license_paragraphs)) + 1)
    assert len(big) > 20_000_000
    lines = [json.dumps({"id": "big", "text": big}).encode(),
             json.dumps({"id": "small", "text": license_paragraphs[1]}).encode()]
    path = tmp_path / "big.jsonl.gz"
    # Two gzip members, as parallel compressors write them; the split falls inside the big line.
    data = _jsonl(lines)
    path.write_bytes(gzip.compress(data[:1_000_000], 1) + gzip.compress(data[1_000_000:], 1))
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions())
    seen = []
    for doc in reader:
        seen.append((doc.id, doc.row, len(doc.text)))
        assert 0 < reader.bytes_read <= shard.size
    assert seen == [("big", 0, len(big)), ("small", 1, len(license_paragraphs[1]))]
    assert reader.bytes_read == shard.size


def test_isal_and_zlib_inflate_the_same_records(tmp_path: Path, web_lines, monkeypatch) -> None:
    """gzip members are inflated by ISA-L when `isal` is installed, else by zlib: the same
    records either way, over two members with zero padding between them."""
    import zlib

    import textsieve.io.compression as compression

    data = b"\n".join(web_lines) + b"\n"
    third = len(data) // 3
    path = tmp_path / "web.jsonl.gz"
    path.write_bytes(gzip.compress(data[:third], 6) + b"\0" * 7 + gzip.compress(data[third:], 1))
    [shard] = expand_inputs([str(path)])
    got = {}
    for name, module in (("default", compression._inflate), ("zlib", zlib)):
        monkeypatch.setattr(compression, "_inflate", module)
        got[name] = [(d.id, d.text) for d in ShardReader(shard, ReadOptions())]
    assert got["default"] == got["zlib"] and len(got["zlib"]) == len(web_lines)


@needs_corpora
def test_reads_the_whole_web_sample_fast() -> None:
    [shard] = expand_inputs([str(WEB)])
    start = time.perf_counter()
    docs, reader = _read_all(shard, lang_field="meta.lang")
    elapsed = time.perf_counter() - start
    assert len(docs) == 15_263 and reader.skipped == []
    assert sum(len(d.text) for d in docs) > 47_000_000
    assert len({d.id for d in docs}) == len(docs)
    assert elapsed < 3.0, f"reading 15k docs took {elapsed:.2f}s"  # ~0.4 s on 2 cores; generous for CI noise


@needs_corpora
def test_a_zstd_file_of_one_big_frame_reads_whole(tmp_path: Path) -> None:
    """The dev web sample (53 MB) as one zstd frame, as `zstd` writes it: every document, the
    same as from the .gz. (Before: the check of a frame over 16 MiB reset the decoder's shared
    context, and every line after the first 16 MiB was lost as "corrupt zstd data".)"""
    raw = gzip.decompress(WEB.read_bytes())
    path = tmp_path / "web.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(raw))
    [shard] = expand_inputs([str(path)])
    docs, reader = _read_all(shard, lang_field="meta.lang")
    assert reader.skipped == [] and len(docs) == 15_263
    [gz] = expand_inputs([str(WEB)])
    assert [d.text for d in docs] == [d.text for d in _read_all(gz, lang_field="meta.lang")[0]]


# ---------------------------------------------------------------- Parquet


def test_parquet_with_nested_struct_lang(tmp_path: Path, web_lines) -> None:
    records = [json.loads(line) for line in web_lines]
    table = pa.table({
        "id": [r["id"] if i % 7 else None for i, r in enumerate(records)],
        "text": [r["text"] for r in records],
        "meta": [{"lang": r["meta"]["lang"], "score": r["meta"].get("lang_score")} for r in records],
        "url": [r.get("url") for r in records],
    })
    path = tmp_path / "web.parquet"
    pq.write_table(table, path, row_group_size=100)
    [shard] = expand_inputs([str(path)])
    docs, reader = _read_all(shard, lang_field="meta.lang")
    assert [d.row for d in docs] == list(range(len(records)))
    assert [d.text for d in docs] == [r["text"] for r in records]
    assert [d.id for d in docs] == [r["id"] if i % 7 else f"web.parquet/{i}" for i, r in enumerate(records)]
    assert [d.lang for d in docs] == [r["meta"]["lang"] for r in records]
    assert [d.url for d in docs] == [r.get("url") for r in records]
    assert reader.bytes_read == shard.size


def test_parquet_in_memory_filesystem(license_paragraphs) -> None:
    table = pa.table({"content": license_paragraphs, "doc_id": [f"p{i}" for i in range(len(license_paragraphs))]})
    root = f"ts-{uuid.uuid4().hex}"
    with fsspec.open(f"memory://{root}/t.parquet", "wb") as fh:
        pq.write_table(table, fh)
    try:
        [shard] = expand_inputs([f"memory://{root}/*.parquet"])
        docs, _ = _read_all(shard, text_field="content", id_field="doc_id")
        assert [(d.id, d.text) for d in docs] == [(f"p{i}", p) for i, p in enumerate(license_paragraphs)]
    finally:
        fsspec.filesystem("memory").rm(f"/{root}", recursive=True)


# ---------------------------------------------------------------- WARC / WET / ARC (real files)


@needs_raw
def test_real_warc_files() -> None:
    shards = {s.rel: s for s in expand_inputs([str(RAW)])}
    assert "whirlwind.warc.wat.gz" not in shards  # WAT holds metadata, not text: ignored in folders
    counts = {rel: len(list(read_documents(s, ReadOptions()))) for rel, s in shards.items()}
    assert counts == {
        "dolma_sample-0000.warc.gz": 22, "dolma_sample-0001.warc.gz": 15, "warcio_example.arc.gz": 1,
        "warcio_example.warc.gz": 1, "whirlwind.warc.gz": 1, "whirlwind.warc.wet.gz": 1,
    }
    [doc] = read_documents(shards["whirlwind.warc.gz"], ReadOptions())
    assert doc.id == "urn:uuid:2aabeff2-67f5-4608-8466-e87c6296e2b6"
    assert doc.url == "https://an.wikipedia.org/wiki/Escopete"
    assert doc.row == 2  # warcinfo, request, response: row counts every record
    assert doc.text.startswith("<!DOCTYPE html>") and "Escopete" in doc.text  # HTML as is
    assert doc.meta["content_type"].startswith("text/html")
    docs = list(read_documents(shards["dolma_sample-0000.warc.gz"], ReadOptions()))
    assert len({d.id for d in docs}) == 22 and all(d.url.startswith("http") for d in docs)
    assert [d.row for d in docs] == sorted(d.row for d in docs)


@needs_raw
def test_real_wet_and_arc_files() -> None:
    [wet] = expand_inputs([str(RAW / "whirlwind.warc.wet.gz")])
    [doc] = read_documents(wet, ReadOptions())
    assert doc.id == "urn:uuid:ba729a40-ff84-4085-8d48-0a5b2ee0c42d"
    assert doc.url == "https://an.wikipedia.org/wiki/Escopete"
    assert doc.text.startswith("Escopete - Biquipedia, a enciclopedia libre\n")
    assert "Menú principal" in doc.text  # decoded as UTF-8
    assert doc.meta["content_language"] == "spa"

    [arc] = expand_inputs([str(RAW / "warcio_example.arc.gz")])
    first = list(read_documents(arc, ReadOptions()))
    assert [(d.id, d.url, d.row) for d in first] == [("warcio_example.arc.gz/1", "http://example.com/", 1)]
    assert "<title>Example Domain</title>" in first[0].text
    assert [d.id for d in read_documents(arc, ReadOptions())] == [first[0].id]  # stable across reads


@needs_raw
def test_warc_over_file_url_and_progress() -> None:
    [shard] = expand_inputs([(RAW / "dolma_sample-0001.warc.gz").as_uri()])
    assert shard.path.startswith("file://")
    reader = ShardReader(shard, ReadOptions())
    progress = []
    for _ in reader:
        progress.append(reader.bytes_read)
    assert len(progress) == 15 and progress == sorted(progress) and 0 < progress[-1] <= shard.size


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="on_error"):
        ReadOptions(on_error="ignore")


def test_input_error_survives_pickling() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(InputError.at("data/a.jsonl.gz:17", "malformed JSON")))
    assert str(err) == "data/a.jsonl.gz:17: malformed JSON"
    assert (err.location, err.reason) == ("data/a.jsonl.gz:17", "malformed JSON")


def test_gzip_writer_is_deterministic_headerless_and_read_back(tmp_path):
    """Document shards are gzip members without a name or timestamp (ISA-L level 3 where `isal` is
    installed, zlib level 6 otherwise): the same lines give the same bytes, and both gzip and
    textsieve's reader read them back."""
    import io

    from textsieve.io.compression import gzip_writer, iter_chunks

    lines = b"".join(b'{"id":"d%d","text":"%s"}\n' % (i, b"word " * (i % 50)) for i in range(2000))

    def written() -> bytes:
        buf = io.BytesIO()
        with gzip_writer(buf) as gz:
            gz.write(lines)
        assert not buf.closed  # the caller's file stays open (atomic_open closes and renames it)
        return buf.getvalue()

    one, two = written(), written()
    assert one == two and one[:2] == b"\x1f\x8b" and one[4:8] == b"\0\0\0\0"  # no mtime
    assert not one[3] & 0x08  # FLG.FNAME unset: no file name
    assert gzip.decompress(one) == lines
    assert b"".join(chunk for chunk, _ in iter_chunks(io.BytesIO(one), "gzip")) == lines
    assert len(one) < len(lines) / 4
