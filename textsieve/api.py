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
file fill too. A stage function takes the stage's input first and *every* other field of that
dataclass as a keyword argument, read from `dataclasses.fields` when this module is imported,
so a field someone adds is an API keyword at once and a default has one source (the
dataclass). An unknown keyword is a `TypeError` that names the nearest valid one and lists
them all. Each function returns the stage's result dataclass. Paths may be `str` or
`os.PathLike`.

Worker processes never re-run the caller's script (`textsieve.exec.clean_spawn`), so a plain
script without `if __name__ == "__main__":` is safe.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from textsieve.document import Document
from textsieve.dsir.resample import Resample
from textsieve.io.readers import ReadOptions
from textsieve.pipeline.run import PipelineResult
from textsieve.recipes.funnel import Funnel
from textsieve.recipes.language import Recipe
from textsieve.stages.annotate.annotate import AnnotateConfig, AnnotateResult
from textsieve.stages.annotate.embed import EmbedConfig, EmbedResult
from textsieve.stages.annotate.learn_apply import LearnApplyConfig, LearnApplyResult
from textsieve.stages.dedup.exact import ExactConfig, ExactResult
from textsieve.stages.dedup.fuzzy import FuzzyConfig, FuzzyResult
from textsieve.stages.dedup.lines import LinesConfig, LinesResult
from textsieve.stages.dedup.semantic import SemanticConfig, SemanticResult
from textsieve.stages.doc_set import DocSetResult
from textsieve.stages.select.dsir_fit import DsirFitConfig, DsirFitResult
from textsieve.stages.select.select import SelectConfig, SelectResult
from textsieve.stages.sources.extract import ExtractConfig, ExtractResult
from textsieve.stages.sources.import_dolma import ImportDolmaConfig, ImportDolmaResult
from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, ImportRpv2Result
from textsieve.stages.training.decontaminate import DecontamConfig, DecontamResult
from textsieve.stages.training.mix import MixConfig, MixResult
from textsieve.stages.training.pii import PiiConfig
from textsieve.stages.training.tokens import TokensConfig, TokensResult
from textsieve.tokenization.train import TrainTokenizerConfig, TrainTokenizerResult

if TYPE_CHECKING:
    import duckdb
    import polars
    import pyarrow

    from textsieve.interop.dolma import DolmaExport
    from textsieve.mixing.plan import Plan as MixPlan

__all__ = ["extract", "annotate", "import_rpv2", "dedup_exact", "dedup_fuzzy", "dedup_lines", "dedup_semantic",
           "decontaminate", "pii", "tokens", "embed", "learn_apply", "train_tokenizer", "dsir_fit", "select", "mix",
           "funnel", "run", "load_recipe", "read_documents", "attributes", "build_config", "attributes_as_columns",
           "export_dolma", "import_dolma"]

PathLike = str | os.PathLike
Inputs = PathLike | Sequence[PathLike]
C = TypeVar("C")


# ---------------------------------------------------------------- configs from keywords

def _plain(value: Any) -> Any:
    """`os.PathLike` -> str, also inside lists and tuples (configs hold plain strings)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _is_list_field(f: dataclasses.Field) -> bool:
    """A field typed exactly `list[...]` (not `str | list[str]`, where a string means itself)."""
    tp = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return str(tp).replace(" ", "").startswith("list[")


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _default(f: dataclasses.Field) -> Any:
    """A field's default (a fresh value for factories), or `inspect.Parameter.empty`."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


def build_config(cls: type[C], api_name: str, values: Mapping[str, Any]) -> C:
    """Config dataclass `cls` from keyword `values`: what every stage function does first.

    Unknown names raise TypeError naming the nearest valid one; a lone value for a `list[...]`
    field (one input path, one threshold) is wrapped in a list; path objects become strings."""
    fields = dataclasses.fields(cast(Any, cls))  # `cls` is a config dataclass; type[C] cannot say so
    names = [f.name for f in fields]
    unknown = [k for k in values if k not in names]
    if unknown:
        near = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise TypeError(f"{api_name}() got an unexpected keyword argument {unknown[0]!r}{hint}; "
                        f"valid keyword arguments: {', '.join(names)}")
    missing = [f.name for f in fields if _required(f) and f.name not in values]
    if missing:
        raise TypeError(f"{api_name}() missing required keyword argument(s): {', '.join(missing)}")
    kw: dict[str, Any] = {}
    for f in fields:
        if f.name in values:
            v = _plain(values[f.name])
            if _is_list_field(f) and isinstance(v, (str, int, float)) and not isinstance(v, bool):
                v = [v]
            kw[f.name] = v
    return cls(**kw)


def _signature(fn: Callable, cls: type, first: str | None, extra: Sequence[inspect.Parameter] = ()) -> None:
    """Give `fn` the signature `(first, *, <every field of cls>, *extra)` and list the fields in
    its docstring, so `help()` and notebooks show the real options (with their defaults)."""
    params, lines = [], []
    own = inspect.signature(fn)
    if first is not None:
        params.append(own.parameters[first])
    for f in dataclasses.fields(cls):
        if f.name == first:
            continue
        default = _default(f)
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
        opt = f.metadata.get("textsieve.option")
        about = getattr(opt, "help", "") or ""
        shown = "required" if default is inspect.Parameter.empty else f"default {default!r}"
        lines.append(f"    {f.name} ({shown}){': ' + about if about else ''}")
    params += list(extra)
    fn.__dict__["__signature__"] = own.replace(parameters=params)  # what inspect.signature() reads
    fn.__doc__ = (inspect.cleandoc(fn.__doc__ or "") + f"\n\nKeyword arguments (the fields of {cls.__name__}):\n"
                  + "\n".join(lines))


def _stage(cls: type[C], api_name: str, first: str | None, first_value: Any, options: dict[str, Any]) -> C:
    values = dict(options)
    if isinstance(values.get("recipe"), Mapping):  # a recipe written inline, as in a pipeline file
        values["recipe"] = load_recipe(values["recipe"])
    if first is not None:
        if first in values:
            raise TypeError(f"{api_name}() got multiple values for argument {first!r}")
        values[first] = first_value
    return build_config(cls, api_name, values)


# ---------------------------------------------------------------- stages

def extract(inputs: Inputs, **options: Any) -> ExtractResult:
    """Main-content text of the HTML pages in `inputs` (WARC/ARC files, HTML files, folders,
    globs or URLs) as document shards under `output` (`textsieve extract`)."""
    from textsieve.stages.sources.extract import run_extract

    return run_extract(_stage(ExtractConfig, "extract", "inputs", inputs, options))


def annotate(inputs: Inputs | Any, **options: Any) -> AnnotateResult:
    """Compute quality signals for `inputs` (files, folders, globs or URLs) into attribute
    shards under `output` (`textsieve annotate`). `inputs` may also be a Hugging Face
    `datasets.Dataset` or `save_to_disk` folder: its Arrow files are read in place (no text is
    copied; a dataset not backed by its files is written once beside `output`, see
    `textsieve.interop.hf`); `attributes_as_columns(ds, output)` joins the signals back."""
    from textsieve.interop.hf import dataset_inputs
    from textsieve.stages.annotate.annotate import run_annotate

    out = options.get("output")
    inputs = dataset_inputs(inputs, os.fspath(out) if out is not None else None)
    return run_annotate(_stage(AnnotateConfig, "annotate", "inputs", inputs, options))


def attributes_as_columns(dataset: Any, directory: PathLike, columns: Sequence[str] | None = None) -> Any:
    """The Hugging Face `dataset` with the attributes of `directory` (annotated from it, plus
    the attribute sets beside them) as extra columns, row for row (`textsieve.interop.hf`);
    `columns` picks attribute columns (default all but the MinHash bands). The text is not
    copied: the new columns are concatenated beside the dataset's own table."""
    from textsieve.interop.hf import attributes_as_columns as _join

    return _join(dataset, os.fspath(directory), columns)


def import_rpv2(root: PathLike, **options: Any) -> ImportRpv2Result:
    """Read RedPajama-V2's released files under `root` (documents/, quality_signals/, minhash/,
    duplicates/) into attribute shards under `output` (`textsieve import rpv2`)."""
    from textsieve.stages.sources.import_rpv2 import run_import_rpv2

    return run_import_rpv2(_stage(ImportRpv2Config, "import_rpv2", "root", root, options))


def import_dolma(root: PathLike, **options: Any) -> ImportDolmaResult:
    """Read a Dolma folder's attributes (`ROOT/attributes/<name>/`, beside `ROOT/documents/`) into
    attribute shards under `output` (`textsieve import dolma`), one per documents file."""
    from textsieve.stages.sources.import_dolma import run_import_dolma

    return run_import_dolma(_stage(ImportDolmaConfig, "import_dolma", "root", root, options))


def export_dolma(directory: PathLike, *, output: PathLike, name: str = "textsieve",
                 columns: Sequence[str] | None = None, documents: str = "auto") -> DolmaExport:
    """Write the attributes of an annotate folder (and its attribute sets) in Dolma's layout
    under `output`: `attributes/<name>/<rel>` with keys `<name>__<column>`, beside
    `documents/<rel>` (written there unless the documents already lie there; `documents=
    "always"|"never"`), so Dolma's mixer can filter on them (`textsieve export dolma`)."""
    from textsieve.interop.dolma import export_attributes

    return export_attributes(os.fspath(directory), os.fspath(output), name,
                             list(columns) if columns is not None else None, documents)


def dedup_exact(inputs: Inputs, **options: Any) -> ExactResult:
    """Exact duplicates of an annotate folder (or raw inputs with `output=`), written as the
    attribute set `_dedup_exact` (`textsieve dedup exact`)."""
    from textsieve.stages.dedup.exact import run_exact

    return run_exact(_stage(ExactConfig, "dedup_exact", "inputs", inputs, options))


def dedup_fuzzy(directory: PathLike, **options: Any) -> FuzzyResult:
    """MinHash-LSH clusters of an annotate folder at `thresholds`, written as `_dedup_fuzzy`
    (`textsieve dedup fuzzy`)."""
    from textsieve.stages.dedup.fuzzy import run_fuzzy

    return run_fuzzy(_stage(FuzzyConfig, "dedup_fuzzy", "directory", directory, options))


def dedup_lines(directory: PathLike, **options: Any) -> LinesResult:
    """CCNet-style duplicate lines of an annotate folder, per group of `group_shards` shards,
    written as `_dedup_lines` (`textsieve dedup lines`); drop them in a recipe with
    `line: dup_lines_seen == 0`."""
    from textsieve.stages.dedup.lines import run_lines

    return run_lines(_stage(LinesConfig, "dedup_lines", "directory", directory, options))


def dedup_semantic(directory: PathLike, **options: Any) -> SemanticResult:
    """Semantic duplicates (SemDeDup on the CPU) of an annotate folder with embeddings (`ts.embed`):
    seeded k-means, then pairs within a cluster with cosine >= 1 - eps joined into clusters,
    written as `dup_semantic_e<D>_cluster/_size/_keep` per eps to `_dedup_semantic`
    (`textsieve dedup semantic`); `keep` first, longest, none or a numeric column."""
    from textsieve.stages.dedup.semantic import run_semantic

    return run_semantic(_stage(SemanticConfig, "dedup_semantic", "directory", directory, options))


def decontaminate(directory: PathLike, **options: Any) -> DecontamResult:
    """N-gram overlap (13-grams of normalised words by default) of every document of an annotate
    folder with the evaluation data in `against` (files or folders, `name=path`), written as
    `_decontam` (`ts_contam_count`, `ts_contam_spans`, `ts_contam_bench`; `textsieve
    decontaminate`). Keep clean documents with the rule `ts_contam_count == 0`, or cut the spans
    with `select(..., redact=["ts_contam_spans"])`."""
    from textsieve.stages.training.decontaminate import run_decontaminate

    return run_decontaminate(_stage(DecontamConfig, "decontaminate", "directory", directory, options))


def pii(directory: PathLike, **options: Any) -> DocSetResult:
    """Personal data spans of every document (e-mail, IP, phone, credit card, IBAN) as the set
    `_pii` (`textsieve pii`); `select(..., redact=["pii"])` replaces them with placeholders."""
    from textsieve.stages.training.pii import run_pii

    return run_pii(_stage(PiiConfig, "pii", "directory", directory, options))


def tokens(directory: PathLike, **options: Any) -> TokensResult:
    """Real token counts `ts_tokens_<name>` of every document with the tokenizer file
    `tokenizer` (a tokenizer.json or tiktoken file), as the set `_tokens_<name>` (`textsieve
    tokens`); DSIR budgets, the funnel, the report and `mix` use them."""
    from textsieve.stages.training.tokens import run_tokens

    return run_tokens(_stage(TokensConfig, "tokens", "directory", directory, options))


def embed(directory: PathLike, **options: Any) -> EmbedResult:
    """One embedding per document, `ts_embed_<model>` (fixed_size_list<float16>, unit length) in the
    set `_embed_<model>` (`textsieve embed`), with the default model shipped in the wordllama wheel
    or `model=` a Model2Vec / sentence-transformers folder; semantic dedup, embedding DSIR and
    learned filters read it. Nothing is downloaded."""
    from textsieve.stages.annotate.embed import run_embed

    return run_embed(_stage(EmbedConfig, "embed", "directory", directory, options))


def learn_apply(directory: PathLike, **options: Any) -> LearnApplyResult:
    """A learned model's probability per document (`textsieve learn apply MODEL ATTRS`): for a
    model over embeddings, n-grams or boosted trees (`model=` the file `textsieve learn` wrote),
    stored as `ts_learned_<name>` in the set `_learned_<name>`, which a recipe's `NAME.predict`
    reads. A logistic model over signals needs none of this: select applies it as SQL."""
    from textsieve.stages.annotate.learn_apply import run_learn_apply

    return run_learn_apply(_stage(LearnApplyConfig, "learn_apply", "directory", directory, options))


def train_tokenizer(corpus: Inputs, **options: Any) -> TrainTokenizerResult:
    """Train a byte-level BPE tokenizer (Hugging Face `tokenizers`) on document files and write
    its tokenizer.json to `output` (`textsieve train tokenizer`): an offline default for
    `tokens` and `mix`. Deterministic: the same corpus and settings give the same file."""
    from textsieve.tokenization.train import train_tokenizer as _train

    paths = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    return _train(_stage(TrainTokenizerConfig, "train_tokenizer", "corpus", [os.fspath(p) for p in paths], options))


def dsir_fit(raw: PathLike, **options: Any) -> DsirFitResult:
    """Fit DSIR importance weights of the annotated pool `raw` toward `targets` and store them
    as `_dsir_<name>` (`textsieve dsir fit`)."""
    from textsieve.stages.select.dsir_fit import run_fit

    return run_fit(_stage(DsirFitConfig, "dsir_fit", "raw", raw, options))


@overload
def select(directory: PathLike, *, dry_run: Literal[False] = ..., **options: Any) -> SelectResult: ...
@overload
def select(directory: PathLike, *, dry_run: Literal[True], **options: Any) -> Funnel | Resample: ...


def select(directory: PathLike, *, dry_run: bool = False, **options: Any) -> SelectResult | Funnel | Resample:
    """Select documents of an annotate folder with a `recipe` (a bundled name, a YAML path, a
    mapping or a `Recipe`) and/or DSIR targets (`dsir="wiki"`, with `k=` or `tokens=`), writing
    them to `output` (`textsieve select`). `dry_run=True` writes nothing and returns what
    `select --dry-run` prints: the recipe's `Funnel`, or with DSIR targets the draw (`Resample`,
    see its `.summary()`)."""
    from textsieve.stages.select.select import SelectError, preview_draw, resolve_select_config, run_select

    if options.get("recipe") is not None:  # fail on a bad recipe before any work
        options["recipe"] = load_recipe(options["recipe"])
    cfg = _stage(SelectConfig, "select", "directory", directory, options)
    if cfg.recipe is None and cfg.dsir is None:
        raise SelectError("select() needs recipe=... and/or dsir=...; see `textsieve recipes`")
    if not dry_run:
        return run_select(cfg)
    cfg = resolve_select_config(cfg)
    if cfg.dsir is None:
        from textsieve.recipes.funnel import compute_funnel

        assert isinstance(cfg.recipe, Recipe)  # loaded above; resolving keeps it
        return compute_funnel(cfg.directory, cfg.recipe, threads=cfg.threads)
    return preview_draw(cfg)


@overload
def mix(mix: PathLike | Mapping[str, Any], *, dry_run: Literal[False] = ..., **options: Any) -> MixResult: ...
@overload
def mix(mix: PathLike | Mapping[str, Any], *, dry_run: Literal[True], **options: Any) -> MixPlan: ...


def mix(mix: PathLike | Mapping[str, Any], *, dry_run: bool = False, **options: Any) -> MixResult | MixPlan:
    """Mix selections at token shares into shuffled training shards (`textsieve mix`): `mix` is
    a mix file or its parsed mapping (sources, shares, tokens, tokenizer, ...; relative paths of
    a mapping against the working directory). With `dry_run=True`, the plan only (per source
    available and target tokens, epochs; `plan.feasible`), nothing written. An infeasible mix
    raises `MixInfeasibleError` before anything is written."""
    from textsieve.stages.training.mix import plan_mix, run_mix

    value: Any = dict(mix) if isinstance(mix, Mapping) else os.fspath(mix)
    cfg = _stage(MixConfig, "mix", "mix", value, options)
    if dry_run:
        return plan_mix(cfg)[2]
    return run_mix(cfg)


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
    from textsieve.recipes.language import load_recipe as _load

    if isinstance(spec, Recipe):
        return spec
    if isinstance(spec, Mapping):
        return Recipe.from_dict(dict(spec), name=str(spec.get("name", "recipe")), base=Path.cwd())
    return _load(os.fspath(spec))


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
               connection: Any = ...) -> duckdb.DuckDBPyRelation: ...
@overload
def attributes(directory: PathLike, as_: Literal["arrow"], *, columns: Sequence[str] | None = ...,
               connection: None = ...) -> pyarrow.Table: ...
@overload
def attributes(directory: PathLike, as_: Literal["polars"], *, columns: Sequence[str] | None = ...,
               connection: None = ...) -> polars.LazyFrame: ...


def attributes(directory: PathLike, as_: str = "duckdb", *, columns: Sequence[str] | None = None,
               connection: Any = None) -> Any:
    """Every attribute of an annotate folder in one table, one row per document: annotate's
    signals plus every attribute set beside them (`_dedup_exact`, `_dedup_fuzzy`, `_dsir_<name>`,
    ...), LEFT JOINed on (shard, row) as `select` joins them. `as_`: "duckdb" (a lazy relation;
    `connection=` to put it on yours), "arrow" (a `pyarrow.Table`) or "polars" (a lazy
    `polars.LazyFrame`; needs polars). `columns` keeps only those. See
    `textsieve.io.attribute_view` for naming."""
    from textsieve.io.attribute_view import attributes as _view

    return _view(os.fspath(directory), as_, columns=list(columns) if columns is not None else None,
                 connection=connection)


_signature(extract, ExtractConfig, "inputs")
_signature(annotate, AnnotateConfig, "inputs")
_signature(import_rpv2, ImportRpv2Config, "root")
_signature(import_dolma, ImportDolmaConfig, "root")
_signature(dedup_exact, ExactConfig, "inputs")
_signature(dedup_fuzzy, FuzzyConfig, "directory")
_signature(dedup_lines, LinesConfig, "directory")
_signature(dedup_semantic, SemanticConfig, "directory")
_signature(decontaminate, DecontamConfig, "directory")
_signature(pii, PiiConfig, "directory")
_signature(tokens, TokensConfig, "directory")
_signature(embed, EmbedConfig, "directory")
_signature(learn_apply, LearnApplyConfig, "directory")
_signature(train_tokenizer, TrainTokenizerConfig, "corpus")
_signature(dsir_fit, DsirFitConfig, "raw")
_signature(select, SelectConfig, "directory",
           [inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")])
_signature(mix, MixConfig, "mix",
           [inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")])
_signature(read_documents, ReadOptions, "paths")
