"""DSIR benchmark: textsieve vs the reference package `data-selection` (PyPI 1.0.3).

On the dev corpora (raw pool = web_sample, target = target_wiki), both select the same k
documents; printed per selector: wall time, CPU time, peak memory (summed RSS of the process tree)
and KL reduction. The KL reduction is measured in a hash space neither selector uses (our
hashed n-grams with seed 777; the reference hashes with SHA-256, textsieve with seed 0) and
against target documents held out of the fit: the target's articles alternate between the fit
half and the held-out half, so no article is on both sides. A random selection of k is the floor.

Then textsieve's weight choices on the same fit: raw (the reference's sum of log ratios) vs
length-normalised ((sum + n0 * pool mean) / (n-grams + n0), n0 = 0 the plain mean) at several temperatures, with
their KL reduction, effective sample size (ESS) and source diversity (distinct id prefixes among
the selected documents).

textsieve's time is end to end from the raw JSONL: `annotate` (all 28 signals + MinHash, which a
curation pipeline computes anyway), `dsir fit`, resampling and writing the selected documents;
the DSIR part alone is printed too. Targets (issue 4): KL reduction >= the reference's, and
>= 3x faster end to end.

Last (issue 15, `--skip-embed` leaves it out): embedding targeting (`dsir fit --features embed`),
its combination with the n-grams (`--features combined`), n-gram DSIR and random, each with the
KL reduction above and the `eval lm` perplexity of the held-out target under an LM trained on the
selection.

Usage:
  python benchmarks/dsir.py --setup     # once: benchmarks/.venvs/dsir with data-selection from PyPI
  python benchmarks/dsir.py [--k 1000] [--skip-reference]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", HERE.parents[1] / "shared"))
VENV = HERE / ".venvs" / "dsir"
REFERENCE = "data-selection==1.0.3"
EVAL_SEED = 777

WRAPPER = textwrap.dedent("""
    # Runs argv, sampling its whole process tree every 0.1 s from /proc: CPU time (utime+stime,
    # last value seen per pid; RUSAGE_CHILDREN misses pool workers nobody waits for) and the
    # peak of the tree's summed RSS.
    import json, os, resource, subprocess, sys, threading, time
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    cpu, peak, done = {}, [0], threading.Event()
    def tree(root):
        kids = {}
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                    kids.setdefault(int(st[1]), []).append((int(p), st))
                except OSError:
                    pass
        out, todo = [], [root]
        while todo:
            for pid, st in kids.get(todo.pop(), []):
                out.append((pid, st)); todo.append(pid)
        return out
    def sample(root):
        while not done.is_set():
            rss = 0
            for pid, st in tree(root):
                cpu[pid] = (int(st[11]) + int(st[12])) / tick
                rss += int(st[21]) * page
            peak[0] = max(peak[0], rss)
            time.sleep(0.1)
    t = time.perf_counter()
    proc = subprocess.Popen(sys.argv[1:])
    th = threading.Thread(target=sample, args=(os.getpid(),), daemon=True); th.start()
    rc = proc.wait(); wall = time.perf_counter() - t
    done.set(); th.join()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"rc": rc, "wall": wall, "cpu": max(sum(cpu.values()), ru.ru_utime + ru.ru_stime),
                      "maxrss_mb": max(peak[0], ru.ru_maxrss * 1024) / 2**20}))
""")

REFERENCE_DRIVER = textwrap.dedent("""
    import sys, time
    from data_selection import HashedNgramDSIR
    raw, target, cache, out, k = sys.argv[1:6]
    d = HashedNgramDSIR([raw], [target], cache_dir=cache, num_buckets=10000, ngrams=2)
    d.fit_importance_estimator(num_tokens_to_fit="auto")
    d.compute_importance_weights()
    d.resample(out_dir=out, num_to_sample=int(k), cache_dir=cache + "/resampled")
""")

TEXTSIEVE_DRIVER = textwrap.dedent("""
    import gzip, json, subprocess, sys, time
    from textsieve.cli import main
    from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents
    from textsieve.dsir.resample import resample
    raw, target, ann, out, k, resources = sys.argv[1:7]
    t0 = time.perf_counter()
    assert main(["annotate", raw, "-o", ann, "--resources", resources, "--lang-field", "meta.lang", "-q"]) == 0
    t1 = time.perf_counter()
    assert main(["dsir", "fit", "--target", target, "--raw", ann, "--name", "wiki", "-q"]) == 0
    r = resample(ann, [("wiki", 1.0)], k=int(k), seed=0)
    want = {}
    for s, row, c in zip(r.shard, r.row, r.count):
        want.setdefault(s, {})[int(row)] = int(c)
    fs, paths = attribute_shards(ann)
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for p in paths:
            meta = read_shard_meta(fs, p)
            rows = want.get(meta["source_shard"]["rel"], {})
            for doc in source_documents(meta):
                for _ in range(rows.get(doc.row, 0)):
                    fh.write(json.dumps({"id": doc.id, "text": doc.text}, ensure_ascii=False) + "\\n")
    t2 = time.perf_counter()
    print(json.dumps({"annotate_s": t1 - t0, "dsir_s": t2 - t1, "ess": r.ess}), file=sys.stderr)
""")


def setup() -> None:
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    (VENV.parent / ".gitignore").write_text("*\n")
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", REFERENCE], check=True)
    print(f"installed {REFERENCE} into {VENV}")


def measured(cmd: list[str]) -> tuple[dict, str]:
    """Run `cmd` under a wrapper process that reports its children's CPU time and peak RSS."""
    p = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True)
    stats = json.loads(p.stdout.strip().splitlines()[-1])
    if stats["rc"] != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return stats, p.stderr


def read_jsonl(path: Path) -> list[dict]:
    """Every record of a JSON-lines file, gzip-compressed when its name ends in ``.gz``."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def split_target(path: Path, tmp: Path) -> tuple[Path, Path, int, int]:
    docs = read_jsonl(path)
    articles = list(dict.fromkeys(d["id"].rsplit("/", 1)[0] for d in docs))
    held = {a for i, a in enumerate(articles) if i % 2}
    fit = [d for d in docs if d["id"].rsplit("/", 1)[0] not in held]
    hold = [d for d in docs if d["id"].rsplit("/", 1)[0] in held]
    out = []
    for name, part in (("target_fit.jsonl", fit), ("target_heldout.jsonl", hold)):
        p = tmp / name
        p.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in part), encoding="utf-8")
        out.append(p)
    return out[0], out[1], len(fit), len(hold)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setup", action="store_true", help="create the reference's virtualenv and exit")
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--skip-embed", action="store_true", help="leave out the embedding-targeting table (issue 15)")
    args = ap.parse_args()
    if args.setup:
        setup()
        return 0
    dev = SHARED / "corpora" / "dev"
    if not dev.is_dir():
        raise SystemExit(f"dev corpora not found at {dev} (set TEXTSIEVE_SHARED)")
    if not args.skip_reference and not (VENV / "bin" / "python").exists():
        raise SystemExit(f"reference environment missing: run `python {sys.argv[0]} --setup` first")
    from textsieve.dsir.resample import resample
    from textsieve.eval.kl import kl_divergence
    from textsieve.text.hashed_ngrams import HashedNgramParams, bucket_counts

    raw = dev / "web_sample.jsonl.gz"
    resources = SHARED / "golden" / "rpv2_resources"
    pool = read_jsonl(raw)
    by_id = {d["id"]: d["text"] for d in pool}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        tfit, thold, n_fit, n_hold = split_target(dev / "target_wiki.jsonl.gz", tmp)
        params = HashedNgramParams(seed=EVAL_SEED)
        tc, _ = bucket_counts((d["text"] for d in read_jsonl(thold)), params)
        pc, _ = bucket_counts((d["text"] for d in pool), params)
        kl_pool = kl_divergence(tc, pc)

        def kl_red(texts: list[str]) -> float:
            return kl_pool - kl_divergence(tc, bucket_counts(texts, params)[0])

        def prefixes(ids) -> int:
            return len(Counter(str(i).split("/", 1)[0] for i in ids))

        rows = []
        # textsieve, end to end
        ann, sel = tmp / "ann", tmp / "textsieve_selected.jsonl.gz"
        st, err = measured([sys.executable, "-c", TEXTSIEVE_DRIVER, str(raw), str(tfit), str(ann), str(sel),
                            str(args.k), str(resources)])
        parts = json.loads(err.strip().splitlines()[-1])
        ts_docs = read_jsonl(sel)
        rows.append(("textsieve (annotate+dsir)", st, len(ts_docs), kl_red([d["text"] for d in ts_docs]),
                     prefixes(d["id"] for d in ts_docs), parts["ess"]))
        ref = None
        if not args.skip_reference:
            out = tmp / "ref_out"
            plain = tmp / "web_sample.jsonl"  # the reference's default loader reads uncompressed JSONL only
            with gzip.open(raw, "rb") as src, open(plain, "wb") as dst:
                dst.write(src.read())
            ref, _ = measured([str(VENV / "bin" / "python"), "-c", REFERENCE_DRIVER, str(plain), str(tfit),
                               str(tmp / "ref_cache"), str(out), str(args.k)])
            ref_docs = [d for f in sorted(out.glob("*.jsonl")) for d in read_jsonl(f)]
            rows.append((f"data-selection {REFERENCE.split('==')[1]}", ref, len(ref_docs),
                         kl_red([d["text"] for d in ref_docs]), prefixes(d["id"] for d in ref_docs), None))
        rnd = np.random.default_rng(0).choice(len(pool), args.k, replace=False)
        rand_kl = kl_red([pool[i]["text"] for i in rnd])

        print(f"pool {len(pool):,} docs; target fit {n_fit} docs / held out {n_hold} docs (by article); "
              f"k = {args.k:,}; KL(held-out target || pool) = {kl_pool:.4f} in hash space seed {EVAL_SEED}; "
              f"{os.cpu_count()} cores\n")
        print(f"{'selector':<28}{'wall s':>8}{'CPU s':>8}{'peak MB':>9}{'docs':>7}{'KL red.':>9}"
              f"{'sources':>9}{'ESS':>9}")
        for name, s, n, kr, src, ess in rows:
            print(f"{name:<28}{s['wall']:>8.1f}{s['cpu']:>8.1f}{s['maxrss_mb']:>9.0f}{n:>7,}{kr:>9.4f}{src:>9}"
                  f"{'' if ess is None else f'{ess:.1f}':>9}")
        print(f"{'random':<28}{'':>8}{'':>8}{'':>9}{args.k:>7,}{rand_kl:>9.4f}"
              f"{prefixes(pool[i]['id'] for i in rnd):>9}{args.k:>9}")
        print(f"\ntextsieve parts: annotate {parts['annotate_s']:.1f} s, "
              f"dsir fit+resample+write {parts['dsir_s']:.1f} s")
        if ref:
            ts = rows[0][1]
            print(f"speed-up vs reference: wall {ref['wall'] / ts['wall']:.1f}x end to end "
                  f"({ref['wall'] / parts['dsir_s']:.1f}x DSIR part alone), CPU {ref['cpu'] / ts['cpu']:.1f}x; "
                  f"KL reduction {rows[0][3]:.4f} vs {rows[1][3]:.4f}")

        print("\nweight choices (same fit; without replacement, seed 0; n0 = prior n-grams of the normalised "
              "score (sum + n0 mu)/(n + n0), mu the pool mean, n0 = 0 the plain mean; * = default):")
        print(f"{'weight':<12}{'n0':>5}{'T':>7}{'min tok':>8}{'KL red.':>9}{'ESS':>10}{'sources':>9}{'tokens':>10}")
        from textsieve.dsir.defaults import DEFAULT_MIN_TOKENS, DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE

        settings = [("raw", 0, 1.0, 1), ("raw", 0, 1.0, 100)]
        settings += [("normalized", 0, t, 20) for t in (1.0, 0.1, 0.05, 0.03, 0.02, 0.015)]
        settings += [("normalized", n0, t, 20) for n0 in (25, 50, 200) for t in (0.05, 0.02, 0.015)]
        for weight, n0, temp, mt in settings:
            r = resample(str(ann), [("wiki", 1.0)], k=args.k, weight=weight, temperature=temp, min_tokens=mt,
                         prior_ngrams=n0)
            texts = [by_id[i] for i, c in zip(r.id, r.count) for _ in range(int(c))]
            star = "*" if (weight, n0, temp, mt) == ("normalized", DEFAULT_PRIOR_NGRAMS, DEFAULT_TEMPERATURE,
                                                     DEFAULT_MIN_TOKENS) else ""
            print(f"{weight + star:<12}{n0 if weight == 'normalized' else '':>5}{temp:>7.3g}{mt:>8}"
                  f"{kl_red(texts):>9.4f}{r.ess:>10.1f}{prefixes(r.id):>9}{r.tokens:>10,}")
        if not args.skip_embed:
            embedding_rows(ann, tfit, thold, args.k, by_id, pool, kl_red, prefixes, tmp)
    return 0


def embedding_rows(ann: Path, tfit: Path, thold: Path, k: int, by_id: dict, pool: list[dict], kl_red, prefixes,
                   tmp: Path) -> None:
    """Issue 15: hashed-n-gram DSIR vs embedding targeting vs their combination vs random, on the
    same pool and fit half; KL reduction (seed-777 hash space) and `eval lm` perplexity of the
    held-out target under a Kneser-Ney LM trained on each selection (and on a token-matched
    random sample, the `eval lm` baseline)."""
    import time

    from textsieve.cli import main as cli
    from textsieve.dsir.resample import resample
    from textsieve.eval.lm import LMEvalConfig, evaluate_lm

    t = time.perf_counter()
    assert cli(["embed", str(ann), "-q"]) == 0
    print(f"\nembedding targeting (issue 15): embed {time.perf_counter() - t:.1f} s", end="")
    for name, feats in (("wiki_emb", "embed"), ("wiki_comb", "combined")):
        t = time.perf_counter()
        assert cli(["dsir", "fit", "--target", str(tfit), "--raw", str(ann), "--name", name, "--features", feats,
                    "-q"]) == 0
        print(f", fit {feats} {time.perf_counter() - t:.1f} s", end="")
    print(f"; k = {k:,}, without replacement, seed 0; LM = `eval lm` (KN order 3) on the held-out target; "
          "ppl random = the token-matched random sample of `eval lm`")
    runs = [("n-gram DSIR (default)", "wiki", {}),
            ("embedding (default)", "wiki_emb", {}),
            ("embedding, T_eff = 1", "wiki_emb", {"weight": "raw", "temperature": 1.0}),
            ("combined (default)", "wiki_comb", {}),
            ("combined, T_eff = 1", "wiki_comb", {"weight": "raw", "temperature": 1.0})]
    print(f"{'selector':<24}{'KL red.':>9}{'ESS':>9}{'sources':>9}{'words':>10}{'ppl':>9}{'ppl random':>12}")
    selections = []
    for label, name, kw in runs:
        r = resample(str(ann), [(name, 1.0)], k=k, seed=0, **kw)
        selections.append((label, [i for i, c in zip(r.id, r.count) for _ in range(int(c))], r.ess))
    rng_idx = np.random.default_rng(0).choice(len(pool), k, replace=False)
    selections.append(("random", [pool[i]["id"] for i in rng_idx], float(k)))
    for label, ids, ess in selections:
        texts = [by_id[i] for i in ids]
        sel = tmp / "sel.jsonl"
        sel.write_text("".join(json.dumps({"id": i, "text": x}, ensure_ascii=False) + "\n"
                               for i, x in zip(ids, texts)), encoding="utf-8")
        lm = evaluate_lm(LMEvalConfig(selection=str(sel), target=str(thold), pool=str(ann), heldout_fraction=1.0,
                                      progress=False))
        toks = sum(len(x.split()) for x in texts)
        print(f"{label:<24}{kl_red(texts):>9.4f}{ess:>9.1f}{prefixes(ids):>9}{toks:>10,}{lm.perplexity:>9.1f}"
              f"{lm.perplexity_random:>12.1f}")


if __name__ == "__main__":
    sys.exit(main())
