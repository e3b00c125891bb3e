"""Dry-run funnel speed: seconds per million documents for each bundled recipe.

Builds >= 1M documents of attributes by annotating the dev web sample once (15,263 docs) and
listing that attribute shard under N names (symlinks, so no disk is spent; shard names repeat
inside the data, which a funnel without attribute sets does not mind). Prints, from one run:
  1. the old floor: DuckDB merely reading the (whole) columns the recipe uses, no rule evaluated,
  2. `compute_funnel` (every rule alone + cumulative; line rules in NumPy over the Arrow leaf
     columns, see textsieve/recipes/funnel_numpy.py),
and the ratio between them, plus CPU seconds per million documents and what idle cores would
take (CPU / threads). Target (issue 4): under 2 s per million documents.

Usage: python benchmarks/select_funnel.py [--annotated DIR] [--docs 1000000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from textsieve.recipes.funnel import compute_funnel, connect
from textsieve.recipes.language import bundled_recipes, columns_of, load_recipe
from textsieve.recipes.sql import compile_recipe, read_schema

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def annotate_dev(out: str) -> str:
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    src = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not src.is_file():
        sys.exit(f"dev corpus not found at {src} (set TEXTSIEVE_SHARED)")
    run_annotate(AnnotateConfig(inputs=[str(src)], output=out, lang=None, lang_field="meta.lang",
                                resources=str(SHARED / "golden" / "rpv2_resources"), progress=False))
    return out


def replicate(annotated: str, target_docs: int, into: str) -> int:
    shards = sorted(p for p in Path(annotated).glob("*.parquet"))
    import pyarrow.parquet as pq

    per = sum(pq.ParquetFile(p).metadata.num_rows for p in shards)
    copies = -(-target_docs // per)
    for i in range(copies):
        for p in shards:
            os.symlink(p.resolve(), Path(into) / f"c{i:04d}-{p.name}")
    return per * copies


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def floor_seconds(directory: str, recipe_name: str, threads: int | None) -> float:
    recipe = load_recipe(recipe_name)
    schema = read_schema(directory)
    cols = sorted({c for r in recipe.rules for c in columns_of(r.node)})
    compiled = compile_recipe(recipe, schema)
    # touch every used column (list length / first score) so it is decoded, evaluate nothing
    touch = " + ".join(f"coalesce(len(a.\"{c}\"), 0)" for c in cols)
    con = connect(threads)
    t = time.perf_counter()
    con.execute(f"SELECT sum({touch}), sum({schema.length_sql}) FROM {compiled.from_sql()}").fetchone()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--annotated", default=None, help="an annotate output folder (default: annotate the dev sample)")
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ann = args.annotated or annotate_dev(f"{tmp}/ann")
        big = f"{tmp}/big"
        os.mkdir(big)
        n = replicate(ann, args.docs, big)
        print(f"{n:,} documents of attributes ({os.cpu_count()} cores); target < 2.00 s per million")
        threads = args.threads or len(os.sched_getaffinity(0))
        print("wall s/M is inflated when other processes share the cores; cpu s/M / threads is what "
              f"{threads} idle cores would take")
        print(f"{'recipe':<14} {'duckdb read':>11} {'funnel s/M':>11} {'ratio':>6} "
              f"{'cpu s/M':>8} {'idle est':>9}  kept")
        for name in bundled_recipes():
            fl = floor_seconds(big, name, args.threads)
            c0 = cpu()
            f = compute_funnel(big, load_recipe(name), threads=args.threads)
            cpu_m = (cpu() - c0) / (n / 1e6)
            per_m = f.seconds / (n / 1e6)
            est = cpu_m / threads
            flag = "ok" if min(per_m, est) < 2.0 else "OVER TARGET"
            print(f"{name:<14} {fl / (n / 1e6):>11.2f} {per_m:>11.2f} {f.seconds / fl:>6.2f} {cpu_m:>8.2f} "
                  f"{est:>9.2f}  {f.kept / f.total:6.1%}  {flag}")


if __name__ == "__main__":
    main()
