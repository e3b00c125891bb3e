"""Runs datatrove's real 4-stage MinHash dedup; executed by the datatrove virtualenv's python
(``benchmarks/_datatrove_env.py``), never imported by textsieve.

  dedup IN_DIR WORK OUT.json --ngram N --buckets B --rows R
      stage 1 MinhashDedupSignature (1 task), stage 2 MinhashDedupBuckets (B tasks, one per
      bucket), stage 3 MinhashDedupCluster (1 task, save_cluster_id), stage 4 MinhashDedupFilter
      (load_cluster_ids; removed documents go to an exclusion writer so every document is seen).
      All with LocalPipelineExecutor(workers=1), i.e. in this process, one core.
      Writes {"ids": [...], "cluster": [... or -1]} in input order, plus per-stage seconds.
  shingles IN_DIR OUT.npz --ngram N
      datatrove's own shingle hashes of every document (``MinhashDedupSignature.get_shingles``,
      deduplicated): the exact sets its MinHash estimates the Jaccard of (not timed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np


def _docs(in_dir: Path):
    for f in sorted(in_dir.glob("*.jsonl*")):
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)


def dedup(args) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig

    cfg = MinhashConfig(n_grams=args.ngram, num_buckets=args.buckets, hashes_per_bucket=args.rows,
                        hash_config=HashConfig(precision=64, hash_fc="xxhash"))
    work = Path(args.work)
    inp = str(args.in_dir)
    seconds = {}

    def run(name, pipeline, tasks):
        t = time.process_time()
        LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=1, logging_dir=str(work / "logs" / name),
                              skip_completed=False).run()
        seconds[name] = time.process_time() - t

    run("1_signatures", [JsonlReader(inp), MinhashDedupSignature(output_folder=str(work / "sigs"), config=cfg)], 1)
    run("2_buckets", [MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"),
                                          config=cfg)], args.buckets)
    run("3_cluster", [MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"),
                                          config=cfg, save_cluster_id=True)], 1)
    run("4_filter", [JsonlReader(inp),
                     MinhashDedupFilter(input_folder=str(work / "remove"), load_cluster_ids=True,
                                        exclusion_writer=JsonlWriter(str(work / "removed"), compression=None)),
                     JsonlWriter(str(work / "kept"), compression=None)], 1)

    cluster = {}
    for folder in ("kept", "removed"):
        for rec in _docs(work / folder):
            cluster[rec["id"]] = int(rec.get("metadata", {}).get("minhash_cluster_id", -1))
    ids = [rec["id"] for rec in _docs(Path(inp))]
    Path(args.out).write_text(json.dumps({"ids": ids, "cluster": [cluster.get(i, -1) for i in ids],
                                          "stage_cpu_s": seconds}))


def shingles(args) -> None:
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature

    step = MinhashDedupSignature(output_folder=str(Path(args.out).parent / "_unused"),
                                 config=MinhashConfig(n_grams=args.ngram))
    parts, offsets, ids = [], [0], []
    for rec in _docs(Path(args.in_dir)):
        h = np.unique(step.get_shingles(rec["text"]).ravel())
        parts.append(h)
        offsets.append(offsets[-1] + len(h))
        ids.append(rec["id"])
    np.savez(args.out, hashes=np.concatenate(parts) if parts else np.zeros(0, np.uint64),
             offsets=np.array(offsets, dtype=np.int64), ids=np.array(ids))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dedup")
    d.add_argument("in_dir")
    d.add_argument("work")
    d.add_argument("out")
    d.add_argument("--ngram", type=int, default=13)
    d.add_argument("--buckets", type=int, required=True)
    d.add_argument("--rows", type=int, required=True)
    s = sub.add_parser("shingles")
    s.add_argument("in_dir")
    s.add_argument("out")
    s.add_argument("--ngram", type=int, default=13)
    args = ap.parse_args()
    dedup(args) if args.cmd == "dedup" else shingles(args)


if __name__ == "__main__":
    main()
