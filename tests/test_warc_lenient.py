"""WARC files shaped like ClueWeb09's are extracted (issue 26, item 2): version ``WARC/0.18``, every
``\\r\\n`` turned into a bare ``\\n`` (so every Content-Length is wrong), no block digests, the
whole file one gzip stream. Before: `extract --on-error skip` on such a file gave 0 pages and one
"damaged" record per record, all at record 0.

The files are made here from the bundled sample crawl (`textsieve sample --crawl`'s WARC), so
the pages of the lenient reading can be compared with those of the well-formed original.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import textsieve as ts
from textsieve.io.warc_lenient import looks_lenient


def _clueweb_shape(warc_gz: Path, out: Path, *, cut: int | None = None) -> None:
    data = gzip.decompress(warc_gz.read_bytes())
    starts = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", data)] + [len(data)]
    records = []
    for a, b in zip(starts, starts[1:]):
        r = re.sub(rb"^WARC/1\.[01]\r\n", b"WARC/0.18\r\n", data[a:b])
        r = re.sub(rb"(?im)^WARC-(Block|Payload)-Digest:[^\r\n]*\r\n", b"", r)
        records.append(r.replace(b"\r\n", b"\n"))
    packed = gzip.compress(b"".join(records), mtime=0)
    out.write_bytes(packed if cut is None else packed[:cut])


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    from textsieve.sample_crawl import build_sample_crawl

    folder = tmp_path_factory.mktemp("lenient-crawl")
    build_sample_crawl(folder, max_pages=30)
    return sorted(folder.glob("*.warc.gz"))[0]


def _docs(path: Path, out: Path, **kw) -> list[dict]:
    import json

    res = ts.extract([str(path)], output=str(out), progress=False, workers=1, **kw)
    docs = []
    for f in sorted(out.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            docs += [json.loads(line) for line in fh]
    assert res.documents == len(docs)
    return docs


def test_a_clueweb09_shaped_file_gives_the_pages_of_its_well_formed_original(crawl, tmp_path):
    shaped = tmp_path / "cw09.warc.gz"
    _clueweb_shape(crawl, shaped)
    assert looks_lenient(gzip.decompress(shaped.read_bytes())[:4096])
    assert not looks_lenient(gzip.decompress(crawl.read_bytes())[:4096])  # Common Crawl-style files keep the checks
    want = _docs(crawl, tmp_path / "want")
    for mode in ("fail", "skip"):
        got = _docs(shaped, tmp_path / f"got-{mode}", on_error=mode)
        assert [d["url"] for d in got] == [d["url"] for d in want] and len(got) > 10
        same = sum(" ".join(a["text"].split()) == " ".join(b["text"].split()) for a, b in zip(got, want))
        assert same >= 0.9 * len(want), (same, len(want))  # only the bodies' lost \r differ


def test_a_cut_clueweb09_shaped_file_keeps_what_came_before_and_says_where_it_stopped(crawl, tmp_path):
    shaped = tmp_path / "cw09.warc.gz"
    _clueweb_shape(crawl, tmp_path / "whole.warc.gz")
    _clueweb_shape(crawl, shaped, cut=(tmp_path / "whole.warc.gz").stat().st_size // 2)
    res = ts.extract([str(shaped)], output=str(tmp_path / "out"), progress=False, workers=1, on_error="skip")
    assert res.documents > 0 and res.bad_records == 1
    with pytest.raises(Exception, match=r"cw09\.warc\.gz:record \d+.*gzip stream is damaged or cut"):
        ts.extract([str(shaped)], output=str(tmp_path / "fail"), progress=False, workers=1)
