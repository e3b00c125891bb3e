"""The per-shard work of `mix`, run in worker processes: counting tokens, and scattering the drawn
documents' records into the shuffle's bucket files.

Why a module of its own: both tasks are picklable dataclasses with module-level functions (the
process pool's spawn workers import them by name), and what a worker writes is a pure function of
the task, so the output cannot depend on which worker ran it. A scatter task writes its bucket
files into its own folder and then a `.done` marker, so a re-run after a kill skips the finished
tasks and redoes only the others (their partial folders are cleared first).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from typing import Any

import numpy as np

from textsieve.mixing.shards import payload
from textsieve.mixing.shuffle import Scatter, record_key, shard_hash
from textsieve.mixing.spec import MixError
from textsieve.stages.training.mix_sources import Counter, ShardPool, texts

BATCH = 256  # documents per tokenizer call
_COUNTERS: dict[str | None, Counter] = {}


def counter(spec: str | None) -> Counter:
    """The process's tokenizer (loaded once per worker)."""
    if spec not in _COUNTERS:
        _COUNTERS.clear()
        _COUNTERS[spec] = Counter(spec)
    return _COUNTERS[spec]


@dataclass
class CountTask:
    pool: ShardPool
    tokenizer: str | None


def count_task(task: CountTask) -> np.ndarray:
    """Token counts of every row of the shard, read and encoded."""
    c = counter(task.tokenizer)
    out = np.zeros(len(task.pool.rows), np.int64)
    pos: list[int] = []
    batch: list[str] = []
    for i, text in texts(task.pool):
        pos.append(i)
        batch.append(text)
        if len(batch) >= BATCH:
            out[pos] = c.count(batch)
            pos, batch = [], []
    if batch:
        out[pos] = c.count(batch)
    return out


@dataclass
class ScatterTask:
    index: int  # task number (its folder name)
    source: int  # source index in the mix
    source_name: str
    pool: ShardPool
    counts: np.ndarray  # times each row is written
    seed: int
    fmt: str
    parts: int  # bucket files
    buffer: int  # bytes buffered before a flush
    folder: str  # the task's folder: work/t{index}
    tokenizer: str | None
    dtype: str | None  # bin: numpy dtype name of the token ids
    eos: int | None


def done_marker(folder: str) -> str:
    return folder.rstrip("/") + ".done"


def scatter_task(task: ScatterTask) -> dict[str, Any]:
    """Write the task's records into its bucket files; returns its totals (also in the marker)."""
    marker = done_marker(task.folder)
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as fh:
            return {**json.load(fh), "resumed": True}
    if os.path.exists(task.folder):
        shutil.rmtree(task.folder)
    sp = task.pool
    sc = Scatter(task.folder, task.parts, task.buffer)
    sh = shard_hash(f"{task.source_name}\0{sp.key}")
    assert sp.tokens is not None
    want = task.counts > 0
    records = tokens = 0
    pending: list[tuple[int, str]] = []

    def flush() -> None:
        nonlocal records, tokens
        if not pending:
            return
        ids_list = counter(task.tokenizer).encode([t for _, t in pending]) if task.fmt == "bin" else None
        for j, (i, text) in enumerate(pending):
            n = int(task.counts[i])
            planned = int(sp.tokens[i])  # type: ignore[index]
            row = int(sp.rows[i])
            if ids_list is not None:
                ids = ids_list[j]
                if len(ids) != planned:
                    raise MixError(f"{sp.key}: row {row} has {len(ids)} tokens, but its count says {planned}; the "
                                   "token counts were made with another tokenizer or text (re-run `textsieve tokens`)")
                if task.eos is not None:
                    ids = [*ids, task.eos]
                body = np.asarray(ids, dtype=task.dtype).astype(np.dtype(task.dtype).newbyteorder("<")).tobytes()
                meta = json.dumps({"id": sp.ids[i], "source": task.source_name, "shard": _shard_of(sp), "row": row,
                                   "tokens": planned}, ensure_ascii=False).encode("utf-8")
                rec = payload(planned, body, meta)
            else:
                body = json.dumps({"id": sp.ids[i], "source": task.source_name, "shard": _shard_of(sp), "row": row,
                                   "lang": sp.lang[i] if sp.lang else None, "tokens": planned, "text": text},
                                  ensure_ascii=False).encode("utf-8")
                rec = payload(planned, body)
            for copy in range(n):
                sc.add(record_key(task.seed, task.source, sh, row, copy), task.source, rec)
            records += n
            tokens += n * planned
        pending.clear()

    redacted: dict[str, int] = dict.fromkeys(sp.redact_labels, 0)
    for i, text in texts(sp, want, task.counts, redacted):
        pending.append((i, text))
        if len(pending) >= BATCH:
            flush()
    flush()
    sc.flush()
    out: dict[str, Any] = {"records": records, "tokens": tokens}
    if sp.redact:  # spans replaced in the records written (each copy counted), per label
        out["redacted"] = redacted
    tmp = marker + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    os.replace(tmp, marker)
    return out


def _shard_of(sp: ShardPool) -> str:
    """The `shard` field of a record: annotate's source shard, or the selection's own `shard`."""
    return sp.key


__all__ = ["CountTask", "ScatterTask", "count_task", "counter", "done_marker", "scatter_task"]
