"""Resume: SIGKILL `textsieve run` in annotate, in dedup and in select, re-run the same command
each time, and check that finished work is skipped and the final outputs are byte-identical to
an uninterrupted run. A test hook (`hooks.slow_progress`: a sleep per progress update, injected
into the subprocess by `tests/hooks/sitecustomize.py`) slows every stage down so the kills land
where some work is finished and some is not."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hooks.slow_progress import kill_when, slowed_env

N_SHARDS = 4
#: files that legitimately differ between runs, and which parts to ignore in them
RUN_LOG = "pipeline.run.json"  # timings: the only file that is entirely run-specific


def _normalized(rel: str, data: bytes) -> bytes:
    """Stage summaries that record what *this* run did (timings, counts of skipped shards)."""
    if rel == "attrs/.textsieve/annotate.json":
        doc = json.loads(data)
        doc.pop("result")  # seconds, shards written/skipped by this invocation
        return json.dumps(doc, sort_keys=True).encode()
    if rel == "selected/.textsieve/selection.json":
        doc = json.loads(data)
        for k in ("characters_written_this_run", "shards_skipped"):
            doc["counts"].pop(k)
        return json.dumps(doc, sort_keys=True).encode()
    if rel.endswith("manifest.json"):  # lists the summaries above with their (run-specific) hashes
        doc = json.loads(data)
        for name in (".textsieve/annotate.json", ".textsieve/selection.json"):
            doc["files"].pop(name, None)
        return json.dumps(doc, sort_keys=True).encode()
    return data


def _snapshot(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != RUN_LOG:
            out[rel] = _normalized(rel, p.read_bytes())
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from textsieve.sample import build_sample

    d = tmp_path_factory.mktemp("resume")
    build_sample(str(d / "all.jsonl.gz"), max_docs=200)
    with gzip.open(d / "all.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    (d / "docs").mkdir()
    for k in range(N_SHARDS):
        with gzip.open(d / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines[k::N_SHARDS]) + "\n")
    with gzip.open(d / "target.jsonl.gz", "wt", encoding="utf-8") as fh:  # DSIR target: the help topics
        fh.write("\n".join(x for x in lines if '"python-docs' in x) + "\n")
    pipeline = {"inputs": [str(d / "docs")], "output": str(d / "out"), "workers": 1,
                "annotate": {"batch_size": 10},
                "dedup": {"exact": {"normalize": "rpv2"}, "fuzzy": {"thresholds": [0.8, 0.7]}},
                "dsir": [{"name": "docs", "targets": [str(d / "target.jsonl.gz")], "buckets": 2000}],
                "select": {"recipe": {"rules": {"unique": "dup_exact_rpv2_keep", "near": "dup_fuzzy_t80_keep",
                                                "words": "rps_doc_word_count >= 30",
                                                "docs_like": "ts_dsir_docs_norm > -5"}}}}
    (d / "pipeline.yaml").write_text(yaml.safe_dump(pipeline))
    os.remove(d / "all.jsonl.gz")
    return d


def _cmd(d: Path) -> list[str]:
    return [sys.executable, "-m", "textsieve.cli", "run", str(d / "pipeline.yaml"), "-q"]


def _run(d: Path, delay: float = 0.0) -> None:
    subprocess.run(_cmd(d), env=slowed_env(delay), check=True, timeout=120)




def _state(out: Path, stage: str) -> str | None:
    p = out / ".state" / f"{stage}.json"
    return json.loads(p.read_text())["status"] if p.exists() else None


def test_killed_runs_resume_to_identical_outputs(corpus):
    out = corpus / "out"
    _run(corpus)  # the uninterrupted reference, made in the same folder (paths are recorded)
    reference = _snapshot(out)
    assert len([r for r in reference if r.startswith("selected/") and r.endswith(".jsonl.gz")]) == N_SHARDS
    shutil.rmtree(out)

    # 1. kill during annotate, after some shards are finished
    attrs = out / "attrs"

    def annotated() -> list[Path]:  # finished but not yet published: in the run's staging folder
        return list(attrs.glob(".textsieve/staging-annotate-*/docs/s*.parquet"))

    def some_annotated() -> bool:
        return attrs.is_dir() and 1 <= len(annotated()) < N_SHARDS

    kill_when(_cmd(corpus), some_annotated, 0.15, "annotate had finished some shards")
    finished = {p.name: p.stat().st_mtime_ns for p in annotated()}
    assert 1 <= len(finished) < N_SHARDS and not (out / ".state").exists()
    assert not list((attrs / "docs").glob("s*.parquet")), "annotate published before it had finished"

    # 2. re-run; kill in dedup fuzzy (exact done)
    kill_when(_cmd(corpus), lambda: _state(out, "dedup_fuzzy") == "running", 0.15, "dedup fuzzy was running")
    now = {p.name: p.stat().st_mtime_ns for p in (attrs / "docs").glob("s*.parquet") if p.name in finished}
    assert now == finished, "finished annotate shards were redone"
    assert len(list((attrs / "docs").glob("s*.parquet"))) == N_SHARDS and _state(out, "dedup_exact") == "done"
    exact_set = attrs / "sets" / "dedup_exact_rpv2"
    exact_files = {p.relative_to(exact_set).as_posix(): p.stat().st_mtime_ns
                   for p in exact_set.rglob("*") if p.is_file()}

    # 3. re-run; kill in select, after some selected shards are written
    sel = out / "selected"

    def some_selected() -> bool:
        return sel.is_dir() and 1 <= len(list(sel.glob(".textsieve/staging-select-*/s*.jsonl.gz"))) < N_SHARDS

    kill_when(_cmd(corpus), some_selected, 0.3, "select had written some shards")
    assert {p.relative_to(exact_set).as_posix(): p.stat().st_mtime_ns for p in exact_set.rglob("*")
            if p.is_file()} == exact_files, "dedup exact was redone although it had finished"
    assert _state(out, "dedup_fuzzy") == "done" and _state(out, "dsir_docs") == "done"
    assert _state(out, "select") == "running"

    # 4. finish
    _run(corpus)
    log = json.loads((out / RUN_LOG).read_text())
    by = {s["name"]: s for s in log["stages"]}
    assert by["annotate"]["status"] == "skipped" and by["dedup_exact"]["status"] == "skipped"
    assert by["select"]["status"] == "ran" and by["select"]["detail"]["shards_skipped"] >= 1
    resumed = _snapshot(out)
    assert sorted(resumed) == sorted(reference)
    different = [rel for rel in reference if resumed[rel] != reference[rel]]
    assert not different, f"outputs differ from the uninterrupted run: {different}"
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name], "temporary files were left behind"
