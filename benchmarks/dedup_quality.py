"""Fuzzy-dedup quality: precision, recall and F1 per threshold against true Jaccard, for
textsieve (RPv2-compatible signatures, and the fast signature mode) and datatrove's MinHash.

Usage::

    python benchmarks/dedup_quality.py [--bases 500] [--variants 4] [--distractors 1000] [--seed 0]
                                       [--thresholds 1.0,0.9,0.8,0.7] [--no-datatrove] [--keep DIR]

The near-duplicate set (``_neardup.build_set``): real documents of the dev corpus, each with
edited copies (insertions, deletions, substitutions, boilerplate added/removed, paragraphs
shuffled, whitespace/case-only) at true Jaccard targets drawn from [0.55, 1], plus unrelated
distractors, all in one JSONL file that both tools read.

Truth: the exact Jaccard of each tool's *own* shingle sets, for every pair sharing a shingle:
textsieve's are RPv2's (13 normalized words, §7.1); datatrove's are the uint64 xxhash values of
its 13-grams of spaCy tokens of ``simplify_text`` (its ``get_shingles``: numbers -> 0, punctuation
-> spaces), i.e. exactly the sets its MinHash estimates. A pair is a true duplicate at t when
J >= t, predicted when both documents end up in one cluster.

datatrove configuration per threshold (its closest equivalent): ``MinhashConfig(n_grams=13,
num_buckets=b, hashes_per_bucket=r)`` with ``(b, r) = optimal_param(t, 128)`` — the very bands x
rows RPv2/textsieve use (1x128, 5x25, 9x13, 14x9), 64-bit xxhash, seed 1 (its default). So the
LSH S-curves are identical and differences come from shingling, hashing and clustering.
datatrove runs its 4 stages (signatures, buckets, cluster, filter) in its own virtualenv
(``_datatrove_env.py``), two thresholds at a time.

textsieve rows: ``ts rpv2`` / ``ts fast`` are the defaults: LSH candidate pairs kept only when
the exact Jaccard of their 13-word shingle sets is >= t (``dedup fuzzy --verify exact``), then
connected components; ``v.est``: kept when their MinHash-estimated Jaccard is >= t (``--verify
estimated``, no text re-read); ``v.none``: every candidate pair is an edge (``--verify none``,
RPv2 §8's clusters exactly). Verification removes LSH false positives before the connected
components. Every
textsieve row runs the real CLI: ``textsieve annotate --signals minhash`` (RPv2-compatible)
or ``--signals minhash_fast`` (fast mode, not RPv2-compatible), then ``textsieve dedup fuzzy``
(``--bands fast`` for the fast mode).

Target (issue 3, item 7): textsieve F1 >= datatrove F1 at each threshold.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _datatrove_env as dtenv  # noqa: E402
import _neardup as nd  # noqa: E402

from textsieve.dedup.minhash import optimal_param  # noqa: E402

RUNNER = Path(__file__).resolve().parent / "_datatrove_run.py"
DEFAULT_ROWS = ("ts rpv2", "ts fast")  # `dedup fuzzy` defaults (--verify exact); the target applies to these


def _labels(ids: list[str], by_id: dict[str, int]) -> np.ndarray:
    """Dense labels (-1: not clustered) from any cluster ids (textsieve's are uint64 id_ints)."""
    dense: dict[int, int] = {}
    return np.array([-1 if by_id.get(i, -1) == -1 else dense.setdefault(by_id[i], len(dense)) for i in ids],
                    dtype=np.int64)


def _bands_rows(threshold: float) -> str:
    """The LSH configuration both tools use at ``threshold``, as ``"<bands>x<rows>"`` for the table."""
    b, r = optimal_param(threshold)
    return f"{b}x{r}"


def run_datatrove(py: Path, in_dir: Path, work: Path, thresholds: list[float], parallel: int = 2) -> dict:
    """{t: {id: cluster}} from datatrove's pipeline, ``parallel`` thresholds at a time."""
    out, pending = {}, list(thresholds)
    running: list[tuple[float, subprocess.Popen, Path]] = []
    while pending or running:
        while pending and len(running) < parallel:
            t = pending.pop(0)
            b, r = optimal_param(t)
            res = work / f"dt_{t}.json"
            # the child gets its own copy of the log's descriptor inside Popen, so ours can close right away
            with open(work / f"dt_{t}.log", "w") as log:
                p = subprocess.Popen([str(py), str(RUNNER), "dedup", str(in_dir), str(work / f"dt_{t}"), str(res),
                                      "--ngram", "13", "--buckets", str(b), "--rows", str(r)], stdout=log, stderr=log)
            running.append((t, p, res))
        t, p, res = running.pop(0)
        if p.wait() != 0:
            raise RuntimeError(f"datatrove failed for threshold {t}; see {work / f'dt_{t}.log'}")
        data = json.loads(res.read_text())
        out[t] = dict(zip(data["ids"], data["cluster"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", type=int, default=500)
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--distractors", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--thresholds", default="1.0,0.9,0.8,0.7")
    ap.add_argument("--no-datatrove", action="store_true", help="textsieve only (no datatrove environment)")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temp folder)")
    args = ap.parse_args()
    thresholds = [float(x) for x in args.thresholds.split(",")]

    tmp = None
    if args.keep:
        work = args.keep
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ts-dedup-quality-")
        work = Path(tmp.name)
    in_dir = work / "in"
    in_dir.mkdir(exist_ok=True)

    t0 = time.perf_counter()
    docs = nd.build_set(nd.load_docs(nd.dev_corpus()), args.bases, args.variants, args.distractors, args.seed)
    jsonl = in_dir / "neardup.jsonl"
    nd.write_jsonl(docs, jsonl)
    ids = [d.id for d in docs]
    var_j = np.array([d.true_j for d in docs if d.family >= 0 and d.kind != "original"])
    print(f"set          {len(docs):,} docs: {args.bases} originals x {args.variants} edited copies + "
          f"{args.distractors} distractors (seed {args.seed}; built in {time.perf_counter() - t0:.1f}s)")
    print("copy J       " + "  ".join(f"[{lo:.1f},{hi:.1f}):{int(((var_j >= lo) & (var_j < hi)).sum())}"
                                      for lo, hi in ((0, .5), (.5, .6), (.6, .7), (.7, .8), (.8, .9), (.9, 1.0)))
          + f"  =1.0:{int((var_j == 1.0).sum())}")

    truth_ts = nd.pair_jaccard([nd.rpv2_shingles(d.text) for d in docs])
    results: list[tuple[str, float, str, nd.Scores]] = []
    paths = set()
    runs = [("rpv2", "exact", "ts rpv2"), ("fast", "exact", "ts fast"),
            ("rpv2", "estimated", "ts rpv2 v.est"), ("fast", "estimated", "ts fast v.est"),
            ("rpv2", "none", "ts rpv2 v.none"), ("fast", "none", "ts fast v.none")]
    for mode, verify, label in runs:
        t = time.perf_counter()
        by_id, path = nd.textsieve_clusters(jsonl, work, thresholds, mode, verify=verify)
        paths.add(path)
        for th in thresholds:
            lab = _labels(ids, {k: v[th] for k, v in by_id.items()})
            results.append((label, th, _bands_rows(th), nd.score(lab, truth_ts, th)))
        print(f"{label:<15}{time.perf_counter() - t:6.1f}s wall")

    dt_version = None
    if not args.no_datatrove:
        py = dtenv.ensure(quiet=True)
        dt_version = dtenv.version()
        t = time.perf_counter()
        sh = work / "dt_shingles.npz"
        subprocess.run([str(py), str(RUNNER), "shingles", str(in_dir), str(sh)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        z = np.load(sh)
        assert list(z["ids"]) == ids
        off, hashes = z["offsets"], z["hashes"]  # (each NpzFile access re-reads the array)
        truth_dt = nd.pair_jaccard([hashes[off[k]:off[k + 1]] for k in range(len(ids))])
        dt = run_datatrove(py, in_dir, work, thresholds)
        for th in thresholds:
            results.append(("datatrove", th, _bands_rows(th), nd.score(_labels(ids, dt[th]), truth_dt, th)))
        print(f"datatrove    {time.perf_counter() - t:6.1f}s wall (datatrove {dt_version}, 4 stages x "
              f"{len(thresholds)} configs + shingle truth)")

    print()
    print(f"{'threshold':>9} {'tool':<15} {'bands':>6} {'true':>7} {'pred':>7} {'TP':>7} "
          f"{'precision':>9} {'recall':>7} {'F1':>7} {'F1 vs datatrove':>16}")
    verdict = []
    for th in thresholds:
        rows = [r for r in results if r[1] == th]
        dtf = next((r[3].f1 for r in rows if r[0] == "datatrove"), None)
        for tool, _, bands, s in rows:
            rel = "" if dtf is None or tool == "datatrove" else f"{s.f1 - dtf:+.3f}"
            print(f"{th:>9} {tool:<15} {bands:>6} {s.true_pairs:>7} {s.predicted_pairs:>7} {s.tp:>7} "
                  f"{s.precision:>9.3f} {s.recall:>7.3f} {s.f1:>7.3f} {rel:>16}")
            if dtf is not None and tool in DEFAULT_ROWS:
                verdict.append((tool, th, s.f1 >= dtf))
    print()
    print("textsieve path: " + "; ".join(sorted(paths)))
    if verdict:
        bad = [f"{tool}@{th}" for tool, th, ok in verdict if not ok]
        print(f"target F1 >= datatrove at every threshold, textsieve defaults ({' and '.join(DEFAULT_ROWS)}): "
              + ("MET" if not bad else "NOT MET for " + ", ".join(bad)))
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
