"""Input edge cases (the audit of issue 16, items 7 (symbolic links), 8 (per row group / per gzip member skips),
9 (WARC Content-Length), 10 (bookkeeping files are not documents), 12 (lone surrogates in any
field) and 18 (zip:// chains). Each test reproduces the reported defect on real text (slices of
the shared dev corpus and real WARC files) and checks the fixed behaviour; the docstrings give
the before -> after."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import re
import shutil
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from textsieve import api
from textsieve.io import InputError, ReadOptions, ShardReader, SkippedRecord, compression, expand_inputs

MODES = pytest.mark.parametrize("mode", ["fail", "skip"])
SIGNALS = "rps_doc_word_count"  # one cheap signal: these tests are about reading, not signals


@pytest.fixture(scope="module")
def web_lines(dev_dir: Path) -> list[bytes]:
    """The first 200 raw JSON Lines of the real web sample."""
    out = []
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rb") as fh:
        for line in fh:
            out.append(line.rstrip(b"\n"))
            if len(out) == 200:
                break
    return out


@pytest.fixture(scope="module")
def raw_dir(dev_dir: Path) -> Path:
    raw = dev_dir / "raw"
    if not (raw / "dolma_sample-0000.warc.gz").exists():
        pytest.skip(f"real WARC files not found under {raw} (set TEXTSIEVE_SHARED)")
    return raw


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _read(path: str | Path, mode: str = "fail") -> tuple[list, list[SkippedRecord]]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    return list(reader), reader.skipped


def _ids(lines: list[bytes]) -> list[str]:
    return [json.loads(line)["id"] for line in lines]


# ---------------------------------------------------------------- item 7: symbolic links


def test_symlinked_files_and_folders_are_followed(tmp_path, web_lines) -> None:
    """Before: `annotate IN` with IN/b.jsonl and IN/deep/ symbolic links printed "20 documents
    in 1 shard" (fsspec lists links as type "other" and the walk dropped them). After: both are
    followed, under the link's name: 35 documents in 3 shards."""
    src = tmp_path / "in"
    _write(src / "a.jsonl", web_lines[:20])
    _write(tmp_path / "elsewhere" / "b.jsonl", web_lines[20:30])
    _write(tmp_path / "elsewhere" / "deep" / "c.jsonl", web_lines[30:35])
    (src / "b.jsonl").symlink_to(tmp_path / "elsewhere" / "b.jsonl")
    (src / "deep").symlink_to(tmp_path / "elsewhere" / "deep", target_is_directory=True)
    assert [s.rel for s in expand_inputs([str(src)])] == ["a.jsonl", "b.jsonl", "deep/c.jsonl"]
    result = api.annotate([str(src)], output=str(tmp_path / "attrs"), signals=SIGNALS, workers=1, progress=False)
    assert result.documents == 35 and sorted(result.shards_written) == ["a.jsonl", "b.jsonl", "deep/c.jsonl"]
    assert (tmp_path / "attrs" / "docs" / "deep" / "c.parquet").is_file()


def test_symlink_loops_end_and_each_is_reported_once(tmp_path, web_lines, caplog) -> None:
    """A link to the folder itself, one to its parent and a broken link: the walk ends, reads each
    real file once and logs each problem link once (a loop must not hang nor repeat files)."""
    src = tmp_path / "in"
    _write(src / "a.jsonl", web_lines[:5])
    _write(src / "sub" / "b.jsonl", web_lines[5:8])
    (src / "self").symlink_to(src, target_is_directory=True)
    (src / "sub" / "up").symlink_to(src, target_is_directory=True)
    (src / "again.jsonl").symlink_to(src / "a.jsonl")  # a second name for a file read already
    (src / "broken.jsonl").symlink_to(tmp_path / "missing.jsonl")
    with caplog.at_level(logging.INFO, logger="textsieve.io"):
        shards = expand_inputs([str(src)])
    assert [s.rel for s in shards] == ["a.jsonl", "sub/b.jsonl"]
    messages = [r.getMessage() for r in caplog.records]
    for link, what in [(src / "self", "symbolic link loop"), (src / "sub" / "up", "symbolic link loop"),
                       (src / "broken.jsonl", "broken symbolic link"), (src / "again.jsonl", "read already")]:
        assert sum(m.startswith(f"{link}: ") and what in m for m in messages) == 1, (link, messages)
    # the same tree through a glob: the linked folder is walked, its loops end there too
    assert [s.rel for s in expand_inputs([str(src / "*")])] == ["a.jsonl", "sub/b.jsonl"]


# ---------------------------------------------------------------- item 8: damaged row groups / members


def _row_group_parquet(path: Path, web_lines: list[bytes]) -> tuple[list[str], int]:
    """400 real documents in 4 row groups of 100, with page checksums; returns the ids and the
    byte offset of the middle of row group 1's text column chunk."""
    docs = [json.loads(line) for line in (web_lines * 2)[:400]]
    ids = [f"{d['id']}#{i}" for i, d in enumerate(docs)]
    pq.write_table(pa.table({"id": ids, "text": [d["text"] for d in docs]}), path, row_group_size=100,
                   compression="zstd", write_page_checksum=True)
    column = pq.ParquetFile(path).metadata.row_group(1).column(1)
    start = column.dictionary_page_offset or column.data_page_offset
    return ids, start + column.total_compressed_size // 2


@MODES
def test_parquet_damaged_row_group_skips_that_group_only(tmp_path, web_lines, mode) -> None:
    """Before: skip mode kept 0 of 400 rows ("FILE:row 0: cannot read Parquet data from this row
    on": the first 512-row batch spans every row group, and the rest of the file was given up).
    After: the 300 rows of the readable row groups are kept, and the one skip names row group 1
    and its 100 rows."""
    path = tmp_path / "rg.parquet"
    ids, middle = _row_group_parquet(path, web_lines)
    data = bytearray(path.read_bytes())
    data[middle : middle + 16] = bytes(16)
    path.write_bytes(bytes(data))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:row 100: row group 1 \(rows 100-199\)"):
            _read(path, mode)
        return
    docs, [skip] = _read(path, mode)
    assert [d.id for d in docs] == ids[:100] + ids[200:]
    assert skip.location == f"{path}:row 100" and "its 100 row(s) from there are left out" in skip.reason


def _flip_in_member(member: bytes, needle: bytes) -> bytes:
    """`member` (a stored, i.e. level-0, gzip member) with the first letter of `needle` changed:
    the data still decodes, to a wrong text, and only the member's CRC-32 notices."""
    at = member.index(needle)
    return member[:at] + bytes([member[at] ^ 0x20]) + member[at + 1 :]


@MODES
def test_gzip_crc_error_drops_the_rows_of_the_damaged_member(tmp_path, web_lines, mode) -> None:
    """Before: one flipped letter in the 2nd of two gzip members: 99 of 100 rows went out, 49 of
    member 2 (the altered one included), before "FILE:100: corrupt gzip data (... incorrect data
    check)". After: the 50 rows of the verified member 1 are kept, in both modes nothing of
    member 2 goes out, and the message counts its 50 decoded lines."""
    first = gzip.compress(b"".join(line + b"\n" for line in web_lines[:50]), compresslevel=0, mtime=0)
    second = gzip.compress(b"".join(line + b"\n" for line in web_lines[50:100]), compresslevel=0, mtime=0)
    text = json.loads(web_lines[70])["text"]
    word = next(w for w in text.split() if w.isascii() and w.isalpha() and len(w) > 4)
    path = tmp_path / "two.jsonl.gz"
    path.write_bytes(first + _flip_in_member(second, word.encode()))
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    seen = []
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:51: corrupt gzip data .* at byte {len(first)}") \
            if mode == "fail" else contextlib.nullcontext():
        seen.extend(d.id for d in reader)
    assert seen == _ids(web_lines[:50])  # in fail mode too: no row of member 2 went out before the error
    if mode == "skip":
        [skip] = reader.skipped
        assert skip.location == f"{path}:51"
        assert "its 50 decoded line(s) from line 51 on are left out" in skip.reason


def test_big_gzip_member_is_verified_ahead_within_the_hold_limit(tmp_path, web_lines, monkeypatch) -> None:
    """A member whose output exceeds `HOLD_BYTES` is checked to its end first (one extra pass)
    rather than held whole: a good one streams every row, a damaged one passes none, and the
    message counts every decoded line of it."""
    monkeypatch.setattr(compression, "HOLD_BYTES", 4096)
    calls = []
    real = compression._verify_ahead
    monkeypatch.setattr(compression, "_verify_ahead", lambda *a: calls.append(a[1]) or real(*a))
    member = gzip.compress(b"".join(line + b"\n" for line in web_lines[:60]), compresslevel=0, mtime=0)
    good = tmp_path / "good.jsonl.gz"
    good.write_bytes(member)
    docs, skipped = _read(good, "skip")
    assert [d.id for d in docs] == _ids(web_lines[:60]) and skipped == [] and calls == [0]
    text = json.loads(web_lines[58])["text"]
    word = next(w for w in text.split() if w.isascii() and w.isalpha() and len(w) > 4)
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(_flip_in_member(member, word.encode()))
    docs, [skip] = _read(bad, "skip")
    assert docs == [] and "its 60 decoded line(s) from line 1 on are left out" in skip.reason


def test_held_member_output_is_let_go_chunk_by_chunk(tmp_path, web_lines, monkeypatch) -> None:
    """The output held back until a member verifies is released as the reader consumes it: each
    chunk passed on is dropped from the held list, so a worker does not keep a member's first
    `HOLD_BYTES` (16 MB) alive while it annotates them (issue 28's memory)."""
    monkeypatch.setattr(compression, "HOLD_BYTES", 1 << 20)
    sizes: list[int] = []
    real = compression._release

    def watching(held: list[bytes], consumed: int):
        for item in real(held, consumed):
            yield item
            sizes.append(sum(len(h) for h in held))

    monkeypatch.setattr(compression, "_release", watching)
    path = tmp_path / "one.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(line + b"\n" for line in web_lines[:200]), mtime=0))
    with open(path, "rb") as raw:
        chunks = [c for c, _ in compression.iter_chunks(raw, "gzip", chunk_size=1 << 16)]
    assert len(sizes) == len(chunks) > 10  # every chunk came through the held list
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 0 and sizes[0] < sum(len(c) for c in chunks)
    docs, skipped = _read(path, "skip")
    assert [d.id for d in docs] == _ids(web_lines[:200]) and skipped == []


@MODES
def test_zstd_checksum_error_drops_the_rows_of_the_damaged_frame(tmp_path, web_lines, mode) -> None:
    """The same for zstd frames written with a content checksum. Before: a damaged checksum of
    frame 2 (140 lines, several read pieces) let 92 of its rows through, in both modes, before
    "FILE:153: ... Restored data doesn't match checksum". After: frame 1's 60 rows are kept, none of frame 2's,
    and the message counts its 140 lines."""
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    first = cctx.compress(b"".join(line + b"\n" for line in web_lines[:60]))
    second = bytearray(cctx.compress(b"".join(line + b"\n" for line in web_lines[60:200])))
    assert len(second) > 2 * compression.PIECE_SIZE
    second[-1] ^= 0xFF  # the frame's content checksum
    path = tmp_path / "frames.jsonl.zst"
    path.write_bytes(first + bytes(second))
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    seen = []
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:61: corrupt zstd data") if mode == "fail" \
            else contextlib.nullcontext():
        seen.extend(d.id for d in reader)
    assert seen == _ids(web_lines[:60])  # in fail mode too: nothing unverified went out before the error
    if mode == "skip":
        assert "its 140 decoded line(s) from line 61 on are left out" in reader.skipped[0].reason


# ---------------------------------------------------------------- item 9: WARC Content-Length


def _warc_records(raw_dir: Path) -> list[bytes]:
    data = gzip.decompress((raw_dir / "dolma_sample-0000.warc.gz").read_bytes())
    heads = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", data)] + [len(data)]
    return [data[a:b] for a, b in zip(heads, heads[1:])]


def _with_length(record: bytes, delta: int) -> bytes:
    m = re.search(rb"Content-Length: (\d+)\r\n", record)
    assert m is not None
    return record[: m.start()] + b"Content-Length: %d\r\n" % (int(m.group(1)) + delta) + record[m.end() :]


@MODES
@pytest.mark.parametrize("delta", [-4, -3, 2, 300])
@pytest.mark.parametrize("packed", ["plain", "gzip"])
def test_warc_content_length_off_names_the_record_and_resyncs(tmp_path, raw_dir, mode, delta, packed) -> None:
    """Before: a response's Content-Length off by -4, -3 or +2 passed `--on-error fail` with its
    text cut or padded (warcio only warned on stderr, and not at all for -4, which leaves only
    blank lines of the chunked body), and +300 failed on record 5 ("Invalid WARC record, first
    line: WARC-Date: ..."), the skip dropping all 20 records after it. After:
    record 4 itself is the error, with its byte offset; skip leaves out only record 4 and reads
    on from the next WARC/1. header (plain) or gzip member."""
    records = _warc_records(raw_dir)
    good = tmp_path / f"good.warc{'.gz' if packed == 'gzip' else ''}"
    bad = tmp_path / f"bad.warc{'.gz' if packed == 'gzip' else ''}"
    changed = records[:4] + [_with_length(records[4], delta)] + records[5:]
    pack = (lambda rs: b"".join(gzip.compress(r, mtime=0) for r in rs)) if packed == "gzip" else b"".join
    good.write_bytes(pack(records))
    bad.write_bytes(pack(changed))
    offset = len(pack(records[:4]))
    expected, _ = _read(good)
    assert 4 in [d.row for d in expected]  # record 4 is a response, i.e. a document
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: the block of this record "
                                             rf"\(at byte {offset}\) does not end where its Content-Length"):
            _read(bad, mode)
        return
    docs, [skip] = _read(bad, mode)
    assert skip.location == f"{bad}:record 4"
    assert [(d.row, d.id, d.text) for d in docs] == [(d.row, d.id, d.text) for d in expected if d.row != 4]


# ---------------------------------------------------------------- item 10: bookkeeping files


@pytest.fixture(scope="module")
def stage_outputs(tmp_path_factory, web_lines) -> Path:
    """Real outputs of annotate, dedup exact and select over 40 real documents."""
    root = tmp_path_factory.mktemp("outputs")
    _write(root / "src" / "a.jsonl", web_lines[:20])
    _write(root / "src" / "b.jsonl", web_lines[20:40])
    api.annotate([str(root / "src")], output=str(root / "attrs"), signals=SIGNALS, workers=1, progress=False)
    api.dedup_exact([str(root / "attrs")], workers=1, progress=False)
    recipe = {"name": "some", "rules": {"words": "rps_doc_word_count >= 20"}}
    api.select(str(root / "attrs"), recipe=recipe, output=str(root / "sel"), workers=1, progress=False)
    return root


def test_nested_output_folders_and_bookkeeping_files_are_not_documents(tmp_path, stage_outputs, web_lines,
                                                                        caplog) -> None:
    """Before: `annotate IN` with an annotate output and a selection inside IN failed with
    "IN/attrs/sets/dedup_exact/a.parquet: no text column 'text'", and `annotate SEL` (a select output)
    with "SEL/selection.json:1: malformed JSON". After: the nested output folders are left out
    with one log line each, the selection's documents are read without its selection.json, and a
    user's JSON Lines file named summary.json is still a shard."""
    src = tmp_path / "in"
    _write(src / "a.jsonl", web_lines[:10])
    _write(src / "summary.json", web_lines[10:13])  # documents that happen to have a bookkeeping name
    shutil.copytree(stage_outputs / "attrs", src / "attrs")
    shutil.copytree(stage_outputs / "sel", src / "deeper" / "sel")
    with caplog.at_level(logging.INFO, logger="textsieve.io"):
        assert [s.rel for s in expand_inputs([str(src)])] == ["a.jsonl", "summary.json"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [m.split(": ", 1)[1].split(" ", 1)[0] for m in warned] == ["attrs/", "deeper/sel/"]
    result = api.annotate([str(src)], output=str(tmp_path / "out"), signals=SIGNALS, workers=1, progress=False)
    assert result.documents == 13

    sel = stage_outputs / "sel"
    kept = sum(1 for shard in expand_inputs([str(sel)]) for _ in ShardReader(shard))
    assert 0 < kept <= 40 and all(s.format == "jsonl" and s.rel != "selection.json" for s in expand_inputs([str(sel)]))
    with pytest.raises(InputError, match=r"selection\.json: this is textsieve's bookkeeping file of a select output"):
        expand_inputs([str(sel / ".textsieve" / "selection.json")])


def test_an_attribute_folder_given_as_documents_says_what_it_is(stage_outputs) -> None:
    """Before: "attrs/a.parquet: no text column 'text' (columns present: id, shard, row, ...)".
    After: the shard's textsieve footer names it an attribute shard, with the way out."""
    shards = expand_inputs([str(stage_outputs / "attrs")])
    assert [s.rel for s in shards] == ["docs/a.parquet", "docs/b.parquet"]  # its bookkeeping and sets are left out
    with pytest.raises(InputError, match=r"a\.parquet: a textsieve attribute shard \(the output of annotate"):
        list(ShardReader(shards[0]))


# ---------------------------------------------------------------- item 12: lone surrogates


@MODES
def test_lone_surrogates_in_any_field_are_located_record_errors(tmp_path, web_lines, mode) -> None:
    """Before: "id": "a\\udc80b" aborted annotate even with skip ("'utf-8' codec can't encode
    character '\\udc80' ...: surrogates not allowed", no file or line), and "url": "\\ud800"
    passed annotate and crashed `select` when it wrote the documents. After: each is a located
    bad record (`FILE:LINE: field 'url' has a lone surrogate ...`), skipped and counted with skip."""
    docs = [json.loads(line) for line in web_lines[:6]]
    raw = [json.dumps(d).encode() for d in docs]
    raw[1] = raw[1].replace(b'"id": "', b'"id": "a\\udc80b', 1)
    raw[3] = json.dumps({**docs[3], "url": "XX"}).encode().replace(b'"XX"', b'"\\ud800"')
    raw[4] = json.dumps({**docs[4], "meta": {"tags": ["ok", "XX"]}}).encode().replace(b'"XX"', b'"\\udfff"')
    path = _write(tmp_path / "s.jsonl", raw)
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:2: field 'id' has a lone surrogate '\\udc80'"):
            _read(path, mode)
        return
    got, skipped = _read(path, mode)
    assert [d.id for d in got] == [docs[i]["id"] for i in (0, 2, 5)]
    assert [(s.location, s.reason.split(" has ")[0]) for s in skipped] == [
        (f"{path}:2", "field 'id'"), (f"{path}:4", "field 'url'"), (f"{path}:5", "field 'meta.tags[1]'")]
    # end to end: annotate skips and counts them, select writes the rest
    result = api.annotate([str(path)], output=str(tmp_path / "attrs"), signals=SIGNALS, workers=1,
                          on_error="skip", progress=False)
    assert (result.documents, result.skipped_records) == (3, 3)
    recipe = {"name": "all", "rules": {"any": "rps_doc_word_count >= 0"}}
    api.select(str(tmp_path / "attrs"), recipe=recipe, output=str(tmp_path / "sel"), workers=1, progress=False)
    with gzip.open(tmp_path / "sel" / "s.jsonl.gz", "rt", encoding="utf-8") as fh:
        assert [json.loads(line)["id"] for line in fh] == [docs[i]["id"] for i in (0, 2, 5)]


# ---------------------------------------------------------------- item 18: zip:// chains


def test_zip_chain_members_open_and_annotate(tmp_path, web_lines, monkeypatch) -> None:
    """Before: `annotate "zip://*.jsonl::archive.zip"` failed for every member ("zip://a.jsonl:
    cannot read the file ([Errno 21] Is a directory)"): the member URL lost its `::archive.zip`.
    After: each member keeps the chain (made absolute) and both are annotated."""
    archive = tmp_path / "archive.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.jsonl", b"".join(line + b"\n" for line in web_lines[:12]))
        zf.writestr("sub/b.jsonl", b"".join(line + b"\n" for line in web_lines[12:20]))
    monkeypatch.chdir(tmp_path)
    shards = expand_inputs(["zip://**/*.jsonl::archive.zip"])
    assert [(s.rel, s.path) for s in shards] == [("a.jsonl", f"zip://a.jsonl::{archive}"),
                                                 ("sub/b.jsonl", f"zip://sub/b.jsonl::{archive}")]
    result = api.annotate(["zip://::archive.zip"], output="attrs", signals=SIGNALS, workers=1, progress=False)
    assert result.documents == 20 and sorted(result.shards_written) == ["a.jsonl", "sub/b.jsonl"]
    assert (tmp_path / "attrs" / "docs" / "sub" / "b.parquet").is_file()
    monkeypatch.chdir(os.path.dirname(tmp_path))  # the member URLs open from any working directory
    assert [sum(1 for _ in ShardReader(s)) for s in shards] == [12, 8]
    # and `select` reads them back: the members lie inside the recorded (absolute) input root
    picked = api.select(tmp_path / "attrs", recipe={"rules": {"all": "rps_doc_word_count >= 0"}},
                        output=tmp_path / "sel", workers=1, progress=False)
    assert picked.documents == 20
