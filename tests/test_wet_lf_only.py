"""WET files whose every newline is a bare ``\\n`` (cc_net's own test WET has no ``\\r`` at all; its
Content-Lengths and block digests are those of the ``\\r\\n`` original) are read (issue 26, item 2).
Before: `annotate --on-error skip` on such a file gave 0 documents and one bad record per record.

The files are built here from real text (the dev corpus's web pages where the shared data is,
else the bundled sample) the way such a file comes about: a correct ``\\r\\n`` WET file (lengths
and SHA-1 block digests right), then every ``\\r\\n`` turned into ``\\n``.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path

import pytest

from textsieve.io import InputError, ReadOptions, ShardReader, expand_inputs


def _texts(tmp: Path, n: int = 6) -> list[str]:
    from textsieve.sample import build_sample

    build_sample(str(tmp / "sample.jsonl.gz"), max_docs=n)
    with gzip.open(tmp / "sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"][:3000].replace("\n", "\r\n") for line in fh]


def _record(i: int, text: str, digest: bool) -> bytes:
    block = text.encode("utf-8")
    sha1 = base64.b32encode(hashlib.sha1(block).digest()).decode()
    head = [b"WARC/1.0", b"WARC-Type: conversion", f"WARC-Target-URI: https://example.org/{i}".encode(),
            f"WARC-Date: 2019-03-18T00:00:{i:02d}Z".encode(),
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012d}>".encode(),
            *([f"WARC-Block-Digest: sha1:{sha1}".encode()] if digest else []),
            b"Content-Type: text/plain", f"Content-Length: {len(block)}".encode()]
    return b"\r\n".join(head) + b"\r\n\r\n" + block + b"\r\n\r\n"


def _lf_only(records: list[bytes]) -> list[bytes]:
    return [r.replace(b"\r\n", b"\n") for r in records]


def _read(path: Path, mode: str) -> tuple[list, list]:
    [shard] = expand_inputs([str(path)])
    reader = ShardReader(shard, ReadOptions(on_error=mode))
    return list(reader), reader.skipped


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> list[str]:
    return _texts(tmp_path_factory.mktemp("wet-lf"))


@pytest.mark.parametrize("packing", ["plain", "gzip member per record"])
def test_a_lf_only_wet_file_is_read_whole_in_both_modes(texts, tmp_path, packing):
    """With block digests: each record's block matches its digest once its newlines are
    restored, so every record is kept, in fail mode too, with the file's own text (bare \\n)."""
    records = _lf_only([_record(i, t, digest=True) for i, t in enumerate(texts)])
    if packing == "plain":
        path = tmp_path / "lf.warc.wet"
        path.write_bytes(b"".join(records))
    else:
        path = tmp_path / "lf.warc.wet.gz"
        path.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in records))
    for mode in ("fail", "skip"):
        docs, skipped = _read(path, mode)
        assert skipped == [] and [d.url for d in docs] == [f"https://example.org/{i}" for i in range(len(texts))]
        assert [d.text for d in docs] == [t.replace("\r\n", "\n") for t in texts]


def test_without_digests_a_lf_only_wet_file_is_kept_in_skip_mode_only(texts, tmp_path, caplog):
    """Without digests nothing vouches for where a block ends (its Content-Length counts the lost
    \\r): skip mode keeps each record's text up to the next record, with a note; fail mode stops
    at the first record, naming it."""
    path = tmp_path / "lf.warc.wet"
    path.write_bytes(b"".join(_lf_only([_record(i, t, digest=False) for i, t in enumerate(texts)])))
    docs, skipped = _read(path, "skip")
    assert skipped == [] and len(docs) == len(texts)
    assert [d.text for d in docs] == [t.replace("\r\n", "\n") for t in texts]
    assert "its text was taken up to the next record" in caplog.text
    with pytest.raises(InputError, match=r"lf\.warc\.wet:record 0"):
        _read(path, "fail")
