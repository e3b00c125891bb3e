"""Issue 13 items 1-3: `import rpv2` of RedPajama-V2's released layout, the cross-check with
`annotate` on the same raw_content, and `export rpv2` back into the layout.

Fixtures are built at test time from the golden RPv2 records (`_rpv2_release`): real texts,
signals and bands in the released layout, with a tail bucket of documents only and copies of
newer documents in an older snapshot (listed as duplicates, and LSH clusters)."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _rpv2_release import COPIES, TAIL, build_release, decompressed
from _shared import SHARED, missing_reason

from textsieve.cli import main
from textsieve.io.attribute_view import to_duckdb
from textsieve.signals import REGISTRY
from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, run_import_rpv2

N_GOLDEN = 400  # golden records laid out (the first 400 of web_sample): seconds, not minutes


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    if not (SHARED / "golden").is_dir():  # module scope: `shared_dir` is per test
        pytest.skip(missing_reason(SHARED))
    root = tmp_path_factory.mktemp("rpv2") / "release"
    return root, build_release(SHARED, root, N_GOLDEN)


@pytest.fixture(scope="module")
def imported(release, tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("rpv2-attrs") / "attrs"
    res = run_import_rpv2(ImportRpv2Config(str(release[0]), str(out), workers=1, progress=False))
    return out, res


def _rows(folder: Path, rel: str) -> dict:
    return pq.read_table(folder / rel).to_pydict()


def test_import_keeps_released_ids_signals_bands_ccnet_and_counts_missing(release, imported):
    root, keys = release
    out, res = imported
    n_docs = sum(len(v) for v in keys.values())
    assert res.documents == n_docs and res.without_signals == TAIL and res.without_minhash == TAIL
    assert res.duplicates == COPIES
    assert res.missing_files["quality_signals"] == ["2023-06/0000/en_tail"]
    assert sorted(res.shards_written) == sorted(keys)
    key = "2023-06/0000/en_head"
    cols = _rows(out, f"docs/{key}.parquet")
    with gzip.open(root / "quality_signals" / f"{key}.signals.json.gz", "rt", encoding="utf-8") as fh:
        released = [json.loads(line) for line in fh]
    assert cols["id"] == [r["id"] for r in released]
    assert cols["id_int"] == [r["id_int"] for r in released]
    assert cols["shard"] == [f"{key}.json.gz"] * len(released) and cols["row"] == list(range(len(released)))
    for name in released[0]["quality_signals"]:
        got = [[[s["start"], s["end"], s["score"]] for s in v] for v in cols[name]]
        want = [r["quality_signals"][name] for r in released]
        assert got == want and [type(x[0][2]) for x in got if x] == [type(x[0][2]) for x in want if x], name
        if not name.startswith("rps_lines_"):
            assert cols[name + "__score"] == [r["quality_signals"][name][0][2] for r in released]
    golden = keys[key]
    assert cols["signature_sim0.8"] == [None if g["minhash"] is None else [bytes.fromhex(b) for b in
                                                                           g["minhash"]["signature_sim0.8"]]
                                        for g in golden]
    assert cols["ccnet_url"][0] == released[0]["metadata"]["url"] and cols["ccnet_digest"][0].startswith("sha1:")
    assert cols["ts_length"] == [len(g["text"]) for g in golden]
    meta = json.loads(pq.read_metadata(out / "docs" / f"{key}.parquet").metadata[b"textsieve"])
    assert meta["source_shard"]["path"] == str(root / "documents" / f"{key}.json.gz")
    assert meta["read_options"]["text_field"] == "raw_content"
    tail = _rows(out, "docs/2023-06/0000/en_tail.parquet")  # documents only: CCNet's fields, no rps_*
    assert tail["rpv2_signals"] == [False] * TAIL and tail["rps_doc_word_count"] == [None] * TAIL
    assert all(v is not None for v in tail["ccnet_perplexity__score"])
    exact = _rows(out, "sets/dedup_exact/2022-49/0000/en_head.parquet")
    assert exact["dup_exact_keep"].count(False) == COPIES and exact["dup_exact_keep"][-COPIES:] == [False] * COPIES


def test_missing_files_warn_not_fail_and_filters(release, tmp_path, caplog):
    root = release[0]
    with caplog.at_level(logging.WARNING, logger="textsieve.import_rpv2"):
        res = run_import_rpv2(ImportRpv2Config(str(root), str(tmp_path / "a"), langs=["en"], buckets=["tail"],
                                               progress=False))
    assert res.shards_written == ["2023-06/0000/en_tail"] and res.without_signals == TAIL
    assert "have no quality_signals file" in caplog.text and "tail bucket" in caplog.text
    res = run_import_rpv2(ImportRpv2Config(str(root), str(tmp_path / "b"), snapshots=["2022-49"], progress=False))
    assert res.shards_written == ["2022-49/0000/en_head"]
    again = run_import_rpv2(ImportRpv2Config(str(root), str(tmp_path / "b"), snapshots=["2022-49"], progress=False))
    assert again.shards_skipped == ["2022-49/0000/en_head"] and not again.shards_written


def test_user_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["import", "rpv2", str(tmp_path / "empty"), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("textsieve: error:") and "no RedPajama-V2 release files" in err[0]


def test_annotate_of_raw_content_equals_imported_signals(release, imported, resources_dir, tmp_path):
    """Item 2: annotate the released raw_content -> every rule signal and band equals the import."""
    root, _ = release
    out, _ = imported
    ann = tmp_path / "ann"
    assert main(["annotate", str(root / "documents"), "-o", str(ann), "--text-field", "raw_content",
                 "--lang-field", "language", "--resources", str(resources_dir), "--workers", "1", "-q"]) == 0
    checked = mismatches = 0
    for shard in sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet") if "sets/dedup" not in str(p)):
        a, b = _rows(out, shard), _rows(ann, shard)
        assert a["id"] == b["id"] and a["row"] == b["row"]
        for name in [n for n in b if n in REGISTRY] + ["signature_sim1.0", "signature_sim0.7"]:
            for has, x, y in zip(a["rpv2_signals"], a[name], b[name]):
                if has:
                    checked += 1
                    mismatches += x != y
    assert checked > 10_000 and mismatches == 0


def test_export_round_trips_byte_identically(release, imported, tmp_path):
    """Item 3: import -> export gives back the released files (JSON byte for byte after gunzip)."""
    root, keys = release
    out, _ = imported
    exp = tmp_path / "exp"
    assert main(["export", "rpv2", str(out), "-o", str(exp), "-q"]) == 0
    sig = sorted(p.relative_to(root) for p in (root / "quality_signals").rglob("*.gz"))
    assert sig and sig == sorted(p.relative_to(exp) for p in (exp / "quality_signals").rglob("*.gz"))
    for rel in sig:
        assert decompressed(exp / rel) == decompressed(root / rel), rel
    for comp in ("minhash", "duplicates"):  # written as the worker writes them: byte for byte with one pyarrow
        files = sorted(p.relative_to(root) for p in (root / comp).rglob("*.parquet"))
        assert files and files == sorted(p.relative_to(exp) for p in (exp / comp).rglob("*.parquet"))
        for rel in files:
            assert pq.read_table(exp / rel).equals(pq.read_table(root / rel)), rel
            assert (exp / rel).read_bytes() == (root / rel).read_bytes(), rel
    legacy = tmp_path / "legacy.jsonl.gz"  # today's single record file stays available
    assert main(["export", "rpv2", str(out), "-o", str(legacy), "-q"]) == 0
    with gzip.open(legacy, "rt", encoding="utf-8") as fh:
        assert len(fh.readlines()) == sum(len(v) for v in keys.values())


def test_fuzzy_on_released_bands_equals_annotated_bands_and_recipes_run(release, imported, resources_dir,
                                                                         tmp_path):
    """`dedup fuzzy --verify none` on the imported bands = on bands annotate computes for the same
    documents (RPv2's run_lsh.py clusters); recipes, the funnel and select run on the import."""
    import shutil

    root, _ = release
    src, _ = imported
    out = tmp_path / "attrs"
    shutil.copytree(src, out)
    ann = tmp_path / "ann"
    assert main(["annotate", str(root / "documents"), "-o", str(ann), "--text-field", "raw_content",
                 "--lang-field", "language", "--signals", "minhash", "--resources", str(resources_dir),
                 "--workers", "1", "-q"]) == 0
    clusters = {}
    for folder in (out, ann):
        assert main(["dedup", "fuzzy", str(folder), "--verify", "none", "--thresholds", "0.8", "--thresholds", "0.7",
                     "-q"]) == 0
        con = to_duckdb(str(folder))
        cols = [c for c in con.columns if c.startswith("dup_fuzzy") and "cluster" in c]
        clusters[folder] = sorted(con.filter(f'"{cols[0]}" IS NOT NULL').project(f'id, "{cols[0]}"').fetchall())
    assert clusters[out] == clusters[ann] and len(clusters[out]) >= 2 * COPIES
    assert main(["select", str(out), "--recipe", "rpv2-gopher", "--dry-run", "-q"]) == 0
    recipe = tmp_path / "r.yaml"
    recipe.write_text('name: t\nrules:\n  wc: "rps_doc_word_count >= 50"\n  exact: "dup_exact_keep"\n')
    assert main(["select", str(out), "--recipe", str(recipe), "-o", str(tmp_path / "sel"), "-q"]) == 0
    with gzip.open(tmp_path / "sel" / "2022-49" / "0000" / "en_head.jsonl.gz", "rt", encoding="utf-8") as fh:
        kept = [json.loads(line) for line in fh]
    assert kept and all(r["raw_content"] and r["id"].startswith("2022-49/0000/en_head.json.gz/") for r in kept)
    n = len(release[1]["2022-49/0000/en_head"])
    assert not {r["row"] for r in kept} & set(range(n - COPIES, n))  # the listed duplicates are dropped


def test_import_from_an_fsspec_url_equals_local(release, imported, tmp_path):
    """The release read through fsspec (memory://, as s3:// or https:// would be) gives the same
    attribute shards as the local folder."""
    import fsspec

    root = release[0]
    mem = fsspec.filesystem("memory")
    for p in sorted(root.rglob("*")):
        if p.is_file():
            mem.pipe(f"/rpv2-url/{p.relative_to(root).as_posix()}", p.read_bytes())
    try:
        res = run_import_rpv2(ImportRpv2Config("memory://rpv2-url", str(tmp_path / "url"), workers=1,
                                               progress=False))
        assert sorted(res.shards_written) == sorted(imported[1].shards_written)
        for rel in sorted(p.relative_to(imported[0]).as_posix() for p in imported[0].rglob("*.parquet")
                          if not p.name.startswith(".") and "/." not in p.as_posix()):
            a, b = _rows(imported[0], rel), _rows(tmp_path / "url", rel)
            a.pop("shard", None), b.pop("shard", None)  # the shard path names the location it was read from
            assert a == b, rel
    finally:
        mem.rm("/rpv2-url", recursive=True)


def test_lone_surrogate_escapes_are_read_not_fatal(release, imported, tmp_path, caplog):
    """JSON may spell a lone UTF-16 surrogate (`\\ud800`), which Python's json reads and UTF-8
    (Arrow) cannot hold: before, the whole file failed ("The surrogate pair in string is
    invalid"); now the character is read as U+FFFD with a warning and lengths are unchanged."""
    import shutil

    root = tmp_path / "release"
    shutil.copytree(release[0], root)
    path = sorted(root.glob("documents/*/*/*.json.gz"))[0]
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh]
    recs[0]["raw_content"] = "\ud800" + recs[0]["raw_content"][1:]
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)  # ensure_ascii: the escape `\ud800`
    with caplog.at_level(logging.WARNING, logger="textsieve.import_rpv2"):
        res = run_import_rpv2(ImportRpv2Config(str(root), str(tmp_path / "attrs"), workers=1, progress=False))
    assert sorted(res.shards_written) == sorted(imported[1].shards_written)
    assert "1 lone UTF-16 surrogate escape(s)" in caplog.text
    rel = "docs/" + str(path.relative_to(root / "documents")).replace(".json.gz", ".parquet")
    assert _rows(tmp_path / "attrs", rel)["ts_length"] == _rows(imported[0], rel)["ts_length"]


def test_released_float_spelling_is_msgspecs():
    """RPv2's workers wrote the release with msgspec, which spells floats outside 1e-4..1e16
    unlike Python's json (`0.00001234`, not `1.234e-05`); `export rpv2` wrote json's spelling,
    so a real released line did not round-trip byte for byte. Lines now spell them as msgspec
    0.18.4 (RPv2's time) did, and read back to the same values."""
    import io

    import pyarrow.json as pj

    from textsieve.interop.rpv2_release import signals_line

    spans = [("rps_doc_frac_chars_dupe_10grams", [[0, 9, 1.234e-05]]), ("ccnet_perplexity", [[0, 9, 1e16]]),
             ("rps_doc_word_count", [[0, 9, 12]]), ("rps_lines_num_words", [[0, 4, 2], [4, 9, 1.5e-07]])]
    line = signals_line("2023-06/0000/en_head.json.gz/0", 7, {"cc_segment": "x", "nlines": 2}, spans)
    assert line == (b'{"id":"2023-06/0000/en_head.json.gz/0","id_int":7,"metadata":{"cc_segment":"x","nlines":2},'
                    b'"quality_signals":{"rps_doc_frac_chars_dupe_10grams":[[0,9,0.00001234]],'
                    b'"ccnet_perplexity":[[0,9,1e16]],"rps_doc_word_count":[[0,9,12]],'
                    b'"rps_lines_num_words":[[0,4,2],[4,9,1.5e-7]]}}\n')
    back = json.loads(line)["quality_signals"]
    assert [back[k] for k, _ in spans] == [v for _, v in spans]
    assert pj.read_json(io.BytesIO(line)).num_rows == 1


def test_export_is_published_as_one_unit_and_import_refuses_a_killed_one(release, imported, tmp_path, capsys,
                                                                          monkeypatch):
    """Issue 25 item 2: a killed `export rpv2` left complete-looking files and `import rpv2` read
    them (exit 0); exporting into a release folder replaced its files silently. Now the export is
    staged and switched in by a manifest, a folder of other files needs --overwrite, and import
    refuses a killed export's folder, naming what is missing, unless --incomplete."""
    import shutil

    from textsieve.interop import rpv2_release as rel_

    root, _ = release
    out, _ = imported
    into_release = tmp_path / "copy"
    shutil.copytree(root, into_release)
    rc = main(["export", "rpv2", str(out), "-o", str(into_release), "-q"])
    assert rc == 2 and "already holds files that no `export rpv2` published" in capsys.readouterr().err

    target = tmp_path / "exp"  # documents beside the export, as a user assembling a release would
    shutil.copytree(root / "documents", target / "documents")
    write = rel_.write_parquet
    calls = {"n": 0}

    def dies_on_the_third(fs, path, table):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # a kill in the middle of the export
        write(fs, path, table)

    monkeypatch.setattr(rel_, "write_parquet", dies_on_the_third)
    assert main(["export", "rpv2", str(out), "-o", str(target), "-q", "--overwrite"]) == 130
    monkeypatch.setattr(rel_, "write_parquet", write)
    assert not (target / "quality_signals").exists() and not (target / ".textsieve" / "manifest.json").exists()
    capsys.readouterr()
    rc = main(["import", "rpv2", str(target), "-o", str(tmp_path / "back"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "is not a complete release" in err and ".textsieve/staging-export_rpv2-" in err, err
    assert main(["import", "rpv2", str(target), "-o", str(tmp_path / "partial"), "-q", "--incomplete"]) == 0

    assert main(["export", "rpv2", str(out), "-o", str(target), "-q", "--overwrite"]) == 0  # finished this time
    assert (target / ".textsieve" / "manifest.json").is_file() and not list(target.glob(".textsieve/staging-*"))
    assert not [p for p in target.rglob("*") if ".tmp-" in p.name]
    assert main(["import", "rpv2", str(target), "-o", str(tmp_path / "back"), "-q"]) == 0
    (target / "minhash" / "2023-06" / "0000" / "en_head.minhash.parquet").unlink()
    rc = main(["import", "rpv2", str(target), "-o", str(tmp_path / "back2"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "missing or changed (first: minhash/2023-06/0000/en_head.minhash.parquet)" in err, err
