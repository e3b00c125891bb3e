"""Decompression bombs and huge records cost bounded memory (issue 25 item 5): a record's bytes
are checked while it is read, so a line or WARC block larger than --max-doc-bytes is counted to
its end but never held, and one decompression step inflates to a bounded size whatever the
compressed file holds. Measured in a fresh process (peak RSS) against the same read of a small
file, so the interpreter's own ~100 MB is not counted."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import zstandard

HUGE = 256 << 20  # bytes of one record: small on disk (the bomb), large once inflated
LIMIT = str(1 << 20)  # bytes (1 MiB)
READ = """
import resource, sys
from textsieve.io.paths import expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
[shard] = expand_inputs([sys.argv[1]])
reader = ShardReader(shard, ReadOptions(on_error="skip", max_doc_bytes=int(sys.argv[2])))
docs = [d.id for d in reader]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(len(docs), len(reader.skipped), reader.skipped[0].reason if reader.skipped else "", peak, sep="\\t")
"""


def _gzip_stream(parts) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(c.compress(p) for p in parts) + c.flush()


def _zstd_stream(parts) -> bytes:
    c = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join(c.compress(p) for p in parts) + c.flush()


def _huge_line_parts():
    yield json.dumps({"id": "small-1", "text": "a document before the bomb"}).encode() + b"\n"
    yield b'{"id": "huge", "text": "'
    block = b"a" * (1 << 20)
    for _ in range(HUGE >> 20):
        yield block
    yield b'"}\n'
    yield json.dumps({"id": "small-2", "text": "a document after the bomb"}).encode() + b"\n"


def _warc_record(uri: str, body: bytes) -> bytes:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{abs(hash(uri)):032x}>\r\n"
            f"WARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def _huge_warc(path: Path) -> None:
    """Three gzip members, one record each; the middle one inflates to HUGE bytes."""
    small = [_warc_record(f"http://example.com/{i}", b"a small page\n" * 10) for i in (1, 3)]
    body_len = HUGE
    http_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{2:032x}>\r\n"
            f"WARC-Target-URI: http://example.com/2\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http_head) + body_len}\r\n\r\n").encode()
    block = b"a" * (1 << 20)
    bomb = _gzip_stream([head, http_head, *(block for _ in range(body_len >> 20)), b"\r\n\r\n"])
    path.write_bytes(gzip.compress(small[0]) + bomb + gzip.compress(small[1]))


def _read(path: Path) -> tuple[int, int, str, int]:
    out = subprocess.run([sys.executable, "-c", READ, str(path), LIMIT], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    kept, skipped, reason, peak = out.stdout.strip().split("\t")
    return int(kept), int(skipped), reason, int(peak)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> int:
    """Peak RSS of the same read of a small file: the interpreter and its libraries."""
    path = tmp_path_factory.mktemp("bomb") / "small.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"id": "a", "text": "one"}\n'))
    return _read(path)[3]


def _huge_parquet(path: Path) -> None:
    """Three row groups, one row each; the middle one's text is a HUGE-byte cell (zstd: a few KB).
    Written in a process of its own: the reader's measuring child is forked from this one, and
    Linux carries a process's peak RSS over into the child it forks and execs."""
    code = ("import sys, pyarrow as pa, pyarrow.parquet as pq; pq.write_table(pa.table({'id': ['small-1', 'huge', "
            "'small-2'], 'text': ['a document before the bomb', 'a' * int(sys.argv[2]), 'a document after the "
            "bomb']}), sys.argv[1], row_group_size=1, compression='zstd')")
    subprocess.run([sys.executable, "-c", code, str(path), str(HUGE)], check=True, timeout=300)


@pytest.mark.parametrize("kind", ["jsonl.gz", "jsonl.zst", "warc.gz", "parquet"])
def test_a_bomb_is_one_skipped_record_and_memory_stays_bounded(kind, tmp_path, baseline):
    """Parquet: before, the huge cell's page was inflated whole (Arrow reads a page to read any
    value of it) and only then found too large; now its page header says so first."""
    path = tmp_path / f"bomb.{kind}"
    if kind == "warc.gz":
        _huge_warc(path)
    elif kind == "parquet":
        _huge_parquet(path)
    else:
        path.write_bytes((_gzip_stream if kind.endswith("gz") else _zstd_stream)(_huge_line_parts()))
    assert path.stat().st_size < HUGE // 100  # a bomb: tiny on disk
    kept, skipped, reason, peak = _read(path)
    assert (kept, skipped) == (2, 1), (kept, skipped, reason)  # the records after it are read too
    assert reason.startswith("document of ") or "more than any document under --max-doc-bytes" in reason, reason
    extra = peak - baseline
    print(f"{kind}: {HUGE / 2**20:.0f} MiB record, --max-doc-bytes 1 MiB: peak {peak / 1e6:.0f} MB, "
          f"{extra / 1e6:.0f} MB over the interpreter's {baseline / 1e6:.0f} MB")
    assert extra < 100e6, f"{kind}: {extra / 1e6:.0f} MB over the baseline for a {HUGE >> 20} MiB record"


EXTRACT = """
import json, resource, sys
from textsieve.cli import main
rc = main(["extract", sys.argv[1], "-o", sys.argv[2], "--workers", "1", "-q", "--max-doc-bytes", "1MiB"])
summary = json.load(open(sys.argv[2] + "/.textsieve/extract.json"))
print(rc, json.dumps(summary["result"]), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, sep="\\t")
"""


def test_extract_passes_over_a_bomb_record_without_holding_it(tmp_path, baseline):
    """The issue's case: one huge record inside a small .warc.gz drove `extract` to 18.5 GB before
    it was classified too_large. Now a record whose Content-Length is over --max-doc-bytes is
    inflated to its end without being kept, counted too_large, and the pages after it are kept."""
    path = tmp_path / "bomb.warc.gz"
    _huge_warc(path)
    out = subprocess.run([sys.executable, "-c", EXTRACT, str(path), str(tmp_path / "docs")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rc, result, peak = out.stdout.strip().split("\t")
    result = json.loads(result)
    assert rc == "0" and result["skipped"].get("too_large") == 1, result
    extra = int(peak) - baseline
    print(f"extract: {HUGE >> 20} MiB record in a {path.stat().st_size / 1e3:.0f} KB .warc.gz: peak "
          f"{int(peak) / 1e6:.0f} MB, {extra / 1e6:.0f} MB over the interpreter")
    assert extra < 250e6, f"{extra / 1e6:.0f} MB over the baseline"  # the engine and language-id model load too
