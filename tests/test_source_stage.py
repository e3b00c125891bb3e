"""The `source` stage's plumbing (issue 30), with a small family (`_toy_family`): phase 1 per
unit in workers, one whole-input decision, a per-record filter, counts by reason, resume and
publishing. The real families are tested against RedPajama-1T's goldens in their own files."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import _toy_family  # noqa: F401 - registers the family `toy`
import pytest

from textsieve.cli import main
from textsieve.dumps.family import SourceError
from textsieve.io.errors import InputError
from textsieve.stages.sources.source import SourceConfig, run_source


def _toy(path: Path, texts: list[str | None]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((json.dumps({"t": t}) if t is not None else "{broken") + "\n" for t in texts), "utf-8")
    return path


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    _toy(tmp_path / "dump" / "a.toy", ["alpha text", "beta", "gamma text", "alpha text"])
    _toy(tmp_path / "dump" / "b.toy", ["gamma text", "delta text", "eps"])
    return tmp_path / "dump"


@pytest.mark.parametrize("workers", [1, 2])
def test_two_phases_decide_across_units_and_count_every_reason(dump: Path, tmp_path: Path, workers: int) -> None:
    out = tmp_path / f"out{workers}"
    res = run_source(SourceConfig("toy", [str(dump)], str(out), workers=workers, progress=False))
    a, b = _read(out / "a.jsonl.gz"), _read(out / "b.jsonl.gz")
    assert [r["text"] for r in a] == ["alpha text", "beta", "gamma text"]  # its own repeat: a duplicate
    assert [r["text"] for r in b] == ["delta text", "eps"]  # "gamma text" was first in a.toy
    assert a[0] == {"id": "a.toy/1", "text": "alpha text", "meta": {"line": 1, "file": "a.toy"}}
    assert res.records == 7 and res.documents == 5 and res.left_out == {"duplicate": 2}
    summary = json.loads((out / ".textsieve" / "source.json").read_text())
    assert summary["shards"]["b.jsonl.gz"]["left_out"] == {"duplicate": 1}
    assert summary["shards"]["b.jsonl.gz"]["examples"][0]["location"] == "b.toy record 0"
    assert not list((out / ".textsieve").glob("staging-*"))  # work files are not left behind


def test_reference_mode_applies_the_filter_and_the_rest_is_identical(dump: Path, tmp_path: Path) -> None:
    run_source(SourceConfig("toy", [str(dump)], str(tmp_path / "ref"), reference="rp_v1", progress=False))
    assert [r["text"] for r in _read(tmp_path / "ref" / "a.jsonl.gz")] == ["alpha text", "gamma text"]
    summary = json.loads((tmp_path / "ref" / ".textsieve" / "source.json").read_text())
    assert summary["result"]["left_out"] == {"duplicate": 2, "too_short": 2}


def test_bad_records_fail_located_or_are_skipped_and_counted(tmp_path: Path) -> None:
    dump = _toy(tmp_path / "d" / "c.toy", ["first text", None, "third text"]).parent
    with pytest.raises(InputError, match=r"c\.toy:2: not a toy record"):
        run_source(SourceConfig("toy", [str(dump)], str(tmp_path / "fail"), workers=1, progress=False))
    assert not (tmp_path / "fail" / "c.jsonl.gz").exists()
    res = run_source(SourceConfig("toy", [str(dump)], str(tmp_path / "skip"), on_error="skip", workers=1,
                                  progress=False))
    assert res.documents == 2 and res.left_out == {"bad_record": 1}


def test_a_rerun_is_a_noop_and_a_changed_unit_redoes_the_whole_decision(dump: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = SourceConfig("toy", [str(dump)], str(out), workers=1, progress=False)
    run_source(cfg)
    stamp = {p.name: p.stat().st_mtime_ns for p in out.glob("*.jsonl.gz")}
    again = run_source(cfg)
    assert again.shards_written == [] and again.documents == 5
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.jsonl.gz")} == stamp
    _toy(dump / "a.toy", ["alpha text", "beta"])  # "gamma text" in b.toy is now the first copy
    changed = run_source(cfg)
    assert changed.shards_written == ["a.toy", "b.toy"]  # a whole-input decision: every unit again
    assert [r["text"] for r in _read(out / "b.jsonl.gz")] == ["gamma text", "delta text", "eps"]


def test_the_cli_runs_it_and_names_unknown_families(dump: Path, tmp_path: Path, capsys) -> None:
    assert main(["source", "toy", str(dump), "-o", str(tmp_path / "cli"), "--workers", "1", "-q",
                 "--format", "parquet"]) == 0
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "cli" / "a.parquet")
    assert table.column_names == ["id", "text", "meta"] and table.num_rows == 3
    assert json.loads(table.column("meta")[0].as_py()) == {"line": 1, "file": "a.toy"}  # no struct type: JSON
    assert main(["source", "nosuch", str(dump), "-o", str(tmp_path / "x")]) == 2
    assert "no source family 'nosuch'; choose from" in capsys.readouterr().err
    with pytest.raises(SourceError):
        run_source(SourceConfig("toy", [str(tmp_path / "cli" / "a.parquet")], str(tmp_path / "y")))


def test_a_pipeline_reads_its_documents_from_named_source_items(dump: Path, tmp_path: Path) -> None:
    """No top-level `inputs`: annotate reads every `sources:` item's folder, OUT/sources/NAME,
    and two items' same-named shards stay apart (NAME/shard)."""
    _toy(tmp_path / "dump2" / "a.toy", ["zeta text here", "eta"])
    pipe = tmp_path / "pipe.yaml"
    pipe.write_text(json.dumps({
        "output": "out", "workers": 1,
        "sources": [{"family": "toy", "inputs": [str(dump)]},
                    {"name": "more", "family": "toy", "inputs": [str(tmp_path / "dump2")]}],
        "annotate": {"signals": ["rps_doc_word_count"]}}), "utf-8")
    assert main(["run", str(pipe), "-q"]) == 0
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "sources").iterdir()) == ["more", "toy"]
    assert [d["text"] for d in _read(out / "sources" / "more" / "a.jsonl.gz")] == ["zeta text here", "eta"]
    docs = out / "attrs" / "docs"
    assert sorted(str(p.relative_to(docs)) for p in docs.rglob("*.parquet")) == [
        "more/a.parquet", "toy/a.parquet", "toy/b.parquet"]
    assert main(["run", str(pipe), "-q"]) == 0  # a rerun finds every stage done


@pytest.mark.parametrize("items, problem", [
    ([{"family": "toy", "inputs": ["d"]}, {"family": "toy", "inputs": ["e"]}], "like sources[0]; give one of them"),
    ([{"name": "../up", "family": "toy", "inputs": ["d"]}], "'../up' is not a folder name"),
])
def test_pipeline_source_items_need_distinct_plain_names(items: list, problem: str) -> None:
    from textsieve.pipeline.config import PipelineConfigError, validate

    with pytest.raises(PipelineConfigError, match=re.escape(problem)):
        validate({"output": "out", "sources": items})


@pytest.mark.slow  # runs the source stage twice as subprocesses: outside the quick suite
def test_the_speed_benchmark_runs_and_checks_the_goldens(tmp_path: Path) -> None:
    """`benchmarks/rpv1.py` without a reference checkout: textsieve's rows, equal to the goldens."""
    import os
    import subprocess
    import sys

    shared = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    if not (shared / "golden" / "rpv1").is_dir():
        pytest.skip("needs the shared goldens (TEXTSIEVE_SHARED)")
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "rpv1.py"
    done = subprocess.run([sys.executable, str(script), "--families", "arxiv", "--keep", str(tmp_path / "b")],
                          capture_output=True, text=True, env={**os.environ, "TEXTSIEVE_SHARED": str(shared)})
    assert done.returncode == 0, done.stderr[-2000:]
    row = next(x for x in done.stdout.splitlines() if x.startswith("arxiv"))
    assert "equal" in row and "needs --reference-dir" in row
