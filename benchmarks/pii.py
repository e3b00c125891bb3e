"""PII detection: precision and recall per type, textsieve beside presidio-analyzer, and docs/s.

The labelled set (`_pii_labelled.py`): the first --docs documents of the dev web sample with
realistic valid PII planted (about two values per document, the five types in turn) and decoys
(Luhn/mod-97 failures, dates, versions, ISBNs...) in 30% of them. A planted value is found when
one hit of its type covers it whole (a phone's leading "+" or "(" may stay outside). Precision
counts as false positives the hits on decoys, on planted values of another type, and partial
hits on planted values; hits on the untouched real text ("natural") are counted apart and not
in precision, since nobody labelled them: `--show-natural N` prints a sample to check by hand.

Both tools run in one process on one core over the same texts: textsieve's `pii.detect.detect`
(defaults: phone region US, leniency valid) and presidio's EmailRecognizer, IpRecognizer,
PhoneRecognizer (its default regions US, GB, DE, FR, IL, IN, CA, BR), CreditCardRecognizer and
IbanRecognizer, called directly without the spaCy NLP engine (`_pii_presidio_run.py`, in the
venv `_presidio_env.py` makes).

Usage: python benchmarks/pii.py [--docs 3000] [--seed 0] [--show-natural 0]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _pii_labelled as labelled  # noqa: E402
import _presidio_env  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpora" / "dev" / "web_sample.jsonl.gz"


def _docs(n: int) -> list[dict]:
    path = CORPUS if CORPUS.exists() else Path("/work/shared/corpora/dev/web_sample.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, n)]


def textsieve_hits(texts: list[str]) -> tuple[list[list[tuple[int, int, str]]], float]:
    from textsieve.personal_data.detect import PiiSettings, detect

    settings = PiiSettings()
    detect("warm up a@b.com +1 202 555 0143", settings)
    out = []
    start = time.perf_counter()
    for text in texts:
        found = detect(text, settings)
        out.append([(s, e, t) for t, spans in found.items() for s, e, _ in spans])
    return out, time.perf_counter() - start


def presidio_hits(texts: list[str]) -> tuple[list[list[tuple[int, int, str]]], float]:
    py = _presidio_env.ensure(quiet=True)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "texts.json", Path(tmp) / "hits.json"
        src.write_text(json.dumps(texts), encoding="utf-8")
        subprocess.run([str(py), str(HERE / "_pii_presidio_run.py"), str(src), str(dst)], check=True,
                       stderr=subprocess.DEVNULL)
        res = json.loads(dst.read_text(encoding="utf-8"))
    return [[tuple(h) for h in hits] for hits in res["hits"]], res["seconds"]


def score(docs: list[labelled.LabelledDoc], hits: list[list[tuple[int, int, str]]]) -> tuple[dict, list[str]]:
    """Per type: planted, found (recall numerator), false positives, natural hits."""
    planted, found, fp, natural = Counter(), Counter(), Counter(), Counter()
    natural_examples: list[str] = []
    for doc, doc_hits in zip(docs, hits):
        covered = set()
        for s, e, t in doc_hits:
            over = [p for p in doc.plants if p.start < e and s < p.end]
            if not over:
                natural[t] += 1
                natural_examples.append(f"{t:12} {doc.text[max(0, s - 25):s]!r} [{doc.text[s:e]!r}]")
                continue
            ok = False
            for p in over:
                start = p.start + len(p.value) - len(p.value.lstrip("+("))
                if p.type == t and s <= start and e >= p.end:
                    covered.add(id(p))
                    ok = True
            if not ok:
                fp[t] += 1
        for p in doc.plants:
            if p.type != "decoy":
                planted[p.type] += 1
                found[p.type] += id(p) in covered
    table = {t: {"planted": planted[t], "found": found[t], "fp": fp[t], "natural": natural[t]} for t in labelled.TYPES}
    return table, natural_examples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-natural", type=int, default=0, metavar="N", help="print N natural hits of each tool")
    args = ap.parse_args()
    docs = labelled.build(_docs(args.docs), seed=args.seed)
    texts = [d.text for d in docs]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    results = {}
    for name, fn in (("textsieve", textsieve_hits), (f"presidio {_presidio_env.version()}", presidio_hits)):
        hits, seconds = fn(texts)
        results[name] = (score(docs, hits), seconds)
    print(f"{len(docs):,} web documents ({mb:.1f} MB) with {sum(len(d.plants) for d in docs):,} planted values "
          f"and decoys (seed {args.seed}); one core each\n")
    print(f"{'type':12} {'tool':22} {'planted':>8} {'found':>6} {'recall':>7} {'FP':>5} {'precision':>9} "
          f"{'natural':>8}")
    for t in labelled.TYPES:
        for name, ((table, _), _) in results.items():
            r = table[t]
            recall = r["found"] / r["planted"] if r["planted"] else float("nan")
            prec = r["found"] / (r["found"] + r["fp"]) if r["found"] + r["fp"] else float("nan")
            print(f"{t:12} {name:22} {r['planted']:8} {r['found']:6} {recall:7.3f} {r['fp']:5} {prec:9.3f} "
                  f"{r['natural']:8}")
    print()
    base = None
    for name, (_, seconds) in results.items():
        rate = len(docs) / seconds
        base = base or rate
        print(f"{name:22} {rate:8,.0f} docs/s  {mb / seconds:6.2f} MB/s  ({rate / base:.2f}x textsieve's rate)")
    if args.show_natural:
        rng = random.Random(0)
        for name, ((_, examples), _) in results.items():
            print(f"\nnatural hits of {name} (sample of {args.show_natural}):")
            for line in rng.sample(examples, min(args.show_natural, len(examples))):
                print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
