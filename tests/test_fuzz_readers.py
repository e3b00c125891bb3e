"""A bounded fuzzer for the readers (issue 16): mutated real files must give documents or
textsieve's located errors, never another exception and never a hang.

Seeds are small slices of the shared corpora, one per format: JSON Lines (plain, two-member
.gz, two-frame .zst with checksums), Parquet (three row groups), WARC (per-record .gz members
and plain), WET and ARC (real files from ``corpora/dev/raw/``). Without the shared corpora the
same formats (but ARC) are built from the bundled sample corpus (`build_bundled_seeds`: its
texts, its crawl's WARC records and WET records of the texts), so the fuzzer runs everywhere;
`test_bundled_seeds_read_cleanly_and_fuzz` runs them in the quick suite either way. A case mutates one seed with a
fixed seed (`random.Random`): byte flips, a truncation, an inserted run of bytes, a deleted or
repeated range; for compressed seeds half the cases mutate the decompressed bytes of one
member and compress it again, so the parsers behind the decompressors get fuzzed too. Every
case is read in both ``on_error`` modes:

* ``fail``: documents, or an `InputError` whose message starts with the file's path;
* ``skip``: documents only, no exception (every problem becomes a `SkippedRecord` that names
  the file); rows strictly increase and every string of a document encodes as UTF-8.
* in both modes, nothing altered passes where something vouches for the content: after a
  mutation of the compressed bytes of a checksummed format (gzip, zstd, Parquet page CRCs) or
  one that changes the length of a plain WARC record, every document read has a seed text.

Each case runs under a SIGALRM limit (`CASE_SECONDS`), so a hang fails the case that caused it
and names it. Seeds take turns, so a run cut short by its overall time budget still covers
every format.

The quick suite runs `test_fuzz_readers_smoke` (a few seconds); `test_fuzz_readers` (in
SLOW_TESTS, so CI's full run) runs up to 400 cases per format within 20 s, and
`test_fuzz_extract_page_reader` the WARC seeds through extract's page reader the same way. Longer runs, e.g.
thousands of cases, are the same test with environment variables::

    TEXTSIEVE_FUZZ_CASES=5000 TEXTSIEVE_FUZZ_SECONDS=3600 pytest tests/test_fuzz_readers.py -k 'not smoke'

``TEXTSIEVE_FUZZ_SEED`` picks another mutation seed (default 16). A failure prints the seed
format and case number; `mutate` rebuilds the exact bytes from them.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from textsieve.io import InputError, ReadOptions, ShardReader, expand_inputs

CASE_SECONDS = 10  # per case and mode; a reader that needs longer on a 100 KB file hangs
TEXT_CHARS = 1500  # documents are cut to this length, to keep the seeds small and cases fast


@dataclass
class Seed:
    """One real file, as the parts a mutation may pick (JSONL lines of one gzip member, one WARC
    record...) and how to pack them into the file's bytes."""

    name: str
    suffix: str
    parts: list[bytes]
    pack: Callable[[list[bytes]], bytes]
    inner: bool  # whether parts are the uncompressed payloads of a compressed file
    guard: str  # what vouches for the content: "checksum" (gzip/zstd/Parquet page CRCs), "length"
    # (WARC Content-Length: a mutation that changes the length of a record's block must not
    # pass), or "none"
    texts: frozenset[str] = frozenset()  # the documents' texts of the unmutated seed

    def blocks(self) -> list[tuple[int, int]]:
        """Byte ranges of the records' blocks in the packed file (plain WARC seeds)."""
        out, at = [], 0
        for part in self.parts:
            head = part.index(b"\r\n\r\n") + 4
            out.append((at + head, at + len(part) - 4))
            at += len(part)
        return out


def _join(parts: list[bytes]) -> bytes:
    return b"".join(parts)


def _gzip_each(parts: list[bytes]) -> bytes:
    return b"".join(gzip.compress(p, mtime=0) for p in parts)


def _zstd_each(parts: list[bytes]) -> bytes:
    cctx = zstandard.ZstdCompressor(write_checksum=True)
    return b"".join(cctx.compress(p) for p in parts)


def _parquet(parts: list[bytes]) -> bytes:
    docs = [json.loads(line) for part in parts for line in part.splitlines()]
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": [d["id"] for d in docs], "text": [d["text"] for d in docs],
                             "url": [d.get("url") for d in docs]}),
                   sink, row_group_size=10, compression="zstd", write_page_checksum=True)
    return sink.getvalue()


def _warc_records(data: bytes) -> list[bytes]:
    heads = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", data)] + [len(data)]
    return [data[a:b] for a, b in zip(heads, heads[1:])]


def build_seeds(dev: Path) -> list[Seed]:
    lines = []
    with gzip.open(dev / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            doc["text"] = doc["text"][:TEXT_CHARS]
            doc["url"] = f"https://example.org/{len(lines)}"
            lines.append(json.dumps(doc).encode() + b"\n")
            if len(lines) == 30:
                break
    halves = [b"".join(lines[:15]), b"".join(lines[15:])]
    raw = dev / "raw"
    warc = _warc_records(gzip.decompress((raw / "dolma_sample-0000.warc.gz").read_bytes()))[:8]
    parquet = _parquet(halves)
    return [
        Seed("jsonl", ".jsonl", list(lines), _join, False, "none"),
        Seed("jsonl.gz", ".jsonl.gz", halves, _gzip_each, True, "checksum"),
        Seed("jsonl.zst", ".jsonl.zst", halves, _zstd_each, True, "checksum"),
        Seed("parquet", ".parquet", [parquet], _join, False, "checksum"),
        Seed("warc.gz", ".warc.gz", warc, _gzip_each, True, "checksum"),
        Seed("warc", ".warc", warc, _join, False, "length"),
        Seed("wet.gz", ".warc.wet.gz", [(raw / "whirlwind.warc.wet.gz").read_bytes()], _join, False, "checksum"),
        Seed("arc.gz", ".arc.gz", [(raw / "warcio_example.arc.gz").read_bytes()], _join, False, "checksum"),
    ]


def _wet_record(url: str, text: str, n: int) -> bytes:
    body = text.encode("utf-8")
    head = (f"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Target-URI: {url}\r\n"
            f"WARC-Date: 2024-01-01T00:00:{n % 60:02d}Z\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{n:012d}>\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head + body + b"\r\n\r\n"


def build_bundled_seeds(folder: Path) -> list[Seed]:
    """The same formats from the bundled sample corpus (text that ships with Python and Debian),
    for machines without the shared corpora: JSONL, Parquet, a crawl's WARC records
    (`textsieve sample --crawl`) and WET conversion records of the same texts. No ARC seed: the
    sample has none."""
    from textsieve.sample import build_sample
    from textsieve.sample_crawl import build_sample_crawl

    build_sample(str(folder / "sample.jsonl.gz"), max_docs=30)
    lines = []
    with gzip.open(folder / "sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            doc = json.loads(line)
            doc["text"] = doc["text"][:TEXT_CHARS]
            doc["url"] = f"https://example.org/{i}"
            lines.append(json.dumps(doc).encode() + b"\n")
    halves = [b"".join(lines[:15]), b"".join(lines[15:])]
    build_sample_crawl(folder / "crawl", max_pages=8)
    warc = _warc_records(gzip.decompress(sorted((folder / "crawl").glob("*.warc.gz"))[0].read_bytes()))[:8]
    wet = [_wet_record(f"https://example.org/{i}", json.loads(line)["text"], i) for i, line in enumerate(lines[:8])]
    return [
        Seed("jsonl", ".jsonl", list(lines), _join, False, "none"),
        Seed("jsonl.gz", ".jsonl.gz", halves, _gzip_each, True, "checksum"),
        Seed("jsonl.zst", ".jsonl.zst", halves, _zstd_each, True, "checksum"),
        Seed("parquet", ".parquet", [_parquet(halves)], _join, False, "checksum"),
        Seed("warc.gz", ".warc.gz", warc, _gzip_each, True, "checksum"),
        Seed("warc", ".warc", warc, _join, False, "length"),
        Seed("wet.gz", ".warc.wet.gz", wet, _gzip_each, True, "checksum"),
    ]


@dataclass
class Case:
    data: bytes
    kind: str  # flip, truncate, insert, delete, repeat
    inner: bool  # the mutation was made before compression, so no checksum can notice it
    span: tuple[int, int]  # the original bytes an insert, delete or repeat changed (insert: empty)


def _mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str, tuple[int, int]]:
    if not data:
        return bytes([rng.randrange(256)]), "insert", (0, 0)
    kind = rng.choice(("flip", "flip", "truncate", "insert", "delete", "repeat"))
    at = rng.randrange(len(data))
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out), kind, (at, at)
    if kind == "truncate":
        return data[:at], kind, (at, len(data))
    if kind == "insert":
        junk = rng.choice((bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))), b"\n", b"\r\n\r\n",
                           b"\x00" * 16, b"\\ud800", b'"', b"WARC/1.0\r\n"))
        return data[:at] + junk + data[at:], kind, (at, at)
    end = min(len(data), at + rng.randint(1, 256))
    if kind == "delete":
        return data[:at] + data[end:], kind, (at, end)
    return data[:end] + data[at:end] + data[end:], kind, (at, end)


def mutate(seed: Seed, case: int, base_seed: int) -> Case:
    """Case `case` of `seed`: the same bytes for the same arguments, on any machine."""
    rng = random.Random(f"{base_seed}:{seed.name}:{case}")
    parts = list(seed.parts)
    if seed.inner and rng.random() < 0.5:
        i = rng.randrange(len(parts))
        parts[i], kind, span = _mutate_bytes(parts[i], rng)
        return Case(seed.pack(parts), kind, True, span)
    data, kind, span = _mutate_bytes(seed.pack(parts), rng)
    return Case(data, kind, False, span)


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout


def _vouched(seed: Seed, case: Case) -> bool:
    """Whether every document read from `case` must be one of the seed's: its content is under
    a checksum the mutation could not update, or the mutation changed the length of a WARC
    record's block (a change in the WARC headers may change what a record means)."""
    if seed.guard == "checksum":
        return not case.inner
    start, end = case.span
    return (seed.guard == "length" and case.kind in ("insert", "delete", "repeat")
            and any(a < start and end < b for a, b in seed.blocks()))


def _checked(path: Path, mode: str, read: Callable[[ShardReader], None]) -> None:
    """Open `path` in `mode` and run `read` (which checks what the reader yields): in fail mode
    an `InputError` must start with the file's path, in skip mode none may be raised, and every
    skip names the file."""
    try:
        [shard] = expand_inputs([str(path)])
    except InputError as exc:  # e.g. a file that reads as nothing at all
        assert str(exc).startswith(str(path)), exc
        return
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    try:
        read(reader)
    except InputError as exc:
        assert mode == "fail", f"skip mode raised: {exc}"
        assert str(exc).startswith(str(path)), exc
        return
    for skip in reader.skipped:
        assert skip.location.startswith(str(path)), skip


def _check_case(path: Path, mode: str, texts: frozenset[str] | None = None) -> None:
    """Read `path` in `mode`; raise AssertionError on any behaviour the module doc rules out.
    With `texts`, every document must have one of them (nothing altered passes)."""
    def read(reader: ShardReader) -> None:
        last = -1
        for doc in reader:
            assert doc.row > last, (doc.row, last)
            last = doc.row
            for value in (doc.id, doc.text, doc.url, doc.lang):
                if value is not None:
                    value.encode("utf-8")
            assert texts is None or doc.text in texts, f"row {doc.row}: an altered text passed: {doc.text[:80]!r}"

    _checked(path, mode, read)


def _check_pages(path: Path, mode: str, texts: frozenset[str] | None = None) -> None:
    """`_check_case` for extract's page reader (`io.warc_pages`, FastWARC plus the checked
    framing): pages with rising rows and readable ids, or a located error; a 1 MiB cap on."""
    from textsieve.io.warc_pages import read_pages

    def read(reader: ShardReader) -> None:
        last = -1
        for page in read_pages(reader, 1 << 20):
            assert page.row > last, (page.row, last)
            last = page.row
            for value in (page.id, page.url, page.date, page.content_type):
                if value is not None:
                    value.encode("utf-8")
            assert isinstance(page.body, bytes) and (page.status is None or 0 <= page.status < 1000)

    _checked(path, mode, read)


def round_robin(seeds: list, cases: int, budget: float) -> Iterator[tuple[int, Any]]:
    """(case, seed) with the seeds taking turns, until `cases` per seed ran or `budget` seconds
    passed, with the SIGALRM handler of `run_case` installed meanwhile (test_fuzz_files too)."""
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in range(cases):
            for seed in seeds:
                if time.monotonic() - start > budget:
                    return
                yield case, seed
    finally:
        signal.signal(signal.SIGALRM, old)


def run_case(label: str, check: Callable[[], None]) -> None:
    """Run one case within CASE_SECONDS; a hang or any exception fails the test, naming `label`."""
    signal.alarm(CASE_SECONDS)
    try:
        check()
    except CaseTimeout:
        pytest.fail(f"{label}: no result after {CASE_SECONDS} s (a hang)")
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        pytest.fail(f"{label}: {type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)


def _run(seeds: list[Seed], tmp_path: Path, cases: int, budget: float, base_seed: int,
         check: Callable[[Path, str, frozenset[str] | None], None] = _check_case) -> dict[str, int]:
    """Round-robin over the seeds until `cases` per seed ran or `budget` seconds passed; returns
    the cases run per seed. Fails on the first bad case, naming it."""
    done = {s.name: 0 for s in seeds}
    for case, seed in round_robin(seeds, cases, budget):
        path = tmp_path / f"case{seed.suffix}"
        mutated = mutate(seed, case, base_seed)
        path.write_bytes(mutated.data)
        texts = seed.texts if _vouched(seed, mutated) else None
        for mode in ("fail", "skip"):
            kind = f"{mutated.kind}{' inner' if mutated.inner else ''}"
            run_case(f"{seed.name} case {case} ({kind}, {mode}, seed {base_seed})",
                     lambda: check(path, mode, texts))  # noqa: B023 - called at once, in this iteration
        done[seed.name] += 1
    return done


def _with_texts(seeds: list[Seed], folder: Path) -> list[Seed]:
    out = []
    for seed in seeds:
        path = folder / f"{seed.name}{seed.suffix}"
        path.write_bytes(seed.pack(seed.parts))
        [shard] = expand_inputs([str(path)])
        seed.texts = frozenset(doc.text for doc in ShardReader(shard))
        out.append(seed)
    return out


@pytest.fixture(scope="module")
def bundled_seeds(tmp_path_factory) -> list[Seed]:
    """Seeds from the bundled sample corpus: the fuzzer runs on every machine."""
    folder = tmp_path_factory.mktemp("bundled-seeds")
    return _with_texts(build_bundled_seeds(folder), folder)


@pytest.fixture(scope="module")
def seeds(bundled_seeds, tmp_path_factory) -> list[Seed]:
    """The seeds, each with the texts its unmutated file reads as: slices of the shared corpora
    (web text, real crawl files) where they are, else the bundled ones."""
    from _shared import SHARED

    dev = SHARED / "corpora" / "dev"
    if not (dev / "raw" / "dolma_sample-0000.warc.gz").exists() or not (dev / "web_sample.jsonl.gz").exists():
        return bundled_seeds
    folder = tmp_path_factory.mktemp("seeds")
    return _with_texts(build_seeds(dev), folder)


def test_bundled_seeds_read_cleanly_and_fuzz(bundled_seeds, tmp_path) -> None:
    """Without the shared corpora too: the bundled seeds are valid files of every format but ARC,
    and a short fuzz run over them passes."""
    assert {s.name for s in bundled_seeds} == {"jsonl", "jsonl.gz", "jsonl.zst", "parquet", "warc.gz", "warc",
                                               "wet.gz"}
    for seed in bundled_seeds:
        path = tmp_path / f"seed{seed.suffix}"
        path.write_bytes(seed.pack(seed.parts))
        [shard] = expand_inputs([str(path)])
        reader = ShardReader(shard, ReadOptions(on_error="fail"))
        assert sum(1 for _ in reader) == len(seed.texts) > 0 and reader.skipped == [], seed.name
    done = _run(bundled_seeds, tmp_path, cases=20, budget=4.0, base_seed=11)
    assert all(n > 0 for n in done.values()), done


def test_seeds_read_cleanly(seeds, tmp_path) -> None:
    """Unmutated, every seed reads without a skip: the mutations are what the fuzzer tests."""
    for seed in seeds:
        path = tmp_path / f"seed{seed.suffix}"
        path.write_bytes(seed.pack(seed.parts))
        [shard] = expand_inputs([str(path)])
        reader = ShardReader(shard, ReadOptions(on_error="fail"))
        assert sum(1 for _ in reader) == len(seed.texts) > 0 and reader.skipped == [], seed.name


def test_fuzz_readers_smoke(seeds, tmp_path) -> None:
    done = _run(seeds, tmp_path, cases=40, budget=5.0, base_seed=7)
    assert all(n > 0 for n in done.values()), done


def test_fuzz_readers(seeds, tmp_path) -> None:
    cases = int(os.environ.get("TEXTSIEVE_FUZZ_CASES", "400"))
    budget = float(os.environ.get("TEXTSIEVE_FUZZ_SECONDS", "20"))
    done = _run(seeds, tmp_path, cases=cases, budget=budget, base_seed=int(os.environ.get("TEXTSIEVE_FUZZ_SEED", "16")))
    assert all(n > 0 for n in done.values()), done
    print(f"fuzz cases per format: {done}")


def test_fuzz_extract_page_reader(seeds, tmp_path) -> None:
    """Issue 25 item 8: the same mutations through extract's WARC page reader."""
    warcs = [s for s in seeds if s.name in ("warc.gz", "warc")]
    cases = int(os.environ.get("TEXTSIEVE_FUZZ_CASES", "400"))
    budget = float(os.environ.get("TEXTSIEVE_FUZZ_SECONDS", "20"))
    done = _run(warcs, tmp_path, cases=cases, budget=budget, base_seed=int(os.environ.get("TEXTSIEVE_FUZZ_SEED", "16")),
                check=_check_pages)
    assert len(done) == 2 and all(n > 0 for n in done.values()), done
    print(f"fuzz cases of the page reader per format: {done}")


# ---------------------------------------------------------------- what the fuzzer found (fixed)


def _records(dev: Path) -> list[bytes]:
    return _warc_records(gzip.decompress((dev / "raw" / "dolma_sample-0000.warc.gz").read_bytes()))[:8]


def _docs_and_skips(path: Path) -> tuple[list, list]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error="skip"))
    return list(reader), reader.skipped


def test_found_gzip_damage_inside_a_warc_record_member(seeds, dev_dir, tmp_path) -> None:
    """Found by the fuzzer. Before: a WARC record's gzip member with a flipped byte in its stored
    data, or cut inside its CRC-32 trailer, passed with the altered or unverified text (warcio
    writes "Error -3 ... incorrect data check" on stderr and drops the block; a member without
    its end looked complete). After: a located error for that record; the records before it
    are kept."""
    records = _records(dev_dir)
    word = b"Semantic"
    assert word in records[2]
    flipped = bytearray(gzip.compress(records[2], compresslevel=0, mtime=0))
    at = flipped.index(word)
    flipped[at] ^= 0x20
    head = b"".join(gzip.compress(r, mtime=0) for r in records[:2])
    tail = b"".join(gzip.compress(r, mtime=0) for r in records[3:])
    bad = tmp_path / "flip.warc.gz"
    bad.write_bytes(head + bytes(flipped) + tail)
    docs, [skip] = _docs_and_skips(bad)
    assert docs == [] and skip.location == f"{bad}:record 2"
    assert "corrupt gzip data in this record's gzip member" in skip.reason and "incorrect data check" in skip.reason

    cut = tmp_path / "cut.warc.gz"
    whole = b"".join(gzip.compress(r, mtime=0) for r in records)
    cut.write_bytes(whole[:-3])  # inside the last member's trailer: its data decodes in full
    docs, [skip] = _docs_and_skips(cut)
    assert skip.location == f"{cut}:record 7" and "ends without its end marker and CRC-32" in skip.reason
    assert [d.row for d in docs] == [2, 4, 6]


def test_found_response_block_without_its_http_head(seeds, dev_dir, tmp_path) -> None:
    """Found by the fuzzer. Before: when a response's WARC headers lost their Content-Length
    and blank line, its HTTP head was read as more WARC headers (the HTTP Content-Length then
    framing the block) and the record passed, its text the HTML without a status line (warcio
    takes any first line for one). After: a located bad record, skipped, the rest read."""
    records = _records(dev_dir)
    m = re.search(rb"Content-Length: \d+\r\n\r\nHTTP/1\.1 ", records[2])
    assert m is not None
    path = tmp_path / "merged.warc"
    merged = records[2][: m.start()] + records[2][m.end() + 1 :]  # the case found: "...: text/html\r\n00 OK\r\n"
    path.write_bytes(b"".join(records[:2]) + merged + b"".join(records[3:]))
    docs, skipped = _docs_and_skips(path)
    assert [d.row for d in docs] == [4, 6]
    assert [s.location for s in skipped] == [f"{path}:record 2"]
    assert "does not start with an HTTP status line" in skipped[0].reason


def test_found_page_reader_record_whose_http_head_fastwarc_cannot_parse(bundled_seeds, tmp_path) -> None:
    """Found by the bundled seeds (plain WARC, case 522, seed 16: a deleted range): FastWARC left
    `http_headers` None and extract's page reader raised AttributeError. Now the record goes to
    the checked framing, which skips it with its location, and reading goes on."""
    [warc] = [s for s in bundled_seeds if s.name == "warc"]
    path = tmp_path / "case.warc"
    path.write_bytes(mutate(warc, 522, 16).data)
    for mode in ("fail", "skip"):
        _check_pages(path, mode)
