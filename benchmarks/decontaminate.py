"""Decontamination speed and agreement: `textsieve decontaminate` beside datatrove's n-gram
decontamination (NGramsDecontIndexer's hashes + NGramsDecontFilter) on the same data, same n, same run.

Usage::

    python benchmarks/decontaminate.py [--corpus PATH] [--wiki PATH] [--ngram 13] [--plant-every 25]
                                       [--limit N] [--no-datatrove]

Data: the dev web pool (15,263 real web documents) with one wiki paragraph (>= 40 words, from
target_wiki.jsonl.gz) planted at a whitespace position of every 25th document; the benchmark is
all 607 wiki records as {question: first paragraph (the title line), answer: the rest}, matched on
question + answer by both tools (datatrove: label = answer, query = question, query and overlap
n-grams on, which is the n-gram set of the concatenation).

Timings, docs/s per core = documents / CPU seconds (user + system, `RUSAGE_CHILDREN` of the
command's process, one worker each):
  * end to end: `textsieve decontaminate ATTRS --against ... --workers 1` (index build, texts
    re-read from the sources, Parquet written; after an untimed warm-up run so numba's one-time
    compile is not counted; the annotate run it needs is not timed) beside datatrove's index
    build + `JsonlReader -> NGramsDecontFilter -> JsonlWriter` pipeline, interpreter start-up
    included for both;
  * core: textsieve's match kernel over the texts in this process beside datatrove's filter
    stage alone (its JSON reading and writing included: it has no other way to run).
Agreement: the flagged document sets (textsieve `ts_contam_count > 0`, datatrove's excluded
documents) and each tool's recall on the planted documents. The normalisations differ (datatrove
maps numbers to 0 and tokenises with spaCy; textsieve keeps digits, see `decontam.ngrams`), so a
few documents may differ; the script prints them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _datatrove_env as dtenv  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpora" / "dev"
RUNNER = Path(__file__).resolve().parent / "_decontam_datatrove.py"
TS = [sys.executable, "-m", "textsieve.cli"]


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of a command run to its end."""
    cpu, wall = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return _children_cpu() - cpu, time.perf_counter() - wall, proc.stdout


def build(work: Path, corpus: Path, wiki_path: Path, every: int, limit: int | None) -> tuple[list[dict], set[str]]:
    """Docs with planted paragraphs (written to work/docs), the benchmark (work/bench.jsonl)."""
    from textsieve.decontam.ngrams import words_reference

    docs = _read(corpus)[:limit]
    wiki = _read(wiki_path)
    bench = []
    for r in wiki:
        head, _, body = r["text"].partition("\n\n")
        bench.append({"id": r["id"], "question": head, "answer": body})
    with open(work / "bench.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(b) + "\n" for b in bench)
    paragraphs = [p for r in wiki for p in [max(r["text"].split("\n\n"), key=len)] if len(words_reference(p)) >= 40]
    rng = random.Random(14)
    planted = set()
    for k, i in enumerate(range(0, len(docs), every)):
        text = docs[i]["text"]
        spaces = [j for j, c in enumerate(text) if c.isspace()] or [len(text)]
        pos = rng.choice(spaces)
        docs[i]["text"] = f"{text[:pos]}\n{paragraphs[k % len(paragraphs)]}\n{text[pos:]}"
        planted.add(docs[i]["id"])
    (work / "docs").mkdir()
    with gzip.open(work / "docs" / "part-0000.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs)
    return docs, planted


def textsieve_flagged(attrs: Path) -> set[str]:
    import pyarrow.parquet as pq

    t = pq.read_table(attrs / "part-0000.parquet", columns=["id"])
    c = pq.read_table(attrs / "_decontam" / "part-0000.parquet", columns=["id", "ts_contam_count"])
    assert t.column("id").to_pylist() == c.column("id").to_pylist()
    return {i for i, n in zip(c.column("id").to_pylist(), c.column("ts_contam_count").to_pylist()) if n}


def core_textsieve(work: Path, docs: list[dict], ngram: int) -> tuple[float, float]:
    """(index build CPU s, match CPU s) of the library in this process (kernels warmed first)."""
    from textsieve.decontam.bench import parse_benchmarks
    from textsieve.decontam.index import build_index
    from textsieve.decontam.match import match_texts, open_matcher

    idx = work / "core-index"
    idx.mkdir()
    benches = parse_benchmarks([f"bench={work / 'bench.jsonl'}"])
    stats = build_index(benches, ["question", "answer"], ngram, 8, None, 10**9, str(idx))  # warm-up
    t = time.process_time()
    stats = build_index(benches, ["question", "answer"], ngram, 8, None, 10**9, str(idx))
    index_cpu = time.process_time() - t
    m = open_matcher(str(idx), stats.lengths, ["bench"])
    texts = [d["text"] for d in docs]
    match_texts(m, texts[:50])
    t = time.process_time()
    for i in range(0, len(texts), 1000):
        match_texts(m, texts[i:i + 1000])
    return index_cpu, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEV / "web_sample.jsonl.gz")
    ap.add_argument("--wiki", type=Path, default=DEV / "target_wiki.jsonl.gz")
    ap.add_argument("--ngram", type=int, default=13)
    ap.add_argument("--plant-every", type=int, default=25)
    ap.add_argument("--limit", type=int, default=None, help="first N documents only")
    ap.add_argument("--no-datatrove", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ts-decontam-bench-") as tmp:
        work = Path(tmp)
        docs, planted = build(work, args.corpus, args.wiki, args.plant_every, args.limit)
        n = len(docs)
        print(f"{n:,} web documents, {len(planted):,} with a planted wiki paragraph; benchmark: "
              f"{args.wiki.name} as question/answer; n = {args.ngram}", flush=True)
        _timed([*TS, "annotate", str(work / "docs"), "-o", str(work / "attrs"), "--signals", "rps_doc_word_count",
                "--workers", "1", "-q"])
        cmd = [*TS, "decontaminate", str(work / "attrs"), "--against", f"bench={work / 'bench.jsonl'}",
               "--field", "question", "--field", "answer", "--ngram", str(args.ngram), "--workers", "1", "-q",
               "--json", "--overwrite"]
        _timed(cmd)  # warm-up: numba's compile cache
        ts_cpu, ts_wall, out = _timed(cmd)
        ts_flagged = textsieve_flagged(work / "attrs")
        index_cpu, match_cpu = core_textsieve(work, docs, args.ngram)
        rows = [("textsieve decontaminate, end to end", ts_cpu, ts_wall),
                ("textsieve match kernel (core)", match_cpu, None)]
        dt_flagged: set[str] | None = None
        if not args.no_datatrove:
            py = dtenv.ensure(quiet=True)
            (work / "dt").mkdir()
            dt_cpu, dt_wall, _ = _timed([str(py), str(RUNNER), str(work / "bench.jsonl"), str(work / "docs"),
                                         str(work / "dt"), str(work / "dt.json"), "--ngram", str(args.ngram)])
            dt = json.loads((work / "dt.json").read_text())
            dt_flagged = set(dt["flagged"])
            rows += [(f"datatrove {dtenv.version()} index + filter, end to end", dt_cpu, dt_wall),
                     ("datatrove NGramsDecontFilter stage (core)", dt["filter_cpu_s"], None)]
        print(f"\n{'run':<46} {'CPU s':>8} {'wall s':>8} {'docs/s/core':>12}")
        for label, cpu, wall in rows:
            print(f"{label:<46} {cpu:>8.2f} {wall if wall is not None else float('nan'):>8.2f} {n / cpu:>12,.0f}")
        print(f"(textsieve index build alone: {index_cpu:.2f} CPU s; "
              f"summary: {json.dumps({k: v for k, v in json.loads(out).items() if k != 'benchmarks'})})")
        if dt_flagged is not None:
            print(f"\nspeed-up per core: end to end {dt_cpu / ts_cpu:.1f}x, core {dt['filter_cpu_s'] / match_cpu:.1f}x")
        print("\nflagged documents:")
        print(f"  textsieve: {len(ts_flagged):,} (planted recall {len(ts_flagged & planted) / len(planted):.4f}, "
              f"{len(ts_flagged - planted)} not planted)")
        if dt_flagged is not None:
            print(f"  datatrove: {len(dt_flagged):,} (planted recall {len(dt_flagged & planted) / len(planted):.4f}, "
                  f"{len(dt_flagged - planted)} not planted)")
            both = ts_flagged & dt_flagged
            union = ts_flagged | dt_flagged
            print(f"  agreement: {len(both):,} flagged by both, {len(ts_flagged - dt_flagged)} only by textsieve, "
                  f"{len(dt_flagged - ts_flagged)} only by datatrove (Jaccard {len(both) / max(1, len(union)):.4f})")
            by_id = {d["id"]: d for d in docs}
            for i in sorted(union - both)[:10]:
                who = "textsieve" if i in ts_flagged else "datatrove"
                print(f"    only {who}: {i} {by_id[i]['text'][:100]!r}")


if __name__ == "__main__":
    main()
