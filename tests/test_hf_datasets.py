"""Hugging Face datasets in and out (issue 13, item 5), on real web documents.

A `datasets.Dataset` (in memory, loaded from a `save_to_disk` folder, or a folder of Hub-layout
Arrow/Parquet shards) is annotate input; `ts.attributes_as_columns` joins the signals back row
for row; `select` keeps every column of the dataset. Skips when `datasets` is not installed
(it is the optional extra `textsieve[hf]`).
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import textsieve as ts
from textsieve.interop.hf import HfError, arrow_files
from textsieve.io.saved_datasets import SavedDatasetError

datasets = pytest.importorskip("datasets", reason="the Hugging Face datasets extra is not installed "
                                                  "(pip install 'textsieve[hf]')")

N = 120
RULE = {"name": "wc", "rules": {"words": "rps_doc_word_count >= 80"}}
SIGNALS = "rps_doc_word_count,rps_doc_mean_word_length"


def _records(shared_dir: Path) -> list[dict]:
    """The first N real web documents, with extra columns of several Arrow types."""
    with gzip.open(shared_dir / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in itertools.islice(fh, N)]
    return [{"doc_id": r["id"], "text": r["text"], "n": i, "score": i / 7, "tags": [r["id"][:5], "x"],
             "meta": {"source": r["id"].split("/")[0], "even": i % 2 == 0}} for i, r in enumerate(rows)]


def _word_counts(recs: list[dict], tmp_path: Path) -> dict[str, int]:
    """{doc_id: rps_doc_word_count} from annotating the same records as plain JSON Lines."""
    src = tmp_path / "ref" / "ref.jsonl.gz"
    src.parent.mkdir()
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    ts.annotate(src, output=tmp_path / "ref-attrs", signals=SIGNALS, id_field="doc_id", progress=False)
    table = ts.attributes(tmp_path / "ref-attrs", "arrow", columns=["id", "rps_doc_word_count__score"])
    return dict(zip(table.column("id").to_pylist(), table.column(1).to_pylist()))


@pytest.fixture
def saved(shared_dir: Path, tmp_path: Path) -> Path:
    ds = datasets.Dataset.from_list(_records(shared_dir))
    ds.save_to_disk(str(tmp_path / "saved"), num_shards=2)
    return tmp_path / "saved"


def test_saved_dataset_annotated_in_place_and_joined_back(saved: Path, tmp_path: Path):
    ds = datasets.load_from_disk(str(saved))
    files = arrow_files(ds)
    assert files is not None and len(files) == 2  # backed by its two Arrow files: read in place
    res = ts.annotate(ds, output=tmp_path / "attrs", signals=SIGNALS, id_field="doc_id", progress=False)
    assert res.documents == N
    assert not (tmp_path / "attrs-documents").exists()  # nothing was copied
    joined = ts.attributes_as_columns(ds, tmp_path / "attrs")
    assert joined.num_rows == N
    assert joined.column_names[: len(ds.column_names)] == ds.column_names
    ref = _word_counts(list(ds), tmp_path)
    assert list(joined["rps_doc_word_count__score"]) == [ref[i] for i in ds["doc_id"]]
    assert list(joined["doc_id"]) == list(ds["doc_id"])
    # the folder itself (not the Dataset object) is accepted too
    res2 = ts.annotate(saved, output=tmp_path / "attrs2", signals=SIGNALS, id_field="doc_id", progress=False)
    assert res2.documents == N


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_in_memory_view_written_once_and_joined(shared_dir: Path, tmp_path: Path):
    ds = datasets.Dataset.from_list(_records(shared_dir)).shuffle(seed=3).select(range(50))
    assert arrow_files(ds) is None  # an indices view: not backed by files one-to-one
    ts.annotate(ds, output=str(tmp_path / "attrs"), signals=SIGNALS, id_field="doc_id", progress=False)
    written = list((tmp_path / "attrs-documents").glob("*.parquet"))
    assert [p.name for p in written] == [f"{ds._fingerprint}.parquet"]
    joined = ts.attributes_as_columns(ds, tmp_path / "attrs", columns=["rps_doc_word_count__score"])
    assert joined.column_names == [*ds.column_names, "rps_doc_word_count__score"]
    ref = _word_counts(_records(shared_dir), tmp_path)
    assert list(joined["rps_doc_word_count__score"]) == [ref[i] for i in ds["doc_id"]]
    other = datasets.Dataset.from_list(_records(shared_dir)[:10])
    with pytest.raises(HfError, match="not a file of this dataset"):
        ts.attributes_as_columns(other, tmp_path / "attrs")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl.gz"])
def test_every_column_survives_select(saved: Path, tmp_path: Path, fmt: str):
    ds = datasets.load_from_disk(str(saved))
    ts.annotate(ds, output=tmp_path / "attrs", signals=SIGNALS, id_field="doc_id", progress=False)
    res = ts.select(tmp_path / "attrs", recipe=RULE, output=tmp_path / "sel", format=fmt)
    ref = _word_counts(list(ds), tmp_path)
    want = [r for r in ds if ref[r["doc_id"]] >= 80]
    assert 0 < res.documents == len(want) < N
    if fmt == "parquet":
        got = pq.read_table(sorted((tmp_path / "sel").rglob("*.parquet"))).to_pylist()
    else:
        got = [json.loads(line) for p in sorted((tmp_path / "sel").rglob("*.jsonl.gz"))
               for line in gzip.open(p, "rt", encoding="utf-8")]  # noqa: SIM115
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for col, value in w.items():  # every column of the dataset, value for value
            assert g[col] == (value if col != "score" or fmt == "parquet" else pytest.approx(value)), col
    if fmt == "parquet":  # and with its Arrow types
        schema = pq.read_schema(sorted((tmp_path / "sel").rglob("*.parquet"))[0])
        for f in ds.data.schema:
            assert schema.field(f.name).type == f.type


def test_hub_layout_folder_of_parquet_and_arrow_shards(shared_dir: Path, tmp_path: Path):
    recs = _records(shared_dir)
    hub = tmp_path / "hub" / "data"
    hub.mkdir(parents=True)
    datasets.Dataset.from_list(recs[:60]).to_parquet(str(hub / "train-00000-of-00002.parquet"))
    datasets.Dataset.from_list(recs[60:]).to_parquet(str(hub / "train-00001-of-00002.parquet"))
    res = ts.annotate(tmp_path / "hub", output=tmp_path / "attrs", signals=SIGNALS, id_field="doc_id",
                      progress=False)
    assert res.documents == N
    ds = datasets.load_dataset("parquet", data_dir=str(hub), split="train", cache_dir=str(tmp_path / "cache"))
    # the Hub cache holds Arrow files, not the Parquet ones: annotate those (Arrow shards) and join
    assert arrow_files(ds) is not None
    ts.annotate(ds, output=tmp_path / "attrs-cache", signals=SIGNALS, id_field="doc_id", progress=False)
    joined = ts.attributes_as_columns(ds, tmp_path / "attrs-cache")
    ref = _word_counts(recs, tmp_path)
    assert list(joined["rps_doc_word_count__score"]) == [ref[r["doc_id"]] for r in recs]


def test_dataset_dict_refused_with_one_line(saved: Path, tmp_path: Path):
    dd = datasets.DatasetDict({"train": datasets.load_from_disk(str(saved))})
    with pytest.raises(HfError, match=r"pick a split, e.g. ds\['train'\]"):
        ts.annotate(dd, output=tmp_path / "attrs")
    dd.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(SavedDatasetError, match="saved DatasetDict; annotate one split at a time"):
        ts.annotate(os.fspath(tmp_path / "dd"), output=tmp_path / "attrs")


def test_cli_reads_a_saved_folder_by_its_state(saved: Path, tmp_path: Path, capsys):
    """`textsieve annotate saved/` reads the Arrow files state.json lists, not state.json and
    dataset_info.json as JSON Lines documents (they were read as two bad records before)."""
    from textsieve.cli import main

    assert main(["annotate", str(saved), "-o", str(tmp_path / "cli"), "--signals", SIGNALS,
                 "--id-field", "doc_id", "--quiet"]) == 0
    shards = sorted(p.name for p in (tmp_path / "cli" / "docs").glob("*.parquet"))
    assert shards == ["data-00000-of-00002.parquet", "data-00001-of-00002.parquet"]
    assert ts.attributes(tmp_path / "cli", "arrow", columns=["id"]).num_rows == N
    (saved / "state.json").write_text("{}")  # a state.json listing no Arrow files: one line, not documents
    assert main(["annotate", str(saved), "-o", str(tmp_path / "cli2"), "--signals", SIGNALS, "--quiet"]) != 0


# ---------------------------------------------------------------- issue 26 item 6: a flat view for datasets

@pytest.mark.slow  # ~2.5 s (annotate, dedup, pii): outside the quick suite
def test_flat_view_gives_scores_and_the_docs_example_runs(shared_dir: Path, tmp_path: Path, monkeypatch, capsys):
    """Doc-level signals arrived as span lists (`r["x"][0]["score"]`); `flat=True` gives each as
    its score under its own name, in every form, and the docs/python-api.md example runs as
    written on a real annotated folder."""
    import re

    ds = datasets.Dataset.from_list(_records(shared_dir))
    attrs = tmp_path / "attrs"
    ts.annotate(ds, output=attrs, signals=SIGNALS, id_field="doc_id", workers=1, progress=False)
    ts.dedup_exact(attrs, progress=False)
    ts.pii(attrs, workers=1, progress=False)
    spans = ts.attributes(attrs, "datasets")
    flat = ts.attributes(attrs, "datasets", flat=True)
    assert isinstance(flat, datasets.Dataset) and flat.num_rows == spans.num_rows == N
    for name in ("rps_doc_word_count", "rps_doc_mean_word_length"):
        assert flat[name] == [r[0]["score"] for r in spans[name]], name
        assert f"{name}__score" in spans.column_names and f"{name}__score" not in flat.column_names
    assert flat.features["rps_doc_word_count"] == datasets.Value("int64")
    assert flat["ts_pii_email"] == spans["ts_pii_email"]  # any number of spans per document: still spans
    assert any(flat["ts_pii_email"])  # (the real pages do hold e-mail addresses)
    assert flat["dup_exact_keep"] == spans["dup_exact_keep"]
    cols = ["id", "rps_doc_word_count", "rps_doc_mean_word_length"]
    table = ts.attributes(attrs, "arrow", columns=cols, flat=True)
    assert table.column("rps_doc_word_count").to_pylist() == flat["rps_doc_word_count"]
    if importlib.util.find_spec("polars") is not None:
        frame = ts.attributes(attrs, "polars", columns=cols, flat=True).collect()
        assert frame["rps_doc_mean_word_length"].to_list() == flat["rps_doc_mean_word_length"]
    joined = ts.attributes_as_columns(ds, attrs, flat=True)
    assert joined["rps_doc_word_count"] == flat["rps_doc_word_count"]  # row for row: one source shard
    assert "rps_doc_word_count__score" not in joined.column_names and joined["doc_id"] == ds["doc_id"]
    doc = (Path(__file__).resolve().parents[1] / "docs" / "python-api.md").read_text("utf-8")
    (code,) = re.findall(r"<!-- needs: datasets -->\s*```python\n(.*?)```", doc, re.S)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    exec(compile(code, "docs/python-api.md", "exec"), {"ts": ts})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(spans[0]["rps_doc_word_count"]) and out[1].startswith(f"{flat[0]['rps_doc_word_count']} ")
    kept = sum(w >= 300 and k for w, k in zip(flat["rps_doc_word_count"], flat["dup_exact_keep"]))
    assert out[2] == f"{kept} of {N} documents have 300 words or more and are kept by exact dedup" and kept > 0
