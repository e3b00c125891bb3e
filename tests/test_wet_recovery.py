"""Issue 12, item 2 (WET side): WET files whose record separators are malformed, as some
cc_net-era tools wrote them, built from the real ``whirlwind.warc.wet.gz`` by rewriting its
separators (and Content-Lengths). Before: `cannot parse`/"does not end where its
Content-Length says" on record 0, and ``--on-error skip`` gave 0 documents. After: every
record's text is recovered equal to the clean file's; an unambiguous record (digest match, or
only the separator off) is kept in fail mode too; a guess (Content-Length wrong, no digest) is
kept in skip mode only."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from textsieve.io import InputError, ReadOptions, ShardReader, expand_inputs

MODES = pytest.mark.parametrize("mode", ["fail", "skip"])


@pytest.fixture(scope="module")
def wet_records(dev_dir: Path) -> list[bytes]:
    """The real WET's warcinfo, then its conversion record five times (distinct record ids)."""
    path = dev_dir / "raw" / "whirlwind.warc.wet.gz"
    if not path.exists():
        pytest.skip(f"real WET file not found at {path} (set TEXTSIEVE_SHARED)")
    info, conversion = re.split(rb"(?=WARC/1\.[01]\r\n)", gzip.decompress(path.read_bytes()))[1:]
    return [info] + [conversion.replace(b"ba729a40", b"ba729a4%d" % i) for i in range(5)]


def _read(path: Path, mode: str) -> tuple[list, list]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    return [(d.id, d.row, d.url, d.text) for d in reader], reader.skipped


def _sep(record: bytes, sep: bytes) -> bytes:
    assert record.endswith(b"\r\n\r\n")
    return record[:-4] + sep


def _no_digest(record: bytes) -> bytes:
    return re.sub(rb"WARC-(Block|Payload)-Digest: [^\r]*\r\n", b"", record)


def _crlf_length(record: bytes) -> bytes:
    """Content-Length counted as if the text's newlines were \\r\\n (a converted-file writer)."""
    head, body = record.split(b"\r\n\r\n", 1)
    m = re.search(rb"Content-Length: (\d+)", head)
    assert m is not None
    wrong = int(m.group(1)) + body[: int(m.group(1))].count(b"\n")
    return head.replace(m.group(0), b"Content-Length: %d" % wrong) + b"\r\n\r\n" + body


@pytest.fixture(scope="module")
def clean(wet_records, tmp_path_factory) -> list:
    path = tmp_path_factory.mktemp("wet") / "clean.warc.wet"
    path.write_bytes(b"".join(wet_records))
    docs, skipped = _read(path, "fail")
    assert len(docs) == 5 and not skipped
    return docs


@MODES
@pytest.mark.parametrize("sep", [b"\n\n", b"\r\n", b"\n", b"", b"\r\n\r\n\r\n"], ids=["nn", "rn", "n", "none", "extra"])
@pytest.mark.parametrize("digest", [True, False], ids=["digest", "nodigest"])
@pytest.mark.parametrize("packed", ["plain", "gzip"])
def test_malformed_separators_recover_every_record(tmp_path, wet_records, clean, mode, sep, digest, packed) -> None:
    """Before (plain, e.g. \\r\\n): fail mode "record 0: the block of this record (at byte 0)
    does not end where its Content-Length (368) says", skip mode 0 documents. After: the 5
    records, equal to the clean file's, in both modes, with no skip."""
    records = [_sep(r if digest else _no_digest(r), sep) for r in wet_records]
    path = tmp_path / f"bad.warc.wet{'.gz' if packed == 'gzip' else ''}"
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in records) if packed == "gzip" else b"".join(records))
    docs, skipped = _read(path, mode)
    assert docs == clean
    assert skipped == []


@pytest.mark.parametrize("sep", [b"\r\n\r\n", b"\r\n"], ids=["sep-ok", "sep-rn"])
def test_content_length_for_other_newlines_recovers_in_skip_mode(tmp_path, wet_records, clean, sep) -> None:
    """Content-Length counted for \\r\\n newlines over \\n text, no digests (cc_net-era). Before:
    skip mode gave 0 documents. After: skip mode keeps every record with its clean text (a
    warning per guessed record); fail mode still stops at record 0, since without a digest the
    block's end is a guess."""
    records = [_sep(_crlf_length(_no_digest(r)), sep) for r in wet_records]
    path = tmp_path / "crlf.warc.wet"
    path.write_bytes(b"".join(records))
    docs, skipped = _read(path, "skip")
    # with \r\n between records, the last record's end looks like a cut file's: it alone is left out
    kept = clean if sep == b"\r\n\r\n" else clean[:-1]
    assert [d[:3] for d in docs] == [d[:3] for d in kept]
    assert [d[3].rstrip("\r\n") for d in docs] == [d[3].rstrip("\r\n") for d in kept]
    assert [s.location for s in skipped] == ([] if sep == b"\r\n\r\n" else [f"{path}:record 5"])
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}:record 0: the block of this record \(at byte 0\)"):
        _read(path, "fail")


def test_corrupt_record_with_digest_is_skipped_and_the_rest_recovered(tmp_path, wet_records, clean) -> None:
    """A record whose text no longer matches its digest (a flipped byte) and a malformed
    separator: that record is the one skip (named, with its index), the others are kept."""
    records = [_sep(r, b"\r\n") for r in wet_records]
    head, body = records[3].split(b"\r\n\r\n", 1)
    records[3] = head + b"\r\n\r\n" + body.replace(b"Biquipedia", b"Biquipedio", 1)
    path = tmp_path / "flip.warc.wet"
    path.write_bytes(b"".join(records))
    docs, skipped = _read(path, "skip")
    assert docs == [d for d in clean if d[1] != 3]
    assert [s.location for s in skipped] == [f"{path}:record 3"]


def test_a_member_that_is_no_record_is_reported_not_a_crash(tmp_path, wet_records, clean) -> None:
    """Review finding: after a malformed record of a .wet.gz, a gzip member holding something
    that is not a WARC record (`garbage\\r\\nfoo: bar\\r\\n\\r\\nbody`) raised warcio's bare
    ArchiveLoadFailed in skip mode. Now it is one located bad record and reading goes on."""
    head, body = wet_records[1].split(b"\r\n\r\n", 1)
    m = re.search(rb"Content-Length: (\d+)", head)
    assert m is not None
    wrong = head.replace(m.group(0), b"Content-Length: %d" % (int(m.group(1)) + 5)) + b"\r\n\r\n" + body
    members = [wet_records[0], _no_digest(wrong), b"garbage\r\nfoo: bar\r\n\r\nbody", *wet_records[2:]]
    path = tmp_path / "odd.warc.wet.gz"
    path.write_bytes(b"".join(gzip.compress(m, mtime=0) for m in members))
    docs, skipped = _read(path, "skip")
    assert [d[3] for d in docs] == [d[3] for d in clean]  # the malformed record recovered, the rest kept
    assert len(skipped) == 1 and "does not hold a WARC record" in skipped[0].reason
    assert re.search(r"odd\.warc\.wet\.gz:record 2$", skipped[0].location)
