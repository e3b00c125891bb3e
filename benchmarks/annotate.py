"""Annotate: speed, start-up, memory and scaling against issue 28's targets (and issue 2's).

Prints, from one run on the same documents (the dev corpus by default):
  1. the floor: reading and parsing the input alone (ShardReader), in this process;
  2. `annotate` (the 28 RPv2 rule signals + MinHash + Parquet write) with 1 worker and with all
     cores, each in a fresh subprocess after a warm-up run: docs per CPU-second of the run's
     process tree (per core, whatever threads it used), its share of the floor, peak RSS of the
     main process and of the largest worker (`ru_maxrss`, what `/usr/bin/time -v` calls "Maximum
     resident set size"), and the main process's share of the CPU (with several workers it only
     reads, cuts batches and writes: the reader's share);
  3. a first run as on a fresh install: a new, empty NUMBA_CACHE_DIR and a 200-document input,
     reporting the kernel warm-up before the first batch (numba compiles there when the C
     kernels are not built);
  4. how idle the machine was: the 1-minute load average before each run and the CPU the rest
     of the machine used during it (/proc/stat busy time minus the run's own);
  5. 1 worker and all cores on the same documents cut into 2 shards per core, where each worker
     annotates whole shards and the main process only hands them out (`stages.annotate.shards`);
     and, in each round, all cores with spawned workers (TEXTSIEVE_WORKER_START=spawn) instead of
     workers forked by the warm fork server (`exec.warm_start`, what the command uses);
  5b. the same pair on the dev corpus copied into 2 shards per core (4 copies on 2 cores: ~61,000
     documents), where the main process's start-up (~0.45 s before the first shard goes out)
     weighs 4x less: the steady-state scaling;
  6. the machine's own ceiling: how much faster N copies of a pure CPU loop finish than one;
  7. a straightforward pure-Python implementation of the same signals (textsieve.signals.reference,
     the executable spec) plus MinHash with hashlib and NumPy permutations, on a subset.
Then issue 28's targets, MET or NOT MET, beside the figures its text gives for the earlier tree
(1,889 docs/s per core against a floor of 13,442 in one run, 14%; a 15.8 s kernel compile on a
first run; 503 MB peak for one worker; 2 workers at 0.68x one worker).

With --baseline DIR (a checkout of an earlier tree, its C kernels built in place), also that tree's
1-worker run beside this one's, alternating, and the ratio.

Usage: python benchmarks/annotate.py [--input PATH] [--reference-docs N] [--scaling-rounds N]
                                     [--steady-rounds N]
                                     [--baseline DIR [--rounds N]]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from textsieve.dedup.minhash import NGRAM, THRESHOLDS, optimal_param, permutations
from textsieve.exec.local import default_workers
from textsieve.io.paths import expand_inputs
from textsieve.io.readers import ReadOptions, ShardReader
from textsieve.signals.reference import load_bad_words, load_stop_words, normalize, reference_signals

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
MERSENNE = (1 << 61) - 1


def read_floor(path: str) -> tuple[int, float]:
    """(documents, CPU-s) of reading and parsing alone: CPU time, like the runs it is compared with."""
    t = time.process_time()
    n = sum(1 for shard in expand_inputs([path]) for _ in ShardReader(shard, ReadOptions()))
    return n, time.process_time() - t


#: run in a fresh interpreter: annotate, then its own and its workers' CPU and peak RSS as JSON. It
#: starts the workers' fork server before importing the stage, as the command does, and stops it
#: (waiting for it) at the end, so the server's and its workers' CPU and peaks count as children's.
CHILD = r"""
import json, resource, sys, time
try:  # the environment `textsieve` sets before NumPy loads (a tree older than cli.process_defaults: none)
    from textsieve.cli import process_defaults
    process_defaults()
except ImportError:
    pass
path, out, workers, resources = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:  # as the command does (cli.warm_workers): the workers' fork server imports beside this process
    from textsieve.cli import warm_workers
    from textsieve.exec import warm_start
except ImportError:  # an older tree: spawned workers
    warm_start = None
else:
    warm_workers(["annotate", path, "--workers", str(workers)])
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
cfg = AnnotateConfig(inputs=[path], output=out, workers=workers, resources=resources, progress=False)
res = run_annotate(cfg)
if warm_start is not None:
    warm_start.stop()  # waits for the server, so its and its workers' CPU count as children's below
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
import textsieve
tree = str(textsieve.__file__).rsplit("/textsieve/", 1)[0]
print(json.dumps({"tree": tree, "documents": res.documents, "seconds": res.seconds, "compile": res.compile_seconds,
                  "compiled": res.kernels_compiled, "main_cpu": me.ru_utime + me.ru_stime,
                  "workers_cpu": kids.ru_utime + kids.ru_stime, "main_mb": me.ru_maxrss / 1024,
                  "worker_mb": kids.ru_maxrss / 1024}))
"""


def _busy_jiffies() -> int:
    """Busy CPU time of the whole machine so far, in clock ticks (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return sum(f[:8]) - f[3] - f[4]  # guest and guest_nice (fields 9-10) are already in user and nice


def annotate(path: str, workers: int, resources: Path, env: dict[str, str] | None = None) -> dict:
    """One `annotate` run in a fresh interpreter: its JSON figures plus `load` (1-minute load
    average before) and `others_cpu` (CPU-s the rest of the machine used during the run)."""
    with tempfile.TemporaryDirectory() as out:
        load = float(Path("/proc/loadavg").read_text().split()[0])
        tick = os.sysconf("SC_CLK_TCK")
        j0, c0, w0 = _busy_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        # cwd: not this checkout, which `python -c` would put first on sys.path (before a --baseline tree)
        p = subprocess.run([sys.executable, "-c", CHILD, path, out, str(workers), str(resources)],
                           capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=out)
        j1, c1, w1 = _busy_jiffies(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        if p.returncode:
            sys.exit(f"annotate failed:\n{p.stderr[-2000:]}")
        fig = json.loads(p.stdout.strip().splitlines()[-1])
        own = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
        fig.update(load=load, others_cpu=max(0.0, (j1 - j0) / tick - own), process_wall=w1 - w0)
        return fig


def first_run(path: str, resources: Path, docs: int = 200) -> dict:
    """A first run as on a fresh install: an empty NUMBA_CACHE_DIR, `docs` documents."""
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "first.jsonl.gz"
        with gzip.open(small, "wt", encoding="utf-8") as fh:
            for shard in expand_inputs([path]):
                for i, doc in enumerate(ShardReader(shard, ReadOptions())):
                    if i >= docs:
                        break
                    fh.write(json.dumps({"id": doc.id, "text": doc.text}) + "\n")
                break
        cache = Path(tmp) / "numba-cache"
        cache.mkdir()
        t = time.perf_counter()
        fig = annotate(str(small), 1, resources, env={"NUMBA_CACHE_DIR": str(cache)})
        fig["wall"] = time.perf_counter() - t
        return fig


SPIN = "x = 0\nfor i in range(12_000_000):\n    x += i * i\n"


def parallel_ceiling(cores: int, rounds: int = 5) -> list[float]:
    """How much faster `cores` copies of a pure CPU loop finish than one, measured `rounds` times
    (one, then the copies): the most any process pool can gain on this machine. Virtual cores that
    share a physical core, or a busy host, give less than `cores`x even with no work in common."""
    ratios = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", SPIN], check=True)
        one = time.perf_counter() - t
        t = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(cores)]
        for p in procs:
            p.wait()
        many = time.perf_counter() - t
        ratios.append(cores * one / many)
    return sorted(ratios)


def split_input(path: str, parts: int, folder: Path) -> str:
    """`path`'s documents as `parts` .jsonl.gz shards of consecutive lines, about equal in bytes,
    in `folder` (returned)."""
    with gzip.open(path, "rb") as fh:
        lines = fh.read().splitlines(keepends=True)
    total, at, cut = sum(map(len, lines)), 0, [0]
    for i, line in enumerate(lines):
        at += len(line)
        if at >= total * len(cut) / parts and len(cut) < parts:
            cut.append(i + 1)
    cut.append(len(lines))
    for k in range(parts):
        with gzip.open(folder / f"part-{k:02d}.jsonl.gz", "wb", compresslevel=6) as out:
            out.writelines(lines[cut[k]:cut[k + 1]])
    return str(folder)


def pure_python_minhash(text: str, a: np.ndarray, b: np.ndarray) -> list | None:
    """MinHash as a straightforward implementation would write it: hashlib per shingle, NumPy
    wrapping uint64 arithmetic for the permutations."""
    words = normalize(text).split()
    if len(words) < NGRAM:
        return None
    shingles = {" ".join(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1)}
    hv = np.array([int.from_bytes(hashlib.sha1(s.encode("utf-8", "surrogatepass")).digest()[:4], "little")
                   for s in shingles], dtype=np.uint64)
    with np.errstate(over="ignore"):
        phv = ((hv[:, None] * a[None, :] + b[None, :]) % np.uint64(MERSENNE)) & np.uint64(0xFFFFFFFF)
    sig = phv.min(axis=0).astype(np.uint32)
    return [sig[: r * bands].astype(">u4").tobytes() for bands, r in (optimal_param(t, 128) for t in THRESHOLDS)]


def reference(path: str, limit: int, resources: Path) -> tuple[int, float]:
    stop = load_stop_words(resources / "stopwords" / "en.json")
    bad = load_bad_words(resources / "ldnoobw" / "en")
    a, b = permutations()
    texts = []
    for shard in expand_inputs([path]):
        for doc in ShardReader(shard, ReadOptions()):
            texts.append(doc.text)
            if len(texts) >= limit:
                break
    t = time.perf_counter()
    for text in texts:
        reference_signals(text, stop, bad)
        pure_python_minhash(text, a, b)
    return len(texts), time.perf_counter() - t


def mark(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default=str(SHARED / "corpora/dev/web_sample.jsonl.gz"))
    ap.add_argument("--resources", default=str(SHARED / "golden/rpv2_resources"))
    ap.add_argument("--reference-docs", type=int, default=1000)
    ap.add_argument("--baseline", default="", help="a checkout of an earlier textsieve tree, its C kernels built "
                    "in place (python setup.py build_ext --inplace): its 1-worker annotate runs alternately with "
                    "this tree's and the ratio is printed")
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs per tree for --baseline")
    ap.add_argument("--scaling-rounds", type=int, default=3, help="1-worker/all-cores pairs on the shard copy")
    ap.add_argument("--steady-rounds", type=int, default=2, help="1-worker/all-cores pairs on the corpus copied "
                    "into 2 shards per core (0: skip)")
    args = ap.parse_args()
    if not Path(args.input).exists():
        print(f"input not found: {args.input} (set TEXTSIEVE_SHARED)", file=sys.stderr)
        return 2
    resources = Path(args.resources)
    first = first_run(args.input, resources)
    annotate(args.input, 1, resources)  # warm-up: page cache, numba cache when the C kernels are not built
    cores = default_workers()
    n, s = read_floor(args.input)
    floor = n / s
    runs = [(1, annotate(args.input, 1, resources))]
    if cores > 1:
        runs.append((cores, annotate(args.input, cores, resources)))
    multi: list[tuple[int, dict]] = []
    pairs: list[float] = []  # speedups of cores workers over one, on the shards, run pair after pair
    spawn_pairs: list[float] = []  # the same with spawned workers (TEXTSIEVE_WORKER_START=spawn), each round
    if cores > 1:  # the same documents as several shards: workers take whole shards (stages.annotate.shards)
        with tempfile.TemporaryDirectory() as tmp:
            shards = split_input(args.input, 2 * cores, Path(tmp))
            for _ in range(args.scaling_rounds):
                multi = [(1, annotate(shards, 1, resources)), (cores, annotate(shards, cores, resources))]
                pairs.append(multi[0][1]["seconds"] / multi[1][1]["seconds"])
                spawned = annotate(shards, cores, resources, env={"TEXTSIEVE_WORKER_START": "spawn"})
                spawn_pairs.append(multi[0][1]["seconds"] / spawned["seconds"])
    steady: list[float] = []  # the same pairs on one copy of the corpus per shard
    steady_docs = 0
    if cores > 1 and args.steady_rounds:
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(2 * cores):
                shutil.copyfile(args.input, Path(tmp) / f"copy-{k:02d}.jsonl.gz")
            for _ in range(args.steady_rounds):
                one_run, all_run = annotate(tmp, 1, resources), annotate(tmp, cores, resources)
                steady.append(one_run["seconds"] / all_run["seconds"])
                steady_docs = one_run["documents"]
    ceiling = parallel_ceiling(cores) if cores > 1 else [1.0]
    rn, rs = reference(args.input, args.reference_docs, resources)
    ref = rn / rs
    print(f"{'run':<34} {'docs':>7} {'seconds':>8} {'docs/s/core':>12} {'of floor':>9} {'main MB':>8} "
          f"{'worker MB':>9} {'main CPU':>9} {'load':>5} {'others CPU':>10}")
    print(f"{'read + parse only (floor)':<34} {n:>7} {s:>8.2f} {floor:>12,.0f} {'100%':>9}")
    for w, f in runs:
        rate = f["documents"] / (f["main_cpu"] + f["workers_cpu"])  # per CPU-second: a writer thread is no free core
        share = f["main_cpu"] / max(1e-9, f["main_cpu"] + f["workers_cpu"])
        worker_mb = f"{f['worker_mb']:.0f}" if w > 1 else "-"
        print(f"{f'annotate, {w} worker' + ('s' if w > 1 else ''):<34} {f['documents']:>7} {f['seconds']:>8.2f} "
              f"{rate:>12,.0f} {rate / floor:>9.1%} {f['main_mb']:>8.0f} {worker_mb:>9} {share:>9.1%} "
              f"{f['load']:>5.2f} {f['others_cpu']:>9.1f}s")
    for w, f in multi:
        rate = f["documents"] / (f["main_cpu"] + f["workers_cpu"])
        share = f["main_cpu"] / max(1e-9, f["main_cpu"] + f["workers_cpu"])
        worker_mb = f"{f['worker_mb']:.0f}" if w > 1 else "-"
        label = f"annotate, {w} worker{'s' if w > 1 else ''}, {2 * cores} shards"
        print(f"{label:<34} {f['documents']:>7} {f['seconds']:>8.2f} {rate:>12,.0f} {rate / floor:>9.1%} "
              f"{f['main_mb']:>8.0f} {worker_mb:>9} {share:>9.1%} {f['load']:>5.2f} {f['others_cpu']:>9.1f}s")
    print(f"{'pure-Python reference (spec twin)':<34} {rn:>7} {rs:>8.2f} {ref:>12,.0f}")
    one = runs[0][1]["documents"] / (runs[0][1]["main_cpu"] + runs[0][1]["workers_cpu"])  # docs per CPU-second
    one_wall = runs[0][1]["documents"] / runs[0][1]["seconds"]
    print(f"\nannotate (1 worker) vs pure-Python reference: {one / ref:.1f}x; vs RPv2 reference code "
          f"(~90 docs/s/core): {one / 90:.1f}x; issue 2's >= 1,500 docs/s per core: {mark(one >= 1500)}")
    print(f"first run on a fresh install ({first['documents']} documents, empty NUMBA_CACHE_DIR): "
          f"{first['compile']:.2f} s kernel warm-up ({first['compiled']} kernels compiled), {first['wall']:.1f} s "
          f"in all, interpreter start included")
    print("\nissue 28's targets (earlier tree, from the issue's text, in brackets):")
    print(f"  1. >= 8,000 docs/s per core: {one:,.0f} [1,889]: {mark(one >= 8000)}; >= 20% of the floor: "
          f"{one / floor:.1%} [14%]: {mark(one >= 0.2 * floor)}")
    print(f"  2. computing within 1 s of a fresh start: kernel warm-up {first['compile']:.2f} s [15.8 s]: "
          f"{mark(first['compile'] <= 1.0)}")
    mem_one = runs[0][1]["main_mb"]
    line = f"  3. peak RSS <= 200 MB: one worker running alone {mem_one:.0f} MB [503]: {mark(mem_one <= 200)}"
    if len(runs) > 1:
        wmb = runs[1][1]["worker_mb"]
        line += (f"; each of {runs[1][0]} workers {wmb:.0f} MB: {mark(wmb <= 200)} (their main process "
                 f"{runs[1][1]['main_mb']:.0f} MB)")
    print(line + "; a 20 MB document: tests/test_annotate.py")
    if len(runs) > 1:
        w, f = runs[1]
        speedup = (f["documents"] / f["seconds"]) / one_wall
        share = f["main_cpu"] / max(1e-9, f["main_cpu"] + f["workers_cpu"])
        idle = f["others_cpu"] / max(1e-9, f["process_wall"] * len(os.sched_getaffinity(0)))
        print(f"  4. {w} workers >= 1.8x one worker (docs/s, wall clock): {speedup:.2f}x [0.68x]: "
              f"{mark(speedup >= 1.8)} (the rest of the machine used {idle:.0%} of its CPU during the run, load "
              f"{f['load']:.2f} before it; the reader's "
              f"share of the run's CPU {share:.1%}; one shard: the main process reads and writes for both)")
    if multi:
        import statistics

        (_, f1), (w, fw) = multi
        speedup, top = statistics.median(pairs), statistics.median(ceiling)
        share = fw["main_cpu"] / max(1e-9, fw["main_cpu"] + fw["workers_cpu"])
        wmb = fw["worker_mb"]
        print(f"     the same documents as {2 * cores} shards, whole shards per worker: {w} workers {speedup:.2f}x one "
              f"worker (median of {len(pairs)} pairs, {min(pairs):.2f}-{max(pairs):.2f}): {mark(speedup >= 1.8)} "
              f"(the main process's share of the CPU {share:.1%}; each worker {wmb:.0f} MB: {mark(wmb <= 200)})")
        if spawn_pairs:
            print(f"     the same with spawned workers, not forked by the warm fork server (TEXTSIEVE_WORKER_START="
                  f"spawn): {statistics.median(spawn_pairs):.2f}x (median of {len(spawn_pairs)}, "
                  f"{min(spawn_pairs):.2f}-{max(spawn_pairs):.2f})")
        if steady:
            med = statistics.median(steady)
            print(f"     the corpus copied into {2 * cores} shards ({steady_docs:,} documents): {w} workers "
                  f"{med:.2f}x one worker (median of {len(steady)} pairs, {min(steady):.2f}-{max(steady):.2f}): "
                  f"{mark(med >= 1.8)}: start-up costs weigh less on a longer run")
        print(f"     this machine's ceiling: {w} copies of a pure CPU loop finish {top:.2f}x faster than one (median "
              f"of {len(ceiling)}, {ceiling[0]:.2f}-{ceiling[-1]:.2f}), so {w} workers on whole shards reach "
              f"{speedup / top:.0%} of what {w} processes gain here")
    if args.baseline:
        side_by_side(args.input, resources, str(Path(args.baseline).resolve()), args.rounds)
    return 0


def side_by_side(path: str, resources: Path, baseline: str, rounds: int) -> None:
    """The baseline tree's 1-worker annotate and this tree's, alternating (so a slow spell of the
    machine lands on both), `rounds` each: median docs per CPU-second and peak RSS, and the ratio."""
    import statistics

    def rate(f: dict) -> float:
        return f["documents"] / (f["main_cpu"] + f["workers_cpu"])

    base, cur = [], []
    for _ in range(rounds):
        base.append(annotate(path, 1, resources, env={"PYTHONPATH": baseline}))
        cur.append(annotate(path, 1, resources))
    if base[0]["tree"] != baseline:
        sys.exit(f"--baseline: the child imported textsieve from {base[0]['tree']}, not {baseline}")
    b, c = statistics.median(map(rate, base)), statistics.median(map(rate, cur))
    bm, cm = statistics.median(f["main_mb"] for f in base), statistics.median(f["main_mb"] for f in cur)
    print(f"\nside by side, 1 worker, median of {rounds} alternating runs each:")
    print(f"  baseline {baseline}: {b:,.0f} docs/s per core, peak {bm:.0f} MB")
    print(f"  this tree {cur[0]['tree']}: {c:,.0f} docs/s per core, peak {cm:.0f} MB")
    print(f"  this tree / baseline: {c / b:.2f}x the speed, {cm / bm:.2f}x the memory")


if __name__ == "__main__":
    sys.exit(main())
