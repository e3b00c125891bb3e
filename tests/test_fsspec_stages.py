"""Every later stage works on the fsspec URLs annotate accepts (issue 10 item 10): an annotate
folder in `memory://` goes through select (dry-run funnel and materialize), dedup exact and
fuzzy, DSIR fit and the report, in one process, with the same results as on disk; a worker pool
that cannot see `memory://` is one clear error. And `.zstd` is read as zstd."""

from __future__ import annotations

import gzip
import itertools
import json
import uuid
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest
import zstandard

from textsieve.cli import main

RECIPE = """name: mem
rules:
  words: "rps_doc_word_count >= 30"
  not_exact_dup: "dup_exact_keep"
  not_fuzzy_dup: "dup_fuzzy_t80_keep"
  lines: "line: rps_lines_num_words >= 3"
"""


def _lines(shared_dir: Path, n: int) -> list[str]:
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return list(itertools.islice(fh, n))


@pytest.fixture
def memory_root():
    """A fresh memory:// folder, removed afterwards (the memory filesystem is process-global)."""
    fs = fsspec.filesystem("memory")
    name = f"ts-test-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    if fs.exists(f"/{name}"):
        fs.rm(f"/{name}", recursive=True)


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _stages(src: str, ann: str, out: str, tmp: Path, resources: Path, capsys) -> dict:
    """annotate -> dedup exact -> dedup fuzzy -> dsir fit -> funnel -> select -> report; what each gave."""
    recipe = tmp / "mem.yaml"
    recipe.write_text(RECIPE)
    got: dict = {}
    assert _run(["annotate", src, "-o", ann, "--resources", str(resources), "--workers", "1", "-q"], capsys)[0] == 0
    assert _run(["dedup", "exact", ann, "-q"], capsys)[0] == 0  # default workers: 2 shards, memory stays in-process
    assert _run(["dedup", "fuzzy", ann, "--thresholds", "0.8", "-q"], capsys)[0] == 0
    assert _run(["dsir", "fit", "--targets", f"{src}/b.jsonl", "--raw", ann, "--name", "web", "-q"], capsys)[0] == 0
    rc, text, _ = _run(["select", ann, "--recipe", str(recipe), "--dry-run", "--json"], capsys)
    assert rc == 0
    got["funnel"] = {k: v for k, v in json.loads(text).items() if k != "seconds"}
    assert _run(["select", ann, "--recipe", str(recipe), "-o", out, "-q"], capsys)[0] == 0
    for name in ("a", "b"):
        with fsspec.open(f"{out}/{name}.jsonl.gz", "rb", compression="gzip") as fh:
            got[name] = [json.loads(line) for line in fh]
    assert _run(["select", ann, "--recipe", str(recipe), "-o", f"{out}-pq", "--format", "parquet", "-q"],
                capsys)[0] == 0
    with fsspec.open(f"{out}-pq/a.parquet", "rb") as fh:
        got["parquet"] = pq.read_table(fh).to_pylist()
    with fsspec.open(f"{ann}/sets/dsir_web/a.parquet", "rb") as fh:
        got["dsir"] = pq.read_table(fh).column("ts_dsir_web").to_pylist()
    report = tmp / f"report-{uuid.uuid4().hex[:6]}.html"
    assert _run(["report", ann, "--recipe", str(recipe), "--selection", out, "-o", str(report), "-q"],
                capsys)[0] == 0
    got["report"] = "not_fuzzy_dup" in report.read_text()
    return got


def test_memory_attributes_through_every_stage(shared_dir, resources_dir, memory_root, tmp_path, capsys):
    lines = _lines(shared_dir, 160)
    # 5 exact duplicates of a.jsonl's first documents, under ids of their own (a repeated id is an error)
    copies = [json.dumps(dict(json.loads(x), id=json.loads(x)["id"] + "-copy")) + "\n" for x in lines[:5]]
    mem = fsspec.filesystem("memory")
    root = memory_root[len("memory://"):]
    mem.pipe(f"/{root}/src/a.jsonl", "".join(lines[:80]).encode())
    mem.pipe(f"/{root}/src/b.jsonl", "".join(lines[80:] + copies).encode())
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.jsonl").write_text("".join(lines[:80]))
    (tmp_path / "src" / "b.jsonl").write_text("".join(lines[80:] + copies))

    in_memory = _stages(f"{memory_root}/src", f"{memory_root}/attrs", f"{memory_root}/sel", tmp_path,
                        resources_dir, capsys)
    on_disk = _stages(str(tmp_path / "src"), str(tmp_path / "attrs"), str(tmp_path / "sel"), tmp_path,
                      resources_dir, capsys)
    assert in_memory == on_disk
    assert in_memory["funnel"]["total"] == 165 and 0 < in_memory["funnel"]["kept"] < 160
    assert in_memory["funnel"]["rules"][1]["removed_alone"] == 5
    assert in_memory["report"] and len(in_memory["a"]) + len(in_memory["b"]) == in_memory["funnel"]["kept"]

    # memory:// output from memory:// attributes, read back; a local output works too (done above)
    ann = f"{memory_root}/attrs"
    for argv, stage in ((["select", ann, "--recipe", str(tmp_path / "mem.yaml"), "-o", str(tmp_path / "x"),
                          "--workers", "2"], "select"),
                        (["dedup", "exact", ann, "--workers", "2", "--overwrite"], "dedup exact"),
                        (["dedup", "fuzzy", ann, "--workers", "2", "--overwrite"], "dedup fuzzy")):
        rc, _, err = _run(argv, capsys)
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"textsieve: error: {stage}: {ann} lives in this process's memory") and \
            "--workers 1" in err


def test_zstd_extension_is_read_as_zstd(shared_dir, tmp_path):
    from textsieve.io.paths import expand_inputs
    from textsieve.io.readers import read_documents
    from textsieve.stages.annotate.annotate import output_rel

    lines = _lines(shared_dir, 30)
    data = zstandard.ZstdCompressor().compress("".join(lines).encode())
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "web.jsonl.zstd").write_bytes(data)
    (tmp_path / "in" / "UP.JSONL.ZSTD").write_bytes(data)
    (tmp_path / "cut.jsonl.zstd").write_bytes(data[: len(data) // 2])
    shards = expand_inputs([str(tmp_path / "in")])
    assert [(s.rel, s.format) for s in shards] == [("UP.JSONL.ZSTD", "jsonl"), ("web.jsonl.zstd", "jsonl")]
    for shard in shards:
        assert [d.text for d in read_documents(shard)] == [json.loads(x)["text"] for x in lines]
    assert output_rel("sub/web.jsonl.zstd") == "docs/sub/web.parquet"
    with pytest.raises(Exception, match="zstd stream is truncated"):
        list(read_documents(expand_inputs([str(tmp_path / "cut.jsonl.zstd")])[0]))
    assert main(["annotate", str(tmp_path / "in" / "web.jsonl.zstd"), "-o", str(tmp_path / "ann"),
                 "--signals", "rps_doc_word_count", "--workers", "1", "-q"]) == 0
    assert pq.read_table(tmp_path / "ann" / "docs" / "web.parquet").num_rows == 30
