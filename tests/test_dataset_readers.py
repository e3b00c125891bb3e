"""Every folder textsieve publishes reads as a dataset with each tool's defaults (issue 26, item 1).

Before: `pd.read_parquet("attrs")`, `pyarrow.dataset.dataset("attrs")` and
`datasets.load_dataset("parquet", data_dir="attrs")` failed on the JSON sidecars among the
shards; with `exclude_invalid_files=True` pyarrow silently left out the shard made from `.html`
pages (named `_html.parquet`); DuckDB's `attrs/**/*.parquet` mixed every attribute set. Now the
bookkeeping lives in a hidden `.textsieve/` folder, no data file starts with `_` or `.`, and an
annotate folder holds one table per folder (`attrs/docs`, `attrs/sets/NAME`).

One full run on the bundled sample (web pages through extract, annotate, four dedup stages,
DSIR, tokens, select in both formats, a Parquet mix) is read back here folder by folder with
pandas, pyarrow, polars, DuckDB and Hugging Face `datasets`, each giving exactly the rows the
folder's manifest says it published. Spark is checked where `pyspark` is installed.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main

pytestmark = pytest.mark.slow  # one full run of ten stages (~40 s on 2 cores)

MIX = """tokens: 20K
tokenizer: words
seed: 0
shard_size: 5K tokens
format: parquet
sources:
  - name: kept
    selection: {selection}
    share: 1.0
    max_epochs: 3
"""


def _run(*argv: str) -> None:
    assert main([*argv, "-q"]) == 0, argv


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("readers")
    _run("sample", str(root / "crawl"), "--crawl", "--max-docs", "160")
    _run("extract", str(root / "crawl"), "-o", str(root / "docs"), "--format", "parquet", "--workers", "1")
    _run("annotate", str(root / "docs"), "-o", str(root / "attrs"), "--workers", "1")
    attrs = str(root / "attrs")
    _run("dedup", "exact", attrs, "--workers", "1")
    _run("dedup", "fuzzy", attrs, "--workers", "1")
    _run("dedup", "lines", attrs, "--workers", "1")
    _run("sample", str(root / "target.jsonl.gz"), "--max-docs", "60")
    _run("dsir", "fit", "--raw", attrs, "--targets", str(root / "target.jsonl.gz"), "--name", "python",
         "--buckets", "2000")
    _run("train", "tokenizer", str(root / "docs"), "--vocab", "300", "--output", str(root / "tok.json"))
    _run("tokens", attrs, "--tokenizer", str(root / "tok.json"), "--workers", "1")
    _run("select", attrs, "--recipe", "gopher", "-o", str(root / "sel-jsonl"), "--workers", "1")
    _run("select", attrs, "--recipe", "c4", "-o", str(root / "sel-parquet"), "--format", "parquet",
         "--workers", "1")
    (root / "mix.yaml").write_text(MIX.format(selection=root / "sel-jsonl"), "utf-8")
    _run("mix", str(root / "mix.yaml"), "-o", str(root / "train"), "--workers", "1")
    return root


def _published(root: Path) -> list[Path]:
    """Every folder a stage published under `root` (it holds `.textsieve/manifest.json`)."""
    return sorted(p.parent.parent for p in root.rglob(".textsieve/manifest.json"))


def _rows_published(folder: Path) -> tuple[str, int]:
    """(data format, rows) of what the folder's manifest lists: the truth every reader must give."""
    manifest = json.loads((folder / ".textsieve" / "manifest.json").read_text("utf-8"))
    data = [rel for rel in manifest["files"] if not rel.startswith(".textsieve/")]
    parquet = [rel for rel in data if rel.endswith(".parquet")]
    if parquet:
        return "parquet", sum(pq.read_metadata(folder / rel).num_rows for rel in parquet)
    jsonl = [rel for rel in data if rel.endswith(".jsonl.gz")]
    rows = 0
    for rel in jsonl:
        with gzip.open(folder / rel, "rt", encoding="utf-8") as fh:
            rows += sum(1 for line in fh if line.strip())
    return "jsonl.gz", rows


def test_the_run_publishes_every_kind_of_folder_in_the_readable_layout(outputs: Path) -> None:
    folders = {p.relative_to(outputs).as_posix() for p in _published(outputs)}
    assert {"docs", "attrs", "attrs/sets/dedup_exact", "attrs/sets/dedup_fuzzy", "attrs/sets/dedup_lines",
            "attrs/sets/dsir_python", "attrs/sets/tokens_tok", "sel-jsonl", "sel-parquet", "train"} <= folders
    for path in outputs.rglob("*"):
        rel = path.relative_to(outputs).parts
        if ".textsieve" in rel or path.is_dir():
            continue
        assert not any(part.startswith(("_", ".")) for part in rel), f"a data file readers skip: {path}"
    # the `.html` pages' shard was `_html.parquet`, skipped by pyarrow and Spark; now it is read
    assert not list(outputs.rglob("_*.parquet"))
    # no JSON beside the data: a reader of any published folder sees only its data files
    for folder in _published(outputs):
        assert not [p for p in folder.iterdir() if p.suffix == ".json"], folder


@pytest.mark.parametrize("folder", ["docs", "attrs/docs", "attrs/sets/dedup_exact", "attrs/sets/dedup_fuzzy",
                                    "attrs/sets/dedup_lines", "attrs/sets/dsir_python", "attrs/sets/tokens_tok",
                                    "sel-parquet", "train"])
def test_parquet_folders_read_whole_with_every_library(outputs: Path, folder: str, tmp_path: Path) -> None:
    where = outputs / folder
    published = where if where.joinpath(".textsieve").is_dir() else where.parent  # attrs/docs: annotate's
    kind, want = _rows_published(published) if published == where else ("parquet", sum(
        pq.read_metadata(p).num_rows for p in where.rglob("*.parquet")))
    assert kind == "parquet" and want > 0
    assert len(pd.read_parquet(where)) == want  # pandas (pyarrow engine, default options)
    assert pads.dataset(where).count_rows() == want  # pyarrow dataset discovery, default options
    assert importlib.util.find_spec("polars") is not None
    import polars as pl

    assert pl.read_parquet(f"{where}/**/*.parquet").height == want  # polars: a glob, as polars asks
    # DuckDB's recursive glob gives this table alone (before: every attribute set mixed in)
    assert duckdb.sql(f"SELECT count(*) FROM '{where}/**/*.parquet'").fetchall()[0][0] == want
    from datasets import load_dataset

    ds = load_dataset("parquet", data_dir=str(where), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == want


def test_jsonl_selection_reads_with_every_library(outputs: Path, tmp_path: Path) -> None:
    where = outputs / "sel-jsonl"
    kind, want = _rows_published(where)
    assert kind == "jsonl.gz" and want > 0
    files = sorted(where.glob("*.jsonl.gz"))
    assert sum(len(pd.read_json(f, lines=True)) for f in files) == want
    import polars as pl

    assert sum(pl.read_ndjson(gzip.decompress(f.read_bytes())).height for f in files) == want
    assert duckdb.sql(f"SELECT count(*) FROM read_json_auto('{where}/**/*.jsonl.gz')").fetchall()[0][0] == want
    from datasets import load_dataset

    ds = load_dataset("json", data_dir=str(where), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == want and "text" in ds.column_names


def test_the_store_itself_is_refused_loudly_not_stacked(outputs: Path, tmp_path: Path) -> None:
    """`attrs/` holds several tables. Read whole, pyarrow would stack every set's rows under the
    signals' columns (6x the documents, nulls everywhere, no error); its README.md makes each
    reader fail naming it instead, and says which folder to read."""
    attrs = outputs / "attrs"
    readme = (attrs / "README.md").read_text("utf-8")
    assert 'pd.read_parquet("DIR/docs")' in readme and "sets/NAME/" in readme
    with pytest.raises(Exception, match="README.md"):
        pd.read_parquet(attrs)
    with pytest.raises(Exception, match="README.md"):
        pads.dataset(attrs)
    import polars as pl

    with pytest.raises(Exception, match="README.md"):
        pl.read_parquet(attrs)
    from datasets import load_dataset

    with pytest.raises(Exception):  # noqa: B017 - datasets skips README.md, then refuses the unlike tables
        load_dataset("parquet", data_dir=str(attrs), split="train", cache_dir=str(tmp_path / "hf"))


def test_attribute_tables_join_on_shard_and_row(outputs: Path) -> None:
    """The tables of one annotate folder are separate and line up: the join `ts.attributes`
    does, done by hand in DuckDB, keeps every document."""
    attrs = outputs / "attrs"
    docs = duckdb.sql(f"SELECT count(*) FROM '{attrs}/docs/**/*.parquet'").fetchall()[0][0]
    joined = duckdb.sql(f"""
        SELECT count(*) FROM '{attrs}/docs/**/*.parquet' AS a
        JOIN '{attrs}/sets/dedup_exact/**/*.parquet' AS e USING (shard, row)
        JOIN '{attrs}/sets/dedup_fuzzy/**/*.parquet' AS f USING (shard, row)""").fetchall()[0][0]
    assert joined == docs > 100


def test_spark_reads_the_folders_with_its_defaults(outputs: Path) -> None:
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (it ships as a 450 MB sdist, no wheel; the layout rules Spark "
                    "applies, skipping `_`/`.` names, are the ones pyarrow's defaults check above)")
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").appName("textsieve-readers").getOrCreate()
    try:
        for folder in ("attrs/docs", "attrs/sets/dedup_fuzzy", "sel-parquet", "train"):
            where = outputs / folder
            want = sum(pq.read_metadata(p).num_rows for p in where.rglob("*.parquet") if ".textsieve" not in p.parts)
            assert spark.read.parquet(str(where)).count() == want, folder
    finally:
        spark.stop()
