"""Write a selection: the chosen documents (optionally with lines cut) as JSONL.gz or Parquet.

What is selected comes from a recipe (one DuckDB query over the attributes, see `compile`), from
DSIR resampling (`dsir.resample`; a document drawn n times is written n times), or from both:
DSIR then draws from the recipe's survivors (`survivors`) and the recipe's line rules still cut
what is drawn. Only then is text read: each source shard is re-opened with the reader options
stored in its attribute shard's footer (`attributes.source_documents`), and the selected rows
are streamed out in row order. Each record is the source record with every field and its type
(Parquet → Parquet keeps the schema, JSONL → JSONL every key), plus `id`, `shard` (source shard
rel name) and `row`, so it can be joined back to every attribute set. JSONL → Parquet infers an
Arrow schema from the records (objects as structs); Parquet → JSONL JSON-encodes each row, all
columns. The rules, clashes included, are in `textsieve.stages.select.output`.

One output shard per attribute shard, mirrored relative path, written atomically (an empty
shard is still written: its existence means "done"). `selection.json` records the recipe, the
DSIR request, counts and input fingerprints; it is written first with status "running", so a
re-run with the same settings skips finished shards and a re-run with other settings refuses
to mix outputs unless `overwrite`.

C4-style line removal: a kept document's text is the concatenation of the raw slices
[start, end) of its kept lines (spans include their newline). The source text length must
equal the attribute span end, otherwise the source changed since `annotate` and we stop.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec
import numpy as np

from textsieve.display import result_display
from textsieve.dsir.defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE, WEIGHTS
from textsieve.dsir.targets import parse_dsir_targets
from textsieve.io.attributes import attribute_shards, read_shard_meta, shard_rel
from textsieve.io.leftovers import remove_stale_temps
from textsieve.io.locations import pool_workers
from textsieve.io.publish import SELECTION_JSON, Publication, SummaryStyle, read_manifest
from textsieve.io.runstate import holds_output
from textsieve.mixing.spec import FORMATS as SHARD_FORMATS
from textsieve.mixing.spec import MixSpec
from textsieve.options import address_option, check_choices, executor_option, option, progress_option
from textsieve.recipes.language import Recipe
from textsieve.recipes.sql import lit
from textsieve.recipes.survivors import selection_sql
from textsieve.stages.descriptor import (
    PROGRESS_REASON,
    Layout,
    Outcome,
    Stage,
    every_stage_before,
    recipe_path,
    recipe_value,
)
from textsieve.stages.planning import Corpus, StagePlan
from textsieve.stages.select.select_cli import CLI

if TYPE_CHECKING:
    from textsieve.dsir.resample import Resample
    from textsieve.recipes.funnel import Funnel

FORMATS = ("jsonl.gz", "parquet")
DSIR_GROUP = "DSIR resampling (after `textsieve dsir fit`)"
SHARDS_GROUP = "training shards (shuffled, fixed-size, as `textsieve mix` writes them)"
SUMMARY = SELECTION_JSON  # .textsieve/selection.json
#: the one message for a selection without a recipe or DSIR targets (CLI, API and pipeline)
NOTHING_TO_SELECT = ("give a recipe, DSIR targets, or both (--recipe R / recipe=..., --dsir NAME / dsir=...; DSIR "
                     "then draws from the recipe's survivors); see `textsieve recipes`")


class SelectError(ValueError):
    """A selection that cannot be made as asked (bad options, stale output, changed sources)."""


@dataclass
class SelectConfig:
    """What `textsieve select` (and `ts.select`) takes. A recipe filters; DSIR targets resample;
    with both, DSIR draws from the recipe's survivors."""

    directory: str = option(help="output folder of `textsieve annotate`", positional=True, metavar="ANNOTATED_DIR")
    output: str | None = option(None, help="folder for the selected documents (required unless --dry-run)",
                                short="-o", metavar="DIR")
    recipe: Recipe | str | None = option(None, help="bundled recipe name or YAML file", short="-r", metavar="R")
    dsir: list[tuple[str, float]] | str | None = option(
        None, help="targets to resample toward (after `textsieve dsir fit`)", metavar="NAME[:W][,NAME2:W2]",
        group=DSIR_GROUP)
    k: int | None = option(None, help="documents to draw", group=DSIR_GROUP)
    tokens: int | None = option(None, help="token budget to draw instead of --k (in --token-column's tokens)",
                                group=DSIR_GROUP)
    replace: bool = option(False, help="draw with replacement (a document may repeat; default: without, "
                                       "Gumbel top-k)", group=DSIR_GROUP)
    seed: int = option(0, help="random seed; the same seed gives the same draw (and, with --shards, the same "
                               "shuffle)", group=DSIR_GROUP)
    temperature: float = option(DEFAULT_TEMPERATURE, help="divides the log weights: lower is closer to top-k, "
                                                          "higher to uniform", group=DSIR_GROUP)
    min_tokens: int = option(DEFAULT_MIN_TOKENS, help="documents with fewer tokens are never drawn "
                                                      "(the reference uses 100)", group=DSIR_GROUP)
    prior_ngrams: float = option(DEFAULT_PRIOR_NGRAMS,
                                 help="normalized weight = sum of log ratios / (n-grams + this): short documents "
                                      "need stronger evidence; 0 = plain mean", group=DSIR_GROUP)
    dsir_weight: str = option("normalized", choices=WEIGHTS, renamed_from=("--weight",), group=DSIR_GROUP,
                              help="normalized: log ratio per n-gram, shrunk by --prior-ngrams; raw: the "
                                   "reference's sum, which grows with length and makes sampling top-k")
    format: str = option("jsonl.gz", help="output shard format", choices=FORMATS)
    overwrite: bool = option(False, help="replace an output made with other settings")
    workers: int | None = option(None, help="processes writing shards (default: all cores)")
    threads: int | None = option(None, help="DuckDB threads (default: all cores)")
    progress: bool = progress_option()
    executor: str = executor_option("write the output shards on the local pool or as Ray tasks (same "
                                         "output)")
    address: str | None = address_option()
    # folders the annotate footers' source files may lie in, besides the recorded inputs
    source_roots: list[str] = option(
        help="a folder the source documents may be read from besides the inputs annotate recorded (repeatable; "
             "for sources that moved). Footers naming files elsewhere are refused", factory=list,
        renamed_from=("--source-root",), repeat=True, metavar="DIR")
    redact: list[str] = option(
        help="replace spans when writing (repeatable): `pii` puts a placeholder such as |||EMAIL_ADDRESS||| over "
             "every span of the sets/pii set (`textsieve pii`); a span column's name (e.g. ts_contam_spans) removes "
             "its spans. Each record gets ts_redacted, the spans replaced per type; a recipe's `redact:` adds to these",
        factory=list, repeat=True, metavar="NAME")
    # what --tokens counts (textsieve.tokenization.columns.resolve_token_column)
    token_column: str | None = option(
        None, help="what --tokens and the reported tokens count: ts_tokens_NAME (after `textsieve tokens`), or "
                   "words (word/punctuation tokens). Default: the folder's one ts_tokens_* column if it has "
                   "exactly one, else words", metavar="COLUMN", group=DSIR_GROUP)
    # training-ready shards instead of per-input selection files (`textsieve.stages.select.shards`)
    shards: str | None = option(
        None, choices=SHARD_FORMATS, metavar="FORMAT", group=SHARDS_GROUP,
        help="write the selection as globally shuffled training shards of a fixed size (jsonl.zst, parquet, or bin: "
             "token ids + Megatron .idx) with manifest.json, as `textsieve mix` does, instead of one file per input "
             "shard: every selected document once (a DSIR draw: as often as drawn), shuffled with --seed")
    shard_size: str | None = option(
        None, metavar="SIZE", group=SHARDS_GROUP,
        help=f"with --shards: shard size, '5M tokens' or bytes such as 64MB (default: {MixSpec.shard_size})")
    tokenizer: str | None = option(
        None, metavar="PATH", group=SHARDS_GROUP,
        help="with --shards: tokenizer.json or tiktoken file the tokens are counted (and for bin encoded) with, or "
             "'words' for estimated counts (the default for jsonl.zst and parquet; bin needs a file)")
    memory: str | None = option(
        None, group=SHARDS_GROUP,
        help="with --shards: memory for the shuffle's buffers (default: as `textsieve mix --memory`; the output is "
             "the same for any value)")


@result_display
@dataclass
class SelectResult:
    output: str
    documents: int  # records written (DSIR: with multiplicity)
    characters: int
    pool: int
    shards_written: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    dsir: dict | None = None
    redacted: dict[str, int] = field(default_factory=dict)  # spans replaced per label (this run's shards)
    training: dict | None = None  # --shards: {format, tokens, shards, skipped, manifest} (`select_shards`)

    def _headline(self) -> str:
        """Jupyter's caption of this result (`textsieve.display`): the selection's counts."""
        share = f" ({100.0 * self.documents / self.pool:.1f}%)" if self.pool else ""
        return (f"selected {self.documents:,} of {self.pool:,} documents{share}, {self.characters:,} characters "
                f"-> {self.output}")


@dataclass
class ShardTask:
    """One source shard's part of the selection (picklable, for the process pool)."""

    meta: dict
    final: str
    fmt: str
    rows: np.ndarray  # sorted int64
    ids: list[str]
    lengths: np.ndarray  # document length per selected row (-1: unknown)
    counts: np.ndarray  # times to write each row
    starts: list[np.ndarray] | None = None  # kept line spans per row (line rules)
    ends: list[np.ndarray] | None = None
    redact: list[tuple[str, str, str, str]] | None = None  # span columns to replace (`pii.redact_plan`)
    redact_labels: tuple[str, ...] = ()


def shard_metas(directory: str, source_roots: Sequence[str] = ()) -> tuple[fsspec.AbstractFileSystem, str,
                                                                           dict[str, tuple[str, dict]]]:
    """Source shard rel name -> (attribute shard rel, footer meta) for every annotate shard, each
    footer's source checked to lie inside the folder's recorded inputs or `source_roots`."""
    from textsieve.io.source_roots import allowed_roots, check_source

    fs, files = attribute_shards(directory)
    root = fsspec.core.url_to_fs(directory)[1].rstrip("/")
    roots = allowed_roots(directory, source_roots)
    out = {}
    for path in files:
        meta = read_shard_meta(fs, path)
        if "source_shard" not in meta:
            raise SelectError(f"{path}: no source information in its footer; was it written by `textsieve annotate`?")
        check_source(meta, roots, path)
        meta["_attr_size"] = fs.size(path)
        out[meta.get("shard") or meta["source_shard"]["rel"]] = (shard_rel(root, path), meta)
    return fs, root, out


def _out_rel(attr_rel: str, fmt: str) -> str:
    stem = attr_rel[: -len(".parquet")] if attr_rel.endswith(".parquet") else attr_rel
    return f"{stem}.{fmt}"


def write_shard(task: ShardTask) -> tuple[str, int, int, dict[str, int]]:
    """Stream the source shard, write the selected rows with every source field (see
    `textsieve.stages.select.output`). Returns (final path, records, characters, spans
    redacted per label)."""
    from textsieve.stages.select.output import stream_selected, write_selected

    selected, check = stream_selected(task, SelectError)
    records, chars = write_selected(task, selected)
    return task.final, records, chars, check()


def selection_fingerprint(cfg: SelectConfig, inputs: list[dict]) -> str:
    recipe, _ = recipe_and_targets(cfg)
    what: dict[str, object] = {"recipe": recipe.fingerprint() if recipe else None, "format": cfg.format,
            "dsir": [cfg.dsir, cfg.k, cfg.tokens, cfg.replace, cfg.seed, cfg.temperature, cfg.dsir_weight,
                     cfg.min_tokens, cfg.prior_ngrams]
            if cfg.dsir else None, "inputs": inputs}
    if redact_names(cfg):  # only then: selections made without redaction keep their fingerprints
        what["redact"] = redact_names(cfg)
    if cfg.dsir and cfg.tokens is not None:  # real token counts: the column and its tokenizer decide the draw
        from textsieve.tokenization.columns import resolve_token_column, token_info

        col = resolve_token_column(cfg.directory, cfg.token_column, "DSIR token budget")
        if col is not None:
            what["token_column"] = [col, token_info(cfg.directory, col).get("tokenizer_fingerprint")]
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


#: selection.json: two-space indent, ASCII, paths and other values JSON lacks as strings
SELECTION_SUMMARY = SummaryStyle(indent=2, ensure_ascii=True, newline=False, default=str)


def selected_rows(cfg: SelectConfig) -> tuple[dict[str, dict], dict | None, list[str]]:
    """shard -> columns of the selected rows; DSIR summary; attribute sets used. With a recipe
    and DSIR targets, DSIR draws from the recipe's survivors only (`survivors`), and the drawn
    rows keep the recipe's kept line spans, so line rules still cut them when written."""
    from textsieve.recipes.survivors import recipe_rows

    recipe, targets = recipe_and_targets(cfg)
    kept: dict[str, dict] | None = None
    used: list[str] = []
    if recipe is not None:
        kept, used = recipe_rows(cfg.directory, recipe, cfg.threads)
    if targets is None:
        if kept is None:
            raise SelectError(NOTHING_TO_SELECT)
        return kept, None, used
    if recipe is not None and recipe.repeat is not None:
        raise SelectError(f"recipe {recipe.name!r}: repeat: writes kept documents several times and DSIR draws "
                          "with its own multiplicities; use one of them (drop repeat:, or the DSIR targets)")
    from textsieve.dsir.resample import resample

    within = {s: d["rows"] for s, d in kept.items()} if kept is not None else None
    res = resample(cfg.directory, targets, k=cfg.k, tokens=cfg.tokens, replace=cfg.replace, seed=cfg.seed,
                   temperature=cfg.temperature, weight=cfg.dsir_weight, min_tokens=cfg.min_tokens,
                   prior_ngrams=cfg.prior_ngrams, within=within, token_column=cfg.token_column)
    out = {}
    order = np.lexsort((res.row.astype(np.int64), res.shard.astype(str)))
    for s in dict.fromkeys(res.shard[order].tolist()):
        idx = order[res.shard[order] == s]
        ids = res.id[idx].tolist() if len(res.id) == len(res.row) else [None] * len(idx)
        d = {"rows": res.row[idx].astype(np.int64), "ids": ids, "lengths": np.full(len(idx), -1, np.int64),
             "counts": res.count[idx].astype(np.int64)}
        if kept is not None:  # the recipe's lengths and kept lines of each drawn row
            src = kept[s]
            at = np.searchsorted(src["rows"], d["rows"])
            d["lengths"] = src["lengths"][at]
            if "starts" in src:
                d["starts"] = [src["starts"][i] for i in at.tolist()]
                d["ends"] = [src["ends"][i] for i in at.tolist()]
        out[s] = d
    summary = res.summary() | {"targets": targets, "k": cfg.k, "tokens_requested": cfg.tokens, "replace": cfg.replace,
                               "seed": cfg.seed, "temperature": cfg.temperature, "weight": cfg.dsir_weight,
                               "min_tokens": cfg.min_tokens, "prior_ngrams": cfg.prior_ngrams}
    return out, summary, used + [f"dsir_{n}" for n, _ in targets if f"dsir_{n}" not in used]


def preview_select(cfg: SelectConfig) -> Funnel | Resample:
    """What `select --dry-run` prints and `ts.select(..., dry_run=True)` returns, nothing written:
    the recipe's funnel (attribute columns only, no text read), or with DSIR targets the draw."""
    from textsieve.recipes.funnel import compute_funnel

    cfg = resolve_select_config(cfg)
    recipe, targets = recipe_and_targets(cfg)
    if recipe is None and targets is None:
        raise SelectError(NOTHING_TO_SELECT)
    if targets is None:
        assert recipe is not None
        return compute_funnel(cfg.directory, recipe, threads=cfg.threads)
    return preview_draw(cfg)


def preview_draw(cfg: SelectConfig) -> Resample:
    """The DSIR draw `run_select` would make, without writing anything (what `select --dry-run`
    prints with DSIR targets): over the recipe's survivors when the config also has a recipe."""
    from textsieve.dsir.resample import resample
    from textsieve.recipes.survivors import survivors

    cfg = resolve_select_config(cfg)
    recipe, targets = recipe_and_targets(cfg)
    if targets is None:
        raise SelectError("preview_draw needs DSIR targets (a recipe alone: use the funnel, `compute_funnel`)")
    within = survivors(cfg.directory, recipe, cfg.threads) if recipe is not None else None
    return resample(cfg.directory, targets, k=cfg.k, tokens=cfg.tokens, replace=cfg.replace, seed=cfg.seed,
                    temperature=cfg.temperature, weight=cfg.dsir_weight, min_tokens=cfg.min_tokens,
                    prior_ngrams=cfg.prior_ngrams, within=within, token_column=cfg.token_column)


def _mapper(cfg: SelectConfig):
    """The executor's ordered map: the local process pool, or Ray tasks (same results, in order)."""
    if cfg.executor == "ray":
        from functools import partial

        from textsieve.exec.ray_exec import ray_ordered_map

        return partial(ray_ordered_map, address=cfg.address)
    if cfg.executor != "local":
        raise SelectError(f"unknown executor {cfg.executor!r}; use 'local' or 'ray'")
    from textsieve.exec.local import ordered_map

    return ordered_map


def resolve_select_config(cfg: SelectConfig) -> SelectConfig:
    """The config with its recipe loaded (a name or path -> `Recipe`) and its DSIR targets
    parsed (one parser: `dsir_targets`), values checked against their choices; what `select`
    and its dry-run both start from, whoever filled the config (CLI, YAML, API)."""
    from dataclasses import replace

    from textsieve.recipes.language import load_recipe

    check_choices(cfg)
    recipe = load_recipe(cfg.recipe) if isinstance(cfg.recipe, str) else cfg.recipe
    dsir = parse_dsir_targets(cfg.dsir) if cfg.dsir is not None else None
    if dsir is not None and (cfg.k is None) == (cfg.tokens is None):
        raise SelectError("DSIR resampling needs exactly one of --k N (documents) or --tokens N")
    from textsieve.stages.select.shards import check_shard_options

    out = replace(cfg, recipe=recipe, dsir=dsir)
    check_shard_options(out)
    return out


def redact_names(cfg: SelectConfig) -> list[str]:
    """The `--redact` names of a config plus its recipe's `redact:` entries, in order, once each."""
    recipe = cfg.recipe if isinstance(cfg.recipe, Recipe) else None
    given = [cfg.redact] if isinstance(cfg.redact, str) else list(cfg.redact or [])
    names = [n.strip() for v in [*given, *(recipe.redact if recipe is not None else [])] for n in str(v).split(",")]
    return list(dict.fromkeys(n for n in names if n))


def recipe_and_targets(cfg: SelectConfig) -> tuple[Recipe | None, list[tuple[str, float]] | None]:
    """(recipe, DSIR targets) of a config `resolve_select_config` returned, typed as such: the
    fields also accept a recipe name or path and a targets string, which only resolving turns
    into a `Recipe` and (name, weight) pairs."""
    if isinstance(cfg.recipe, str) or isinstance(cfg.dsir, str):
        raise SelectError("select: the config's recipe or DSIR targets are not resolved; "
                          "call resolve_select_config first")
    return cfg.recipe, cfg.dsir


def run_select(cfg: SelectConfig) -> SelectResult:
    """Materialize a selection into `cfg.output` (see module doc)."""
    cfg = resolve_select_config(cfg)
    recipe, _ = recipe_and_targets(cfg)
    if cfg.recipe is None and cfg.dsir is None:
        raise SelectError(NOTHING_TO_SELECT)
    if not cfg.output:
        raise SelectError("--output DIR is required unless --dry-run")
    from textsieve.exec.local import default_workers
    from textsieve.exec.progress import Progress

    if cfg.format not in FORMATS:
        raise SelectError(f"--format must be one of {', '.join(FORMATS)}, not {cfg.format!r}")
    if cfg.shards is not None:  # training shards: the mix machinery with this selection as its one source
        from textsieve.stages.select.shards import run_select_shards

        return run_select_shards(cfg)
    t0 = time.perf_counter()
    fs_in, root, metas = shard_metas(cfg.directory, cfg.source_roots)
    inputs = [{"attribute_shard": rel, "size": m["_attr_size"], "fingerprint": m.get("fingerprint"),
               "source": m.get("source"), "source_size": m["source_shard"].get("size"), "documents": m.get("documents")}
              for rel, m in sorted(metas.values(), key=lambda x: x[0])]
    check_selection_apart(cfg, metas)
    from textsieve.personal_data.redact_plan import resolve_redact

    redact = resolve_redact(cfg.directory, redact_names(cfg))
    fs, out_root = fsspec.core.url_to_fs(cfg.output)
    out_root = out_root.rstrip("/")
    settings = selection_fingerprint(cfg, [])
    fp = selection_fingerprint(cfg, inputs + [published_inputs(cfg.directory)])
    fs.makedirs(out_root, exist_ok=True)
    remove_stale_temps(fs, out_root)  # shards a killed run was writing (never a live run's)
    pub = Publication(fs, out_root, "select", fp, info={"settings": settings}, protect=True, overwrite=cfg.overwrite)
    old = pub.previous
    if old is not None and not cfg.overwrite:
        done = pub.up_to_date({_out_rel(rel, cfg.format): fp for rel, _ in metas.values()}, SUMMARY)
        if done is not None:
            c = done["counts"]  # everything is already written: nothing to query
            return SelectResult(cfg.output, c["selected"], 0, c["pool"], [], sorted(
                f"{out_root}/{_out_rel(rel, cfg.format)}" for rel, _ in metas.values()), 0.0, done.get("dsir"))
        if old.info.get("settings") != settings:  # the same settings on changed inputs re-run silently
            pub.abandon()
            raise SelectError(f"{cfg.output} holds a selection made with other settings (fingerprint "
                              f"{old.info.get('settings')} != {settings}); use --overwrite or another folder")
    elif old is None and not cfg.overwrite and holds_output(fs, out_root, (SUMMARY,)):
        pub.abandon()
        raise SelectError(f"{cfg.output} holds files that no textsieve selection published; use --overwrite or "
                          "another folder")
    head = {"stage": "select", "status": "done", "fingerprint": fp, "format": cfg.format,
            "recipe": recipe.to_dict() if recipe else None, "inputs": inputs,
            # the annotate folder: `mix` plans a selection source from its stored token counts
            "attributes": cfg.directory if "://" in cfg.directory else str(Path(cfg.directory).resolve())}
    if redact.names:
        head["redact"] = {"names": redact.names, "columns": [c.column for c in redact.columns]}
    # how annotate read the records (text, id, language fields): the output records keep the source's
    # fields, so a reader of the selection (`mix`'s per-language tokens) finds them by the same names
    head["read_options"] = next((m.get("read_options") for _, m in sorted(metas.values(), key=lambda x: x[0])), None)

    selected, dsir_summary, used = selected_rows(cfg)
    pool = sum(int(m.get("documents") or 0) for _, m in metas.values())
    unknown = set(selected) - set(metas)
    if unknown:
        raise SelectError(f"selected rows name source shards without an annotate shard: {sorted(unknown)[:3]}")
    proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    prefix = "" if proto in ("file", "local") else f"{proto}://"
    tasks, skipped = [], []
    for shard, (rel, meta) in sorted(metas.items(), key=lambda x: x[1][0]):
        out_rel = _out_rel(rel, cfg.format)
        final = pub.staged(out_rel)
        # finished by an interrupted run with this key (staged: adopted even with --overwrite, the
        # key covers settings and inputs) or published and current
        if pub.adoptable(out_rel) or (not cfg.overwrite and pub.unchanged(out_rel, fp)):
            pub.add(out_rel, fp) if pub.adoptable(out_rel) else pub.keep(out_rel)
            skipped.append(f"{out_root}/{out_rel}")
            continue
        d = selected.get(shard) or {"rows": np.zeros(0, np.int64), "ids": [], "lengths": np.zeros(0, np.int64),
                                    "counts": np.zeros(0, np.int64)}
        tasks.append(ShardTask({k: v for k, v in meta.items() if k != "_attr_size"}, prefix + final, cfg.format,
                           d["rows"], d["ids"], d["lengths"], d["counts"], d.get("starts"), d.get("ends"),
                           redact.sources(rel) if redact.columns else None, redact.labels))
    if tasks:
        pub.claim()  # refuses to discard a killed run's work of other settings (unless --overwrite)
    held = [cfg.directory, cfg.output] + [t.meta.get("source_shard", {}).get("path") or "" for t in tasks]
    workers = pool_workers("select", cfg.workers, max(1, min(cfg.workers or default_workers(), len(tasks) or 1)),
                           held, cfg.executor)  # memory:// cannot be seen by worker processes
    progress = Progress("select", sum(len(t.rows) for t in tasks), enabled=cfg.progress)
    written, records, chars = [], 0, 0
    redacted = dict.fromkeys(redact.labels, 0)
    try:
        for task, (final, n, c, r) in _mapper(cfg)(write_shard, tasks, workers=workers):
            for label, k in r.items():
                redacted[label] = redacted.get(label, 0) + k
            out_rel = final[len(prefix + pub.staging) + 1:]
            pub.add(out_rel, fp)
            written.append(f"{out_root}/{out_rel}")
            records += n
            chars += c
            progress.advance(n, len(task.rows), shard=out_rel)
    finally:
        progress.close()
    total_selected = sum(int(d["counts"].sum()) for d in selected.values())
    result = SelectResult(cfg.output, total_selected, chars, pool, written, skipped, time.perf_counter() - t0,
                          dsir_summary, redacted)
    pub.commit_summary(head | {
        "status": "done", "attribute_sets": used, "dsir": dsir_summary,
        "counts": {"pool": pool, "selected": total_selected,
                   "distinct": sum(len(d["rows"]) for d in selected.values()),
                   "characters_written_this_run": chars, "shards": len(metas), "shards_skipped": len(skipped),
                   **({"redacted_this_run": redacted} if redact.names else {})}},
        fp, name=SUMMARY, style=SELECTION_SUMMARY)
    return result


def published_inputs(directory: str) -> dict[str, str]:
    """The published contents of the annotate folder and of every attribute set in it (their
    manifest hashes): a selection made before any of them changed is not current."""
    from textsieve.io.attributes import attribute_set_dir, attribute_sets
    from textsieve.io.publish import content_key

    fs, root = fsspec.core.url_to_fs(directory)
    out = {"": content_key(fs, root)}
    for name in attribute_sets(directory):
        out[name] = content_key(fs, fsspec.core.url_to_fs(attribute_set_dir(directory, name))[1])
    return out


def check_selection_apart(cfg: SelectConfig, metas: dict[str, tuple[str, dict]]) -> None:
    """The selection must not be written into the attribute folder or among the documents it
    copies from (it would replace them, or be skipped as already done)."""
    from textsieve.io.locations import source_locations
    from textsieve.io.overlap import check_apart

    sources = [m["source_shard"]["path"] for _, m in metas.values()]
    check_apart("select", str(cfg.output), [cfg.directory, *source_locations(cfg.directory), *sources])



def _pipeline_run(c: SelectConfig) -> Outcome:
    r = run_select(c)
    return Outcome({"selected": r.documents, "pool": r.pool, "shards_written": len(r.shards_written),
                    "shards_skipped": len(r.shards_skipped)})


def _complete(layout: Layout, name: str, c: SelectConfig) -> bool:
    fs, rels = layout.annotated_rels()
    manifest = read_manifest(fs, fsspec.core.url_to_fs(layout.selected)[1].rstrip("/"))
    if manifest is None or SUMMARY not in manifest.files:
        return False
    if c.shards is not None:  # training shards: published as one unit with selection.json beside them
        return True
    fmt = layout.data["select"]["format"]
    return all(f"{r[:-len('.parquet')]}.{fmt}" in manifest.files for r in rels)


def _resolve(section: dict[str, Any], base: Path) -> None:
    section["recipe"] = recipe_path(section.get("recipe"), base)


def _check_pipeline(data: Mapping[str, Any], errors: list[str]) -> None:
    sel = data["select"]
    if sel is None:
        return
    if sel.get("recipe") is None and sel.get("dsir") is None:
        errors.append("select: give 'recipe' (filter), 'dsir' (resample) or both (DSIR then draws from the "
                      "recipe's survivors)")
    elif sel.get("dsir") is not None and (sel.get("k") is None) == (sel.get("tokens") is None):
        errors.append("select: with 'dsir', give exactly one of 'k' (documents) or 'tokens'")


def _finish(kw: dict[str, Any], base: Path, where: str) -> None:
    kw["recipe"] = recipe_value(kw["recipe"], base, f"{where}.recipe")
    if kw["dsir"] is not None:
        kw["dsir"] = parse_dsir_targets(kw["dsir"], f"{where}.dsir")


def _estimate(c: SelectConfig, e: Corpus) -> StagePlan:
    recipe = c.recipe if isinstance(c.recipe, Recipe) else None
    parts = [f"recipe {recipe.name} ({len(recipe.rules)} rules)"] if recipe else []
    if isinstance(c.dsir, list) and c.dsir:  # (name, weight) pairs: the pipeline's `finish` resolved them
        parts.append(f"DSIR resample toward {', '.join(n for n, _ in c.dsir)}"
                     + (" over its survivors" if recipe else ""))
    return StagePlan("select", f"{', then '.join(parts)} -> {e.layout.selected}", 100 * e.docs + 200_000_000,
                     e.docs * e.mean_chars, "disk: at most every document's text once")

STAGE = Stage("select", SelectConfig, "select", _pipeline_run, order=130, call=run_select, preview=preview_select,
              cli_spec=CLI,
              placed=lambda layout: {"directory": layout.attrs, "output": layout.selected},
              derived={"directory": "always the annotate folder OUT/attrs", "output": "always OUT/selected",
                       "progress": PROGRESS_REASON},
              types={"recipe": str | dict | None, "dsir": str | list | dict | None},
              complete=_complete, upstream=every_stage_before, resolve=_resolve, check=_check_pipeline, finish=_finish,
              estimate=_estimate)


__all__ = ["STAGE", "FORMATS", "SelectConfig", "SelectError", "SelectResult", "preview_select", "run_select",
           "selection_sql", "lit"]
