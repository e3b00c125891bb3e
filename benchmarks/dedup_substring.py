"""Exact-substring dedup: spans found, time and peak memory of `textsieve dedup substring`, with
planted repeats on real text, beside a brute-force baseline in the same run.

Usage::

    python benchmarks/dedup_substring.py [--corpus PATH] [--docs 5000] [--min-len 50]
                                         [--memory 1GB] [--small-memory 64MB]

The corpus: the first `--docs` documents of the dev web pool in four shards, with 40 passages of
`min-len + 10` tokens (cut from pool documents beyond the corpus) each planted into three
documents of other shards, and 40 of `min-len - 1` tokens planted twice (not repeats of the
length). Runs, each a subprocess measured from outside (CPU = user + system of the process tree,
peak = `ru_maxrss` of its largest process):

* `textsieve dedup substring --workers 1` at `--memory` (one suffix-array pass) and at
  `--small-memory` (partitions sorted pair by pair; must give the same bytes);
* the baseline: every window of `min-len` word tokens hashed into a Python `Counter` (what a
  first implementation does), marking the windows seen twice: the same marked tokens by
  definition, so it checks the result, and its time and memory are the naive cost.

Printed: marked tokens, spans, recall on the planted repeats (1.0 expected) and on the short ones
(0.0 expected where their neighbours differ), agreement with the baseline, time and peak, and
the ratios. datatrove's exact-substring pipeline (`ESDatasetToSequence` -> the Rust
`deduplicate-text-datasets` `self-similar`/`collect` -> `ESRangeRemover`) is NOT run here: its
middle step is a Rust program built from Google's repository. A Rust toolchain is installed here,
but the program's crates (zstd 0.5, crossbeam 0.3, filebuffer 0.4, clap 3, bitvec 1) come from
crates.io, which this machine cannot reach, and Debian packages only newer, API-incompatible
zstd, crossbeam and clap and no filebuffer; the script says so in its output.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOKEN = re.compile(r"\w+|[^\w\s]+")
SHARDS = 4


def _pool(corpus: Path, n: int) -> list[dict]:
    with gzip.open(corpus, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh)]


def _passage(text: str, n: int) -> str | None:
    toks = list(TOKEN.finditer(text))
    if len(toks) < n + 20:
        return None
    return text[toks[10].start():toks[10 + n - 1].end()]


def build(corpus: Path, n_docs: int, min_len: int, work: Path) -> tuple[list[str], list[str]]:
    pool = _pool(corpus, n_docs + 400)
    docs, spare = pool[:n_docs], pool[n_docs:]
    long_p = [p for d in spare if (p := _passage(d["text"], min_len + 10))][:40]
    short_p = [p for d in reversed(spare) if (p := _passage(d["text"], min_len - 1))][:40]
    per = n_docs // SHARDS
    for k, p in enumerate(long_p):
        for j in range(3):
            d = docs[((k + j) % SHARDS) * per + (k * 7 + j) % per]
            d["text"] += f"\n\nQz{k}x{j} {p} Vk{j}y{k}\n"
    for k, p in enumerate(short_p):
        for j in range(2):
            d = docs[((k + j + 1) % SHARDS) * per + (k * 11 + j + 3) % per]
            d["text"] += f"\n\nSq{k}x{j} {p} Wk{j}y{k}\n"
    (work / "docs").mkdir(parents=True)
    for s in range(SHARDS):
        with gzip.open(work / "docs" / f"s{s}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[s * per:(s + 1) * per])
    return long_p, short_p


def measured(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the tree, peak MB of its largest process) of a subprocess."""
    wrapper = ("import resource, subprocess, sys, json\n"
               "r = subprocess.run(sys.argv[1:]).returncode\n"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(json.dumps([u.ru_utime + u.ru_stime, u.ru_maxrss / 1024]), file=sys.stderr)\n"
               "sys.exit(r)\n")
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    cpu, peak = json.loads(p.stderr.strip().splitlines()[-1])
    return wall, cpu, peak


BASELINE = r'''
import gzip, json, re, sys
from collections import Counter
TOKEN = re.compile(r"\w+|[^\w\s]+")
docs_dir, min_len, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
docs = []
for s in range(4):
    with gzip.open(f"{docs_dir}/s{s}.jsonl.gz", "rt", encoding="utf-8") as fh:
        docs += [[m.group() for m in TOKEN.finditer(json.loads(l)["text"])] for l in fh]
count = Counter(hash(tuple(t[i:i + min_len])) for t in docs for i in range(len(t) - min_len + 1))
marked = 0
for t in docs:
    m = [False] * len(t)
    for i in range(len(t) - min_len + 1):
        if count[hash(tuple(t[i:i + min_len]))] >= 2:
            m[i:i + min_len] = [True] * min_len
    marked += sum(m)
open(out, "w").write(str(marked))
'''


def spans_of(attrs: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    import pyarrow.parquet as pq

    out = {}
    for p in sorted((attrs / "sets" / "dedup_substring").glob("*.parquet")):
        for i, spans in enumerate(pq.read_table(p).column("dup_substring_spans").to_pylist()):
            out[(p.stem, i)] = [(s["start"], s["end"]) for s in spans]
    return out


def recall(work: Path, attrs: Path, passages: list[str]) -> float:
    spans = spans_of(attrs)
    found = total = 0
    for s in range(SHARDS):
        with gzip.open(work / "docs" / f"s{s}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                text = json.loads(line)["text"]
                for p in passages:
                    at = text.find(p)
                    if at >= 0:
                        total += 1
                        found += any(a <= at and at + len(p) <= b for a, b in spans[(f"s{s}", i)])
    return found / max(1, total)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path,
                    default=Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
                    / "corpora" / "dev" / "web_sample.jsonl.gz")
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--min-len", type=int, default=50)
    ap.add_argument("--memory", default="1GB")
    ap.add_argument("--small-memory", default="64MB")
    args = ap.parse_args()
    ts = [sys.executable, "-m", "textsieve.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        long_p, short_p = build(args.corpus, args.docs, args.min_len, work)
        subprocess.run([*ts, "annotate", str(work / "docs"), "-o", str(work / "attrs"), "--signals",
                        "rps_doc_word_count", "-q"], check=True)
        rows = []
        for name, memory in (("one pass", args.memory), ("partitions", args.small_memory)):
            wall, cpu, peak = measured([*ts, "dedup", "substring", str(work / "attrs"), "--min-len", str(args.min_len),
                                        "--memory", memory, "--workers", "1", "--overwrite", "-q"])
            summary = json.loads((work / "attrs" / "sets" / "dedup_substring" / ".textsieve" /
                                  "summary.json").read_text())
            digest = {p.name: p.read_bytes() for p in (work / "attrs" / "sets" / "dedup_substring").glob("*.parquet")}
            rows.append((name, memory, wall, cpu, peak, summary, digest))
        base_out = work / "baseline.txt"
        bwall, bcpu, bpeak = measured([sys.executable, "-c", BASELINE, str(work / "docs"), str(args.min_len),
                                       str(base_out)])
        base_marked = int(base_out.read_text())
        r_long = recall(work, work / "attrs", long_p)
        r_short = recall(work, work / "attrs", short_p)
    s = rows[0][5]
    print(f"dedup substring on {s['n_docs']:,} dev documents ({s['n_tokens']:,} word tokens), min-len "
          f"{args.min_len}, one core")
    print(f"  marked tokens {s['n_dup_tokens']:,} ({100 * s['dup_token_fraction']:.2f}%), spans {s['n_spans']:,}")
    print(f"  recall on {len(long_p)} planted repeats of {args.min_len + 10} tokens (x3): {r_long:.3f} (target 1.0: "
          f"{'MET' if r_long == 1.0 else 'NOT MET'}); {len(short_p)} of {args.min_len - 1} tokens (x2) marked: "
          f"{r_short:.3f}")
    print(f"  baseline (Python Counter of {args.min_len}-token windows) marks {base_marked:,} tokens: "
          f"{'equal' if base_marked == s['n_dup_tokens'] else 'DIFFERENT'}")
    print(f"  {'run':<12} {'memory':>8} {'passes':>6} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'tokens/s/core':>14}")
    for name, memory, wall, cpu, peak, summ, _ in rows:
        print(f"  {name:<12} {memory:>8} {summ['passes']:>6} {wall:>8.2f} {cpu:>8.2f} {peak:>8.0f} "
              f"{summ['n_tokens'] / cpu:>14,.0f}")
    print(f"  {'baseline':<12} {'-':>8} {'-':>6} {bwall:>8.2f} {bcpu:>8.2f} {bpeak:>8.0f} "
          f"{s['n_tokens'] / bcpu:>14,.0f}")
    same = rows[0][6] == rows[1][6]
    print(f"  partitions give the same bytes as one pass: {'yes' if same else 'NO'}")
    print(f"  textsieve / baseline: {bcpu / rows[0][3]:.1f}x faster per core, {bpeak / rows[0][4]:.1f}x less peak")
    print("  datatrove (ESDatasetToSequence -> Rust self-similar/collect -> ESRangeRemover): NOT RUN here; its "
          "suffix-array step is Google's deduplicate-text-datasets, a Rust program whose crates come from "
          "crates.io, which this machine cannot reach (Debian has only newer, API-incompatible ones)")


if __name__ == "__main__":
    main()
