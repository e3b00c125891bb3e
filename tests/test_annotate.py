"""The annotate stage end to end: layout, exactness through export, resume, atomicity, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl

from textsieve.cli import main
from textsieve.signals.reference import reference_signals
from textsieve.stages.annotate import annotate as annotate_mod
from textsieve.stages.annotate.annotate import AnnotateConfig, AnnotateError, run_annotate

GOLDEN_FILES = ("rpv2_signals_dev.jsonl.gz", "rpv2_signals_edgecases.jsonl.gz")


def typed(value):
    """A JSON value with the type of every number made explicit (1 != 1.0)."""
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    return (type(value).__name__, value)


def python_docs(n: int = 60) -> list[dict]:
    """Real English text that ships with Python: the help topics of pydoc."""
    from pydoc_data.topics import topics

    return [{"id": f"topic/{k}", "text": v} for k, v in sorted(topics.items())[:n]]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    return path


@pytest.mark.parametrize("golden", GOLDEN_FILES)
def test_golden_files_exact_through_cli_and_export(golden, shared_dir, resources_dir, tmp_path):
    """Issue 2 item 6: every signal (value and JSON type) and every MinHash band of every golden doc."""
    src = shared_dir / "golden" / golden
    out = tmp_path / "attrs"
    assert main(["annotate", str(src), "-o", str(out), "--lang-field", "language", "--resources",
                 str(resources_dir), "--workers", "2", "--batch-size", "300", "-q"]) == 0
    exported = tmp_path / "rpv2.jsonl.gz"
    assert main(["export", "rpv2", str(out), "-o", str(exported), "-q"]) == 0
    expected = read_jsonl(src)
    got = read_jsonl(exported)
    assert [g["id"] for g in got] == [e["id"] for e in expected]
    mismatches = []
    for e, g in zip(expected, got):
        assert set(g["quality_signals"]) == set(e["quality_signals"])
        for name, spans in e["quality_signals"].items():
            if typed(g["quality_signals"][name]) != typed(spans):
                mismatches.append((e["id"], name))
        if g["minhash"] != e["minhash"]:
            mismatches.append((e["id"], "minhash"))
    assert mismatches == []


def test_attribute_shard_layout(tmp_path, resources_dir):
    src = write_jsonl(tmp_path / "docs.jsonl", python_docs(30))
    run_annotate(AnnotateConfig([str(src)], str(tmp_path / "out"), workers=1, resources=str(resources_dir),
                                progress=False))
    table = pq.read_table(tmp_path / "out" / "docs" / "docs.parquet")
    assert table.column_names[:3] == ["id", "shard", "row"]
    assert table.num_rows == 30
    assert table.column("row").to_pylist() == list(range(30))
    assert set(table.column("shard").to_pylist()) == {"docs.jsonl"}
    def score_type(name):
        return table.schema.field(name).type.value_type.field("score").type

    assert score_type("rps_doc_word_count") == pa.int64() and score_type("rps_lines_num_words") == pa.int64()
    assert score_type("rps_doc_mean_word_length") == pa.float64()
    assert "signature_sim0.8" in table.column_names
    for name in table.column_names:  # scalar twins hold the doc-level span's score
        if name.endswith("__score"):
            spans = table.column(name[: -len("__score")]).to_pylist()
            assert table.column(name).to_pylist() == [s[0]["score"] for s in spans]
    assert table.column("ts_length").to_pylist() == [len(r["text"]) for r in python_docs(30)]
    meta = json.loads(pq.read_metadata(tmp_path / "out" / "docs" / "docs.parquet").metadata[b"textsieve"])
    assert meta["documents"] == 30 and meta["skipped_records"] == 0
    # values equal the pure-Python reference, spans tile each text
    stop = frozenset(json.loads((resources_dir / "stopwords" / "en.json").read_text()))
    from textsieve.signals.reference import load_bad_words

    bad = load_bad_words(resources_dir / "ldnoobw" / "en")
    rows = table.to_pylist()
    for rec, row in zip(python_docs(30), rows):
        ref = reference_signals(rec["text"], stop, bad)
        for name, spans in ref.items():
            assert [[s["start"], s["end"], s["score"]] for s in row[name]] == spans
        lines = row["rps_lines_num_words"]
        assert lines[0]["start"] == 0 and lines[-1]["end"] == len(rec["text"])


def test_signal_selection_and_unknown_names(tmp_path, resources_dir, capsys):
    src = write_jsonl(tmp_path / "docs.jsonl", python_docs(5))
    run_annotate(AnnotateConfig([str(src)], str(tmp_path / "o"), signals="repetition,rps_doc_word_count",
                                workers=1, resources=str(resources_dir), progress=False))
    cols = pq.read_schema(tmp_path / "o" / "docs" / "docs.parquet").names
    assert cols[:4] == ["id", "shard", "row", "ts_length"]
    span_cols = [c for c in cols[4:] if not c.endswith("__score")]
    assert span_cols[0] == "rps_doc_word_count" and len(span_cols) == 1 + 9
    assert [c for c in cols if c.endswith("__score")] == [c + "__score" for c in span_cols]
    assert not any(c.startswith("signature") for c in cols)
    assert main(["annotate", str(src), "-o", str(tmp_path / "o2"), "--signals", "rps_doc_nope", "-q"]) == 2
    err = capsys.readouterr().err
    assert "rps_doc_nope" in err and "rps_doc_word_count" in err and "repetition" in err


def test_a_default_install_computes_the_word_list_signals(tmp_path, caplog, shared_dir):
    """The lists ship in the package: no warning, and the values of the golden resources folder."""
    src = write_jsonl(tmp_path / "docs.jsonl", python_docs(5))
    run_annotate(AnnotateConfig([str(src)], str(tmp_path / "o"), signals="content", workers=1, progress=False))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    got = pq.read_table(tmp_path / "o" / "docs" / "docs.parquet").to_pydict()
    assert "rps_doc_curly_bracket" in got and "rps_doc_lorem_ipsum" in got
    run_annotate(AnnotateConfig([str(src)], str(tmp_path / "g"), signals="content", workers=1, progress=False,
                                resources=str(shared_dir / "golden" / "rpv2_resources")))
    want = pq.read_table(tmp_path / "g" / "docs" / "docs.parquet").to_pydict()
    for name in ("rps_doc_stop_word_fraction", "rps_doc_ldnoobw_words"):
        assert got[name] == want[name], name
    assert all(span[0]["score"] > 0.1 for span in got["rps_doc_stop_word_fraction"])  # English prose


def test_missing_word_lists_skip_their_signals_with_one_warning(tmp_path, caplog, monkeypatch):
    """An install whose bundled lists were removed (and no user lists) skips the two signals."""
    from textsieve.signals import resources

    monkeypatch.setattr(resources, "BUNDLED_DIR", tmp_path / "removed")
    src = write_jsonl(tmp_path / "docs.jsonl", python_docs(5))
    run_annotate(AnnotateConfig([str(src)], str(tmp_path / "o"), signals="content", workers=1, progress=False))
    cols = pq.read_schema(tmp_path / "o" / "docs" / "docs.parquet").names
    assert "rps_doc_curly_bracket" in cols and "rps_doc_lorem_ipsum" in cols
    assert "rps_doc_stop_word_fraction" not in cols and "rps_doc_ldnoobw_words" not in cols
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    msg = warnings[0].getMessage()
    assert "stop words (en)" in msg and "DIR/stopwords/{lang}.json" in msg and "LDNOOBW" in msg
    assert "textsieve resources add" in msg and "rps_doc_stop_word_fraction" in msg


def test_rerun_skips_finished_shards_and_detects_changed_settings(tmp_path, resources_dir):
    (tmp_path / "in").mkdir()
    for i in range(3):
        write_jsonl(tmp_path / "in" / f"part{i}.jsonl.gz", python_docs(10 + i))
    out = tmp_path / "out"
    cfg = AnnotateConfig([str(tmp_path / "in")], str(out), workers=1, resources=str(resources_dir), progress=False)
    first = run_annotate(cfg)
    assert len(first.shards_written) == 3
    before = {p.name: p.stat().st_mtime_ns for p in (out / "docs").glob("*.parquet")}
    second = run_annotate(cfg)
    assert second.shards_written == [] and len(second.shards_skipped) == 3
    assert {p.name: p.stat().st_mtime_ns for p in (out / "docs").glob("*.parquet")} == before
    with pytest.raises(AnnotateError, match="other settings"):
        run_annotate(AnnotateConfig([str(tmp_path / "in")], str(out), signals="lines", workers=1,
                                    resources=str(resources_dir), progress=False))


def test_crash_mid_shard_leaves_no_finished_file_and_rerun_completes(tmp_path, resources_dir, monkeypatch):
    src = write_jsonl(tmp_path / "docs.jsonl", python_docs(40))
    out = tmp_path / "out"
    real = annotate_mod.annotate_batch
    calls = {"n": 0}

    def flaky(task):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("worker died")
        return real(task)

    monkeypatch.setattr(annotate_mod, "annotate_batch", flaky)
    cfg = AnnotateConfig([str(src)], str(out), workers=1, batch_size=10, resources=str(resources_dir),
                         progress=False)
    with pytest.raises(RuntimeError, match="worker died"):
        run_annotate(cfg)
    assert not (out / "docs" / "docs.parquet").exists()
    assert list(out.iterdir()) == []  # no temporary file left either
    monkeypatch.setattr(annotate_mod, "annotate_batch", real)
    res = run_annotate(cfg)
    assert res.documents == 40 and pq.read_table(out / "docs" / "docs.parquet").num_rows == 40


def test_output_identical_for_any_worker_count_and_batch_size(tmp_path, resources_dir):
    src = write_jsonl(tmp_path / "docs.jsonl.gz", python_docs(80))
    outs = []
    for workers, batch in ((1, 500), (2, 7)):
        out = tmp_path / f"w{workers}"
        run_annotate(AnnotateConfig([str(src)], str(out), workers=workers, batch_size=batch,
                                    resources=str(resources_dir), progress=False))
        outs.append(pq.read_table(out / "docs" / "docs.parquet"))
    assert outs[0].equals(outs[1])


def test_fsspec_memory_input(tmp_path, resources_dir):
    fs = fsspec.filesystem("memory")
    with fs.open("/corpus/a.jsonl", "w") as fh:
        for r in python_docs(5):
            fh.write(json.dumps(r) + "\n")
    res = run_annotate(AnnotateConfig(["memory://corpus/"], str(tmp_path / "o"), workers=1,
                                      resources=str(resources_dir), progress=False))
    assert res.documents == 5
    assert pq.read_table(tmp_path / "o" / "docs" / "a.parquet").column("id").to_pylist()[0] == "topic/" + sorted(
        __import__("pydoc_data.topics").topics.topics)[0]


def test_bad_records_fail_with_location_or_are_skipped_and_counted(tmp_path, resources_dir, capsys):
    good = python_docs(3)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good[0]) + "\n{not json\n" + json.dumps({"id": "x"}) + "\n" + json.dumps(good[1]) + "\n",
                    encoding="utf-8")
    rc = main(["annotate", str(path), "-o", str(tmp_path / "o1"), "--resources", str(resources_dir), "-q",
               "--workers", "1"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err
    assert not (tmp_path / "o1" / "docs" / "bad.parquet").exists()
    rc = main(["annotate", str(path), "-o", str(tmp_path / "o2"), "--resources", str(resources_dir),
               "--on-error", "skip", "--workers", "1"])
    assert rc == 0
    assert "2 bad record(s) skipped" in capsys.readouterr().err
    table = pq.read_table(tmp_path / "o2" / "docs" / "bad.parquet")
    assert table.column("row").to_pylist() == [0, 3]
    meta = json.loads(pq.read_metadata(tmp_path / "o2" / "docs" / "bad.parquet").metadata[b"textsieve"])
    assert meta["skipped_records"] == 2
    assert [s["location"].rsplit(":", 1)[1] for s in meta["skipped"]] == ["2", "3"]


def test_empty_and_huge_documents(tmp_path, resources_dir):
    from pydoc_data.topics import topics

    prose = "\n".join(v for _, v in sorted(topics.items()))
    huge = (prose * (20_000_000 // len(prose) + 1))[:20_000_000]
    path = write_jsonl(tmp_path / "edge.jsonl", [{"id": "empty", "text": ""}, {"id": "huge", "text": huge}])
    run_annotate(AnnotateConfig([str(path)], str(tmp_path / "o"), workers=1, resources=str(resources_dir),
                                progress=False))
    rows = pq.read_table(tmp_path / "o" / "docs" / "edge.parquet").to_pylist()
    empty, big = rows
    assert empty["rps_doc_word_count"] == [{"start": 0, "end": 0, "score": 0}]
    assert empty["rps_lines_start_with_bulletpoint"] == [{"start": 0, "end": 0, "score": None}]
    assert empty["rps_lines_num_words"] == [] and empty["signature_sim1.0"] is None
    assert len(big["rps_lines_num_words"]) == huge.count("\n") + (not huge.endswith("\n"))
    assert big["rps_lines_num_words"][-1]["end"] == len(huge)
    from textsieve.text.normalize import normalize

    assert big["rps_doc_word_count"][0]["score"] == len(normalize(huge).split())
    assert big["rps_doc_frac_chars_dupe_10grams"][0]["score"] > 0.9  # the text repeats itself


def test_source_documents_rejoin_attribute_rows(tmp_path, resources_dir):
    from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents

    src = write_jsonl(tmp_path / "docs.jsonl.gz", python_docs(12))
    out = tmp_path / "out"
    run_annotate(AnnotateConfig([str(src)], str(out), workers=1, resources=str(resources_dir), progress=False))
    (out / "sets" / "dedup_fuzzy").mkdir(parents=True)  # another stage's attribute set is not an annotate shard
    pq.write_table(pq.read_table(out / "docs" / "docs.parquet").select(["id", "shard", "row"]),
                   out / "sets" / "dedup_fuzzy" / "docs.parquet")
    fs, paths = attribute_shards(str(out))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["docs.parquet"]
    assert len(attribute_shards(str(out), "dedup_fuzzy")[1]) == 1
    meta = read_shard_meta(fs, paths[0])
    docs = list(source_documents(meta))
    table = pq.read_table(paths[0])
    assert [d.row for d in docs] == table.column("row").to_pylist()
    assert [d.id for d in docs] == table.column("id").to_pylist()
    words = table.column("rps_doc_word_count").to_pylist()
    from textsieve.text.normalize import normalize

    assert [w[0]["score"] for w in words] == [len(normalize(d.text).split()) for d in docs]


@pytest.mark.parametrize("signals", [["--signals", "minhash"],
                                     pytest.param([], marks=pytest.mark.slow)])  # a subprocess each: ~2.5 s
def test_annotate_never_loads_numba(tmp_path, signals):
    """`annotate --signals minhash` (the signature step of fuzzy dedup) and the default signal set
    run on the C kernels (MinHash; the raw scan and word statistics, issue 28): numba's JIT would
    add ~125 MB to a process that otherwise holds numpy + pyarrow + a batch, and its first
    compile ~8 s before the first document."""
    import subprocess
    import sys

    src = tmp_path / "docs.jsonl"
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "seven", "wizards",
             "quietly", "judge", "boxing"]
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": " ".join(words[i % 5:] + words[: i % 5])}) + "\n"
                           for i in range(50)))
    code = ("import sys, json\nfrom textsieve.cli import main\n"
            f"rc = main(['annotate', {str(src)!r}, *{signals!r}, '--workers', '1', '-q', "
            f"'--output', {str(tmp_path / 'out')!r}])\n"
            "print(json.dumps({'rc': rc, 'numba': 'numba' in sys.modules, 'pandas': 'pandas' in sys.modules}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # nor pandas (~0.4 s, ~45 MB), which pyarrow's `pa.array` imports when it is installed
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"rc": 0, "numba": False, "pandas": False}, res.stderr
    table = pq.read_table(tmp_path / "out" / "docs" / "docs.parquet")
    assert table.num_rows == 50 and table.column("signature_sim0.8").null_count == 0
