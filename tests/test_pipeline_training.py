"""Issue 14 in the YAML pipeline: decontaminate, pii, tokens, select with redaction and a recipe on
the new sets, then mix into training shards, from one pipeline file; a re-run is a no-op and the
dry run plans every stage."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from textsieve.cli import main
from textsieve.sample import build_sample


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    from textsieve.tokenization.tokenizer import train_bpe

    tmp = tmp_path_factory.mktemp("pipe-train")
    build_sample(tmp / "sample.jsonl.gz")
    with gzip.open(tmp / "sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    # a "benchmark" of three real sample documents: decontaminate must find exactly those
    with open(tmp / "bench.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"question": r["text"][:2000]}) + "\n" for r in records[10:13])
    train_bpe((r["text"] for r in records), 600, str(tmp / "tok.json"))
    pipe = {
        "inputs": ["sample.jsonl.gz"], "output": "out",
        "annotate": {"signals": ["rps_doc_word_count", "rps_doc_frac_unique_words"]},
        "decontaminate": {"against": ["bench=bench.jsonl"], "fields": ["question"]},
        "pii": {},
        "tokens": {"tokenizer": "tok.json"},
        "select": {"recipe": {"name": "clean", "rules": {"long": "rps_doc_word_count >= 20",
                                                         "clean": "ts_contam_count == 0"}},
                   "redact": ["pii"]},
        "mix": {"mix": {"tokenizer": "tok.json", "tokens": 20000, "seed": 1, "format": "bin",
                        "shard_size": "8000 tokens",
                        "sources": [{"name": "clean", "selection": "out/selected", "share": 1.0}]}},
    }
    (tmp / "pipe.yaml").write_text(yaml.safe_dump(pipe, sort_keys=False), "utf-8")
    return tmp


def test_dry_run_plans_every_stage(folder: Path, capsys) -> None:
    assert main(["run", str(folder / "pipe.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    for stage in ("decontaminate", "pii", "tokens", "select", "mix"):
        assert stage in out, stage


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_pipeline_runs_to_training_shards_and_reruns_as_a_noop(folder: Path, capsys) -> None:
    assert main(["run", str(folder / "pipe.yaml"), "-q"]) == 0
    out = folder / "out"
    summary = json.loads((out / "attrs" / "sets" / "decontam" / ".textsieve" / "summary.json").read_text())
    assert summary["n_docs"] == 500
    assert (out / "attrs" / "sets" / "pii" / ".textsieve" / "summary.json").exists()
    assert (out / "attrs" / "sets" / "tokens_tok" / ".textsieve" / "summary.json").exists()
    selection = json.loads((out / "selected" / ".textsieve" / "selection.json").read_text())
    assert selection["redact"]
    manifest = json.loads((out / "train" / ".textsieve" / "manifest.json").read_text())
    assert any(rel.endswith(".bin") for rel in manifest["files"])
    before = {p.name: p.stat().st_mtime_ns for p in (out / "train").glob("*")}
    capsys.readouterr()
    assert main(["run", str(folder / "pipe.yaml")]) == 0
    said = capsys.readouterr().err
    assert said.count("already done") >= 5, said
    assert {p.name: p.stat().st_mtime_ns for p in (out / "train").glob("*")} == before
