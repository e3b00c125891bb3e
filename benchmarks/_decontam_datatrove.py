"""Runs datatrove's n-gram decontamination; executed by the datatrove virtualenv's python
(``benchmarks/_datatrove_env.py``), never imported by textsieve.

  python _decontam_datatrove.py BENCH.jsonl DOCS_DIR WORK OUT.json --ngram N

Stage 1, the index: datatrove's own ``NGramsDecontIndexer.compute_hashes(label, query)`` for
every benchmark record (``answer`` as the label, ``question`` as the query), with
``find_query_ngrams`` and ``find_overlap_ngrams`` on, so its n-gram set is the n-grams of
question + answer, the set textsieve indexes for ``--field question --field answer``. The hashes
are written the way ``NGramsDecontIndexer.run`` writes them (``<task>.index.hashes``, uint64).
Why not ``run`` itself: it always loads lighteval's task registry (a hub download), which this
offline benchmark has no use for; ``compute_hashes`` is the whole n-gram logic of the step.
Stage 2, the filter: ``JsonlReader -> NGramsDecontFilter(exclusion_writer=JsonlWriter) ->
JsonlWriter`` with ``LocalPipelineExecutor(workers=1)``, i.e. in this process, one core.
Writes {"flagged": [ids], "index_cpu_s", "filter_cpu_s", "hashes"}.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np


def _records(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", type=Path)
    ap.add_argument("docs", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ngram", type=int, default=13)
    args = ap.parse_args()

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.decont.n_grams import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import create_hash_func
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    cfg = NGramsDecontConfig(n_grams=args.ngram, find_query_ngrams=True, find_overlap_ngrams=True)
    t = time.process_time()
    indexer = object.__new__(NGramsDecontIndexer)  # skips the lighteval import check of PipelineStep.__new__
    indexer.config = cfg
    indexer.tokenizer = load_word_tokenizer("en")
    indexer.hash_func = create_hash_func(cfg.hash_config)
    hashes: set[int] = set()
    for rec in _records(args.bench):
        hashes.update(indexer.compute_hashes(rec["answer"], rec["question"]))
    index = args.work / "index"
    index.mkdir(parents=True, exist_ok=True)
    np.array(sorted(hashes), dtype=cfg.hash_config.np_descr).tofile(index / "bench.index.hashes")
    index_cpu = time.process_time() - t

    t = time.process_time()
    LocalPipelineExecutor(
        pipeline=[JsonlReader(str(args.docs)),
                  NGramsDecontFilter(index_folder=str(index), config=cfg,
                                     exclusion_writer=JsonlWriter(str(args.work / "removed"), compression=None)),
                  JsonlWriter(str(args.work / "kept"), compression=None)],
        tasks=1, workers=1, logging_dir=str(args.work / "logs"), skip_completed=False).run()
    filter_cpu = time.process_time() - t
    flagged = [rec["id"] for f in sorted((args.work / "removed").glob("*.jsonl")) for rec in _records(f)]
    args.out.write_text(json.dumps({"flagged": flagged, "index_cpu_s": index_cpu, "filter_cpu_s": filter_cpu,
                                    "hashes": len(hashes)}))


if __name__ == "__main__":
    main()
