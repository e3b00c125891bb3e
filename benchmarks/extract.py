"""Main-content extraction: quality per engine on the extraction dev pages, and speed end to end.

Usage: python benchmarks/extract.py [--pages N] [--engines a,b] [--shared DIR] [--keep DIR] [--misses N]
                                    [--records N] [--speed-engines a,b] [--no-datatrove]

Quality part: every registered engine plus trafilatura's own defaults (``trafilatura.extract(html_bytes)``
with no options: the reference row) on the 495 pages of ``shared/corpora/extraction``. Each page is
decoded with `textsieve.extraction.decode.decode_html` (the reference row gets the raw bytes, as
trafilatura's own evaluation does), extracted, and only the extraction is timed (CPU ms per page,
``time.process_time``, one process). The texts are written as ``.jsonl`` records and scored by the
set's own ``score_dev.py --json``, so the numbers are exactly the scorer's. Then precision, recall and
F1 per page language and per page kind (article, listing/forum, product, short; `_page_groups`
says how each page is placed), from the scorer's per-page counts, so a gain on articles cannot
hide a loss elsewhere. The engines run interleaved page by page, and the learned engines
(`auto`, `textsieve`, `cascade`, trained on these pages) are also scored held out (`held_out_rows`);
the target lines (F1 >= trafilatura's at >= 5x its CPU per page) judge the held-out rows. Measured
2026-12-06: textsieve held out 0.926 at 6.5x (NOT MET), cascade held out 0.930 at 5.7x (MET per
page), trafilatura 0.929; end to end the cascade is 4.1x datatrove (NOT MET) and the default is still
trafilatura (docs/extraction.md has the tables). 2026-12-07, the fast path's Python parts in C:
textsieve held out 8.4x, cascade held out 7.1x; end to end 8.2x and 4.4x datatrove. Later that day,
with the ``auto`` engine (textsieve, trafilatura for the pages whose main content collapsed): auto
held out 0.931 at 6.9x (MET), textsieve 0.926 at 8.5x, cascade 0.933 at 6.3x, trafilatura 0.929;
end to end auto 6.8x and 7.3x datatrove in two runs (MET), and auto became the default.

Speed part: `speed_section` (end-to-end WARC -> documents vs datatrove, see _extract_datatrove.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_SHARED = HERE.parent.parent / "shared"
REFERENCE = "trafilatura-defaults"


@dataclass
class Page:
    page_id: str
    body: bytes
    url: str | None


@dataclass
class Row:
    engine: str
    precision: float
    recall: float
    f1: float
    ms_per_page: float


def load_pages(extraction_dir: Path, limit: int | None) -> list[Page]:
    """The dev pages (sorted by id; the first ``limit`` when given) with their URLs."""
    expectations = json.loads((extraction_dir / "expectations.json").read_text())
    files = sorted((extraction_dir / "html").glob("*.html.gz"))[:limit]
    pages = []
    for f in files:
        page_id = f.name[: -len(".html.gz")]
        pages.append(Page(page_id, gzip.decompress(f.read_bytes()), expectations.get(page_id, {}).get("url")))
    return pages


def run_extractors(runners: dict[str, Callable[[Page], str]], pages: list[Page],
                   out_dir: Path) -> dict[str, list[float]]:
    """Extract every page with every runner, the runners interleaved page by page (their order
    rotating), so a slow spell of this shared machine lands on all of them alike; write
    ``out_dir/<name>/pages.jsonl`` per runner. Returns each runner's CPU ms per page (extraction
    alone), in page order."""
    names = list(runners)
    texts: dict[str, list[dict[str, str]]] = {n: [] for n in names}
    ms: dict[str, list[float]] = {n: [] for n in names}
    for k, page in enumerate(pages):
        for name in names[k % len(names):] + names[:k % len(names)]:
            t0 = time.process_time()
            text = runners[name](page)
            ms[name].append(1000.0 * (time.process_time() - t0))
            texts[name].append({"id": page.page_id, "text": text})
    for name in names:
        folder = out_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "pages.jsonl", "w", encoding="utf-8") as fh:
            for rec in sorted(texts[name], key=lambda r: r["id"]):
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return ms


def score(extraction_dir: Path, folder: Path, page_ids: list[str]) -> dict:
    """The set's own scorer on ``folder``; restricted to ``page_ids`` (via a trimmed expectations file)
    when running on a subset."""
    cmd = [sys.executable, str(extraction_dir / "score_dev.py"), str(folder), "--json"]
    expectations = json.loads((extraction_dir / "expectations.json").read_text())
    if len(page_ids) < len(expectations):
        subset = folder / "expectations.subset.json"
        subset.write_text(json.dumps({k: expectations[k] for k in page_ids if k in expectations}))
        cmd += ["--expectations", str(subset)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def page_counts(extraction_dir: Path, folder: Path, page_ids: list[str]) -> dict[str, list[int]]:
    """{page: (tp, fp, fn, tn)} by the set's own scorer, imported (its --json leaves them out)."""
    sys.path.insert(0, str(extraction_dir))
    import score_dev

    expectations = json.loads((extraction_dir / "expectations.json").read_text())
    wanted = {k: expectations[k] for k in page_ids if k in expectations}
    return score_dev.score(wanted, score_dev.read_output(folder / "pages.jsonl"))["per_page"]


def extractors(engine_names: list[str]) -> dict[str, Callable[[Page], str]]:
    """``{row name: page -> text}``: the reference row, then each textsieve engine (decode + extract)."""
    from textsieve.extraction.decode import decode_html
    from textsieve.extraction.engines import get_engine

    decoded: dict[str, str] = {}

    def text_of(page: Page) -> str:
        if page.page_id not in decoded:
            decoded[page.page_id] = decode_html(page.body, None).text
        return decoded[page.page_id]

    def reference(page: Page) -> str:
        import trafilatura

        return trafilatura.extract(page.body) or ""

    out: dict[str, Callable[[Page], str]] = {REFERENCE: reference}
    for name in engine_names:
        try:
            engine = get_engine(name)
        except ValueError as err:
            print(f"skipping {name}: {err}", file=sys.stderr)
            continue
        out[name] = lambda page, engine=engine: engine.extract(text_of(page), page.url).text
    return out


def quality_section(args: argparse.Namespace) -> list[Row]:
    """Score every engine on the dev pages and print the table."""
    from textsieve.extraction.engines import ENGINE_NAMES

    extraction_dir = Path(args.shared) / "corpora" / "extraction"
    pages = load_pages(extraction_dir, args.pages)
    names = args.engines.split(",") if args.engines else list(ENGINE_NAMES)
    # decode once up front so no engine's timing includes it
    runners = extractors(names)
    from textsieve.extraction.decode import decode_html

    for page in pages:
        decode_html(page.body, None)
    keep = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ts-extract-bench-"))
    rows = []
    per_page: dict[str, dict] = {}
    for fn in runners.values():
        fn(pages[0])  # warm-up: lazy imports and caches are not page costs
    page_ms = run_extractors(runners, pages, keep)
    for name in runners:
        ms = sum(page_ms[name]) / max(len(pages), 1)
        s = score(extraction_dir, keep / name, [p.page_id for p in pages])
        per_page[name] = page_counts(extraction_dir, keep / name, [p.page_id for p in pages])
        rows.append(Row(name, s["precision"], s["recall"], s["f1"], ms))
        print(f"  {name}: F1 {s['f1']:.3f}, {ms:.2f} ms/page", file=sys.stderr)
        if args.misses:
            subprocess.run([sys.executable, str(extraction_dir / "score_dev.py"), str(keep / name),
                            "--misses", str(args.misses)], check=False)
    if any(name in runners for name in HELD_OUT):
        for held in held_out_rows(extraction_dir, pages, keep, rows, page_ms):
            rows.append(held)
            per_page[held.engine] = page_counts(extraction_dir, keep / held.engine, [p.page_id for p in pages])
    print_table(rows, len(pages))
    print_groups(extraction_dir, per_page)
    print(f"(texts kept in {keep})")
    return rows


HELD_OUT = {"auto": "auto held-out", "textsieve": "textsieve held-out", "cascade": "cascade held-out"}


def held_out_rows(extraction_dir: Path, dev_pages: list[Page], keep: Path, rows: list[Row],
                  page_ms: dict[str, list[float]]) -> list[Row]:
    """The ``auto``, ``textsieve`` and ``cascade`` engines' block classifier is trained on these very
    pages, so their rows above are in-sample. These rows are the honest ones: each page scored by the
    model fitted on the other half of the pages (`block_training`'s two folds, the shipped block
    threshold; the cascade's doubt threshold from the other half's doubts). CPU per page: the
    textsieve engine's measured time (the fold models cost the same to evaluate); for ``auto``, its
    own measured time (which pages it sends to trafilatura does not depend on the model); for the
    cascade, auto's plus trafilatura's measured time on the pages the held-out doubt test sent."""
    from textsieve.extraction import block_training as bt
    from textsieve.extraction.blocks import load_model

    page_ids = [p.page_id for p in dev_pages]
    wanted = set(page_ids)
    pages = [p for p in bt.load_pages(extraction_dir) if p.page_id in wanted]
    probs = bt.held_out_probabilities(pages)
    threshold = load_model().threshold
    fast = bt.texts_at(pages, probs, threshold)
    auto, auto_ids = bt.auto_texts(pages, probs, threshold)
    cascade, sent_ids = bt.cascade_texts(pages, probs, threshold)
    texts = {"auto": auto, "textsieve": fast, "cascade": cascade}
    cost = {e: sum(page_ms[e]) / len(page_ids) for e in ("auto", "textsieve") if e in page_ms}
    if "trafilatura" in page_ms and ("auto" in cost or "textsieve" in cost):
        # auto's measured time holds the collapse test and trafilatura on the collapsed pages; without
        # an auto run, the textsieve engine's plus trafilatura on every page sent (the test unpriced)
        base, already = (cost["auto"], auto_ids) if "auto" in cost else (cost["textsieve"], set())
        sent = sum(t for pid, t in zip(page_ids, page_ms["trafilatura"]) if pid in sent_ids - already)
        cost["cascade"] = base + sent / len(page_ids)
    out = []
    for engine, name in HELD_OUT.items():
        if engine not in cost:
            continue
        folder = keep / name
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "pages.jsonl", "w", encoding="utf-8") as fh:
            for page_id in page_ids:
                fh.write(json.dumps({"id": page_id, "text": texts[engine].get(page_id, "")}, ensure_ascii=False) + "\n")
        s = score(extraction_dir, folder, page_ids)
        print(f"  {name}: F1 {s['f1']:.3f} (two-fold; the {engine} row is in-sample)", file=sys.stderr)
        out.append(Row(name, s["precision"], s["recall"], s["f1"], cost[engine]))
    return out


def print_groups(extraction_dir: Path, per_page: dict[str, dict]) -> None:
    """Precision / recall / F1 of every engine per page language and per page kind
    (`_page_groups`: how the groups are decided)."""
    sys.path.insert(0, str(HERE))
    from _page_groups import grouped_scores, page_groups

    groups = page_groups(extraction_dir)
    for which, title in ((0, "language"), (1, "kind")):
        tables = {name: grouped_scores(pp, groups, which) for name, pp in per_page.items()}
        names = list(tables)
        print(f"\nBy page {title} (precision / recall / F1):")
        print(f"| {title:<14} | pages | " + " | ".join(f"{n:<20}" for n in names) + " |")
        print(f"| {'-' * 14} | ----: | " + " | ".join("-" * 20 for _ in names) + " |")
        for g, (n, *_prf) in tables[names[0]].items():
            cells = []
            for name in names:
                _, p, r, f = tables[name].get(g, (0, 0.0, 0.0, 0.0))
                cells.append(f"{p:.3f} / {r:.3f} / {f:.3f}")
            print(f"| {g:<14} | {n:5d} | " + " | ".join(f"{c:<20}" for c in cells) + " |")


def print_table(rows: list[Row], n_pages: int) -> None:
    ref = next((r for r in rows if r.engine == "trafilatura"), None) or next(
        (r for r in rows if r.engine == REFERENCE), None)
    print(f"\nMain-content extraction on {n_pages} dev pages (CPU ms/page, extraction only, one process);"
          f" speed ratio vs {ref.engine if ref else '-'}")
    print(f"| {'engine':<22} | precision | recall |    F1 | ms/page | speed vs trafilatura |")
    print(f"| {'-' * 22} | --------: | -----: | ----: | ------: | -------------------: |")
    for r in rows:
        ratio = f"{ref.ms_per_page / r.ms_per_page:.1f}x" if ref and r.ms_per_page > 0 else "-"
        print(f"| {r.engine:<22} | {r.precision:9.3f} | {r.recall:6.3f} | {r.f1:5.3f} | {r.ms_per_page:7.2f} |"
              f" {ratio:>20} |")
    print_targets(rows, ref)


#: issue 27's target for the default engine: trafilatura's F1 (or better) at this many times its speed
SPEEDUP_TARGET = 5.0


def print_targets(rows: list[Row], ref: Row | None) -> None:
    """One MET / NOT MET line per engine for the issue's per-page target (F1 >= trafilatura's at
    >= `SPEEDUP_TARGET` x its CPU per page), the default engine marked; the end-to-end target
    (vs datatrove) is printed by the speed section."""
    from textsieve.extraction.engines import DEFAULT_ENGINE

    if ref is None or ref.engine != "trafilatura":
        print("(targets: need the trafilatura row)")
        return
    print(f"\nTarget: F1 >= trafilatura's ({ref.f1:.3f}) at >= {SPEEDUP_TARGET:.0f}x its CPU per page")
    for r in rows:
        if r.engine in (ref.engine, REFERENCE) or r.ms_per_page <= 0:
            continue
        if r.engine in HELD_OUT and any(x.engine == HELD_OUT[r.engine] for x in rows):
            print(f"  {r.engine}: in-sample (its model was trained on these pages); judged by {HELD_OUT[r.engine]}")
            continue
        speed = ref.ms_per_page / r.ms_per_page
        met = r.f1 >= ref.f1 and speed >= SPEEDUP_TARGET
        mark = " (default engine)" if r.engine in (DEFAULT_ENGINE, HELD_OUT.get(DEFAULT_ENGINE)) else ""
        verdict = "MET" if met else "NOT MET"
        print(f"  {r.engine}{mark}: F1 {r.f1:.3f} ({r.f1 - ref.f1:+.3f}), {speed:.1f}x -> {verdict}")
    default = next((r for r in rows if r.engine == DEFAULT_ENGINE), None)
    if default is ref:
        print(f"  the default engine is {DEFAULT_ENGINE} itself (1.0x) -> NOT MET")


def speed_section(args: argparse.Namespace) -> None:
    """End-to-end WARC -> documents speed vs datatrove (its WarcReader + Trafilatura extractor, in
    its own venv, `_extract_datatrove.py`) on the dev WARCs concatenated to `--records` records,
    one core each: records per CPU-second and the ratio to datatrove, in this one run."""
    if args.records <= 0:
        print("(end-to-end section skipped: --records 0)")
        return
    sys.path.insert(0, str(HERE))
    from _extract_datatrove import speed_table

    engines = [e for e in (args.speed_engines or "").split(",") if e]
    print(f"\nEnd to end: WARC -> documents, {args.records:,} records, one core per tool")
    print(speed_table(engines, records=args.records, workers=1, datatrove=not args.no_datatrove))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=None, help="only the first N dev pages (sorted by id)")
    ap.add_argument("--engines", default="", help="comma-separated engine names (default: all registered)")
    ap.add_argument("--shared", default=str(DEFAULT_SHARED), help="the shared data folder")
    ap.add_argument("--keep", default="", help="write the extracted texts here (default: a temp folder)")
    ap.add_argument("--misses", type=int, default=0, help="also print the N worst pages per engine")
    ap.add_argument("--records", type=int, default=3000, help="end-to-end part: WARC records (0: skip that part)")
    ap.add_argument("--speed-engines", default="auto,trafilatura,cascade,textsieve,textsieve-rules,resiliparse",
                    help="end-to-end part: textsieve engines to time")
    ap.add_argument("--no-datatrove", action="store_true", help="end-to-end part: leave the datatrove row out")
    args = ap.parse_args(argv)
    quality_section(args)
    speed_section(args)


if __name__ == "__main__":
    main()
