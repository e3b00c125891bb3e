"""Fuzzy-dedup speed and memory: textsieve (signatures + LSH + clustering) beside datatrove's
4-stage MinHash on the same documents in the same run, then textsieve alone at scale.

Usage::

    python benchmarks/dedup_speed.py [--corpus PATH] [--threshold 0.8] [--no-datatrove]
                                     [--datatrove-limit N] [--scale 100000,300000]
                                     [--scale-1m] [--workers N]
                                     [--scale-10m [--study-sizes 1000000,10000000] [--memory 1GB]]

Part 1, the dev corpus (15,263 docs), one core each:
  * textsieve RPv2 mode: ``textsieve annotate --signals minhash --workers 1`` then
    ``textsieve dedup fuzzy --threshold T`` (real CLI, default ``--verify exact``: candidate
    pairs checked on the re-read texts; the signatures run on the C kernel, so neither process
    loads numba);
  * textsieve fast mode (not RPv2-compatible): ``textsieve annotate --signals minhash_fast``
    then ``textsieve dedup fuzzy --bands fast`` (real CLI);
  * datatrove (its own venv): MinhashDedupSignature -> Buckets -> Cluster -> Filter with
    ``n_grams=13`` and the same bands x rows as textsieve's threshold (9x13 for 0.8);
  * the signature kernels alone, in this process (normalization done before, not timed).
Part 2, scaling: the dev corpus replicated with small random edits (1-5 word substitutions per
copy, so every copy is a near-duplicate of its original) into a temporary folder, never kept;
textsieve RPv2 mode at each size with ``--workers N`` (default: all cores).

Part 3, the scale study (``--scale-10m``, issue 29 item 4; ~40 min and ~25 GB of disk here): a
web-like corpus generated from the dev corpus (``_webdup.py``: 70% unique, 30% in Zipf-sized
clusters up to 10,000 members) at 1M and at 10M documents, each through ``annotate --signals
minhash`` and ``dedup fuzzy --verify exact``, both at ``--memory 1GB``. Targets: tree peak RSS of
every step under the setting, CPU per document at 10M within 15% of 1M, and at 1M the same cluster
columns as an unbounded (``--memory 64GB``) run. ``--corpus-dir DIR`` keeps the corpora for a re-run.

Every command runs in a subprocess, measured from outside: CPU seconds = user + system of the
whole process tree (``getrusage(RUSAGE_CHILDREN)`` in a wrapper process), docs/s per core =
docs / CPU seconds; peak memory, the same way for every tool: "tree peak" = the largest summed
RSS of the command's process tree (wrapper included), sampled every 0.1 s from /proc, and
"maxrss" = ``ru_maxrss`` of the largest single process (exact, kernel-tracked). An end-to-end
row takes the CPU and wall sums of its steps and the largest peak of any step (the steps run
one after the other).

Targets (issue 3, item 8): textsieve >= 5x datatrove's docs/s per core end to end, lower peak
memory, and RPv2-compatible signatures >= 3,000 docs/s per core.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _datatrove_env as dtenv  # noqa: E402
import _neardup as nd  # noqa: E402
import _webdup as wd  # noqa: E402

from textsieve.dedup import fast_minhash, minhash  # noqa: E402
from textsieve.text.batch_encoding import encode_batch
from textsieve.text.normalize import normalize  # noqa: E402

RUNNER = Path(__file__).resolve().parent / "_datatrove_run.py"
TS = [sys.executable, "-m", "textsieve.cli"]
_WRAP = ("import json, resource, subprocess, sys\n"
         "with open(sys.argv[2], 'w') as log:\n"
         "    rc = subprocess.run(json.loads(sys.argv[1]), stdout=log, stderr=log).returncode\n"
         "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
         "print(json.dumps({'rc': rc, 'cpu': r.ru_utime + r.ru_stime, 'maxrss_kb': r.ru_maxrss}))\n")


@dataclass
class Run:
    label: str
    docs: int
    cpu: float
    wall: float
    tree_peak_mb: float
    maxrss_mb: float

    @property
    def per_core(self) -> float:
        return self.docs / self.cpu if self.cpu else float("inf")


_TICK = os.sysconf("SC_CLK_TCK")
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _tree_sample(root: int, cpu_seen: dict[int, float]) -> int:
    """Summed RSS (kB) of ``root``'s process tree now; records each member's CPU seconds
    (utime + stime from /proc/PID/stat) in ``cpu_seen``."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/statm") as fh:
                rss[int(pid)] = int(fh.read().split()[1]) * _PAGE_KB
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(pid))
        cpu[int(pid)] = (int(fields[11]) + int(fields[12])) / _TICK
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        if p != root:
            cpu_seen[p] = max(cpu_seen.get(p, 0.0), cpu.get(p, 0.0))
        todo.extend(children.get(p, []))
    return total


def measure(label: str, cmd: list[str], docs: int) -> Run:
    """Run ``cmd`` in a wrapper process; CPU of its tree, sampled tree RSS peak, ru_maxrss.

    CPU = the larger of the wrapper's RUSAGE_CHILDREN (exact, but it misses processes that are
    never waited for, e.g. pool workers a command leaves to exit on their own) and the sum of
    the last CPU time sampled from /proc for every process seen in the tree (misses at most
    the last 0.1 s of each)."""
    t = time.perf_counter()
    log = Path(tempfile.gettempdir()) / f"ts-dedup-speed-{os.getpid()}.log"
    p = subprocess.Popen([sys.executable, "-c", _WRAP, json.dumps(cmd), str(log)], stdout=subprocess.PIPE, text=True)
    peak, cpu_seen = 0, {}
    while p.poll() is None:
        peak = max(peak, _tree_sample(p.pid, cpu_seen))
        time.sleep(0.1)
    wall = time.perf_counter() - t
    res = json.loads(p.stdout.read())
    if res["rc"] != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{label}: command failed ({res['rc']}): {' '.join(cmd)}\n{tail}")
    log.unlink(missing_ok=True)
    cpu = max(res["cpu"], sum(cpu_seen.values()))
    return Run(label, docs, cpu, wall, peak / 1024, res["maxrss_kb"] / 1024)


def combine(label: str, runs: list[Run]) -> Run:
    return Run(label, runs[0].docs, sum(r.cpu for r in runs), sum(r.wall for r in runs),
               max(r.tree_peak_mb for r in runs), max(r.maxrss_mb for r in runs))


def print_table(runs: list[Run], base: Run | None) -> None:
    print(f"  {'':<44} {'docs':>9} {'CPU s':>8} {'wall s':>7} {'docs/s/core':>12} {'tree peak MB':>13} "
          f"{'maxrss MB':>10}" + ("  vs datatrove (speed, memory)" if base else ""))
    for r in runs:
        print_row(r, base)


def print_row(r: Run, base: Run | None) -> None:
    extra = ""
    if base and r is not base:
        extra = (f"  {r.per_core / base.per_core:6.1f}x faster, {r.tree_peak_mb / base.tree_peak_mb:5.2f}x tree peak, "
                 f"{r.maxrss_mb / base.maxrss_mb:5.2f}x maxrss")
    print(f"  {r.label:<44} {r.docs:>9,} {r.cpu:>8.1f} {r.wall:>7.1f} {r.per_core:>12,.0f} "
          f"{r.tree_peak_mb:>13,.0f} {r.maxrss_mb:>10,.0f}{extra}", flush=True)


def textsieve_e2e(inp: Path, work: Path, n: int, t: float, mode: str, workers: int) -> list[Run]:
    """annotate (signatures) + dedup fuzzy (LSH + components), each through the real CLI."""
    label = f"textsieve {mode}"
    ann = work / f"ann_{mode}_{n}"
    group = "minhash_fast" if mode == "fast" else "minhash"
    a = measure(f"{label}: annotate --signals {group}", TS + [
        "annotate", str(inp), "-o", str(ann), "--signals", group, "--workers", str(workers), "-q",
        "--overwrite"], n)
    cmd = TS + ["dedup", "fuzzy", str(ann), "--threshold", str(t), "-q", "--overwrite"]
    if mode == "fast":
        cmd += ["--bands", "fast"]
    d = measure(f"{label}: dedup fuzzy --threshold {t}" + (" --bands fast" if mode == "fast" else ""), cmd, n)
    return [a, d, combine(f"{label}: end to end (CLI)", [a, d])]


def kernels(texts: list[str]) -> list[str]:
    buf, off = encode_batch([normalize(x) for x in texts])
    out = []
    for name, fn in (("RPv2-compatible (SHA-1, §7)", minhash.signatures),
                     ("fast (xxh64 words, 32-bit mix; NOT RPv2)", fast_minhash.signatures)):
        fn(buf[: off[2]], off[:3])  # compile / load cache
        best = float("inf")
        for _ in range(3):
            c = time.process_time()
            fn(buf, off)
            best = min(best, time.process_time() - c)
        out.append(f"  signatures {name:<42} {len(texts) / best:>9,.0f} docs/s per core  "
                   f"({best / len(texts) * 1e6:5.1f} us/doc)")
    return out


def replicate(texts: list[str], n: int, folder: Path, seed: int = 0, shard_docs: int = 100_000) -> Path:
    """``n`` docs: the corpus cycled, each copy with 1-5 random word substitutions (plain JSONL)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    vocab = [w for x in texts[:200] for w in x.split()]
    for start in range(0, n, shard_docs):
        with open(folder / f"part-{start // shard_docs:05d}.jsonl", "w", encoding="utf-8") as fh:
            for k in range(start, min(start + shard_docs, n)):
                words = texts[k % len(texts)].split(" ")
                if k >= len(texts):
                    for _ in range(rng.randint(1, 5)):
                        words[rng.randrange(len(words))] = rng.choice(vocab)
                fh.write(json.dumps({"id": f"rep/{k}", "text": " ".join(words)}) + "\n")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--no-datatrove", action="store_true")
    ap.add_argument("--datatrove-limit", type=int, default=0, help="datatrove on the first N docs only (0: all)")
    ap.add_argument("--scale", default="100000,300000", help="comma list of sizes for part 2 ('' to skip)")
    ap.add_argument("--scale-1m", action="store_true", help="add 1,000,000 docs to part 2 (~15+ min here)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="annotate workers in part 2")
    ap.add_argument("--skip-dev", action="store_true", help="part 2 only")
    ap.add_argument("--scale-10m", action="store_true", help="part 3, the scale study (~40 min, ~25 GB of disk)")
    ap.add_argument("--study-sizes", default="1000000,10000000", help="part 3: subset size, full size")
    ap.add_argument("--memory", default="1GB", help="part 3: --memory of every step")
    ap.add_argument("--work-dir", type=Path, default=None, help="folder for temporary files (default: system temp)")
    ap.add_argument("--corpus-dir", type=Path, default=None,
                    help="part 3: keep the generated corpus here and reuse it when it is there (default: temporary)")
    args = ap.parse_args()
    corpus = args.corpus or nd.dev_corpus()
    docs = nd.load_docs(corpus)
    texts = [t for _, t in docs]
    t = args.threshold
    bands, rows = minhash.optimal_param(t)

    with tempfile.TemporaryDirectory(prefix="ts-dedup-speed-", dir=args.work_dir) as tmp:
        work = Path(tmp)
        if not args.skip_dev:
            print(f"Part 1: {corpus.name}, {len(docs):,} docs, threshold {t} ({bands}x{rows} bands), one core each")
            runs: list[Run] = []
            runs += textsieve_e2e(corpus, work, len(docs), t, "rpv2", 1)
            runs += textsieve_e2e(corpus, work, len(docs), t, "fast", 1)
            base = None
            if not args.no_datatrove:
                py = dtenv.ensure(quiet=True)
                n_dt = args.datatrove_limit or len(docs)
                in_dir = work / "dt_in"
                in_dir.mkdir()
                with gzip.open(corpus, "rt", encoding="utf-8") as src, open(in_dir / "docs.jsonl", "w") as dst:
                    for k, line in enumerate(src):
                        if k >= n_dt:
                            break
                        dst.write(line)
                base = measure(f"datatrove {dtenv.version()} 4 stages (13-gram, {bands}x{rows})", [
                    str(py), str(RUNNER), "dedup", str(in_dir), str(work / "dt"), str(work / "dt.json"),
                    "--ngram", "13", "--buckets", str(bands), "--rows", str(rows)], n_dt)
                stages = json.loads((work / "dt.json").read_text())["stage_cpu_s"]
                runs.append(base)
            print_table(runs, base)
            if base:
                print("  datatrove CPU s by stage (in-process): "
                      + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
                e2e = [r for r in runs if "end to end" in r.label]
                for r in e2e:
                    fast = r.per_core >= 5 * base.per_core
                    tree, rss = r.tree_peak_mb < base.tree_peak_mb, r.maxrss_mb < base.maxrss_mb
                    print(f"  target >= 5x datatrove docs/s per core and lower peak memory: {r.label}: "
                          f"{r.per_core / base.per_core:.1f}x ({'met' if fast else 'NOT met'}); tree peak "
                          f"{r.tree_peak_mb:.0f} vs {base.tree_peak_mb:.0f} MB ({'met' if tree else 'NOT met'}); "
                          f"maxrss {r.maxrss_mb:.0f} vs {base.maxrss_mb:.0f} MB ({'met' if rss else 'NOT met'}) -> "
                          + ("MET" if fast and tree and rss else "NOT MET"))
            for line in kernels(texts):
                print(line)
            print("  target RPv2-compatible signatures >= 3,000 docs/s per core (kernel line above; the "
                  "annotate line adds reading, normalization and Parquet writing)")

        sizes = [int(x) for x in args.scale.split(",") if x.strip()]
        if args.scale_1m:
            sizes.append(1_000_000)
        if sizes:
            print(f"\nPart 2: textsieve rpv2 at scale (dev corpus replicated with 1-5 word edits per copy), "
                  f"annotate --workers {args.workers}, threshold {t}")
            scale_runs = []
            print_table([], None)
            for n in sizes:
                g = time.perf_counter()
                folder = replicate(texts, n, work / f"rep_{n}")
                gen = time.perf_counter() - g
                r = textsieve_e2e(folder, work, n, t, "rpv2", args.workers)
                for x in r:
                    x.label = f"{n:>9,} docs: " + x.label.split(": ", 1)[1]
                scale_runs += r
                for x in r:
                    print_row(x, None)
                print(f"  ({n:,} docs generated in {gen:.0f}s, not counted)", flush=True)
                subprocess.run(["rm", "-rf", str(folder), str(work / f"ann_rpv2_{n}")], check=False)

        if args.scale_10m:
            small, big = (int(x) for x in args.study_sizes.split(","))
            scale_study(texts, work, small, big, args.workers, args.memory, t, args.corpus_dir)


def _clusters(attrs: Path) -> tuple[object, int]:
    """The cluster columns of a dedup fuzzy output (one table) and how many documents are in a cluster."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    parts = sorted((attrs / "sets" / "dedup_fuzzy").glob("*.parquet"))
    tables = [pq.read_table(p) for p in parts]
    import pyarrow as pa
    table = pa.concat_tables(tables)
    col = next(c for c in table.column_names if c.endswith("_cluster"))
    return table, int(pc.sum(pc.is_valid(table.column(col))).as_py() or 0)


def _corpus(texts: list[str], folder: Path, n: int, shard: int) -> tuple[dict, float]:
    """The generated corpus in ``folder`` (made now, or reused when its facts say the same size)."""
    facts_file = folder.parent / f"{folder.name}.facts.json"  # beside it: inside, annotate would read it
    if facts_file.exists():
        facts = json.loads(facts_file.read_text())
        if facts.get("docs") == n and facts.get("shard_docs") == shard:
            return facts, 0.0
    g = time.perf_counter()
    facts = {**wd.generate(texts, n, folder, shard_docs=shard), "shard_docs": shard}
    facts_file.write_text(json.dumps(facts))
    return facts, time.perf_counter() - g


def scale_study(texts: list[str], work: Path, small: int, big: int, workers: int, memory: str, t: float,
                corpus_dir: Path | None = None) -> None:
    """Part 3: annotate (minhash) -> dedup fuzzy --verify exact at ``--memory`` on two generated
    web-like corpora of ``small`` and ``big`` documents, each with the same duplicate structure
    (a first-shards subset of the big one would hold cluster fragments only: fewer candidates per
    document, so its CPU per document would not be comparable)."""
    from textsieve.units import parse_size

    limit_mb = parse_size(memory) / 2**20
    shard = min(250_000, small)
    base = corpus_dir or work
    corpora = {}
    for n in (small, big):
        folder = base / f"web-{n}"
        facts, gen_s = _corpus(texts, folder, n, shard)
        corpora[n] = (folder, facts)
        print(f"\nPart 3 corpus: {n:,} web-like documents in {folder}: {facts['clusters']:,} clusters holding "
              f"{facts['clustered']:,} documents, the largest {facts['largest']:,} ("
              + (f"generated in {gen_s:.0f}s, not counted)" if gen_s else "reused)"), flush=True)
    print(f"Part 3: scale study, every step --memory {memory}, annotate --workers {workers}, dedup --workers "
          f"{workers}, threshold {t}", flush=True)
    print_table([], None)
    rows: dict[int, list[Run]] = {}
    found: dict[int, int] = {}
    for n, (src, _) in corpora.items():
        ann = work / f"ann_{n}"
        a = measure(f"{n:>10,}: annotate --signals minhash", TS + [
            "annotate", str(src), "-o", str(ann), "--signals", "minhash", "--workers", str(workers),
            "--memory", memory, "-q"], n)
        print_row(a, None)
        d = measure(f"{n:>10,}: dedup fuzzy --verify exact", TS + [
            "dedup", "fuzzy", str(ann), "--threshold", str(t), "--memory", memory, "--workers", str(workers),
            "-q"], n)
        print_row(d, None)
        e = combine(f"{n:>10,}: end to end", [a, d])
        print_row(e, None)
        rows[n] = [a, d, e]
        table, found[n] = _clusters(ann)
        if n == small:
            bounded = table
            u = measure(f"{n:>10,}: dedup fuzzy --memory 64GB", TS + [
                "dedup", "fuzzy", str(ann), "--threshold", str(t), "--memory", "64GB", "--workers",
                str(workers), "-q", "--overwrite"], n)
            print_row(u, None)
            unbounded, _ = _clusters(ann)
            same = bounded.equals(unbounded)
        subprocess.run(["rm", "-rf", str(ann)], check=False)
    print("  documents in a cluster (found / planted): "
          + "; ".join(f"{n:,}: {found[n]:,} / {corpora[n][1]['clustered']:,}" for n in corpora))
    peaks = [r.tree_peak_mb for rs in rows.values() for r in rs[:2]]
    ok_mem = max(peaks) < limit_mb
    print(f"  target tree peak RSS of every step < {memory}: largest {max(peaks):,.0f} MB -> "
          + ("MET" if ok_mem else "NOT MET"))
    for k, step in enumerate(("annotate", "dedup fuzzy")):
        us = [rows[n][k].cpu / n * 1e6 for n in (small, big)]
        print(f"  {step}: {us[0]:.0f} -> {us[1]:.0f} us/doc ({us[1] / us[0]:.2f}x)")
    per = {n: rs[2].cpu / n * 1e6 for n, rs in rows.items()}
    ratio = per[big] / per[small]
    print(f"  target CPU per document flat ({small:,} -> {big:,}): {per[small]:.0f} -> {per[big]:.0f} us/doc, "
          f"{ratio:.2f}x -> " + ("MET" if ratio <= 1.15 else "NOT MET"))
    print(f"  target same clusters as an unbounded run at {small:,}: "
          + ("MET (equal tables)" if same else "NOT MET"))


if __name__ == "__main__":
    main()
