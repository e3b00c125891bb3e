"""Token counting speed: MB of text per CPU-second, `textsieve tokens` beside plain `tokenizers`.

Prints, from one run on the same documents (the dev corpus's web pool, ~48 MB of UTF-8 text):
  1. the baseline: plain `tokenizers` `Tokenizer.encode_batch` on the texts in memory,
  2. the same with `encode_batch_fast` (no offsets; what textsieve calls),
  3. textsieve's `Tokenizer.count_batch` on the texts in memory,
  4. `textsieve tokens` end to end on an annotate folder of the same documents (re-reading the
     texts from their gzip sources, counting, writing Parquet, publishing) with 1 worker,
  5. the same with a tiktoken BPE file made from the same vocabulary,
with bytes of text per CPU-second (user + system time of this process, its threads and its
children) and per wall-second, and each figure's ratio to the baseline. Target (issue 14):
>= 1 MB of text per CPU-second. The BPE (32,000 tokens by default) is trained here on part of
the pool; training twice checks it is deterministic (identical files).

Usage: python benchmarks/tokens.py [--input PATH] [--docs N] [--vocab V] [--train-docs N]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import itertools
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c0, w0 = cpu(), time.perf_counter()
    out = fn()
    return out, cpu() - c0, time.perf_counter() - w0


def to_tiktoken(tokenizer_json: Path, out: Path) -> None:
    """A tiktoken BPE file from a byte-level BPE tokenizer.json (ids as ranks; see tests/test_tokens.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    dec = {chr(c): b for b, c in zip(bs, cs)}
    j = json.loads(tokenizer_json.read_text("utf-8"))
    special = {t["content"] for t in j["added_tokens"]}
    out.write_text("".join(f"{base64.b64encode(bytes(dec[c] for c in tok)).decode()} {i}\n"
                           for tok, i in sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
                           if tok not in special))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", default=str(SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"))
    ap.add_argument("--docs", type=int, default=None, help="documents to count (default: all)")
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--train-docs", type=int, default=3000, help="documents the BPE is trained on")
    ap.add_argument("--shards", type=int, default=4)
    args = ap.parse_args()

    from tokenizers import Tokenizer as HF

    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.training.tokens import TokensConfig, run_tokens
    from textsieve.tokenization.tokenizer import load_tokenizer, train_bpe

    with gzip.open(args.input, "rt", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in itertools.islice(fh, args.docs)]
    texts = [d["text"] for d in docs]
    nbytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    print(f"{len(texts):,} documents, {nbytes / 1e6:.1f} MB of text; {os.cpu_count()} CPU(s)")

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        _, tc, tw = timed(lambda: train_bpe(texts[:args.train_docs], args.vocab, str(tmp / "tok.json")))
        train_bpe(texts[:args.train_docs], args.vocab, str(tmp / "again.json"))
        same = (tmp / "tok.json").read_bytes() == (tmp / "again.json").read_bytes()
        print(f"train: byte-level BPE, vocab {args.vocab:,} on {min(args.train_docs, len(texts)):,} documents in "
              f"{tw:.1f} s wall ({tc:.1f} CPU-s); two runs identical: {same}")

        per = -(-len(docs) // args.shards)
        (tmp / "docs").mkdir()
        for k in range(args.shards):
            with gzip.open(tmp / "docs" / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
                fh.writelines(json.dumps(d) + "\n" for d in docs[k * per:(k + 1) * per])
        run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_doc_word_count"],
                                    workers=1, progress=False))

        plain = HF.from_file(str(tmp / "tok.json"))
        tok = load_tokenizer(str(tmp / "tok.json"))
        batch = 1000
        chunks = [texts[i:i + batch] for i in range(0, len(texts), batch)]
        rows: list[tuple[str, int, float, float]] = []
        n, c, w = timed(lambda: sum(len(e.ids) for ch in chunks for e in plain.encode_batch(ch,
                                                                                             add_special_tokens=False)))
        rows.append(("tokenizers encode_batch (baseline)", n, c, w))
        n, c, w = timed(lambda: sum(len(e.ids) for ch in chunks for e in plain.encode_batch_fast(
            ch, add_special_tokens=False)))
        rows.append(("tokenizers encode_batch_fast", n, c, w))
        n, c, w = timed(lambda: int(sum(int(tok.count_batch(ch).sum()) for ch in chunks)))
        rows.append(("textsieve count_batch (in memory)", n, c, w))
        r, c, w = timed(lambda: run_tokens(TokensConfig(str(tmp / "attrs"), str(tmp / "tok.json"), workers=1,
                                                        progress=False)))
        rows.append(("textsieve tokens, 1 worker (read+count+write)", r.tokens, c, w))
        to_tiktoken(tmp / "tok.json", tmp / "bpe.tiktoken")
        r2, c, w = timed(lambda: run_tokens(TokensConfig(str(tmp / "attrs"), str(tmp / "bpe.tiktoken"),
                                                         tiktoken_pattern="gpt2", workers=1, progress=False)))
        rows.append(("textsieve tokens, tiktoken file, 1 worker", r2.tokens, c, w))

    base = nbytes / rows[0][2]
    print(f"\n{'':47} {'tokens':>12} {'CPU-s':>7} {'wall-s':>7} {'MB/CPU-s':>9} {'MB/wall-s':>9} {'vs base':>8}")
    for name, ntok, c, w in rows:
        print(f"{name:47} {ntok:>12,} {c:>7.2f} {w:>7.2f} {nbytes / c / 1e6:>9.2f} {nbytes / w / 1e6:>9.2f} "
              f"{nbytes / c / base:>7.2f}x")
    counts = {ntok for _, ntok, _, _ in rows}
    print(f"\nsame token total in every row: {len(counts) == 1}")
    stage = nbytes / rows[3][2] / 1e6
    print(f"target >= 1 MB of text per CPU-second: textsieve tokens {stage:.2f} MB/CPU-s -> "
          f"{'met' if stage >= 1 else 'NOT met'}")
    return 0 if len(counts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
