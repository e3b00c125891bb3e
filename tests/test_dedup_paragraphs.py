"""`dedup paragraphs` (issue 29 item 3): dolma's exact paragraph dedup, the first occurrence kept.

Real text: 240 documents of the dev web pool in three shards, with paragraphs planted across
shards and inside one document. The flags are checked against a pure-Python twin of dolma's
paragraph rule (in corpus order, a non-blank paragraph already seen is a duplicate; it is then
remembered), exactly, through spilled partitions, and through the Bloom filter."""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.dedup.lines import doc_rows, later_lines, split_lines
from textsieve.dedup.lines_group import ExactGroup, GroupFlags
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.dedup.lines import DedupLinesError
from textsieve.stages.dedup.paragraphs import ParagraphsConfig, run_paragraphs

N_SHARDS = 3
PER_SHARD = 40
#: (shard, document index, paragraph appended)
PLANTED = [(0, 2, "Sign up for the Qorvex newsletter today."), (2, 8, "Sign up for the Qorvex newsletter today."),
           (1, 4, "Sign up for the QORVEX newsletter today."),  # differs as written; equal under ccnet
           (1, 6, "Zebulon footer paragraph"), (1, 6, "Zebulon footer paragraph")]  # twice in one document


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("dparas")
    docs = web_docs(dev_dir, N_SHARDS * PER_SHARD)
    for shard, i, para in PLANTED:
        d = docs[shard * PER_SHARD + i]
        d["text"] = d["text"] + ("" if d["text"].endswith("\n") else "\n") + para + "\n"
    (tmp / "docs").mkdir()
    for k in range(N_SHARDS):
        with gzip.open(tmp / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[k * PER_SHARD:(k + 1) * PER_SHARD])
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_lines_num_words"], workers=1,
                                progress=False))
    texts = {f"s{k}.parquet": [d["text"] for d in read_jsonl(tmp / "docs" / f"s{k}.jsonl.gz")]
             for k in range(N_SHARDS)}
    return {"attrs": tmp / "attrs", "texts": texts}


def _copy(corpus: dict, tmp_path: Path) -> Path:
    shutil.copytree(corpus["attrs"], tmp_path / "attrs")
    return tmp_path / "attrs"


def _flags(attrs: Path) -> dict[str, list[list[int]]]:
    out = {}
    for p in sorted((attrs / "sets" / "dedup_paragraphs").glob("*.parquet")):
        col = pq.read_table(p).column("dup_paragraphs_seen").to_pylist()
        out[p.name] = [[s["score"] for s in spans] for spans in col]
    return out


def _twin(texts: dict[str, list[str]]) -> dict[str, list[list[int]]]:
    seen: set[str] = set()
    out: dict[str, list] = {}
    for rel in sorted(texts):
        out[rel] = []
        for text in texts[rel]:
            flags = []
            for para in split_lines(text):
                body = para[:-1] if para.endswith("\n") else para
                if not body.strip():
                    flags.append(0)
                    continue
                flags.append(int(body in seen))
                seen.add(body)
            out[rel].append(flags)
    return out


def test_first_occurrence_kept_exact_and_bloom(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    res = run_paragraphs(ParagraphsConfig(str(attrs), workers=2, progress=False))
    want = _twin(corpus["texts"])
    assert _flags(attrs) == want
    flags = _flags(attrs)
    assert flags["s0.parquet"][2][-1] == 0 and flags["s2.parquet"][8][-1] == 1  # first kept, the later one not
    assert flags["s1.parquet"][4][-1] == 0  # other capitals: not the same paragraph as written
    assert flags["s1.parquet"][6][-2:] == [0, 1]  # a repeat inside one document
    assert res.duplicate_lines == sum(f for docs in want.values() for d in docs for f in d) > 5
    with pytest.raises(DedupLinesError, match="other settings: .*bloom"):
        run_paragraphs(ParagraphsConfig(str(attrs), bloom_fp=1e-9, workers=1, progress=False))
    run_paragraphs(ParagraphsConfig(str(attrs), bloom_fp=1e-9, overwrite=True, workers=1, progress=False))
    assert _flags(attrs) == want
    run_paragraphs(ParagraphsConfig(str(attrs), normalize="ccnet", overwrite=True, workers=1, progress=False))
    assert _flags(attrs)["s1.parquet"][4][-1] == 1


def test_spilled_keep_first_equals_one_sort(corpus):
    texts = corpus["texts"]
    parts, line_at = [], 0
    for rel in sorted(texts):
        for t in texts[rel]:
            lines = split_lines(t)
            parts.append(doc_rows(lines, "none", line_at, 0))
            line_at += len(lines)
    for _ in range(3000):
        parts.append(doc_rows(["Share this page on Zqxbook\n"], "none", line_at, 0))
        line_at += 1
    rows = np.concatenate(parts)
    rows["doc"], rows["rep"] = rows["line"], 0
    want = np.zeros(line_at, dtype=np.uint8)
    want[later_lines(rows).astype(np.int64)] = 1
    with tempfile.TemporaryDirectory() as work:
        flags = GroupFlags(f"{work}/f.u8", line_at)
        group = ExactGroup(work, rows.shape[0], 1024, flags, rule=later_lines)
        for start in range(0, rows.shape[0], 700):
            group.add(rows[start:start + 700])
        group.finish()
        got = flags.slice(0, line_at).copy()
        flags.close()
    assert group.passes > 10 and want.sum() >= 2999
    assert np.array_equal(got, want)


@pytest.mark.slow
def test_select_line_rule_cuts_the_repeats(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    assert main(["dedup", "paragraphs", str(attrs), "-q"]) == 0
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rules:\n  first_paragraphs: 'line: dup_paragraphs_seen == 0'\n")
    assert main(["select", str(attrs), "--recipe", str(recipe), "--output", str(tmp_path / "sel"), "-q"]) == 0
    kept = [r["text"] for f in sorted((tmp_path / "sel").rglob("*.jsonl.gz")) for r in read_jsonl(f)]
    written = "\n".join(kept)
    assert written.count("Sign up for the Qorvex newsletter today.") == 1
    assert written.count("Zebulon footer paragraph") == 1


@pytest.mark.slow
def test_killed_run_publishes_nothing_and_resumes(corpus, tmp_path):
    """SIGKILL once a shard is staged: nothing is published; the re-run publishes the clean
    run's flags and leaves no work files."""
    import subprocess
    import sys

    from hooks.slow_progress import kill_when

    attrs = _copy(corpus, tmp_path)
    set_dir = attrs / "sets" / "dedup_paragraphs"
    cmd = [sys.executable, "-m", "textsieve.cli", "dedup", "paragraphs", str(attrs), "--workers", "1", "-q"]
    kill_when(cmd, lambda: any(set_dir.glob(".textsieve/staging-*/*.parquet")), 0.5, "a shard was staged")
    assert not (set_dir / ".textsieve" / "manifest.json").exists() and not list(set_dir.glob("*.parquet"))
    subprocess.run(cmd, check=True, timeout=300)
    assert _flags(attrs) == _twin(corpus["texts"])
    assert not list(set_dir.glob(".textsieve/staging-*")) and not (attrs / ".textsieve-work").exists()
