"""datatrove's exact-substring stages, run by `dedup_substring.py` in datatrove's own venv
(`_datatrove_env.py`), one stage per process so each is measured apart.

    python _datatrove_es.py stage1 DOCS ES TOKENIZER   # JsonlReader -> ESDatasetToSequence, a task per shard
    python _datatrove_es.py stage2 ES TASKS            # ESMergeSequences -> ES/dataset.big_sequence
    python _datatrove_es.py stage3 DOCS ES TOKENIZER OUT  # JsonlReader -> ESRangeRemover -> JsonlWriter

Between stages 2 and 3 the caller runs Google's `deduplicate-text-datasets` (`make`, `self-similar`,
`collect`) and writes ES/dataset.bytearange, as datatrove's example says. Every stage runs with
LocalPipelineExecutor(workers=1): one core, as textsieve's `--workers 1` beside it. Stage 3 keeps
every document (min_doc_words=0) so the comparison is about the spans removed, not about a length
filter applied after.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup.exact_substrings import ESDatasetToSequence, ESMergeSequences, ESRangeRemover
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers.jsonl import JsonlWriter

    stage = argv[0]
    if stage == "stage1":
        docs, es, tok = argv[1:4]
        tasks = len(list(Path(docs).glob("*.jsonl.gz")))
        pipeline = [JsonlReader(docs), ESDatasetToSequence(output_folder=es, tokenizer_name_or_path=tok)]
        LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=1,
                              logging_dir=str(Path(es).parent / "logs-1")).run()
    elif stage == "stage2":
        es, tasks = argv[1], int(argv[2])
        LocalPipelineExecutor(pipeline=[ESMergeSequences(data_folder=es, tasks_stage_1=tasks)], tasks=1, workers=1,
                              logging_dir=str(Path(es).parent / "logs-2")).run()
    elif stage == "stage3":
        docs, es, tok, out = argv[1:5]
        tasks = len(list(Path(docs).glob("*.jsonl.gz")))
        pipeline = [JsonlReader(docs), ESRangeRemover(sequence_folder=es, tokenizer_name_or_path=tok, min_doc_words=0),
                    JsonlWriter(out)]
        LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=1,
                              logging_dir=str(Path(es).parent / "logs-3")).run()
    else:
        sys.exit(f"unknown stage {stage}")


if __name__ == "__main__":
    main(sys.argv[1:])
