"""The writing half of `mix`: scatter the drawn records into bucket files (in workers), then
gather the buckets in key order into fixed-size shards.

Why a module of its own: this is the part with the memory bound and the resume rule, kept apart
from the planning in `stages.mix`. Memory (`--memory` M): each scatter worker buffers M/4 split
between the workers, the gather holds one bucket of at most M/2 (a larger one is split on disk,
`mixing.shuffle.SortedBuckets`). The bucket count K is estimated from the planned tokens so that
a bucket is about M/4; the output does not depend on K, M or the worker count.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from textsieve.exec.budget import memory_plan
from textsieve.mixing.shards import RollingShards, token_dtype
from textsieve.mixing.shuffle import KEY_SPACE, SortedBuckets, bucket_range
from textsieve.mixing.spec import MixSpec, parse_shard_size
from textsieve.stages.training.mix_sources import SourcePool

WORK = ".work"  # inside the staging folder: hidden, never published
MAX_PARTS = 1024
BYTES_PER_TOKEN = 6  # estimate of a JSON record's bytes per token (text + fields), for the bucket count


def write_shards(cfg: Any, spec: MixSpec, pools: list[SourcePool], draws: list[list[np.ndarray]], staging: str,
                 tok: Any) -> dict[str, Any]:
    """Write the shards of the draw into `staging`; returns {shards, max_loaded, splits, resumed, tasks,
    redacted, dtype, eos} (`resumed`: scatter tasks a killed run had finished; `redacted`: per source
    with `redact:`, the spans replaced per label in the records written)."""
    from textsieve.exec.local import default_workers, ordered_map
    from textsieve.exec.progress import Progress
    from textsieve.io.locations import pool_workers
    from textsieve.stages.training.mix_worker import ScatterTask, scatter_task

    memory = memory_plan("mix", cfg.memory, 0, floor=1).total  # split below: M/4 over the scatter workers
    work = os.path.join(staging, WORK)
    os.makedirs(work, exist_ok=True)
    dtype = token_dtype(tok.vocab_size) if spec.format == "bin" else None
    eos = tok.eos_id if spec.format == "bin" else None
    planned = 0
    for pool, counts in zip(pools, draws):
        for sp, c in zip(pool.shards, counts):
            assert sp.tokens is not None
            planned += int((c * (sp.tokens + 1)).sum()) * (dtype.itemsize if dtype is not None else BYTES_PER_TOKEN)
            planned += int(c.sum()) * 64
    parts = max(1, min(MAX_PARTS, -(-planned * 4 // memory)))
    tasks: list[ScatterTask] = []
    for i, (pool, counts) in enumerate(zip(pools, draws)):
        for sp, c in zip(pool.shards, counts):
            if not c.any():
                continue
            n = len(tasks)
            tasks.append(ScatterTask(n, i, pool.spec.name, sp, c, spec.seed, spec.format, parts, 0,
                                     os.path.join(work, f"t{n:05d}"), spec.tokenizer,
                                     dtype.name if dtype is not None else None, eos))
    held = [cfg.output] + [p.spec.attributes or p.spec.selection or "" for p in pools]
    workers = pool_workers("mix", cfg.workers, max(1, min(cfg.workers or default_workers(), len(tasks) or 1)), held)
    for t in tasks:
        t.buffer = max(1, memory // (4 * workers))
    progress = Progress("mix", len(tasks), enabled=cfg.progress, unit="records")
    resumed = 0
    redacted: dict[str, dict[str, int]] = {}  # source name -> spans replaced per label (redact: sources)
    try:
        for task, res in ordered_map(scatter_task, tasks, workers=workers):
            resumed += bool(res.get("resumed"))
            if "redacted" in res:
                by = redacted.setdefault(task.source_name, {})
                for label, k in res["redacted"].items():
                    by[label] = by.get(label, 0) + int(k)
            progress.advance(int(res["records"]), 1)
    finally:
        progress.close()
    size, unit = parse_shard_size(spec.shard_size)
    writer = RollingShards(staging, spec.format, size, unit, [p.spec.name for p in pools], dtype)
    gather = SortedBuckets(memory // 2)
    spill = os.path.join(work, "spill")
    folders = [t.folder for t in tasks]
    for b in range(parts):
        lo, hi = bucket_range(0, KEY_SPACE, parts, b)
        paths = [os.path.join(f, f"b{b:05d}") for f in folders]
        for _key, source, payload in gather.records(paths, lo, hi, spill):
            writer.add(source, payload)
    shards = writer.close()
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return {"shards": shards, "max_loaded": gather.max_loaded, "splits": gather.splits, "resumed": resumed,
            "tasks": len(tasks), "redacted": redacted,
            "dtype": dtype.name if dtype is not None else None, "eos": eos}


__all__ = ["write_shards"]
