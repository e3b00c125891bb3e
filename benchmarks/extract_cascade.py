"""How far a fast-engine-then-trafilatura cascade can go on the extraction dev pages (issue 27).

Usage: python benchmarks/extract_cascade.py [--shared DIR] [--fast textsieve-rules] [--check resiliparse]
                                            [--speedup 5]

Per page, in one process: decode, then the fast engine, the check engine (a second fast view)
and trafilatura, each timed alone (CPU ms, `time.process_time`), and each output scored with the
set's own `score_dev.count_page` (TP/FP/FN per page, summed: the scorer's micro F1). Printed:

1. each engine's F1 and ms per page;
2. the oracle curve: F1 when the k pages on which trafilatura gains most are sent to it, for
   fallback shares up to the one the `--speedup` target allows (fast + check + share x
   trafilatura <= trafilatura / speedup). No real predictor does better than this curve, so it
   says whether a cascade alone can reach the target;
3. a cascade on cheap features, two-fold (pages split by a hash of their id; the threshold is
   the tuning half's quantile at the fallback share, F1 and speed counted on the other half):
   `short` sends a page whose fast text is short for its HTML, `disagree` one on which the two
   fast views disagree (word-set Jaccard), at the budget's share, 10% and 20%.

This measured the rule engine (now `textsieve-rules`); the learned classifier's cascade is the
`cascade` engine, scored held out by benchmarks/extract.py.

Measured 2026-12-06 on the 2-core dev machine: textsieve (rules) 0.907 at 4.8-5.1 ms, resiliparse 0.871
at 2.6 ms, trafilatura 0.929 at 32-34 ms. The 5x budget (~6.5-6.9 ms a page) leaves the textsieve
engine a ~5% fallback share (none once a second view is computed), and even the oracle's 5%
reaches only ~0.927 (30 pages, 6%, match trafilatura). The `short` cascade gets 0.916 at 6%
fallback and 5.1x, and no more than 0.918 at 10-20%. So a cascade alone cannot meet the target:
the fast engine itself has to gain (a learned block classifier), and a cascade then has fewer
pages to send.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

from extract import DEFAULT_SHARED, load_pages

SLOW = "trafilatura"


def _counts(extraction_dir: Path, fast: str, check: str) -> tuple[dict[str, dict], dict[str, int]]:
    """{page: {engine: (counts, ms, text)}} and each page's HTML length."""
    sys.path.insert(0, str(extraction_dir))
    import json

    import score_dev

    from textsieve.extraction.decode import decode_html
    from textsieve.extraction.engines import get_engine

    expect = json.loads((extraction_dir / "expectations.json").read_text())
    engines = {n: get_engine(n) for n in dict.fromkeys((fast, check, SLOW))}
    pages = load_pages(extraction_dir, None)
    html = {p.page_id: decode_html(p.body, None).text for p in pages}
    for e in engines.values():  # lazy imports are not page costs
        e.extract(html[pages[0].page_id], pages[0].url)
    out: dict[str, dict] = {}
    for p in pages:
        out[p.page_id] = {}
        for name, engine in engines.items():
            t = time.process_time()
            text = engine.extract(html[p.page_id], p.url).text
            ms = 1000 * (time.process_time() - t)
            out[p.page_id][name] = (score_dev.count_page(expect[p.page_id], text), ms, text)
    return out, {k: len(v) for k, v in html.items()}


def f1(rows: dict[str, dict], sent: set[str], fast: str) -> float:
    tp = fp = fn = 0
    for pid, r in rows.items():
        c = r[SLOW][0] if pid in sent else r[fast][0]
        tp, fp, fn = tp + c[0], fp + c[1], fn + c[2]
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def _jaccard(a: str, b: str) -> float:
    x, y = set(a.split()), set(b.split())
    return len(x & y) / len(x | y) if x | y else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default=str(DEFAULT_SHARED))
    ap.add_argument("--fast", default="textsieve-rules")
    ap.add_argument("--check", default="resiliparse")
    ap.add_argument("--speedup", type=float, default=5.0)
    args = ap.parse_args()
    rows, html_len = _counts(Path(args.shared) / "corpora" / "extraction", args.fast, args.check)
    n = len(rows)
    ms = {e: sum(r[e][1] for r in rows.values()) / n for e in (args.fast, args.check, SLOW)}
    for e in dict.fromkeys((args.fast, args.check, SLOW)):
        print(f"{e:18} F1 {f1(rows, set(), e):.4f}  {ms[e]:6.2f} ms/page")
    budget = ms[SLOW] / args.speedup
    share_alone = max(0.0, (budget - ms[args.fast]) / ms[SLOW])
    share_checked = max(0.0, (budget - ms[args.fast] - ms[args.check]) / ms[SLOW])
    print(f"\n{args.speedup:g}x budget: {budget:.2f} ms/page -> fallback share at most {share_alone:.1%} "
          f"(fast alone), {share_checked:.1%} (fast + check)")

    def gain(pid: str) -> int:
        a, b = rows[pid][args.fast][0], rows[pid][SLOW][0]
        return 2 * (b[0] - a[0]) - (b[1] - a[1]) - (b[2] - a[2])

    order = sorted(rows, key=lambda p: (-gain(p), p))
    print("\noracle (the pages trafilatura improves most sent to it):")
    print(f"{'share':>7} {'pages':>6} {'F1':>7} {'ms/page':>8} {'speedup':>8}")
    for share in (0.0, 0.02, share_alone, 0.05, 0.06, 0.10, 0.20, sum(gain(p) > 0 for p in rows) / n):
        k = round(share * n)
        cost = ms[args.fast] + share * ms[SLOW]
        print(f"{share:7.1%} {k:6d} {f1(rows, set(order[:k]), args.fast):7.4f} {cost:8.2f} {ms[SLOW] / cost:7.1f}x")

    views = {"short": (lambda p, r: len(r[args.fast][2]) / max(1, html_len[p]), ms[args.fast]),
             "disagree": (lambda p, r: _jaccard(r[args.fast][2], r[args.check][2]), ms[args.fast] + ms[args.check])}
    half = {p: int(hashlib.sha256(p.encode()).hexdigest(), 16) % 2 for p in rows}
    print("\ncascade on cheap features, two-fold (the threshold is the tuning half's quantile at the share; "
          "F1 and speed on the other half, both folds pooled):")
    print(f"{'feature':>9} {'share':>6} {'held-out F1':>12} {'fallback':>9} {'speedup':>8}")
    for name, (feature, base_ms) in views.items():
        doubt = {p: feature(p, r) for p, r in rows.items()}
        for share in (share_alone if name == "short" else share_checked, 0.10, 0.20):
            sent: set[str] = set()
            for fold in (0, 1):
                tune = sorted(doubt[p] for p in rows if half[p] != fold)
                k = int(share * len(tune))
                if k:
                    sent |= {p for p in rows if half[p] == fold and doubt[p] <= tune[k - 1]}
            cost = base_ms + len(sent) / n * ms[SLOW]
            print(f"{name:>9} {share:6.1%} {f1(rows, sent, args.fast):12.4f} {len(sent) / n:9.1%} "
                  f"{ms[SLOW] / cost:7.1f}x")

if __name__ == "__main__":
    main()
