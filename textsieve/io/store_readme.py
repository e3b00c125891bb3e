"""The README an attribute store publishes at its top: what its folders hold and how to read them.

Why a file: see `STORE_README`. Its own module because both `io.attributes` (stages publish it)
and `io.legacy_layout` (folders of an older textsieve get it when moved) write it.
"""

#: `DIR/README.md`: what the folder holds and how to read it. A store is several tables, so it is
#: not one dataset: a reader given the whole folder (`pd.read_parquet("attrs")`) fails on this
#: file, naming it, instead of silently stacking every table's rows under the first one's columns
#: (pyarrow, pandas, polars and Spark would). Each table folder reads on its own.
STORE_README = "README.md"
STORE_README_TEXT = """# A textsieve attribute store

One table per folder; read a table, not this folder (this file stops readers that would stack
every table's rows under the first table's columns):

    docs/          annotate's signals, one row per document (id, shard, row, ts_length, ...)
    sets/NAME/     one attribute set per later stage (dedup_exact, dedup_fuzzy, dsir_NAME, ...):
                   the same documents, keyed by (shard, row)
    .textsieve/    bookkeeping: manifest, run summary

    pandas   pd.read_parquet("DIR/docs")
    pyarrow  pyarrow.dataset.dataset("DIR/sets/dedup_exact")
    polars   pl.read_parquet("DIR/docs/**/*.parquet")
    DuckDB   SELECT * FROM 'DIR/docs/**/*.parquet'
    datasets load_dataset("parquet", data_dir="DIR/docs")
    all tables joined on (shard, row): textsieve.attributes("DIR")
"""
