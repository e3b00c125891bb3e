"""`import rpv2` speed (issue 13 "Speed"): docs/s per core beside the JSON parsing floor.

A release folder is laid out from the golden RPv2 records (`tests/_rpv2_release.py`: real
texts, signals and bands; `--repeat R` copies each shard R times under other shard numbers for a
larger run). In the same run and over the same files it measures:

* the floor: `json.loads` of every line of every documents and quality_signals file (after
  gunzip), the minimum a Python importer of these records spends;
* `import rpv2` with one worker, end to end (gunzip, Arrow JSON parsing, span columns, minhash and
  duplicates Parquet, writing the attribute shards and `_dedup_exact`);
* a recipe (the bundled rpv2-gopher) over the imported attributes vs over `annotate`'s output
  of the same documents, both grown to `--docs` rows (default 1M) by replicating their
  attribute shards under new shard names and ids (`_replicate`: written with the stages' own
  Parquet writer, so row groups are what the stages would write): the funnel's time per
  million documents, warm (best of 3), same run.

Target: import >= 50% of the floor's docs/s; recipes under 2 s per million documents, over
imported attributes as fast as over annotated ones.

Usage: python benchmarks/import_rpv2.py [--repeat 4] [--docs 1000000] [--skip-annotate]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _floor(root: Path) -> tuple[int, float]:
    """(documents, seconds) of gunzip + json.loads over the documents and signals files."""
    n, start = 0, time.process_time()
    for comp in ("documents", "quality_signals"):
        for path in sorted((root / comp).rglob("*.json.gz")):
            with gzip.open(path, "rb") as fh:
                for line in fh:
                    json.loads(line)
                    if comp == "documents":
                        n += 1
    return n, time.process_time() - start


def _repeat(root: Path, times: int) -> None:
    """Copy every shard key `times - 1` more times as shards 0001, 0002, ... (ids follow the path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = sorted(str(p.relative_to(root / "documents"))[: -len(".json.gz")]
                  for p in (root / "documents").rglob("*.json.gz"))
    for k in range(1, times):
        for key in keys:
            snap, _, name = key.split("/")
            new = f"{snap}/{k:04d}/{name}"
            old_prefix, new_prefix = f"{key}.json.gz/", f"{new}.json.gz/"
            for comp, suf in (("documents", ".json.gz"), ("quality_signals", ".signals.json.gz")):
                src = root / comp / f"{key}{suf}"
                if src.exists():
                    dst = root / comp / f"{new}{suf}"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    data = gzip.decompress(src.read_bytes())
                    if comp == "quality_signals":
                        data = data.replace(old_prefix.encode(), new_prefix.encode())
                    dst.write_bytes(gzip.compress(data, mtime=0))
            src = root / "minhash" / f"{key}.minhash.parquet"
            if src.exists():
                t = pq.read_table(src)
                ids = [i.replace(old_prefix, new_prefix) for i in t.column("id").to_pylist()]
                t = t.set_column(1, "id", pa.array(ids))
                (root / "minhash" / new).parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(t, root / "minhash" / f"{new}.minhash.parquet")


def _replicate(src: Path, dst: Path, docs: int, rows_per_file: int = 50_000) -> int:
    """Grow the attribute shards of `src` to about `docs` rows under `dst`: files of
    `rows_per_file` rows, each copies of all of `src`'s rows with the shard name and id
    suffixed by file and copy (so every (shard, row) and id is new), written with
    `AtomicParquetWriter` as `annotate` and `import rpv2` write. Returns the rows written."""
    import fsspec
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from textsieve.io.atomic import AtomicParquetWriter
    from textsieve.io.attributes import attribute_shards

    _, files = attribute_shards(str(src))
    base = pa.concat_tables([pq.read_table(f) for f in files])
    copies = max(1, rows_per_file // base.num_rows)
    fs, written, j = fsspec.filesystem("file"), 0, 0
    while written < docs:
        parts = []
        for k in range(copies):
            tag = pa.scalar(f"#r{j}c{k}")
            t = base.set_column(base.schema.get_field_index("id"), "id", pc.binary_join_element_wise(
                base.column("id"), tag, ""))
            parts.append(t.set_column(t.schema.get_field_index("shard"), "shard", pc.binary_join_element_wise(
                t.column("shard"), tag, "")))
        table = pa.concat_tables(parts)
        dst.mkdir(parents=True, exist_ok=True)
        writer = AtomicParquetWriter(fs, str(dst / f"part-{j:04d}.parquet"), table.schema)
        writer.write(table)
        writer.close()
        written += table.num_rows
        j += 1
    return written


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-annotate", action="store_true")
    ap.add_argument("--docs", type=int, default=1_000_000, help="rows the recipe is timed over")
    args = ap.parse_args()
    from _rpv2_release import build_release
    from _shared import SHARED

    from textsieve.recipes.funnel import compute_funnel
    from textsieve.recipes.language import load_recipe
    from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, run_import_rpv2

    work = Path(tempfile.mkdtemp(prefix="bench-import-rpv2-"))
    try:
        root = work / "release"
        build_release(SHARED, root)
        _repeat(root, args.repeat)
        n_floor, floor_s = _floor(root)
        start = time.process_time()
        res = run_import_rpv2(ImportRpv2Config(str(root), str(work / "attrs"), workers=1, progress=False))
        import_s = time.process_time() - start
        floor_rate, rate = n_floor / floor_s, res.documents / import_s
        print(f"documents: {res.documents:,} in {len(res.shards_written)} shards")
        print(f"floor (gunzip + json.loads, 1 core): {floor_rate:,.0f} docs/s")
        print(f"import rpv2 (1 worker, CPU time):    {rate:,.0f} docs/s = {rate / floor_rate:.0%} of the floor")
        recipe = load_recipe("rpv2-gopher")
        folders = [("imported", work / "attrs")]
        if not args.skip_annotate:
            from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

            run_annotate(AnnotateConfig([str(root / "documents")], str(work / "ann"), text_field="raw_content",
                                        lang_field="language", resources=str(SHARED / "golden" / "rpv2_resources"),
                                        progress=False))
            folders.append(("annotated", work / "ann"))
        bigs = {name: work / f"big-{name}" for name, _ in folders}
        rows = {name: _replicate(folder, bigs[name], args.docs) for name, folder in folders}
        for big in bigs.values():
            compute_funnel(str(big), recipe)  # warm: DuckDB and file caches
        times: dict[str, list[float]] = {name: [] for name in bigs}
        kept = {}
        for _ in range(3):  # interleaved, so a busy machine slows both alike
            for name, big in bigs.items():
                t = time.perf_counter()
                f = compute_funnel(str(big), recipe)
                times[name].append(time.perf_counter() - t)
                assert f.total == rows[name], (f.total, rows[name])
                kept[name] = f.kept
        for name, big in bigs.items():
            size = sum(p.stat().st_size for p in big.rglob("*.parquet"))
            s, n = min(times[name]), rows[name]
            print(f"recipe rpv2-gopher over {name} ({n:,} rows, {size / 1e6:,.0f} MB): {s:.3f} s = "
                  f"{s / n * 1e6:.2f} s per million documents (best of {len(times[name])}; "
                  f"median {sorted(times[name])[1] / n * 1e6:.2f}; kept {kept[name]:,})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
