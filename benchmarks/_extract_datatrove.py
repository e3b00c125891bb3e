"""End-to-end extraction speed (issue 12, item 6): datatrove's WARC reader + trafilatura extractor
beside ``textsieve extract`` on the very same WARC file, one core each.

Usage::

    python benchmarks/_extract_datatrove.py [--records 3000] [--engines textsieve,resiliparse,trafilatura]
                                            [--workers 1] [--no-textsieve] [--no-datatrove]

Input: the dev WARCs (``../shared/corpora/dev/raw/``: dolma_sample-0000/0001, whirlwind,
warcio_example; 39 ``response`` records per round) concatenated whole, round after round, into
one ``.warc.gz`` until it holds ``--records`` response records (``build_warc``; gzip members
concatenate into a valid gzip stream, and each record is its own member in these files).

datatrove (its own venv, ``_datatrove_env.py``; a baseline, never a textsieve dependency):
``WarcReader -> Trafilatura(favour_precision=True) -> JsonlWriter`` as its FineWeb example uses
them (``timeout`` = its default 1 s per page, ``deduplicate`` = its default True), in
``LocalPipelineExecutor(tasks=1, workers=1)``; this file runs itself in that venv for it
(``python _extract_datatrove.py _dt ...``). datatrove extracts in a sandbox *child process*
(``ExtractorSandbox``), so its CPU must be counted over the whole process tree.
textsieve: ``textsieve extract WARC --output DIR --engine E --workers 1``.

Every command runs in a subprocess measured from outside by ``dedup_speed.measure``: CPU seconds
= user + system of the whole process tree (``RUSAGE_CHILDREN`` of a wrapper, cross-checked with
/proc samples), wall seconds include interpreter start and imports. The rate columns divide the
*records read* (response records in the WARC, the same for every tool) by CPU or wall seconds, so
a tool that drops more pages is not credited for it; ``docs out`` says how many each wrote.

The repeated pages and trafilatura's dedup cache: ``deduplicate=True`` keeps a process-wide LRU
cache of text segments, so on a WARC that repeats the same 39 pages it drops repeated paragraphs
and, from the third copy on, whole documents (measured: 191 of 2,847 HTML pages written), and the
shortened texts send trafilatura into its justext/readability rescue paths, which cost datatrove
~7% more CPU (82.2 s vs 76.4 s for 3,001 records here). CC WARCs do not repeat pages, so the
baseline row empties that cache before each page (``fresh_cache=True``, a 3-line subclass in the
datatrove process; every page then extracts as if first seen: 2,847 of 2,847 written), which is the
faster, fairer datatrove number; ``--stock-cache`` measures datatrove untouched instead.

API for ``benchmarks/extract.py``: ``speed_table(engines, records) -> str`` (builds the WARC in a
temporary folder, runs both tools, returns the printed table), or the pieces ``build_warc``,
``run_datatrove``, ``run_textsieve``, ``format_table``.

Target (issue 12, item 6): textsieve >= 5x datatrove's docs/s per core.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _datatrove_env as dtenv  # noqa: E402

RAW = HERE.parent.parent / "shared" / "corpora" / "dev" / "raw"
#: The dev WARCs, in this order (ARC, WET and WAT files are not WARC responses of HTML).
DEV_WARCS = ("dolma_sample-0000.warc.gz", "dolma_sample-0001.warc.gz", "whirlwind.warc.gz", "warcio_example.warc.gz")
TS = [sys.executable, "-m", "textsieve.cli"]
TARGET = 5.0


class ExtractUnavailable(RuntimeError):
    """``textsieve extract`` is not in this checkout yet (or does not start)."""


def count_responses(path: Path) -> int:
    """Number of ``WARC-Type: response`` records in a (gzipped) WARC, walking the record
    structure by Content-Length, so a payload quoting a WARC header is not counted."""
    n = 0
    with gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb") as fh:
        while True:
            line = fh.readline()
            if not line:
                return n
            if not line.startswith(b"WARC/"):
                continue  # blank lines between records
            headers: dict[bytes, bytes] = {}
            for raw in iter(fh.readline, b""):
                if raw in (b"\r\n", b"\n"):
                    break
                key, _, value = raw.partition(b":")
                headers[key.strip().lower()] = value.strip()
            n += headers.get(b"warc-type") == b"response"
            fh.seek(int(headers.get(b"content-length", b"0")), 1)


def build_warc(out_path: Path, min_records: int = 3000, raw_dir: Path = RAW) -> int:
    """Concatenate the dev WARCs whole, in rotation, into ``out_path`` until it holds at least
    ``min_records`` response records; return that number (the input both tools read)."""
    files = [raw_dir / name for name in DEV_WARCS]
    counts = [count_responses(f) for f in files]
    if sum(counts) == 0:
        raise ValueError(f"no response records in {raw_dir}")
    blobs = [f.read_bytes() for f in files]
    total = 0
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "wb") as out:
        while total < min_records:
            for blob, c in zip(blobs, counts):
                out.write(blob)
                total += c
                if total >= min_records:
                    break
    return total


def _measure(label: str, cmd: list[str], records: int) -> Any:
    from dedup_speed import measure  # imports textsieve: only in the benchmark's own process

    return measure(label, cmd, records)


def _count_docs(folder: Path) -> int:
    """Documents in the JSONL (plain, .gz, .zst) or Parquet shards under ``folder``."""
    n = 0
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = f.name
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            n += pq.ParquetFile(f).metadata.num_rows
        elif name.endswith((".jsonl", ".jsonl.gz")):
            with gzip.open(f, "rb") if name.endswith(".gz") else open(f, "rb") as fh:
                n += sum(1 for line in fh if line.strip())
        elif name.endswith(".jsonl.zst"):
            import zstandard

            with open(f, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as fh:
                n += sum(1 for line in fh.read().splitlines() if line.strip())
    return n


def run_datatrove(warc_path: Path, workers: int = 1, records: int | None = None,
                  fresh_cache: bool = True) -> dict[str, Any]:
    """datatrove ``WarcReader -> Trafilatura(favour_precision=True) -> JsonlWriter`` on
    ``warc_path`` (a file, or a folder of ``*.warc.gz``: one task per file) in its own venv.
    ``fresh_cache``: empty trafilatura's cross-page dedup cache before each page (see the module
    docstring: on a WARC of repeated pages this is what datatrove would do on unique pages).

    Returns tool, engine, version, records, docs (written), cpu_s, wall_s, and datatrove's own
    step stats (``stats``: extracted, dropped, timeout, ... from its logging folder)."""
    py = dtenv.ensure(quiet=True)
    warc_path = Path(warc_path)
    n = records if records is not None else (
        count_responses(warc_path) if warc_path.is_file()
        else sum(count_responses(f) for f in sorted(warc_path.glob("*.warc.gz"))))
    with tempfile.TemporaryDirectory(prefix="ts-extract-dt-") as tmp:
        out = Path(tmp) / "out"
        info = Path(tmp) / "info.json"
        run = _measure("datatrove", [str(py), str(Path(__file__).resolve()), "_dt", str(warc_path), str(out),
                                     str(Path(tmp) / "logs"), str(info), "--workers", str(workers)]
                   + (["--fresh-cache"] if fresh_cache else []), n)
        res = json.loads(info.read_text())
        docs = _count_docs(out)
    engine = "trafilatura precision" + (", fresh cache" if fresh_cache else "")
    return {"tool": f"datatrove {dtenv.version()}", "engine": engine,
            "version": dtenv.version(), "trafilatura": res.get("trafilatura", "?"), "records": n, "docs": docs,
            "cpu_s": run.cpu, "wall_s": run.wall, "stats": res.get("stats", {})}


def _extract_available() -> str | None:
    """None when ``textsieve extract`` exists here, else why not (one line)."""
    res = subprocess.run(TS + ["extract", "--help"], capture_output=True, text=True)
    if res.returncode == 0:
        return None
    err = (res.stderr or res.stdout).strip().splitlines()
    return err[-1] if err else f"exit {res.returncode}"


def run_textsieve(warc_path: Path, engine: str, workers: int = 1, records: int | None = None) -> dict[str, Any]:
    """``textsieve extract WARC --output TMP --engine ENGINE --workers N``, measured the same way.

    Raises ExtractUnavailable when this checkout has no ``extract`` command yet."""
    why = _extract_available()
    if why is not None:
        raise ExtractUnavailable(f"textsieve extract command not available yet ({why})")
    warc_path = Path(warc_path)
    n = records if records is not None else count_responses(warc_path)
    with tempfile.TemporaryDirectory(prefix="ts-extract-ts-") as tmp:
        out = Path(tmp) / "out"
        # the input repeats the dev WARCs, record ids included: rename the repeats (ID#2, ...)
        run = _measure(f"textsieve {engine}", TS + ["extract", str(warc_path), "--output", str(out),
                                                    "--engine", engine, "--workers", str(workers),
                                                    "--dedupe-ids", "suffix"], n)
        docs = _count_docs(out)
    from importlib.metadata import version

    return {"tool": f"textsieve {version('textsieve')}", "engine": engine, "version": version("textsieve"),
            "records": n, "docs": docs, "cpu_s": run.cpu, "wall_s": run.wall}


def format_table(rows: list[dict[str, Any]], base: dict[str, Any] | None, notes: list[str] | None = None) -> str:
    """The speed table: one row per run; ratios against ``base`` (the datatrove row)."""
    head = (f"  {'tool':<18} {'engine':<34} {'records':>8} {'docs out':>8} {'CPU s':>7} {'wall s':>7} "
            f"{'rec/s/core':>10} {'wall rec/s':>10} {'vs datatrove':>12}")
    lines = [head]
    for r in rows:
        per_core = r["records"] / r["cpu_s"] if r["cpu_s"] else float("inf")
        wall = r["records"] / r["wall_s"] if r["wall_s"] else float("inf")
        ratio = ""
        if base is not None and r is not base and base["cpu_s"]:
            ratio = f"{per_core / (base['records'] / base['cpu_s']):.1f}x"
        lines.append(f"  {r['tool']:<18} {r['engine']:<34} {r['records']:>8,} {r['docs']:>8,} {r['cpu_s']:>7.1f} "
                     f"{r['wall_s']:>7.1f} {per_core:>10,.1f} {wall:>10,.1f} {ratio:>12}")
    if base is not None and base.get("stats"):
        s = base["stats"]
        lines.append("  datatrove trafilatura step: " + ", ".join(f"{k} {v}" for k, v in sorted(s.items())))
    for r in rows:
        if base is not None and r is not base and base["cpu_s"]:
            x = (r["records"] / r["cpu_s"]) / (base["records"] / base["cpu_s"])
            lines.append(f"  target >= {TARGET:.0f}x datatrove records/s per core: {r['engine']}: {x:.1f}x -> "
                         + ("MET" if x >= TARGET else "NOT MET"))
    lines += [f"  note: {n}" for n in notes or []]
    return "\n".join(lines)


def speed_rows(engines: list[str], records: int = 3000, workers: int = 1, datatrove: bool = True,
               fresh_cache: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[str]]:
    """Build the WARC in a temporary folder and run datatrove and every textsieve engine on it."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    base = None
    with tempfile.TemporaryDirectory(prefix="ts-extract-speed-") as tmp:
        warc = Path(tmp) / "dev-concat.warc.gz"
        n = build_warc(warc, records)
        notes.append(f"input: {warc.name}, {n:,} response records ({warc.stat().st_size / 1e6:.1f} MB), "
                     f"the dev WARCs repeated; --workers {workers}")
        if datatrove:
            base = run_datatrove(warc, workers, n, fresh_cache)
            rows.append(base)
            notes.append(f"datatrove {base['version']} with trafilatura {base['trafilatura']}; " + (
                "trafilatura's cross-page dedup cache emptied before each page (the input repeats pages)"
                if fresh_cache else "stock: its deduplicate=True drops pages repeated across the copies"))
        for engine in engines:
            try:
                rows.append(run_textsieve(warc, engine, workers, n))
            except ExtractUnavailable as exc:
                notes.append(str(exc))
                break
    return rows, base, notes


def speed_table(engines: list[str], records: int = 3000, workers: int = 1, datatrove: bool = True,
                fresh_cache: bool = True) -> str:
    """The end-to-end table as text (what ``main`` prints), for ``benchmarks/extract.py``."""
    rows, base, notes = speed_rows(engines, records, workers, datatrove, fresh_cache)
    return format_table(rows, base, notes)


def _dt_main(argv: list[str]) -> None:
    """Runs inside the datatrove venv: the pipeline, then its stats and versions to INFO."""
    ap = argparse.ArgumentParser(prog="_extract_datatrove.py _dt")
    ap.add_argument("warc")
    ap.add_argument("out")
    ap.add_argument("logs")
    ap.add_argument("info")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--fresh-cache", action="store_true", help="clear trafilatura's dedup cache before each page")
    a = ap.parse_args(argv)
    from importlib.metadata import version

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import JsonlWriter

    extractor = Trafilatura
    if a.fresh_cache:
        class FreshTrafilatura(Trafilatura):
            """Every page as if first seen: trafilatura's cross-page segment cache emptied first."""

            def extract(self, text: str) -> str:
                from trafilatura.deduplication import LRU_TEST

                LRU_TEST.clear()
                return super().extract(text)

        extractor = FreshTrafilatura
    src = Path(a.warc)
    folder, pattern = (str(src.parent), src.name) if src.is_file() else (str(src), "*.warc.gz")
    tasks = 1 if src.is_file() else max(1, len(list(src.glob("*.warc.gz"))))
    LocalPipelineExecutor(pipeline=[WarcReader(folder, glob_pattern=pattern), extractor(favour_precision=True),
                                    JsonlWriter(a.out)],
                          tasks=tasks, workers=a.workers, logging_dir=a.logs, skip_completed=False).run()
    stats: dict[str, Any] = {}
    merged = Path(a.logs) / "stats.json"
    if merged.exists():
        for step in json.loads(merged.read_text()):
            if "Trafilatura" in step.get("name", ""):
                stats = {k: (v["total"] if isinstance(v, dict) else v) for k, v in step.get("stats", {}).items()
                         if k in ("total", "extracted", "forwarded", "dropped", "timeout", "clean_error",
                                  "broken_process")}
    Path(a.info).write_text(json.dumps({"stats": stats, "trafilatura": version("trafilatura")}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=3000, help="response records in the concatenated WARC")
    ap.add_argument("--engines", default="auto,textsieve,resiliparse,trafilatura", help="textsieve engines, comma list")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-textsieve", action="store_true", help="datatrove only")
    ap.add_argument("--no-datatrove", action="store_true")
    ap.add_argument("--stock-cache", action="store_true",
                    help="datatrove untouched: trafilatura's dedup cache kept across the repeated pages")
    args = ap.parse_args()
    engines = [] if args.no_textsieve else [e for e in args.engines.split(",") if e.strip()]
    print(f"End to end, WARC -> documents, one core each (target >= {TARGET:.0f}x datatrove per core)", flush=True)
    print(speed_table(engines, args.records, args.workers, not args.no_datatrove, not args.stock_cache))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_dt":
        _dt_main(sys.argv[2:])
    else:
        main()
