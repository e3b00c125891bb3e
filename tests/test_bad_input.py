"""Bad input, each case in both modes: "fail" names file and line, "skip" keeps every good record."""

from __future__ import annotations

import gzip
import json
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from _shared import SHARED

from textsieve.io import InputError, ReadOptions, ShardReader, SkippedRecord, expand_inputs

RAW = SHARED / "corpora" / "dev" / "raw"
needs_raw = pytest.mark.skipif(not RAW.is_dir(), reason=f"real WARC files not found at {RAW} (set TEXTSIEVE_SHARED)")


@pytest.fixture(scope="module")
def paragraphs() -> list[str]:
    """Real text: paragraphs of the running Python's LICENSE.txt."""
    path = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    return [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def _good(paragraphs: list[str], i: int) -> bytes:
    return json.dumps({"id": f"lic-{i}", "text": paragraphs[i]}).encode()


def _read(path: Path, mode: str, **options) -> tuple[list, list[SkippedRecord]]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode, **options))
    return list(reader), reader.skipped


def _check(path: Path, bad_line: int, expect: str, good_rows: list[int], mode: str, **options) -> None:
    """Fail mode: InputError at `path:bad_line` mentioning `expect`. Skip mode: the good rows survive."""
    if mode == "fail":
        with pytest.raises(InputError) as info:
            _read(path, mode, **options)
        message = str(info.value)
        assert message.startswith(f"{path}:{bad_line}: "), message
        assert expect in message
        return
    docs, skipped = _read(path, mode, **options)
    assert [d.row for d in docs] == good_rows
    assert len(skipped) == 1
    assert skipped[0].location == f"{path}:{bad_line}" and expect in skipped[0].reason


MODES = pytest.mark.parametrize("mode", ["fail", "skip"])


def _write_lines(tmp_path: Path, lines: list[bytes], name: str = "d.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@MODES
def test_malformed_json(tmp_path, paragraphs, mode) -> None:
    broken = _good(paragraphs, 2)[:-5]  # cut off the end of the object
    path = _write_lines(tmp_path, [_good(paragraphs, 0), _good(paragraphs, 1), broken, _good(paragraphs, 3)])
    _check(path, 3, "malformed JSON", [0, 1, 3], mode)


@MODES
def test_invalid_utf8(tmp_path, paragraphs, mode) -> None:
    latin1 = json.dumps({"text": "Café " + paragraphs[1]}, ensure_ascii=False).encode("latin-1")
    path = _write_lines(tmp_path, [_good(paragraphs, 0), latin1, _good(paragraphs, 2)])
    _check(path, 2, "invalid UTF-8 at byte", [0, 2], mode)


@MODES
def test_missing_text_field(tmp_path, paragraphs, mode) -> None:
    other = json.dumps({"id": "x", "content": paragraphs[1], "source": "psf"}).encode()
    path = _write_lines(tmp_path, [_good(paragraphs, 0), other, _good(paragraphs, 2)])
    _check(path, 2, "no text field 'text' (keys present: 'id', 'content', 'source')", [0, 2], mode)


@MODES
@pytest.mark.parametrize("value, kind", [(1991, "number"), (None, "null"), (["a", "b"], "array")])
def test_text_not_a_string(tmp_path, paragraphs, mode, value, kind) -> None:
    path = _write_lines(tmp_path, [_good(paragraphs, 0), _good(paragraphs, 1), json.dumps({"text": value}).encode()])
    _check(path, 3, f"text field 'text' is {kind}, expected a string", [0, 1], mode)


@MODES
def test_line_not_an_object(tmp_path, paragraphs, mode) -> None:
    path = _write_lines(tmp_path, [json.dumps([paragraphs[0]]).encode(), _good(paragraphs, 1)])
    _check(path, 1, "line is a JSON array, expected an object", [1], mode)


@MODES
def test_bad_id_and_lang_types(tmp_path, paragraphs, mode) -> None:
    path = _write_lines(tmp_path, [_good(paragraphs, 0), json.dumps({"id": {"n": 1}, "text": paragraphs[1]}).encode()])
    _check(path, 2, "id field 'id' is object", [0], mode)
    bad_lang = json.dumps({"text": paragraphs[0], "m": {"lang": 7}}).encode()
    path = _write_lines(tmp_path, [bad_lang, _good(paragraphs, 1)], "l.jsonl")
    _check(path, 1, "field 'm.lang' is number, expected a string", [1], mode, lang_field="m.lang")


@MODES
def test_unpaired_surrogate_escape(tmp_path, paragraphs, mode) -> None:
    lone = b'{"text": "' + paragraphs[1][:40].encode() + b' \\ud83d end"}'
    pair = b'{"text": "emoji \\ud83d\\ude00 is fine"}'
    path = _write_lines(tmp_path, [pair, lone, _good(paragraphs, 2)])
    _check(path, 2, "unpaired surrogate", [0, 2], mode)


def _many_lines(paragraphs: list[str]) -> bytes:
    # Enough distinct lines that compressed output spans several read chunks.
    return b"".join(
        json.dumps({"id": f"{k}-{i}", "text": f"{k}: {p}"}).encode() + b"\n"
        for k in range(400) for i, p in enumerate(paragraphs)
    )


@MODES
@pytest.mark.parametrize("suffix, compress",
                         [(".jsonl.gz", gzip.compress), (".jsonl.zst", zstandard.ZstdCompressor().compress)])
def test_truncated_compressed_file(tmp_path, paragraphs, mode, suffix, compress) -> None:
    data = _many_lines(paragraphs)
    packed = compress(data)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError) as info:
            list(reader)
        message = str(info.value)
        assert (message.startswith(f"{path}:") and "truncated" in message
                and "the last complete line read is line" in message)
        return
    docs = list(reader)
    total = data.count(b"\n")
    assert 0 < len(docs) < total
    assert [d.row for d in docs] == list(range(len(docs)))  # everything before the cut is kept, in order
    assert [d.id for d in docs[:3]] == ["0-0", "0-1", "0-2"]
    [skip] = reader.skipped
    assert (skip.location == f"{path}:{len(docs) + 1}"
            and f"the last complete line read is line {len(docs)}" in skip.reason)


@MODES
def test_corrupt_gzip_data(tmp_path, paragraphs, mode) -> None:
    """Damage in the middle: deflate may decode some garbage before zlib (or the CRC) notices."""
    packed = bytearray(gzip.compress(_many_lines(paragraphs)))
    middle = len(packed) // 2
    packed[middle : middle + 64] = bytes(64)
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(bytes(packed))
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}:\d+: "):
            list(reader)
        return
    docs = list(reader)
    # One gzip member: its CRC cannot vouch for any of its lines, so none is kept (issue 16, item 8;
    # tests/test_input_edge_cases.py has the multi-member case, where the verified members are kept).
    [skip] = reader.skipped
    assert docs == [] and skip.location == f"{path}:1"
    assert "corrupt gzip data" in skip.reason and "decoded line(s) from line 1 on are left out" in skip.reason


@MODES
def test_skip_keeps_every_good_record_around_several_bad_ones(tmp_path, paragraphs, mode) -> None:
    lines = [_good(paragraphs, i) for i in range(10)]
    lines[0], lines[4], lines[9] = b"{", b"\xff\xfe", b"[1]"
    path = _write_lines(tmp_path, lines)
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}:1: malformed JSON"):
            _read(path, mode)
        return
    docs, skipped = _read(path, mode)
    assert [d.id for d in docs] == [f"lic-{i}" for i in (1, 2, 3, 5, 6, 7, 8)]
    assert [s.location for s in skipped] == [f"{path}:1", f"{path}:5", f"{path}:10"]


# ---------------------------------------------------------------- other formats


@MODES
def test_parquet_null_text_and_missing_column(tmp_path, paragraphs, mode) -> None:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"text": [paragraphs[0], None, paragraphs[2]]}), path)
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}:row 1: text field 'text' is null"):
            list(reader)
    else:
        assert [d.row for d in reader] == [0, 2] and reader.skipped[0].location == f"{path}:row 1"

    reader = ShardReader(shard, ReadOptions(on_error=mode, text_field="body"))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}: no text column 'body' \(columns present: text\)"):
            list(reader)
    else:
        assert list(reader) == [] and "no text column 'body'" in reader.skipped[0].reason


@MODES
def test_parquet_invalid_utf8_string(tmp_path, paragraphs, mode) -> None:
    """Arrow validates UTF-8 when it builds strings, other writers may not: build the bytes by hand."""
    good, bad = paragraphs[0].encode(), paragraphs[1].encode()[:30] + b"\xff" + paragraphs[1].encode()[30:]
    offsets = pa.py_buffer(pa.array([0, len(good), len(good) + len(bad)], pa.int32()).buffers()[1])
    column = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(good + bad)])
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"text": column}), path)
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}:row 1: column 'text' has invalid UTF-8 at byte 30"):
            list(reader)
    else:
        assert [d.text for d in reader] == [paragraphs[0]] and reader.skipped[0].location == f"{path}:row 1"


@MODES
def test_file_that_is_not_parquet(tmp_path, paragraphs, mode) -> None:
    path = tmp_path / "fake.parquet"
    path.write_text(paragraphs[0])
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}: not a readable Parquet file"):
            list(reader)
    else:
        assert list(reader) == [] and reader.skipped[0].location == str(path)


@MODES
def test_txt_invalid_utf8(tmp_path, paragraphs, mode) -> None:
    (tmp_path / "a.txt").write_text(paragraphs[0])
    (tmp_path / "b.txt").write_bytes(paragraphs[1].encode() + b"\nna\xefve\n")
    (tmp_path / "c.txt").write_text(paragraphs[2])
    [shard] = expand_inputs([str(tmp_path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    line = paragraphs[1].count("\n") + 2
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{tmp_path / 'b.txt'}:{line}: invalid UTF-8 at byte 2 of the line"):
            list(reader)
    else:
        assert [d.id for d in reader] == ["a.txt", "c.txt"]
        assert reader.skipped[0].location == f"{tmp_path / 'b.txt'}:{line}"


@needs_raw
@MODES
def test_truncated_real_warc(tmp_path, mode) -> None:
    data = (RAW / "dolma_sample-0000.warc.gz").read_bytes()
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[: len(data) // 2])
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError,
                           match=rf"^{path}:record \d+: record is truncated .* the last complete record is record \d+"):
            list(reader)
        return
    docs = list(reader)
    assert 0 < len(docs) < 22
    [skip] = reader.skipped
    assert skip.location.startswith(f"{path}:record ") and int(skip.location.rsplit(" ", 1)[1]) > docs[-1].row


@needs_raw
@MODES
def test_real_warc_response_without_target_uri(tmp_path, mode) -> None:
    """A `response` record whose WARC-Target-URI header was removed: warcio raised an
    AttributeError traceback (issue 16, item 11), then reading stopped there and every later
    record was lost (issue 25, item 3: 1 of 22 kept). Now the record is one located error, or in
    skip mode one skipped record, and every other response record of the file is kept."""
    data = gzip.decompress((RAW / "dolma_sample-0000.warc.gz").read_bytes())
    responses = data.count(b"WARC-Type: response")
    first = data.index(b"WARC-Type: response")
    third = data.index(b"WARC-Type: response", data.index(b"WARC-Type: response", first + 1) + 1)
    uri_start = data.index(b"WARC-Target-URI:", third)
    uri_end = data.index(b"\r\n", uri_start) + 2
    path = tmp_path / "no-uri.warc"
    path.write_bytes(data[:uri_start] + data[uri_end:])
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{path}:record \d+: response record without a WARC-Target-URI"):
            list(reader)
        return
    docs = list(reader)
    assert responses == 22 and len(docs) == responses - 1, len(docs)
    [skip] = reader.skipped
    assert skip.reason.startswith("response record without a WARC-Target-URI")
    assert all(d.url for d in docs)


@MODES
@pytest.mark.parametrize("content, expect", [
    # five words pass for an ARC header
    ("paragraph", "not a WARC or ARC record (header line: 'A. HISTORY OF THE SOFTWARE')"),
    ("json", "cannot parse archive record"),
])
def test_file_that_is_not_a_warc(tmp_path, paragraphs, mode, content, expect) -> None:
    path = tmp_path / "fake.warc"
    path.write_text(paragraphs[0] if content == "paragraph" else json.dumps({"id": "lic-1"}) + "\n" + paragraphs[1])
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    if mode == "fail":
        with pytest.raises(InputError) as info:
            list(reader)
        assert str(info.value).startswith(f"{path}:record 0: {expect}")
    else:
        assert list(reader) == [] and reader.skipped[0].location == f"{path}:record 0"
        assert reader.skipped[0].reason.startswith(expect)


# ---------------------------------------------------------------- bad input arguments


def test_inputs_that_match_nothing(tmp_path) -> None:
    (tmp_path / "notes.md").write_text("x")
    for bad, expect in [
        (str(tmp_path / "missing.jsonl"), "no such file or folder"),
        (str(tmp_path / "*.jsonl"), "pattern matches no readable files"),
        (str(tmp_path), "folder contains no readable files"),
        (str(tmp_path / "notes.md"), "unknown file extension"),
    ]:
        with pytest.raises(InputError) as info:
            expand_inputs([bad])
        assert str(info.value).startswith(f"{bad}: ") and expect in str(info.value)


def test_two_inputs_with_the_same_rel(tmp_path) -> None:
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "a.jsonl").write_text('{"text": ""}\n')
    with pytest.raises(InputError, match="same relative name 'a.jsonl'"):
        expand_inputs([str(tmp_path / "x" / "a.jsonl"), str(tmp_path / "y" / "a.jsonl")])


def test_missing_shard_file_is_an_input_error(tmp_path) -> None:
    path = tmp_path / "gone.jsonl"
    path.write_text('{"text": ""}\n')
    [shard] = expand_inputs([str(path)])
    path.unlink()
    with pytest.raises(InputError, match=rf"^{path}: file not found"):
        list(ShardReader(shard, ReadOptions(on_error="skip")))
