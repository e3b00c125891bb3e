"""Folders an older textsieve published keep working: they are moved into the current layout the
first time a command opens them (issue 26, item 1: "keep reading old folders, a migration path").

The old layout (every release before issue 26): bookkeeping beside the outputs
(`ATTRS/manifest.json`, `ATTRS/annotate.json`, `SET/summary.json`, `SEL/selection.json`) and
attribute sets under the shards (`ATTRS/x.parquet`, `ATTRS/_dedup_exact/x.parquet`). The
fixture builds a run with this textsieve, then writes it back into the old layout exactly as
the old code published it (`_to_old_layout`, the inverse of `io.legacy_layout.migrate`:
manifests keyed by the old names, the sets' `built_from` by the old names' content key).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fsspec
import pytest

import textsieve as ts
from textsieve.cli import main
from textsieve.io import legacy_layout
from textsieve.io.attributes import attribute_sets
from textsieve.io.publish import contents_key

pytestmark = pytest.mark.slow  # builds a five-stage run (~10 s)

RECIPE = "rules:\n  words: rps_doc_word_count >= 40\n  unique: dup_exact_keep\n  near: dup_fuzzy_t80_keep\n"


def _run(*argv: str) -> None:
    assert main([*argv, "-q"]) == 0, argv


def _old_folder(folder: Path, built_from: tuple[str, str] | None = None) -> dict:
    """Put one published folder's bookkeeping back beside its outputs (old names); returns its
    old manifest. `built_from`: (new key, old key) of the annotate folder a set belongs to."""
    book = folder / ".textsieve"
    manifest = json.loads((book / "manifest.json").read_text())
    files = {}
    for rel, entry in manifest["files"].items():
        old = rel.removeprefix(".textsieve/")
        if old != rel:
            (book / old).rename(folder / old)
        files[old] = entry
    manifest["files"] = files
    if built_from and manifest["info"].get("built_from") == built_from[0]:
        manifest["info"]["built_from"] = built_from[1]
    shutil.rmtree(book)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def _to_old_layout(attrs: Path) -> None:
    """An annotate folder with its sets, as the old textsieve laid it out."""
    manifest = json.loads((attrs / ".textsieve" / "manifest.json").read_text())
    new_key = contents_key({r: e["sha256"] for r, e in manifest["files"].items() if r.endswith(".parquet")})
    old_key = contents_key({r.removeprefix("docs/"): e["sha256"] for r, e in manifest["files"].items()
                            if r.endswith(".parquet")})
    for set_dir in sorted((attrs / "sets").iterdir()):
        _old_folder(set_dir, (new_key, old_key))
        set_dir.rename(attrs / f"_{set_dir.name}")
    (attrs / "sets").rmdir()
    old = _old_folder(attrs)
    old["files"] = {r.removeprefix("docs/"): e for r, e in old["files"].items()}
    (attrs / "manifest.json").write_text(json.dumps(old, indent=1))
    for shard in sorted((attrs / "docs").rglob("*.parquet")):
        target = attrs / shard.relative_to(attrs / "docs")
        target.parent.mkdir(parents=True, exist_ok=True)
        shard.rename(target)
    shutil.rmtree(attrs / "docs")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("legacy")
    _run("sample", str(root / "in" / "sample.jsonl.gz"), "--max-docs", "200")
    _run("annotate", str(root / "in"), "-o", str(root / "attrs"), "--workers", "1")
    _run("dedup", "exact", str(root / "attrs"), "--workers", "1")
    _run("dedup", "fuzzy", str(root / "attrs"), "--workers", "1")
    _run("sample", str(root / "target.jsonl.gz"), "--max-docs", "40")
    _run("dsir", "fit", "--raw", str(root / "attrs"), "--targets", str(root / "target.jsonl.gz"), "--name", "t",
         "--buckets", "2000")
    (root / "r.yaml").write_text(RECIPE)
    _run("select", str(root / "attrs"), "-r", str(root / "r.yaml"), "-o", str(root / "sel"), "--workers", "1")
    return root


def _old_copy(run: Path, tmp_path: Path) -> Path:
    old = tmp_path / "old"
    shutil.copytree(run, old, symlinks=True)
    _to_old_layout(old / "attrs")
    _old_folder(old / "sel")
    return old


def _selected(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl.gz"))}


def test_an_old_folder_is_read_as_it_was_and_moved_once(run: Path, tmp_path: Path) -> None:
    old = _old_copy(run, tmp_path)
    attrs = old / "attrs"
    assert (attrs / "annotate.json").is_file() and (attrs / "_dedup_fuzzy" / "summary.json").is_file()
    assert (attrs / "_dsir_t" / "model.dsir").is_file() and not (attrs / "docs").exists()
    want = ts.attributes(run / "attrs", "arrow").sort_by([("shard", "ascending"), ("row", "ascending")])
    got = ts.attributes(attrs, "arrow").sort_by([("shard", "ascending"), ("row", "ascending")])
    assert got.equals(want)  # every set joined, none taken for stale
    # now in the current layout, nothing of the old one left
    assert sorted(p.name for p in attrs.iterdir()) == [".textsieve", "README.md", "docs", "sets"]
    assert sorted(p.name for p in (attrs / "sets").iterdir()) == ["dedup_exact", "dedup_fuzzy", "dsir_t"]
    assert (attrs / ".textsieve" / "annotate.json").is_file() and not (attrs / "manifest.json").exists()
    assert (attrs / "sets" / "dsir_t" / ".textsieve" / "model.dsir").is_file()
    assert sorted(attribute_sets(str(attrs))) == ["dedup_exact", "dedup_fuzzy", "dsir_t"]
    # the old selection's summary is read by the report, and select writes the same documents
    assert main(["report", str(attrs), "--selection", str(old / "sel"), "-o", str(tmp_path / "r.html"),
                 "-q"]) == 0
    assert (old / "sel" / ".textsieve" / "selection.json").is_file() and not (old / "sel" / "selection.json").exists()
    _run("select", str(attrs), "-r", str(old / "r.yaml"), "-o", str(tmp_path / "sel2"), "--workers", "1")
    assert _selected(tmp_path / "sel2") == _selected(run / "sel")
    # the DSIR weights kept their model: a re-fit with the same settings finds it (no refit)
    res = ts.dsir_fit(raw=str(attrs), targets=[str(old / "target.jsonl.gz")], name="t", buckets=2000,
                      progress=False)
    assert res.model_reused


def test_a_stale_set_stays_stale_after_the_move(run: Path, tmp_path: Path) -> None:
    """A set the old textsieve made from earlier annotate shards is left out before and after."""
    old = _old_copy(run, tmp_path)
    attrs = old / "attrs"
    manifest = json.loads((attrs / "_dedup_exact" / "manifest.json").read_text())
    manifest["info"]["built_from"] = "0123456789abcdef"  # some earlier generation of the shards
    (attrs / "_dedup_exact" / "manifest.json").write_text(json.dumps(manifest))
    assert sorted(attribute_sets(str(attrs))) == ["dedup_fuzzy", "dsir_t"]


def test_a_move_killed_halfway_is_finished_by_the_next_reader(run: Path, tmp_path: Path, monkeypatch) -> None:
    old = _old_copy(run, tmp_path)
    attrs = old / "attrs"
    real = legacy_layout._write_manifest
    calls = {"n": 0}

    def dies_at_the_switch(fs, root, data):
        calls["n"] += 1
        if root.endswith("/attrs"):  # the sets are moved, the shards too; the annotate switch is not made
            raise KeyboardInterrupt
        real(fs, root, data)

    monkeypatch.setattr(legacy_layout, "_write_manifest", dies_at_the_switch)
    with pytest.raises(KeyboardInterrupt):
        legacy_layout.migrate(fsspec.filesystem("file"), str(attrs))
    assert (attrs / "manifest.json").is_file() and (attrs / "docs").is_dir()  # still the old switch
    monkeypatch.setattr(legacy_layout, "_write_manifest", real)
    got = ts.attributes(attrs, "arrow").sort_by([("shard", "ascending"), ("row", "ascending")])
    want = ts.attributes(run / "attrs", "arrow").sort_by([("shard", "ascending"), ("row", "ascending")])
    assert got.equals(want) and not (attrs / "manifest.json").exists()


def test_a_user_file_called_manifest_json_is_not_moved(tmp_path: Path) -> None:
    """Only a textsieve manifest marks an old folder: a user's JSON of that name is left alone."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").write_text(json.dumps({"files": ["a", "b"]}))
    assert not legacy_layout.migrate(fsspec.filesystem("file"), str(tmp_path / "data"))
    assert (tmp_path / "data" / "manifest.json").is_file() and not (tmp_path / "data" / ".textsieve").exists()
