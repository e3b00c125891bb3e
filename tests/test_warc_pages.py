"""Issue 12, item 2 (WARC side): `read_pages`, the WARC reader of `extract` (FastWARC, plus
the framing checks FastWARC lacks), on the real dev WARCs and hand-damaged copies of
``dolma_sample-0000.warc.gz``. Before (bare FastWARC): a truncated record came back with an
empty body, a Content-Length off by a few bytes passed with the page cut or padded, and a
corrupt gzip member, a Content-Length 300 too large or garbage between records ended the
iteration with an `OSError` naming no record. After: each case is one error naming the file,
the record index and its byte offset; skip mode leaves out only that record (garbage takes
no row) and keeps every intact page, equal to the clean file's."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from textsieve.io import InputError, ReadOptions, ShardReader, expand_inputs
from textsieve.io.warc_pages import Page, read_pages

MODES = pytest.mark.parametrize("mode", ["fail", "skip"])
PACKED = pytest.mark.parametrize("packed", ["gzip", "plain"])
DIGEST = pytest.mark.parametrize("digest", [True, False], ids=["digest", "nodigest"])


@pytest.fixture(scope="module")
def raw_dir(dev_dir: Path) -> Path:
    raw = dev_dir / "raw"
    if not (raw / "dolma_sample-0000.warc.gz").exists():
        pytest.skip(f"real WARC files not found under {raw} (set TEXTSIEVE_SHARED)")
    return raw


@pytest.fixture(scope="module")
def records(raw_dir: Path) -> list[bytes]:
    """The first 12 records (6 responses) of a real WARC."""
    data = gzip.decompress((raw_dir / "dolma_sample-0000.warc.gz").read_bytes())
    return re.split(rb"(?=WARC/1\.[01]\r\n)", data)[1:13]


def _pack(records: list[bytes], packed: str) -> bytes:
    return b"".join(gzip.compress(r, mtime=0) for r in records) if packed == "gzip" else b"".join(records)


def _no_digest(record: bytes) -> bytes:
    return re.sub(rb"WARC-Block-Digest: [^\r]*\r\n", b"", record)


def _with_length(record: bytes, delta: int) -> bytes:
    m = re.search(rb"Content-Length: (\d+)\r\n", record)
    assert m is not None
    return record[: m.start()] + b"Content-Length: %d\r\n" % (int(m.group(1)) + delta) + record[m.end() :]


def _pages(path: Path, mode: str = "fail") -> tuple[list[Page], list]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    return list(read_pages(reader)), reader.skipped


def _write(tmp_path: Path, name: str, packed: str, data: bytes) -> Path:
    path = tmp_path / f"{name}.warc{'.gz' if packed == 'gzip' else ''}"
    path.write_bytes(data)
    return path


def _case(tmp_path, records, packed, digest, change) -> tuple[Path, list[Page], int]:
    """(damaged file, the clean file's pages, byte offset of record 4 in the damaged file)."""
    rs = records if digest else [_no_digest(r) for r in records]
    clean = _write(tmp_path, "clean", packed, _pack(rs, packed))
    bad = _write(tmp_path, "bad", packed, change(rs))
    expected, skipped = _pages(clean)
    assert not skipped and [p.row for p in expected] == [2, 4, 6, 8, 10]
    return bad, expected, len(_pack(rs[:4], packed))


def _same(pages: list[Page], expected: list[Page], left_out: set[int]) -> None:
    def key(p: Page) -> tuple:
        return p.id, p.row, p.url, p.date, p.content_type, p.status, p.body

    assert [key(p) for p in pages] == [key(p) for p in expected if p.row not in left_out]


def test_real_warcs_read_like_warcio(raw_dir: Path) -> None:
    """Every response of every dev WARC (and the ARC), with the ids, rows and urls of the
    warcio reader and the body that reader decodes; content type, status, date and offset set."""
    for name in ("dolma_sample-0000.warc.gz", "dolma_sample-0001.warc.gz", "whirlwind.warc.gz",
                 "warcio_example.warc.gz", "warcio_example.arc.gz"):
        [shard] = expand_inputs([str(raw_dir / name)])
        pages = list(read_pages(ShardReader(shard)))
        docs = list(ShardReader(shard))
        assert [(p.id, p.row, p.url) for p in pages] == [(d.id, d.row, d.url) for d in docs], name
        assert [p.body.decode("utf-8", "replace") for p in pages] == [d.text for d in docs], name
        assert all(p.status == 200 and p.content_type and p.date for p in pages), name
        assert all(p.body_error is None for p in pages)
    first = list(read_pages(ShardReader(expand_inputs([str(raw_dir / "whirlwind.warc.gz")])[0])))[0]
    assert first.content_type == "text/html; charset=UTF-8" and first.record_offset > 0


@MODES
@PACKED
@DIGEST
def test_truncated_file(tmp_path, records, mode, packed, digest) -> None:
    bad, expected, offset = _case(tmp_path, records, packed, digest,
                                  lambda rs: _pack(rs, packed)[: len(_pack(rs[:4], packed)) + 300])
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: record is truncated.*"
                                             rf"at byte {offset}\b.*the file is cut"):
            _pages(bad, mode)
        return
    pages, skipped = _pages(bad, mode)
    _same(pages, [p for p in expected if p.row < 4], set())
    assert [s.location for s in skipped] == [f"{bad}:record 4"]


@MODES
@PACKED
@DIGEST
@pytest.mark.parametrize("delta", [-4, -3, 2, 300])
def test_wrong_content_length(tmp_path, records, mode, packed, digest, delta) -> None:
    bad, expected, offset = _case(tmp_path, records, packed, digest,
                                  lambda rs: _pack(rs[:4] + [_with_length(rs[4], delta)] + rs[5:], packed))
    length = re.search(rb"Content-Length: (\d+)", records[4])
    assert length is not None
    reason = (rf"the block of this record \(at byte {offset}\) (does not match its WARC-Block-Digest|does not end "
              rf"where its Content-Length \({int(length.group(1)) + delta}\))")
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: {reason}"):
            _pages(bad, mode)
        return
    pages, skipped = _pages(bad, mode)
    _same(pages, expected, {4})
    assert [s.location for s in skipped] == [f"{bad}:record 4"]


@MODES
@DIGEST
@pytest.mark.parametrize("where", ["deflate", "crc"])
def test_corrupt_gzip_member(tmp_path, records, mode, digest, where) -> None:
    def flip(rs: list[bytes]) -> bytes:
        data = bytearray(_pack(rs, "gzip"))
        data[len(_pack(rs[:4], "gzip")) + 200 if where == "deflate" else len(_pack(rs[:5], "gzip")) - 6] ^= 0xFF
        return bytes(data)

    bad, expected, offset = _case(tmp_path, records, "gzip", digest, flip)
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: corrupt gzip data in this record's "
                                             rf"gzip member \(at byte {offset}\)"):
            _pages(bad, mode)
        return
    pages, skipped = _pages(bad, mode)
    _same(pages, expected, {4})
    assert [s.location for s in skipped] == [f"{bad}:record 4"]


@MODES
@PACKED
def test_flipped_byte_in_a_block_is_caught_by_the_digest(tmp_path, records, mode, packed) -> None:
    """A byte changed inside a page (not its length): only the digest can tell; FastWARC alone
    passes it. Without a digest nothing can (as with warcio) in a plain file."""
    def flip(rs: list[bytes]) -> bytes:
        changed = rs[4].replace(b"<title>", b"<titlf>", 1)
        assert changed != rs[4]
        return _pack(rs[:4] + [changed] + rs[5:], packed)

    bad, expected, offset = _case(tmp_path, records, packed, True, flip)
    if mode == "fail":
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: the block of this record \(at byte "
                                             rf"{offset}\) does not match its WARC-Block-Digest"):
            _pages(bad, mode)
        return
    pages, skipped = _pages(bad, mode)
    _same(pages, expected, {4})
    assert [s.location for s in skipped] == [f"{bad}:record 4"]


@MODES
@PACKED
@DIGEST
def test_garbage_between_records(tmp_path, records, mode, packed, digest) -> None:
    """25 bytes of junk before record 4: reported under record 4's index with its offset;
    skip mode keeps every page, with the clean file's rows (garbage takes no row). Without
    a digest in a plain file the record before the junk cannot be told from one with a
    Content-Length too short, so it (record 3, a request) is the one reported."""
    junk = b"GARBAGE here\r\nmore junk\r\n"
    bad, expected, offset = _case(tmp_path, records, packed, digest,
                                  lambda rs: _pack(rs[:4], packed) + junk + _pack(rs[4:], packed))
    ambiguous = packed == "plain" and not digest
    row = 3 if ambiguous else 4
    if mode == "fail":
        match = (r"the block of this record \(at byte \d+\) does not end where its Content-Length" if ambiguous else
                 rf"25 bytes at byte {offset} are not a (gzip member of a )?WARC record")
        with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record {row}: {match}"):
            _pages(bad, mode)
        return
    pages, skipped = _pages(bad, mode)
    _same(pages, expected, set())
    assert [s.location for s in skipped] == [f"{bad}:record {row}"]


def test_response_without_http_status_line(tmp_path, records) -> None:
    """A response whose HTTP head was lost: FastWARC gives status None and an empty body;
    here it is a located bad record, and skip mode goes on."""
    head, block = records[4].split(b"\r\n\r\n", 1)
    http_end = block.index(b"\r\n\r\n") + 4
    body = block[http_end:-4]
    head = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % len(body), _no_digest(head))
    changed = records[:4] + [head + b"\r\n\r\n" + body + b"\r\n\r\n"] + records[5:]
    bad = _write(tmp_path, "nohttp", "gzip", _pack(changed, "gzip"))
    with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:record 4: response record \(at byte \d+\) whose "
                                         "block does not start with an HTTP status line"):
        _pages(bad)
    pages, skipped = _pages(bad, "skip")
    assert [p.row for p in pages] == [2, 6, 8, 10] and len(skipped) == 1
