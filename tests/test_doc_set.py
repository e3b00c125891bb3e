"""The per-document attribute-set scaffold (`stages.doc_set`): order, resume, refusal, workers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import web_docs

from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.doc_set import DocSetError, DocSetJob, run_doc_set


def _setup(params: dict) -> int:
    return int(params["scale"])


def _compute(scale: int, texts: list[str]) -> dict[str, pa.Array]:
    return {"n_chars_x": pa.array([scale * len(t) for t in texts], pa.int64())}


def _job(scale: int = 1) -> DocSetJob:
    return DocSetJob(stage="charcount", set_name="charcount", setup=_setup, compute=_compute,
                     params={"scale": scale}, info={"scale": scale}, result_keys=("scale",),
                     schema=pa.schema([("n_chars_x", pa.int64())]), totals=("n_chars_x",), batch_docs=7)


@pytest.fixture(scope="module")
def attrs(dev_dir, tmp_path_factory) -> tuple[Path, list[list[str]]]:
    tmp = tmp_path_factory.mktemp("docset")
    docs = web_docs(dev_dir, 60)
    (tmp / "docs").mkdir()
    texts = []
    for k in range(3):
        part = docs[k * 20:(k + 1) * 20]
        texts.append([d["text"] for d in part])
        with gzip.open(tmp / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in part)
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_doc_word_count"],
                                workers=1, progress=False))
    return tmp / "attrs", texts


def test_rows_follow_annotate_and_rerun_is_a_noop(attrs, tmp_path):
    import shutil

    src, texts = attrs
    d = tmp_path / "a"
    shutil.copytree(src, d)
    r = run_doc_set(str(d), _job(), workers=2)
    assert (r.shards, r.computed, r.documents) == (3, 3, 60)
    for k in range(3):
        t = pq.read_table(d / "sets" / "charcount" / f"s{k}.parquet")
        base = pq.read_table(d / "docs" / f"s{k}.parquet", columns=["id", "row"])
        assert t.column("id").to_pylist() == base.column("id").to_pylist()
        assert t.column("n_chars_x").to_pylist() == [len(x) for x in texts[k]]
    summary = json.loads((d / "sets" / "charcount" / ".textsieve" / "summary.json").read_text())
    assert summary["n_chars_x"] == sum(len(x) for ts in texts for x in ts)
    assert run_doc_set(str(d), _job(), workers=1).skipped
    with pytest.raises(DocSetError, match="scale=1 .now 2."):
        run_doc_set(str(d), _job(2))
    r2 = run_doc_set(str(d), _job(2), overwrite=True, workers=1)
    assert r2.summary["n_chars_x"] == 2 * summary["n_chars_x"]


def test_not_an_annotate_folder(tmp_path):
    with pytest.raises(DocSetError, match="not an annotate output folder"):
        run_doc_set(str(tmp_path), _job())
