"""The Python API: `import textsieve as ts`, then one function per stage.

    ts.extract("crawl/*.warc.gz", output="docs")            # web archives -> documents
    ts.annotate("data/*.jsonl.gz", output="attrs", workers=2)
    ts.dedup_exact("attrs")
    ts.dedup_fuzzy("attrs", thresholds=[0.8])
    ts.dedup_lines("attrs", group_shards=2)               # CCNet line dedup, `line: dup_lines_seen == 0`
    ts.dsir_fit("attrs", targets="wiki.jsonl.gz", name="wiki")
    ts.select("attrs", recipe="gopher", dry_run=True)      # the funnel
    ts.select("attrs", recipe="gopher", output="selected")
    ts.attributes("attrs").filter("rps_doc_word_count__score > 50")   # a DuckDB relation

Why it is built this way: each stage already has one config dataclass (`AnnotateConfig`,
`ExactConfig`, `FuzzyConfig`, `DsirFitConfig`, `SelectConfig`) that the CLI and the pipeline
file fill too. The stage functions are made from the stage registry (`api_stages`: one per
`STAGE` descriptor, typed by the generated `api_stages.pyi`), so a new stage module is a new
function here with no edit. A stage function takes the stage's input first and *every* other
field of that dataclass as a keyword argument, read from `dataclasses.fields` when this module
is imported, so a field someone adds is an API keyword at once and a default has one source
(the dataclass). An unknown keyword is a `TypeError` that names the nearest valid one and lists
them all. Each function returns the stage's result dataclass. Paths may be `str` or
`os.PathLike`.

Worker processes never re-run the caller's script (`textsieve.exec.clean_spawn`), so a plain
script without `if __name__ == "__main__":` is safe.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from textsieve import api_stages as _generated
from textsieve.api_keywords import build_config, config_of, recipe_of, signature_of
from textsieve.api_stages import *  # noqa: F403 - one function per registered stage
from textsieve.document import Document
from textsieve.io.readers import ReadOptions
from textsieve.pipeline.run import PipelineResult
from textsieve.recipes.funnel import Funnel
from textsieve.recipes.language import Recipe
from textsieve.stages.sources.import_dolma import ImportDolmaConfig, ImportDolmaResult
from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, ImportRpv2Result
from textsieve.tokenization.train import TrainTokenizerConfig, TrainTokenizerResult

if TYPE_CHECKING:
    import datasets
    import duckdb
    import polars
    import pyarrow

    from textsieve.interop.dolma import DolmaExport

__all__ = ["import_rpv2", "import_dolma", "train_tokenizer", "funnel", "run", "load_recipe", "read_documents",
           "attributes", "build_config", "attributes_as_columns", "export_dolma"]
__all__ += _generated.__all__

PathLike = str | os.PathLike
Inputs = PathLike | Sequence[PathLike]


# ---------------------------------------------------------------- functions that are not stages

def attributes_as_columns(dataset: Any, directory: PathLike, columns: Sequence[str] | None = None, *,
                          flat: bool = False) -> Any:
    """The Hugging Face `dataset` with the attributes of `directory` (annotated from it, plus
    the attribute sets beside them) as extra columns, row for row (`textsieve.interop.hf`);
    `columns` picks attribute columns (default all but the MinHash bands); `flat=True` gives
    each doc-level signal as its plain score (see `attributes`). The text is not copied: the
    new columns are concatenated beside the dataset's own table."""
    from textsieve.interop.hf import attributes_as_columns as _join

    return _join(dataset, os.fspath(directory), columns, flat)


def import_rpv2(root: PathLike, **options: Any) -> ImportRpv2Result:
    """Read RedPajama-V2's released files under `root` (documents/, quality_signals/, minhash/,
    duplicates/) into attribute shards under `output` (`textsieve import rpv2`)."""
    from textsieve.stages.sources.import_rpv2 import run_import_rpv2

    return run_import_rpv2(config_of(ImportRpv2Config, "import_rpv2", "root", root, options))


def import_dolma(root: PathLike, **options: Any) -> ImportDolmaResult:
    """Read a Dolma folder's attributes (`ROOT/attributes/<name>/`, beside `ROOT/documents/`) into
    attribute shards under `output` (`textsieve import dolma`), one per documents file."""
    from textsieve.stages.sources.import_dolma import run_import_dolma

    return run_import_dolma(config_of(ImportDolmaConfig, "import_dolma", "root", root, options))


def export_dolma(directory: PathLike, *, output: PathLike, name: str = "textsieve",
                 columns: Sequence[str] | None = None, documents: str = "auto") -> DolmaExport:
    """Write the attributes of an annotate folder (and its attribute sets) in Dolma's layout
    under `output`: `attributes/<name>/<rel>` with keys `<name>__<column>`, beside
    `documents/<rel>` (written there unless the documents already lie there; `documents=
    "always"|"never"`), so Dolma's mixer can filter on them (`textsieve export dolma`)."""
    from textsieve.interop.dolma import export_attributes

    return export_attributes(os.fspath(directory), os.fspath(output), name,
                             list(columns) if columns is not None else None, documents)


def train_tokenizer(corpus: Inputs, **options: Any) -> TrainTokenizerResult:
    """Train a byte-level BPE tokenizer (Hugging Face `tokenizers`) on document files and write
    its tokenizer.json to `output` (`textsieve train tokenizer`): an offline default for
    `tokens` and `mix`. Deterministic: the same corpus and settings give the same file."""
    from textsieve.tokenization.train import train_tokenizer as _train

    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    return _train(config_of(TrainTokenizerConfig, "train_tokenizer", "corpus", [os.fspath(p) for p in paths], options))


def funnel(directory: PathLike, recipe: str | os.PathLike | Mapping[str, Any] | Recipe, *,
           threads: int | None = None) -> Funnel:
    """The dry-run funnel of `recipe` over an annotate folder: what each rule removes, alone and
    cumulatively (attribute columns only, no text read). `.table()` prints it."""
    from textsieve.recipes.funnel import compute_funnel

    return compute_funnel(os.fspath(directory), load_recipe(recipe), threads=threads)


def run(pipeline: PathLike | Mapping[str, Any], *, output: PathLike | None = None, executor: str | None = None,
        address: str | None = None, quiet: bool = False) -> PipelineResult:
    """Run a pipeline (`textsieve run`): a YAML file, or the same document as a mapping (its
    relative paths are then relative to the working directory). `output`, `executor` and
    `address` override the file's keys, as the CLI options do; `quiet` hides progress."""
    from textsieve.pipeline.config import load, validate
    from textsieve.pipeline.run import run_pipeline

    if isinstance(pipeline, Mapping):
        cfg = validate(dict(pipeline), "<pipeline dict>", Path.cwd())
    else:
        cfg = load(os.fspath(pipeline))
    if output is not None:
        out = os.fspath(output)
        cfg.data["output"] = out if "://" in out else str(Path(out).resolve())
    if executor is not None:
        cfg.data["executor"] = executor
    if address is not None:
        cfg.data["address"] = address
    if cfg.data["address"] and cfg.data["executor"] != "ray":
        raise ValueError("address= is only used with executor='ray'")
    return run_pipeline(cfg, quiet=quiet)


# ---------------------------------------------------------------- recipes, documents, attributes

def load_recipe(spec: str | os.PathLike | Mapping[str, Any] | Recipe) -> Recipe:
    """A `Recipe` from a bundled name (`"gopher"`), a YAML file, a mapping shaped like a recipe
    file (`{"name": ..., "rules": {...}}`; relative model paths against the working directory),
    or a `Recipe` (returned as is)."""
    return recipe_of(spec)


def read_documents(paths: Inputs, **options: Any) -> Iterator[Document]:
    """The `Document`s (id, text, row, lang, url, meta) of every input, in shard order: JSON
    Lines (plain, .gz, .zst), Parquet, WARC/WET/ARC and folders of .txt, local or fsspec URLs.
    `row` is the record's index within its own file. Keyword arguments are the fields of
    `ReadOptions` (`text_field`, `id_field`, `lang_field`, `url_field`, `on_error`)."""
    from textsieve.io.paths import expand_inputs
    from textsieve.io.readers import ShardReader

    opts = build_config(ReadOptions, "read_documents", options)
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for shard in expand_inputs([os.fspath(p) for p in items]):
        yield from ShardReader(shard, opts)


@overload
def attributes(directory: PathLike, as_: Literal["duckdb"] = ..., *, columns: Sequence[str] | None = ...,
               connection: Any = ..., flat: bool = ...) -> duckdb.DuckDBPyRelation: ...
@overload
def attributes(directory: PathLike, as_: Literal["arrow"], *, columns: Sequence[str] | None = ...,
               connection: None = ..., flat: bool = ...) -> pyarrow.Table: ...
@overload
def attributes(directory: PathLike, as_: Literal["polars"], *, columns: Sequence[str] | None = ...,
               connection: None = ..., flat: bool = ...) -> polars.LazyFrame: ...
@overload
def attributes(directory: PathLike, as_: Literal["datasets"], *, columns: Sequence[str] | None = ...,
               connection: None = ..., flat: bool = ...) -> datasets.Dataset: ...


def attributes(directory: PathLike, as_: str = "duckdb", *, columns: Sequence[str] | None = None,
               connection: Any = None, flat: bool = False) -> Any:
    """Every attribute of an annotate folder in one table, one row per document: annotate's
    signals plus every attribute set beside them (`sets/dedup_exact`, `sets/dedup_fuzzy`, `sets/dsir_<name>`,
    ...), LEFT JOINed on (shard, row) as `select` joins them. `as_`: "duckdb" (a lazy relation;
    `connection=` to put it on yours), "arrow" (a `pyarrow.Table`), "polars" (a lazy
    `polars.LazyFrame`; needs polars) or "datasets" (a Hugging Face `datasets.Dataset`; needs
    datasets). `flat=True`: each doc-level signal as a plain score column under its own name
    (`r["rps_doc_word_count"]`, not `r["rps_doc_word_count"][0]["score"]`); line-level signals
    stay span lists. `columns` keeps only those (named as in the view asked for). See
    `textsieve.io.attribute_view` for naming. In IPython, relations show the MinHash bytes as
    `<9 x 32 bytes>` (`textsieve.display.hide_bytes_in_previews`); the data keeps them."""
    from textsieve.display import hide_bytes_in_previews
    from textsieve.io.attribute_view import attributes as _view

    if as_ == "duckdb":
        hide_bytes_in_previews()
    return _view(os.fspath(directory), as_, columns=list(columns) if columns is not None else None,
                 connection=connection, flat=flat)


signature_of(import_rpv2, ImportRpv2Config, "root")
signature_of(import_dolma, ImportDolmaConfig, "root")
signature_of(train_tokenizer, TrainTokenizerConfig, "corpus")
signature_of(read_documents, ReadOptions, "paths")
