"""Write a selection: the chosen documents (optionally with lines cut) as JSONL.gz or Parquet.

What is selected comes either from a recipe (one DuckDB query over the attributes, see
`compile`) or from DSIR resampling (`dsir.resample`; a document drawn n times is written n
times). Only then is text read: each source shard is re-opened with the reader options stored
in its attribute shard's footer (`attributes.source_documents`), and the selected rows are
streamed out in row order. Each record keeps `id`, `shard` (source shard rel name) and `row`,
so it can be joined back to every attribute set.

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

import gzip
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa

from textsieve.io.atomic import AtomicParquetWriter, atomic_open
from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents
from textsieve.select.compile import END, Compiled, compile_recipe, element_field, lit, read_schema
from textsieve.select.funnel import connect
from textsieve.select.recipe import Recipe
from textsieve.select.dsir_defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE

FORMATS = ("jsonl.gz", "parquet")
SUMMARY = "selection.json"
OUT_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("shard", pa.string()), ("row", pa.int64()),
                        ("url", pa.string()), ("lang", pa.string()), ("meta", pa.string())])


class SelectError(ValueError):
    """A selection that cannot be made as asked (bad options, stale output, changed sources)."""


@dataclass
class SelectConfig:
    """What `textsieve select` fills. Exactly one of `recipe` and `dsir` (targets) is set."""

    directory: str
    output: str
    recipe: Recipe | None = None
    dsir: list[tuple[str, float]] | None = None
    k: int | None = None
    tokens: int | None = None
    replace: bool = False
    seed: int = 0
    temperature: float = DEFAULT_TEMPERATURE
    min_tokens: int = DEFAULT_MIN_TOKENS
    prior_ngrams: float = DEFAULT_PRIOR_NGRAMS
    dsir_weight: str = "normalized"
    format: str = "jsonl.gz"
    overwrite: bool = False
    workers: int | None = None
    threads: int | None = None
    progress: bool = True
    executor: str = "local"  # "ray": write the output shards as Ray tasks (same bytes)
    address: str | None = None  # Ray cluster to join (default: start a local Ray)


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


@dataclass
class _Task:
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


def selection_sql(c: Compiled) -> str:
    """Selected documents in (shard, row) order, with the kept line spans when there are line rules."""
    conds = [f"coalesce({s}, FALSE)" for s in c.doc_rules.values()] or ["TRUE"]
    cols = ["a.shard AS shard", 'a."row" AS "row"', "a.id AS id", f"{c.schema.length_sql} AS _len"]
    if not c.line_rules:
        return f"SELECT {', '.join(cols)} FROM {c.from_sql()} WHERE {' AND '.join(conds)} ORDER BY 1, 2"
    cols += [f"[{element_field(c.line_anchor, 'start')} for _x in {c.line_source}] AS _st",
             f"[{element_field(c.line_anchor, END)} for _x in {c.line_source}] AS _en",
             f"{c.line_mask_sql(list(c.line_rules))} AS _keep"]
    inner = f"SELECT {', '.join(cols)} FROM {c.from_sql()} WHERE {' AND '.join(conds)}"
    return (f"SELECT shard, \"row\", id, _len, list_where(_st, _keep) AS starts, list_where(_en, _keep) AS ends "
            f"FROM ({inner}) WHERE list_contains(_keep, TRUE) ORDER BY 1, 2")


def _shard_metas(directory: str) -> tuple[fsspec.AbstractFileSystem, str, dict[str, tuple[str, dict]]]:
    """Source shard rel name -> (attribute shard rel, footer meta) for every annotate shard."""
    fs, files = attribute_shards(directory)
    root = fsspec.core.url_to_fs(directory)[1].rstrip("/")
    out = {}
    for path in files:
        meta = read_shard_meta(fs, path)
        if "source_shard" not in meta:
            raise SelectError(f"{path}: no source information in its footer; was it written by `textsieve annotate`?")
        meta["_attr_size"] = fs.size(path)
        out[meta.get("shard") or meta["source_shard"]["rel"]] = (path[len(root) + 1:], meta)
    return fs, root, out


def _out_rel(attr_rel: str, fmt: str) -> str:
    stem = attr_rel[: -len(".parquet")] if attr_rel.endswith(".parquet") else attr_rel
    return f"{stem}.{fmt}"


def _cut(text: str, starts: np.ndarray, ends: np.ndarray) -> str:
    return "".join(text[s:e] for s, e in zip(starts.tolist(), ends.tolist()))


def write_shard(task: _Task) -> tuple[str, int, int]:
    """Stream the source shard, write the selected rows. Returns (final path, records, characters)."""
    fs, _ = fsspec.core.url_to_fs(task.final)
    want = {int(r): i for i, r in enumerate(task.rows.tolist())}
    text_field = task.meta.get("read_options", {}).get("text_field", "text")
    records, chars = 0, 0
    found: set[int] = set()
    batch: list[dict[str, Any]] = []

    def docs():
        if not want:
            return
        last = int(task.rows[-1])
        for doc in source_documents(task.meta, on_error="skip"):
            if doc.row > last:
                break
            i = want.get(doc.row)
            if i is None:
                continue
            found.add(doc.row)
            if doc.id != task.ids[i] or (task.lengths[i] >= 0 and len(doc.text) != task.lengths[i]):
                raise SelectError(f"{task.meta['source']}: row {doc.row} is {doc.id!r} with {len(doc.text)} "
                                  f"characters, but the attributes say {task.ids[i]!r} with {task.lengths[i]}; "
                                  f"the source changed since `textsieve annotate`, re-annotate it")
            text = doc.text if task.starts is None else _cut(doc.text, task.starts[i], task.ends[i])
            rec = {"id": doc.id, "text": text, "shard": task.meta.get("shard"), "row": doc.row}
            if doc.url is not None:
                rec["url"] = doc.url
            if doc.lang is not None:
                rec["lang"] = doc.lang
            if doc.meta:  # the source record's other fields, kept in their original shape
                extra = {k: v for k, v in doc.meta.items() if k not in rec and k != text_field}
                rec = rec | extra if task.fmt == "jsonl.gz" else rec | {"meta": extra}
            for _ in range(int(task.counts[i])):
                yield rec

    if task.fmt == "parquet":
        writer = AtomicParquetWriter(fs, task.final, OUT_SCHEMA)
        try:
            for rec in docs():
                batch.append(rec)
                records += 1
                chars += len(rec["text"])
                if len(batch) >= 2000:
                    writer.write(_table(batch))
                    batch = []
            if batch:
                writer.write(_table(batch))
        except BaseException as exc:
            writer.abort(exc)
            raise
        writer.close()
    else:
        with atomic_open(fs, task.final) as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
            for rec in docs():
                gz.write(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
                records += 1
                chars += len(rec["text"])
    if len(found) != len(want):
        missing = sorted(set(want) - found)[:3]
        raise SelectError(f"{task.meta['source']}: only {len(found)} of {len(want)} selected rows were found "
                          f"(e.g. rows {missing}); the source changed since `textsieve annotate`")
    return task.final, records, chars


def _table(batch: list[dict[str, Any]]) -> pa.Table:
    cols = {k: [r.get(k) for r in batch] for k in ("id", "text", "shard", "row", "url", "lang")}
    cols["meta"] = [json.dumps(r["meta"], ensure_ascii=False) if "meta" in r else None for r in batch]
    return pa.table(cols, schema=OUT_SCHEMA)


def _fingerprint(cfg: SelectConfig, inputs: list[dict]) -> str:
    what = {"recipe": cfg.recipe.fingerprint() if cfg.recipe else None, "format": cfg.format,
            "dsir": [cfg.dsir, cfg.k, cfg.tokens, cfg.replace, cfg.seed, cfg.temperature, cfg.dsir_weight,
                     cfg.min_tokens, cfg.prior_ngrams]
            if cfg.dsir else None, "inputs": inputs}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _write_summary(fs, path: str, doc: dict) -> None:
    with atomic_open(fs, path, "wb") as fh:
        fh.write(json.dumps(doc, indent=2, default=str).encode("utf-8"))


def _selected(cfg: SelectConfig) -> tuple[dict[str, dict], dict | None, list[str]]:
    """shard -> columns of the selected rows; DSIR summary; attribute sets used."""
    if cfg.recipe is not None:
        compiled = compile_recipe(cfg.recipe, read_schema(cfg.directory))
        con = connect(cfg.threads)
        rel = con.sql(selection_sql(compiled))
        table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
        used = sorted(compiled.schema.sets[a] for a in compiled.relations - {"a"})
        shards = table.column("shard").to_pylist()
        out: dict[str, dict] = {}
        bounds = [0] + [i for i in range(1, len(shards)) if shards[i] != shards[i - 1]] + [len(shards)]
        has_lines = "starts" in table.column_names
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            part = table.slice(lo, hi - lo)
            d = {"rows": part.column("row").to_numpy().astype(np.int64), "ids": part.column("id").to_pylist(),
                 "lengths": part.column("_len").to_numpy().astype(np.int64),
                 "counts": np.ones(hi - lo, np.int64)}
            if has_lines:
                d["starts"] = [np.asarray(x, np.int64) for x in part.column("starts").to_pylist()]
                d["ends"] = [np.asarray(x, np.int64) for x in part.column("ends").to_pylist()]
            out[shards[lo]] = d
        return out, None, used
    from textsieve.select.dsir import resample

    res = resample(cfg.directory, cfg.dsir, k=cfg.k, tokens=cfg.tokens, replace=cfg.replace, seed=cfg.seed,
                   temperature=cfg.temperature, weight=cfg.dsir_weight, min_tokens=cfg.min_tokens,
                   prior_ngrams=cfg.prior_ngrams)
    out = {}
    order = np.lexsort((res.row.astype(np.int64), res.shard.astype(str)))
    for s in dict.fromkeys(res.shard[order].tolist()):
        idx = order[res.shard[order] == s]
        ids = res.id[idx].tolist() if len(res.id) == len(res.row) else [None] * len(idx)
        out[s] = {"rows": res.row[idx].astype(np.int64), "ids": ids, "lengths": np.full(len(idx), -1, np.int64),
                  "counts": res.count[idx].astype(np.int64)}
    summary = res.summary() | {"targets": cfg.dsir, "k": cfg.k, "tokens_requested": cfg.tokens, "replace": cfg.replace,
                               "seed": cfg.seed, "temperature": cfg.temperature, "weight": cfg.dsir_weight,
                               "min_tokens": cfg.min_tokens, "prior_ngrams": cfg.prior_ngrams}
    return out, summary, [f"dsir_{n}" for n, _ in cfg.dsir]


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


def run_select(cfg: SelectConfig) -> SelectResult:
    """Materialize a selection into `cfg.output` (see module doc)."""
    from textsieve.exec.local import default_workers, ordered_map
    from textsieve.stages.progress import Progress

    if (cfg.recipe is None) == (cfg.dsir is None):
        raise SelectError("give exactly one of a recipe or DSIR targets (filter with a recipe first by using "
                          "the DSIR weight as a rule, e.g. 'ts_dsir_wiki > -2')")
    if cfg.format not in FORMATS:
        raise SelectError(f"--format must be one of {', '.join(FORMATS)}, not {cfg.format!r}")
    t0 = time.perf_counter()
    fs_in, root, metas = _shard_metas(cfg.directory)
    inputs = [{"attribute_shard": rel, "size": m["_attr_size"], "fingerprint": m.get("fingerprint"),
               "source": m.get("source"), "source_size": m["source_shard"].get("size"), "documents": m.get("documents")}
              for rel, m in sorted(metas.values(), key=lambda x: x[0])]
    fs, out_root = fsspec.core.url_to_fs(cfg.output)
    out_root = out_root.rstrip("/")
    fp = _fingerprint(cfg, inputs)
    summary_path = f"{out_root}/{SUMMARY}"
    old: dict = {}
    if fs.exists(summary_path):
        old = json.loads(fs.cat_file(summary_path))
        if old.get("fingerprint") == fp and old.get("status") == "done" and not cfg.overwrite and all(
                fs.exists(f"{out_root}/{_out_rel(rel, cfg.format)}") for rel, _ in metas.values()):
            c = old["counts"]  # everything is already written: nothing to query
            return SelectResult(cfg.output, c["selected"], 0, c["pool"], [], sorted(
                f"{out_root}/{_out_rel(rel, cfg.format)}" for rel, _ in metas.values()), 0.0, old.get("dsir"))
        if old.get("fingerprint") != fp:
            if not cfg.overwrite:
                raise SelectError(f"{cfg.output} holds a selection made with other settings or inputs "
                                  f"(fingerprint {old.get('fingerprint')} != {fp}); use --overwrite or another folder")
            pass  # every shard below is rewritten (overwrite=True skips nothing)
    fs.makedirs(out_root, exist_ok=True)
    head = {"stage": "select", "status": "running", "fingerprint": fp, "format": cfg.format,
            "recipe": cfg.recipe.to_dict() if cfg.recipe else None, "inputs": inputs}
    _write_summary(fs, summary_path, head)

    selected, dsir_summary, used = _selected(cfg)
    pool = sum(int(m.get("documents") or 0) for _, m in metas.values())
    unknown = set(selected) - set(metas)
    if unknown:
        raise SelectError(f"selected rows name source shards without an annotate shard: {sorted(unknown)[:3]}")
    proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    prefix = "" if proto in ("file", "local") else f"{proto}://"
    tasks, skipped = [], []
    for shard, (rel, meta) in sorted(metas.items(), key=lambda x: x[1][0]):
        final = f"{out_root}/{_out_rel(rel, cfg.format)}"
        if fs.exists(final) and not cfg.overwrite:
            skipped.append(final)
            continue
        d = selected.get(shard) or {"rows": np.zeros(0, np.int64), "ids": [], "lengths": np.zeros(0, np.int64),
                                    "counts": np.zeros(0, np.int64)}
        tasks.append(_Task({k: v for k, v in meta.items() if k != "_attr_size"}, prefix + final, cfg.format,
                           d["rows"], d["ids"], d["lengths"], d["counts"], d.get("starts"), d.get("ends")))
    workers = max(1, min(cfg.workers or default_workers(), len(tasks) or 1))
    progress = Progress("select", sum(len(t.rows) for t in tasks), enabled=cfg.progress)
    written, records, chars = [], 0, 0
    try:
        for task, (final, n, c) in _mapper(cfg)(write_shard, tasks, workers=workers):
            written.append(final)
            records += n
            chars += c
            progress.update(n, progress._bytes + len(task.rows))
    finally:
        progress.close()
    total_selected = sum(int(d["counts"].sum()) for d in selected.values())
    result = SelectResult(cfg.output, total_selected, chars, pool, written, skipped, time.perf_counter() - t0, dsir_summary)
    _write_summary(fs, summary_path, head | {
        "status": "done", "attribute_sets": used, "dsir": dsir_summary,
        "counts": {"pool": pool, "selected": total_selected,
                   "distinct": sum(len(d["rows"]) for d in selected.values()),
                   "characters_written_this_run": chars, "shards": len(metas), "shards_skipped": len(skipped)}})
    return result


__all__ = ["FORMATS", "SelectConfig", "SelectError", "SelectResult", "run_select", "selection_sql", "lit"]
