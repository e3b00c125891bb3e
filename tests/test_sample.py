"""The bundled sample corpus: size, shape, source mix, determinism, robustness."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from textsieve.sample import SOURCES, SampleInfo, SampleSources, SampleWarning, build_sample


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[SampleInfo, list[dict]]:
    """One default build shared by the read-only checks (a build takes about a second)."""
    info = build_sample(tmp_path_factory.mktemp("sample") / "sample.jsonl.gz")
    return info, _read(info.path)


def test_count_and_info(built: tuple[SampleInfo, list[dict]]) -> None:
    info, records = built
    assert 300 <= info.n_docs <= 600
    assert len(records) == info.n_docs
    assert sum(info.counts.values()) == info.n_docs
    assert Counter(r["source"] for r in records) == Counter(info.counts)
    assert info.n_chars == sum(len(r["text"]) for r in records)


def test_record_shape(built: tuple[SampleInfo, list[dict]]) -> None:
    _, records = built
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids), "ids must be unique"
    assert ids == sorted(ids)
    texts = [r["text"] for r in records]
    assert len(set(texts)) == len(texts), "exact duplicate texts must be dropped"
    for r in records:
        assert set(r) == {"id", "text", "source", "meta"}
        assert r["source"] in SOURCES
        assert r["id"].startswith(r["source"] + "/")
        assert isinstance(r["text"], str) and r["text"].strip()
        assert r["meta"]["lang"] == "en" and r["meta"]["origin"]


def test_source_mix(built: tuple[SampleInfo, list[dict]]) -> None:
    info, _ = built
    # Always available with CPython: help topics, docstrings and source of the stdlib.
    for source in ("python-docs", "python-docstring", "python-source"):
        assert info.counts.get(source, 0) >= 20, info.counts
    # No single source may swamp the sample.
    assert max(info.counts.values()) <= 0.5 * info.n_docs
    if Path("/usr/share/doc").is_dir() and any(Path("/usr/share/doc").glob("*/copyright")):
        assert info.counts.get("debian-copyright", 0) >= 10


def test_docstrings_are_substantial(built: tuple[SampleInfo, list[dict]]) -> None:
    _, records = built
    docstrings = [r for r in records if r["source"] == "python-docstring"]
    assert docstrings and all(len(r["text"]) >= 200 for r in docstrings)
    banned = ("this", "antigravity", "idlelib", "tkinter", "test")
    for r in records:
        if r["source"] in ("python-docstring", "python-source"):
            top = r["id"].split("/", 1)[1].split(".")[0].split("/")[0]
            assert top not in banned, r["id"]


def test_deterministic_and_atomic(tmp_path: Path, built: tuple[SampleInfo, list[dict]]) -> None:
    info, _ = built
    again = build_sample(tmp_path / "nested" / "again.jsonl.gz")
    assert again.path.read_bytes() == info.path.read_bytes()
    assert again.counts == info.counts
    # Only the output is left behind: the temp file was renamed, not copied.
    assert [p.name for p in (tmp_path / "nested").iterdir()] == ["again.jsonl.gz"]


def test_max_docs_respected(tmp_path: Path) -> None:
    info = build_sample(tmp_path / "small.jsonl.gz", max_docs=40)
    assert info.n_docs == 40 == len(_read(info.path))
    assert len(info.counts) >= 3, info.counts


def test_missing_sources_warn_but_work(tmp_path: Path) -> None:
    bare = SampleSources(
        stdlib_dir=tmp_path / "no-stdlib",
        common_licenses_dir=tmp_path / "no-licenses",
        doc_dir=None,
    )
    with pytest.warns(SampleWarning, match="only"):
        info = build_sample(tmp_path / "bare.jsonl.gz", sources=bare)
    assert 0 < info.n_docs < 200
    assert set(info.counts) == {"python-docs"}


def test_odd_files_are_skipped(tmp_path: Path) -> None:
    """Binary, empty, non-UTF-8 files and duplicates must not break or pollute the build."""
    doc = tmp_path / "doc"
    for pkg, data in {
        "good": b"Copyright 2020 Someone\nLicense: MIT\n",
        "dup": b"Copyright 2020 Someone\nLicense: MIT\n",
        "latin1": "Copyright \xa9 Fran\xe7ois\n".encode("latin-1"),
        "empty": b"  \n",
    }.items():
        (doc / pkg).mkdir(parents=True)
        (doc / pkg / "copyright").write_bytes(data)
    (doc / "nocopyright").mkdir()
    src = SampleSources(stdlib_dir=None, common_licenses_dir=None, doc_dir=doc, help_topics=False)
    with pytest.warns(SampleWarning):
        info = build_sample(tmp_path / "odd.jsonl.gz", sources=src)
    assert [r["id"] for r in _read(info.path)] == ["debian-copyright/dup"]


def test_rejects_nonpositive_max_docs(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        build_sample(tmp_path / "x.jsonl.gz", max_docs=0)
