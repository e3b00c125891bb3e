"""The scaffold of a per-document attribute stage: texts of an annotate folder in, one attribute
shard per annotate shard out (`DIR/_NAME/<rel>.parquet`, rows in annotate's order).

Why a scaffold: `tokens`, `pii` and `decontaminate` (and any later stage of that shape) each
compute a few columns from every document's text, shard by shard, independently. What makes
such a stage trustworthy is the same for all of them and lives here once: texts re-read from
the annotate folder's sources (never copied), one shard per worker task, results written in
document order (the output does not depend on the worker count), the set published as one unit
(`io.publish`), a re-run keeping the shards whose inputs and settings are unchanged, a killed
run's finished shards adopted, a set made with other result-changing settings refused unless
`overwrite`, and a `summary.json` with the totals read back from the published files.

A stage describes its work with a `DocSetJob`: module-level functions `setup(params) -> state`
(once per process: load a tokenizer, build an index) and `compute(state, texts) -> columns`
(one batch), the picklable `params`, the `info` that identifies the result (settings and model
fingerprints; every key of it is part of the fingerprint), which of its keys a user changes
(`result_keys`, named in the refusal) and the output `schema`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve._version import __version__
from textsieve.display import result_display
from textsieve.errors import TextsieveError
from textsieve.exec.progress import Progress
from textsieve.io.arrow_arrays import numeric_array, string_array
from textsieve.io.attributes import attribute_shards, open_set, set_place, shard_rel
from textsieve.io.locations import pool_workers, source_locations
from textsieve.io.parquet_read import read_table
from textsieve.io.publish import ANNOTATE_JSON, Publication, content_key, holds, settings_diff
from textsieve.stages.dedup.exact import DocSource
from textsieve.stages.dedup.exact_out import write_tables

BASE = [("id", pa.string()), ("shard", pa.string()), ("row", pa.int64())]
#: characters of text per compute batch (bounds a worker's memory whatever the documents' sizes)
BATCH_CHARS = 8_000_000


class DocSetError(TextsieveError, ValueError):
    """An input or setting a per-document attribute stage cannot work with."""


@dataclass
class DocSetJob:
    """What a per-document attribute stage computes (see the module doc); sent to workers."""

    stage: str  # the command's name, for messages ("tokens")
    set_name: str  # the set folder is DIR/_<set_name>
    setup: Callable[[Any], Any]
    compute: Callable[..., dict[str, pa.Array]]  # (state, texts) or, with `positions`, (state, texts, at)
    params: Any
    info: dict[str, Any]
    result_keys: tuple[str, ...]
    schema: pa.Schema  # the computed columns (id, shard, row come first)
    totals: tuple[str, ...] = ()  # numeric columns whose sums go into summary.json
    batch_docs: int = 1000
    # True: compute(state, texts, (the shard's rel in the sets, position of the batch's first row,
    # its rel in the annotate folder)), for a stage that also reads other attribute columns of
    # these rows (`learn apply`)
    positions: bool = False
    # True: refused only when every result key differs. For a model named by (path, fingerprint),
    # the same file moved or a file changed in place is that model re-run, not another one
    refuse_if_all_differ: bool = False
    # info keys that say where a result came from without changing it (a model's path beside its
    # fingerprint): part of the set's key, so its summary says where the model is now, but not of a
    # shard's fingerprint, so the same model moved keeps every shard instead of recomputing them
    shard_key_ignores: tuple[str, ...] = ()


@result_display
@dataclass
class DocSetResult:
    output: str
    documents: int = 0
    shards: int = 0
    computed: int = 0  # shards computed by this run (the others were kept or adopted)
    computed_documents: int = 0  # the documents of those shards (a rate's numerator on a partial re-run)
    skipped: bool = False  # nothing to do: published from these inputs with these settings
    seconds: float = 0.0
    summary: dict = field(default_factory=dict)


def output_schema(job: DocSetJob) -> pa.Schema:
    """The schema of the set's shards (`run --dry-run` checks recipes against it)."""
    return pa.schema([*BASE, *job.schema])


def annotate_sources(directory: str, stage: str, why: str = "its shards point at the texts",
                     error: type[TextsieveError] = DocSetError) -> list[DocSource]:
    """The annotate folder's shards in corpus order, each able to re-read its texts; `error`
    (with `why` the stage needs annotate's output) when `directory` is not one."""
    fs, root = fsspec.core.url_to_fs(directory)
    root = root.rstrip("/")
    if not holds(fs, root, ANNOTATE_JSON):  # an interrupted annotate publish is finished before looking
        raise error(f"{stage}: {directory} is not an annotate output folder (no annotate.json); run "
                    f"`textsieve annotate` first: {why}")
    sfs, paths = attribute_shards(directory)
    out = []
    for p in paths:
        with sfs.open(p, "rb") as fh:
            n = pq.ParquetFile(fh).metadata.num_rows
        out.append(DocSource(shard_rel(root, p), n, annotate_path=p, fs=sfs, annotate_rel=p[len(root) + 1:]))
    return out


_STATE: dict[str, Any] = {}  # per process: the job's loaded state, by its settings key


def _state(job: DocSetJob, key: str) -> Any:
    if key not in _STATE:
        _STATE.clear()
        _STATE[key] = job.setup(job.params)
    return _STATE[key]


def _tables(job: DocSetJob, key: str, src: DocSource) -> Iterator[pa.Table]:
    """The shard's output, one batch of documents at a time (an empty table for an empty shard)."""
    state = _state(job, key)
    schema = output_schema(job)
    ids: list[str] = []
    shards: list[str] = []
    rows: list[int] = []
    texts: list[str] = []
    chars = 0
    wrote = False
    start = 0

    def table() -> pa.Table:
        at = (src.rel, start, src.annotate_rel or src.rel)  # set rel, first row, annotate's rel of the shard
        cols = job.compute(state, texts, at) if job.positions else job.compute(state, texts)
        arrays = [string_array(ids), string_array(shards), numeric_array(rows, pa.int64())]  # (no pandas: from buffers)
        arrays += [cols[f.name] for f in job.schema]
        return pa.Table.from_arrays(arrays, schema=schema)

    for doc_id, shard, row, text in src.docs():
        ids.append(doc_id)
        shards.append(shard)
        rows.append(row)
        texts.append(text)
        chars += len(text)
        if len(texts) >= job.batch_docs or chars >= BATCH_CHARS:
            yield table()
            wrote = True
            start += len(texts)
            for c in (ids, shards, rows, texts):
                c.clear()
            chars = 0
    if texts or not wrote:
        yield table()


def _compute_shard(task: tuple[DocSetJob, str, DocSource, fsspec.AbstractFileSystem, str, dict]) -> tuple[str, int]:
    """One shard, in a worker: its output written under the staging folder."""
    job, key, src, fs, staging, meta = task
    write_tables(staging, fs, src.rel, _tables(job, key, src), meta)
    return src.rel, src.size


def _settings_key(job: DocSetJob, leave_out: tuple[str, ...] = ()) -> str:
    info = {k: v for k, v in job.info.items() if k not in leave_out}
    return hashlib.sha256(json.dumps(info, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _totals(fs: fsspec.AbstractFileSystem, path: str, columns: tuple[str, ...]) -> dict[str, Any]:
    import pyarrow.compute as pc

    with fs.open(path, "rb") as fh:
        t = read_table(fh, columns=list(columns) or ["row"])
    out: dict[str, Any] = {"n_docs": t.num_rows}
    for c in columns:
        v = pc.sum(t.column(c)).as_py()
        out[c] = v if v is not None else 0
    return out


def run_doc_set(directory: str, job: DocSetJob, *, workers: int | None = None, progress: bool = False,
                overwrite: bool = False, executor: str = "local", address: str | None = None) -> DocSetResult:
    """Compute (or keep) the set's shard of every annotate shard and publish the set."""
    start = time.perf_counter()
    sources = annotate_sources(directory, job.stage)
    set_dir, fs, set_root = set_place(directory, job.set_name)
    info: dict[str, Any] = {"stage": job.stage, "version": __version__, **job.info, "set": job.set_name,
                            "columns": [f.name for f in job.schema]}
    diff = [] if overwrite else settings_diff(fs, set_root, info, list(job.result_keys))
    if job.refuse_if_all_differ and len(diff) < len(job.result_keys):
        diff = []
    if diff:
        raise DocSetError(f"{job.stage}: {set_root} holds a result made with other settings: {', '.join(diff)}; "
                          "re-run with those settings to keep it, or pass --overwrite (overwrite=True) to replace it")
    settings = _settings_key(job)
    afs, aroot = fsspec.core.url_to_fs(directory)
    aroot = aroot.rstrip("/")
    shard_settings = _settings_key(job, job.shard_key_ignores)
    shard_fp = {s.rel: hashlib.sha256(f"{shard_settings}:{content_key(afs, aroot, [s.annotate_rel])}".encode()
                                      ).hexdigest()[:16] for s in sources}
    key = hashlib.sha256(json.dumps([settings, sorted(shard_fp.items())]).encode()).hexdigest()[:16]
    pub = open_set(fs, set_root, job.set_name, key, built_from=content_key(afs, aroot))
    result = DocSetResult(output=set_dir, shards=len(sources))
    done = None if overwrite else pub.up_to_date(shard_fp)
    if done is not None:
        result.summary, result.skipped = done, True
    else:
        _compute(job, settings, sources, shard_fp, pub, info, overwrite, workers, progress, directory, result,
                 executor, address)
    result.documents = int(result.summary.get("n_docs", 0))
    result.seconds = time.perf_counter() - start
    return result


def _compute(job: DocSetJob, settings: str, sources: list[DocSource], shard_fp: dict[str, str], pub: Publication,
             info: dict, overwrite: bool, workers: int | None, progress: bool, directory: str,
             result: DocSetResult, executor: str = "local", address: str | None = None) -> None:
    from textsieve.exec.local import default_workers, ordered_map

    if executor not in ("local", "ray"):
        raise DocSetError(f"{job.stage}: executor must be 'local' or 'ray', not {executor!r}")
    kept = {s.rel for s in sources if not overwrite and pub.unchanged(s.rel, shard_fp[s.rel])}
    todo = [s for s in sources if s.rel not in kept and (overwrite or not pub.adoptable(s.rel))]
    if executor == "ray":  # one Ray task per shard; the cluster's CPUs by default
        from textsieve.exec.ray_exec import cluster_cpus

        planned = min(workers or cluster_cpus(address), max(1, len(todo)))
    else:
        planned = min(workers or default_workers(), max(1, len(todo)))
    planned = pool_workers(job.stage, workers, planned, [directory, *source_locations(directory)], executor)
    n_docs = sum(s.size for s in todo)
    if progress:
        print(f"{job.stage}: {sum(s.size for s in sources):,} docs in {len(sources)} shard(s); {len(todo)} to "
              f"compute, {len(kept)} unchanged, {len(sources) - len(todo) - len(kept)} finished by an earlier run; "
              f"{planned} worker(s)", file=sys.stderr)
    meta = dict(info)
    bar = Progress(job.stage, n_docs, enabled=progress)
    try:
        pub.claim()
        tasks = [(job, settings, s, pub.fs, pub.staging, meta) for s in todo]
        if executor == "ray":
            from textsieve.exec.ray_exec import ray_ordered_map

            results = ray_ordered_map(_compute_shard, tasks, workers=planned, address=address)
        else:
            results = ordered_map(_compute_shard, tasks, workers=planned)
        for _, (rel, n) in results:
            bar.advance(n, n, shard=rel)
    finally:
        bar.close()
        _STATE.clear()  # in-process runs: release the job's state (memory-mapped indexes) now, not at exit
    result.computed = len(todo)
    result.computed_documents = n_docs
    totals: dict[str, Any] = {"n_docs": 0, **dict.fromkeys(job.totals, 0)}
    for s in sources:
        if s.rel in kept:
            pub.keep(s.rel)
            counts = _totals(pub.fs, f"{pub.root}/{s.rel}", job.totals)
        else:
            pub.add(s.rel, shard_fp[s.rel])
            counts = _totals(pub.fs, pub.staged(s.rel), job.totals)
        for k, v in counts.items():
            totals[k] += v
    summary: dict[str, Any] = {**info, "n_shards": len(sources), **totals}
    pub.commit_summary(summary, pub.key)
    result.summary = summary
