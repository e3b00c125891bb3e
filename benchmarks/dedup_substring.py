"""Exact-substring dedup: spans found, time and peak memory of `textsieve dedup substring`, with
planted repeats on real text, beside a brute-force baseline in the same run.

Usage::

    python benchmarks/dedup_substring.py [--corpus PATH] [--docs 5000] [--min-len 50]
                                         [--memory 1GB] [--small-memory 64MB]
                                         [--dtd-dir DIR] [--tokenizer PATH]

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
the ratios.

With `--dtd-dir DIR` (a checkout of google-research/deduplicate-text-datasets), the same corpus also
goes through datatrove's exact-substring pipeline, each step a measured process on one core:
`ESDatasetToSequence` (stage 1, a task per shard) -> `ESMergeSequences` (stage 2) -> the Rust
program's `make` (suffix array), `self-similar --length-threshold 2*min-len --num-threads 1` and
`collect` (byte ranges; 2 bytes per token) -> `ESRangeRemover` (stage 3, min_doc_words=0 so every
document stays). Both sides count the same tokens: textsieve runs `--tokenizer` with datatrove's
tokenizer file (`--tokenizer`, default the GPT-NeoX BPE in `shared/golden/rpv1/tokenizer`; GPT-2's
vocabulary size, which datatrove's uint16 sequences need). Compared: datatrove's ranges mapped to
characters through the tokenizer's offsets (cut to each document and to whole tokens, as stage 3
cuts them) against textsieve's `dup_substring_spans`: characters each marks and both mark, recall on
the planted repeats, planted repeats left in stage 3's output, and CPU and peak memory of finding
the spans (stages 1-2 + make + self-similar + collect against `dedup substring`). The Rust program
is built by `_dtd_build.py` (offline, Debian's crates and three stand-ins for the crates.io versions
it names); its sources' SHA-256 is printed. datatrove comes from `_datatrove_env.py`'s venv.
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


def measured(cmd: list[str], quiet: bool = False, keep_stdout: bool = False, pin: bool = False) -> tuple:
    """(wall s, CPU s of the tree, peak MB of its largest process) of a subprocess, plus its stdout
    with `keep_stdout`; `quiet` drops its output (datatrove's and the Rust program's logs); `pin`
    runs it on one CPU (so a library's own threads, the tokenizer's, cannot use a second core)."""
    wrapper = ("import os, resource, subprocess, sys, json\n"
               "if sys.argv[1].endswith('p'): os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
               "q = sys.argv[1].startswith('q')\n"
               "r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL if q else None, "
               "stderr=subprocess.DEVNULL if q else None).returncode\n"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "print(json.dumps([u.ru_utime + u.ru_stime, u.ru_maxrss / 1024]), file=sys.stderr)\n"
               "sys.exit(r)\n")
    t = time.perf_counter()
    mode = ("q" if quiet else "-") + ("p" if pin else "")
    p = subprocess.run([sys.executable, "-c", wrapper, mode, *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    cpu, peak = json.loads(p.stderr.strip().splitlines()[-1])
    return (wall, cpu, peak, p.stdout) if keep_stdout else (wall, cpu, peak)


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


def _texts(work: Path) -> dict[tuple[str, int], str]:
    out = {}
    for s in range(SHARDS):
        with gzip.open(work / "docs" / f"s{s}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                out[(f"s{s}", i)] = json.loads(line)["text"]
    return out


def recall(work: Path, spans: dict[tuple[str, int], list[tuple[int, int]]], passages: list[str]) -> float:
    """Share of the planted passages' occurrences that one span covers whole."""
    found = total = 0
    for key, text in _texts(work).items():
        for p in passages:
            at = text.find(p)
            if at >= 0:
                total += 1
                found += any(a <= at and at + len(p) <= b for a, b in spans.get(key, ()))
    return found / max(1, total)


# ---------------------------------------------------------------------- datatrove's pipeline

SEPARATOR = 12  # datatrove's per-document header in the big sequence: ff ff, doc id (4), ff ff, rank (4)


def datatrove_spans(work: Path, es: Path, tokenizer: Path,
                    min_len: int) -> tuple[dict[tuple[str, int], list[tuple[int, int]]], int, int]:
    """datatrove's duplicate byte ranges (`collect`'s output) as character spans of each document:
    each range cut to the document's tokens (bytes past its 12-byte header, whole 2-byte tokens, as
    ESRangeRemover normalises them), then mapped to characters by the tokenizer's offsets. Also the
    number of ranges and of document spans shorter than `min_len` tokens (a match that runs on into
    the next document's separator bytes is cut to fewer tokens than the threshold)."""
    import bisect

    import numpy as np
    from tokenizers import Tokenizer

    lines = (es / "dataset.bytearange").read_text().split("\n")
    ranges = [tuple(map(int, x.split())) for x in lines[lines.index("out") + 1:] if x.strip()] if "out" in lines else []
    starts = [a for a, _ in ranges]
    offsets = np.frombuffer((es / "bytes_offsets.info").read_bytes(), dtype=np.uint32)
    tok = Tokenizer.from_file(str(tokenizer))
    texts = _texts(work)
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    short = 0
    for rank in range(SHARDS):
        sizes = np.frombuffer((es / f"{rank:05d}.es_sequence.size").read_bytes(), dtype="<u8").astype(np.int64)
        begin = int(offsets[rank]) + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        for i, (b0, n) in enumerate(zip(begin.tolist(), sizes.tolist())):
            b1 = b0 + n
            k = max(0, bisect.bisect_right(starts, b0) - 1)
            spans, enc = [], None
            while k < len(ranges) and ranges[k][0] < b1:
                a, b = ranges[k]
                k += 1
                a, b = max(a - b0, SEPARATOR), min(b - b0, n)
                a, b = a + (a % 2), b - (b % 2)
                if a >= b:
                    continue
                if enc is None:
                    enc = tok.encode(texts[(f"s{rank}", i)])
                    if 2 * len(enc.ids) != n - SEPARATOR:
                        sys.exit(f"datatrove's sequence of s{rank} document {i} has {(n - SEPARATOR) // 2} tokens; "
                                 f"the tokenizer gives {len(enc.ids)}")
                t0, t1 = (a - SEPARATOR) // 2, (b - SEPARATOR) // 2
                short += t1 - t0 < min_len
                spans.append((enc.offsets[t0][0], enc.offsets[t1 - 1][1]))
            if spans:
                out[(f"s{rank}", i)] = spans
    return out, len(ranges), short


def _chars(spans: dict[tuple[str, int], list[tuple[int, int]]], texts: dict[tuple[str, int], str]) -> dict:
    import numpy as np

    marks = {}
    for key, sp in spans.items():
        m = np.zeros(len(texts[key]), dtype=bool)
        for a, b in sp:
            m[a:b] = True
        marks[key] = m
    return marks


def agreement(ts: dict, dt: dict, texts: dict) -> tuple[int, int, int]:
    """(characters textsieve marks, characters datatrove marks, characters both mark)."""
    a, b = _chars(ts, texts), _chars(dt, texts)
    both = sum(int((a[k] & b[k]).sum()) for k in a.keys() & b.keys())
    return sum(int(m.sum()) for m in a.values()), sum(int(m.sum()) for m in b.values()), both


def left_in_output(out: Path, passages: list[str]) -> tuple[int, int]:
    """(planted passage occurrences still in stage 3's output, documents written)."""
    left = n = 0
    for p in sorted(out.glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line).get("text", "")  # datatrove's writer leaves an emptied text out
                n += 1
                left += sum(text.count(q) for q in passages)
    return left, n


def run_datatrove(work: Path, dtd_dir: Path, tokenizer: Path, min_len: int) -> dict:
    """datatrove's pipeline on `work/docs`, step by step: {steps: [(name, wall, cpu, peak)], ...}."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _datatrove_env
    import _dtd_build

    try:
        exe = _dtd_build.build(dtd_dir)
    except _dtd_build.BuildError as e:
        sys.exit(f"datatrove's exact-substring pipeline cannot run: {e}")
    dt = str(_datatrove_env.ensure(quiet=True))
    es, driver = work / "es", str(Path(__file__).resolve().parent / "_datatrove_es.py")
    seq = str(es / "dataset.big_sequence")
    threshold = str(2 * min_len)  # bytes: datatrove stores each token as a uint16
    steps = []
    for name, cmd in (("stage 1: tokenize", [dt, driver, "stage1", str(work / "docs"), str(es), str(tokenizer)]),
                      ("stage 2: merge", [dt, driver, "stage2", str(es), str(SHARDS)]),
                      ("make (suffix array)", [str(exe), "make", "--data-file", seq]),
                      ("self-similar", [str(exe), "self-similar", "--data-file", seq, "--length-threshold", threshold,
                                        "--cache-dir", str(work / "dtd-cache"), "--num-threads", "1"])):
        steps.append((name, *measured(cmd, quiet=True, pin=True)))
    wall, cpu, peak, text = measured([str(exe), "collect", "--data-file", seq, "--cache-dir", str(work / "dtd-cache"),
                                      "--length-threshold", threshold], keep_stdout=True, pin=True)
    (es / "dataset.bytearange").write_text(text)
    steps.append(("collect", wall, cpu, peak))
    remove = ("stage 3: remove", *measured([dt, driver, "stage3", str(work / "docs"), str(es), str(tokenizer),
                                             str(work / "dt-out")], quiet=True, pin=True))
    return {"steps": steps, "remove": remove, "exe": exe, "sha": _dtd_build.sources_sha256(dtd_dir),
            "version": _datatrove_env.version()}


def main() -> None:
    shared = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=shared / "corpora" / "dev" / "web_sample.jsonl.gz")
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--min-len", type=int, default=50)
    ap.add_argument("--memory", default="1GB")
    ap.add_argument("--small-memory", default="64MB")
    ap.add_argument("--dtd-dir", type=Path, help="a google-research/deduplicate-text-datasets checkout: also run "
                    "datatrove's exact-substring pipeline")
    ap.add_argument("--tokenizer", type=Path, default=shared / "golden" / "rpv1" / "tokenizer" / "tokenizer.json",
                    help="tokenizer.json both sides count with in the datatrove comparison")
    args = ap.parse_args()
    ts = [sys.executable, "-m", "textsieve.cli"]
    set_dir = Path("sets") / "dedup_substring"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        long_p, short_p = build(args.corpus, args.docs, args.min_len, work)
        subprocess.run([*ts, "annotate", str(work / "docs"), "-o", str(work / "attrs"), "--signals",
                        "rps_doc_word_count", "-q"], check=True)
        rows = []
        for name, memory in (("one pass", args.memory), ("partitions", args.small_memory)):
            wall, cpu, peak = measured([*ts, "dedup", "substring", str(work / "attrs"), "--min-len", str(args.min_len),
                                        "--memory", memory, "--workers", "1", "--overwrite", "-q"])
            summary = json.loads((work / "attrs" / set_dir / ".textsieve" / "summary.json").read_text())
            digest = {p.name: p.read_bytes() for p in (work / "attrs" / set_dir).glob("*.parquet")}
            rows.append((name, memory, wall, cpu, peak, summary, digest))
        base_out = work / "baseline.txt"
        bwall, bcpu, bpeak = measured([sys.executable, "-c", BASELINE, str(work / "docs"), str(args.min_len),
                                       str(base_out)])
        base_marked = int(base_out.read_text())
        word_spans = spans_of(work / "attrs")
        r_long, r_short = recall(work, word_spans, long_p), recall(work, word_spans, short_p)
        dt = None
        if args.dtd_dir:
            ts_rows, digests = [], []
            for memory in (args.small_memory, args.memory):  # the last run's spans stay for the comparison
                wall, cpu, peak = measured([*ts, "dedup", "substring", str(work / "attrs"), "--min-len",
                                            str(args.min_len), "--tokenizer", str(args.tokenizer), "--memory", memory,
                                            "--workers", "1", "--overwrite", "-q"], pin=True)
                summary = json.loads((work / "attrs" / set_dir / ".textsieve" / "summary.json").read_text())
                ts_rows.append((memory, wall, cpu, peak, summary))
                digests.append({p.name: p.read_bytes() for p in (work / "attrs" / set_dir).glob("*.parquet")})
            bpe = spans_of(work / "attrs")
            dt = run_datatrove(work, args.dtd_dir, args.tokenizer, args.min_len)
            dspans, n_ranges, n_short = datatrove_spans(work, work / "es", args.tokenizer, args.min_len)
            texts = _texts(work)
            dt.update(ts_rows=ts_rows, n_short=n_short, same=digests[0] == digests[1], n_ranges=n_ranges,
                      chars=agreement(bpe, dspans, texts), total_chars=sum(map(len, texts.values())),
                      r_ts=recall(work, bpe, long_p), r_dt=recall(work, dspans, long_p),
                      left=left_in_output(work / "dt-out", long_p), n_ts_spans=sum(map(len, bpe.values())),
                      n_dt_spans=sum(map(len, dspans.values())))
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
    if dt is None:
        print("  datatrove's exact-substring pipeline: not run (give --dtd-dir, a checkout of "
              "google-research/deduplicate-text-datasets)")
        return
    print_datatrove(dt, args, len(long_p))


def print_datatrove(dt: dict, args: argparse.Namespace, n_long: int) -> None:
    memory, wall, cpu, peak, summ = dt["ts_rows"][-1]
    sha = ", ".join(f"{k} {v}" for k, v in dt["sha"].items())
    print(f"\ndatatrove {dt['version']} exact substrings beside textsieve, both on {args.tokenizer.parent.name}/"
          f"{args.tokenizer.name} tokens ({summ['n_tokens']:,}), min-len {args.min_len} tokens "
          f"(Rust --length-threshold {2 * args.min_len} bytes), one core")
    print(f"  deduplicate-text-datasets from {args.dtd_dir} (sha256 {sha})")
    print(f"  {'step':<44} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for name, w, c, p in dt["steps"]:
        print(f"  {'datatrove ' + name:<44} {w:>8.2f} {c:>8.2f} {p:>8.0f}")
    fw, fc, fp = (sum(x[1] for x in dt["steps"]), sum(x[2] for x in dt["steps"]), max(x[3] for x in dt["steps"]))
    print(f"  {'datatrove: finding the spans':<44} {fw:>8.2f} {fc:>8.2f} {fp:>8.0f}")
    name, w, c, p = dt["remove"]
    print(f"  {'datatrove ' + name:<44} {w:>8.2f} {c:>8.2f} {p:>8.0f}")
    for mem, w, c, p, sm in dt["ts_rows"]:
        label = f"textsieve dedup substring {mem} ({sm['passes']} pass{'es' if sm['passes'] > 1 else ''})"
        print(f"  {label:<44} {w:>8.2f} {c:>8.2f} {p:>8.0f}")
    print(f"  textsieve gives the same bytes at {dt['ts_rows'][0][0]} and {dt['ts_rows'][1][0]}: "
          f"{'yes' if dt['same'] else 'NO'}")
    ts_chars, dt_chars, both = dt["chars"]
    union = ts_chars + dt_chars - both
    print(f"  spans: textsieve {dt['n_ts_spans']:,} ({ts_chars:,} characters, "
          f"{100 * ts_chars / dt['total_chars']:.2f}%); datatrove {dt['n_ranges']:,} byte ranges -> "
          f"{dt['n_dt_spans']:,} document spans ({dt_chars:,} characters); both mark {both:,} characters "
          f"(overlap / union {both / max(1, union):.4f}); datatrove spans under {args.min_len} tokens: "
          f"{dt['n_short']:,} (a match running on into the next document's separator bytes)")
    left, n_docs = dt["left"]
    print(f"  recall on the {n_long} planted repeats (x3): textsieve {dt['r_ts']:.3f}, datatrove {dt['r_dt']:.3f}; "
          f"occurrences left in datatrove's stage 3 output: {left} ({n_docs:,} documents written)")
    if n_docs < args.docs:  # ESRangeRemover yields nothing for a shard without a duplicate range
        print(f"  NOTE: datatrove's stage 3 wrote {n_docs:,} of {args.docs:,} documents: the count of what it left "
              "in covers only those")
    for mem, _w, c, p, _sm in dt["ts_rows"]:
        print(f"  textsieve at {mem} / datatrove (finding the spans): {fc / c:.2f}x less CPU; peak memory "
              f"{p:.0f} vs {fp:.0f} MB ({fp / p:.2f}x)")


if __name__ == "__main__":
    main()
