"""Added cost of the n-gram LM and RPv2 importance-weight signals in `annotate`, and training time.

In one run, on the same documents (the first N of the dev web sample), 1 worker:
  1. plain `textsieve annotate` (28 RPv2 rule signals + MinHash),
  2. the same plus `--model wiki=LM.tsm` (ts_perplexity_wiki, ts_perplexity_wiki_bucket),
  3. the same plus the LM exported as ARPA (`--model wa=LM.arpa.gz`, ts_perplexity_wa),
  4. the same plus `--model wikipedia=IMP.tsm` (rps_doc_wikipedia_importance, its RPv2 length
     correction and ts_doc_wikipedia_importance_length_corrected),
and prints each run's time per document and its ratio to plain annotate. Target (issue 5): each
model adds at most 2x to annotate's time per document (ratio <= 2.0), and training on the dev
target set (target_wiki, 607 docs) takes under a minute (the importance model also reads the
15k-document web sample as its source).

Usage: python benchmarks/annotate_models.py [--docs N] [--order 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def train_lm_timed(target: str, out: Path, order: int) -> float:
    from textsieve.models.perplexity import LMTrainConfig, train_lm

    t = time.perf_counter()
    train_lm(LMTrainConfig(corpus=[target], output=str(out / "wiki.tsm"), order=order,
                           arpa=str(out / "wiki.arpa.gz"), progress=False))
    return time.perf_counter() - t


def train_importance_timed(target: str, source: str, out: Path) -> float:
    from textsieve.models.importance import histogram, save_importance_model
    from textsieve.models.perplexity import texts_and_digest

    t = time.perf_counter()
    hists = []
    for inputs in ([target], [source]):
        texts, _ = texts_and_digest(inputs)
        hists.append(histogram(texts[i:i + 2000] for i in range(0, len(texts), 2000)))
    save_importance_model(str(out / "imp.tsm"), hists[0], hists[1], name="wikipedia")
    return time.perf_counter() - t


def annotate(path: str, resources: str, models: dict[str, str]) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as out:
        cfg = AnnotateConfig(inputs=[path], output=out, workers=1, resources=resources, progress=False,
                             lang_field="meta.lang", models=dict(models))
        res = run_annotate(cfg)
        return res.documents, res.seconds


def signal_cost(path: str, models: dict[str, str], batch: int = 500) -> float:
    """Seconds the model's own signal functions take on all documents of `path`, in batches as
    annotate makes them, with the shared views (normalized text) already computed, as they are in
    annotate for the rule signals. Model loading excluded."""
    from textsieve.models.registry import model_signals, resolve_model
    from textsieve.text.views import BatchViews

    loaded, sigs = {}, []
    for name, p in models.items():
        kind, obj, _ = resolve_model(name, p)
        loaded[name] = obj
        sigs += model_signals(kind, name, obj)
    with open(path, encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    total = 0.0
    for _rep in range(2):  # the first pass warms up (compile, table build)
        total = 0.0
        for i in range(0, len(texts), batch):
            chunk = texts[i:i + batch]
            v = BatchViews(chunk, [None] * len(chunk), models=loaded)
            v.normalized_utf8  # noqa: B018  shared with the rule signals
            t = time.perf_counter()
            for sig in sigs:
                sig.fn(v)
            total += time.perf_counter() - t
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default=str(SHARED / "corpora/dev/web_sample.jsonl.gz"))
    ap.add_argument("--target", default=str(SHARED / "corpora/dev/target_wiki.jsonl.gz"))
    ap.add_argument("--resources", default=str(SHARED / "golden/rpv2_resources"))
    ap.add_argument("--docs", type=int, default=5000, help="annotate the first N documents of --input")
    ap.add_argument("--order", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2, help="best of this many timed runs per configuration")
    args = ap.parse_args()
    for p in (args.input, args.target):
        if not Path(p).exists():
            print(f"input not found: {p} (set TEXTSIEVE_SHARED)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t_lm = train_lm_timed(args.target, work, args.order)  # includes numba compilation on a cold cache
        t_imp = train_importance_timed(args.target, args.input, work)
        t_lm2 = train_lm_timed(args.target, work, args.order)  # warm
        t_imp2 = train_importance_timed(args.target, args.input, work)
        sample = work / "sample.jsonl"
        with gzip.open(args.input, "rt", encoding="utf-8") as src, open(sample, "w", encoding="utf-8") as dst:
            for i, line in enumerate(src):
                if i >= args.docs:
                    break
                dst.write(line)
        configs = [
            ("plain annotate (28 rule signals + MinHash)", {}),
            (f"+ {args.order}-gram LM (.tsm): ts_perplexity_*", {"wiki": str(work / "wiki.tsm")}),
            (f"+ {args.order}-gram LM (ARPA): ts_perplexity_*", {"wa": str(work / "wiki.arpa.gz")}),
            ("+ importance (.tsm): 3 rps/ts importance", {"wikipedia": str(work / "imp.tsm")}),
            ("+ LM and importance together", {"wiki": str(work / "wiki.tsm"), "wikipedia": str(work / "imp.tsm")}),
        ]
        rows = []
        own = {}
        for name, models in configs:
            annotate(str(sample), args.resources, models)  # warm-up: compile/cache load, page cache
            best = min(annotate(str(sample), args.resources, models)[1] for _ in range(args.repeat))
            rows.append((name, best))
            if models:
                own[name] = signal_cost(str(sample), models)
    n = args.docs
    base = rows[0][1]
    print(f"{'run (1 worker, ' + str(n) + ' docs)':<48} {'seconds':>8} {'us/doc':>8} {'added us/doc':>13} "
          f"{'ratio':>6} {'signals alone us/doc':>21} {'ratio':>6}")
    for name, s in rows:
        alone = own.get(name)
        extra = f"{alone / n * 1e6:>21.0f} {(base + alone) / base:>6.2f}" if alone is not None else ""
        print(f"{name:<48} {s:>8.2f} {s / n * 1e6:>8.0f} {(s - base) / n * 1e6:>13.0f} {s / base:>6.2f} {extra}")
    print("(ratio = time per document with the model / plain annotate; 'signals alone' times only the model's "
          "signal functions on the same batches, without model loading and run-to-run noise)")
    worst = max(s / base for _, s in rows[1:4])
    print(f"\ntarget: each model <= 2.0x plain annotate per document: {'met' if worst <= 2.0 else 'NOT met'} "
          f"(worst single model {worst:.2f}x)")
    print(f"training on {Path(args.target).name}: train lm {t_lm2:.1f} s warm ({t_lm:.1f} s first run, incl. "
          f"5-fold cutoffs and ARPA export); train importance {t_imp2:.1f} s warm ({t_imp:.1f} s first run, "
          f"source = {Path(args.input).name}); target < 60 s: "
          f"{'met' if max(t_lm, t_imp) < 60 else 'NOT met'}")
    print(json.dumps({"docs": n, "seconds": dict(rows), "train_lm_s": t_lm2, "train_importance_s": t_imp2}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
