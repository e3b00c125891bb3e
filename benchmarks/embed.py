"""Embedding speed: docs/s per core of `textsieve embed` with the default model (WordLlama
L2-Supercat 256-d), beside the annotate floor and the baselines, in one run on the same documents.

Prints (the dev corpus, /work/shared/corpora/dev/web_sample.jsonl.gz, 15k web documents):
  1. the annotate floor: reading and parsing the input alone, and `textsieve annotate` (28 RPv2
     rule signals + MinHash) with 1 worker, as benchmarks/annotate.py measures them;
  2. `textsieve embed ATTRS --workers 1` in a cold process (a fresh interpreter: imports, model
     load, an empty word cache, the texts re-read from the gzip source, Parquet written and the
     set published), timed from spawn to exit, and the stage's own seconds;
  3. WordLlama's own inference (`wordllama.inference.WordLlamaInference(embedding, tokenizer)`
     built from the wheel's files; `WordLlama.load()` is never called, it goes to the network) on
     the texts in memory, in length-sorted batches of at most BUDGET padded characters (its
     padded dense gather would need gigabytes for a batch of 64 long pages in corpus order);
  4. Model2Vec's `StaticModel` (if installed) loaded from a Model2Vec folder built here from the
     same weights and tokenizer, `encode(max_length=None, use_multiprocessing=False)`, in memory,
     on " ".join(text.split()) as WordLlama (on raw text it also embeds the newline byte tokens);
  5. `textsieve embed` with that Model2Vec folder as the model (our loader on a Model2Vec folder);
  6. every distinct word of the corpus tokenised by textsieve's compiled BPE and by the
     `tokenizers` library one call per word: words per CPU-second, and how many words differ (0);
with docs per CPU-second (user + system of this process and its children) and per wall-second,
and the ratios. Then the cosine agreement of ours against WordLlama's embedding of
" ".join(text.split()) (the documented rule, docs/embeddings.md: >= 0.9999) and against
Model2Vec's. Every thread pool is pinned to one thread (per-core figures). Target (issue 15):
>= 2,000 docs/s per core for `textsieve embed`.

Usage: python benchmarks/embed.py [--input PATH] [--docs N]
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[_v] = "1"  # per-core figures: no hidden thread pools (children inherit it)
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded

import argparse  # noqa: E402
import gzip  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TARGET = 2000
BUDGET = 2_000_000  # padded characters per WordLlama batch
COLD = """
import json, sys, time
t = time.perf_counter()
from textsieve.stages.annotate.embed import EmbedConfig, run_embed
r = run_embed(EmbedConfig(directory=sys.argv[1], model=sys.argv[2], workers=1, overwrite=True))
print(json.dumps({"docs": r.documents, "stage_s": r.seconds, "in_process_s": time.perf_counter() - t}))
"""


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    c0, w0 = cpu(), time.perf_counter()
    out = fn()
    return out, cpu() - c0, time.perf_counter() - w0


def read_texts(path: str, limit: int | None) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in itertools.islice(fh, limit)]


def annotate_floor(path: str, resources: Path) -> list[tuple[str, int, float, float]]:
    """benchmarks/annotate.py's floor rows: read + parse only, and annotate with 1 worker."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from annotate import annotate, read_floor

    annotate(path, 1, resources)  # warm-up (numba cache load, page cache), as annotate.py does
    (n, s), c, w = timed(lambda: read_floor(path))
    rows = [("read + parse only (floor)", n, c, w)]
    (n, s), c, w = timed(lambda: annotate(path, 1, resources))
    rows.append(("textsieve annotate, 1 worker (28 signals + MinHash)", n, c, s))
    return rows


def cold_embed(attrs: str, model: str) -> tuple[dict, float, float]:
    """`run_embed` in a fresh interpreter; (its result, CPU seconds, wall seconds from spawn)."""
    c0, w0 = cpu(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COLD, attrs, model], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), cpu() - c0, time.perf_counter() - w0


def wordllama_baseline() -> Any:
    """WordLlama's own inference object from the wheel's files (never `WordLlama.load()`)."""
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    from textsieve.embedding.static import wordllama_files

    tok, weights = wordllama_files()
    with safe_open(weights, framework="np", device="cpu") as f:
        embedding = f.get_tensor("embedding.weight")
    return WordLlamaInference(embedding, Tokenizer.from_file(tok))


def wordllama_embed(wl: Any, texts: list[str]) -> np.ndarray:
    """WordLlama's `embed(norm=True)` over length-sorted batches of <= BUDGET padded characters,
    rows back in input order."""
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), wl.embedding.shape[1]), np.float32)
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and j - i < 64 and (j + 1 - i) * len(texts[order[j]]) <= BUDGET:
            j += 1
        idx = order[i:j]
        out[idx] = wl.embed([texts[k] for k in idx], norm=True, batch_size=len(idx))
        i = j
    return out


def model2vec_folder(dest: Path) -> Path:
    """A Model2Vec folder (model.safetensors `embeddings`, tokenizer.json, config.json) holding
    WordLlama's weights and tokenizer."""
    from safetensors.numpy import save_file

    from textsieve.embedding.static import load_static, wordllama_files

    tok, weights = wordllama_files()
    dest.mkdir(parents=True, exist_ok=True)
    save_file({"embeddings": load_static(tok, weights).vectors}, str(dest / "model.safetensors"))
    shutil.copy(tok, dest / "tokenizer.json")
    (dest / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True, "max_length": None,
                                                  "hidden_dim": 256}))
    return dest


def bpe_agreement(texts: list[str]) -> tuple[list[tuple[str, int, float, float]], str]:
    """Every distinct word of `texts` tokenised by the compiled BPE (textsieve/embedding/bpe.py)
    and by the `tokenizers` library (`tokenizer.model.tokenize`, one call per word): the rows
    (words per CPU-second) and a line counting the words whose ids differ."""
    import pyarrow as pa

    from textsieve.embedding import bpe
    from textsieve.embedding.static import _tokenizer, wordllama_files

    tok = _tokenizer(wordllama_files()[0])
    tables = bpe.tables_for(tok)
    assert tables is not None
    words = list(dict.fromkeys(w for t in texts for w in t.split()))
    arr = pa.array(words, pa.large_string())
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[:len(words) + 1]
    bpe.tokenize_words(tables, data, offsets[:2], tables.n_ids)  # load the compiled kernel
    (ids, lens), c1, w1 = timed(lambda: bpe.tokenize_words(tables, data, offsets, tables.n_ids))
    tokenize = tok.model.tokenize
    ref, c2, w2 = timed(lambda: [[t.id for t in tokenize("▁" + w) if t.id != tables.unk_id] for w in words])
    ends = np.cumsum(lens)
    bad = sum(ids[e - n:e].tolist() != r for e, n, r in zip(ends, lens, ref))
    rows = [("  distinct words: compiled BPE (words, not docs)", len(words), c1, w1),
            ("  distinct words: tokenizers model.tokenize", len(words), c2, w2)]
    return rows, f"compiled BPE vs tokenizers on all {len(words):,} distinct words: {bad} differ"


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    ok = (na > 0) & (nb > 0)
    out = np.ones(len(a))
    out[ok] = np.einsum("ij,ij->i", a[ok], b[ok]) / (na[ok] * nb[ok])
    return out


def agreement(name: str, ours: np.ndarray, theirs: np.ndarray) -> str:
    cos = cosine_rows(ours.astype(np.float64), theirs.astype(np.float64))
    return (f"{name}: min {cos.min():.6f}, mean {cos.mean():.7f}, p0.1 {np.percentile(cos, 0.1):.6f}, "
            f"{(cos >= 0.9999).mean():.2%} of docs >= 0.9999, {(cos < 0.999).sum()} below 0.999")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", default=str(SHARED / "corpora/dev/web_sample.jsonl.gz"))
    ap.add_argument("--resources", default=str(SHARED / "golden/rpv2_resources"))
    ap.add_argument("--docs", type=int, default=None, help="only the first N documents (default: all)")
    ap.add_argument("--no-annotate", action="store_true", help="skip the annotate floor rows")
    args = ap.parse_args()
    if not Path(args.input).exists():
        print(f"input not found: {args.input} (set TEXTSIEVE_SHARED)", file=sys.stderr)
        return 2
    from textsieve.embedding.models import load_embedder
    from textsieve.embedding.store import read_embeddings
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    rows: list[tuple[str, int, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="ts-bench-embed-") as tmp:
        src = Path(tmp) / "in" / "web.jsonl.gz"
        src.parent.mkdir()
        with gzip.open(args.input, "rt", encoding="utf-8") as fin, gzip.open(src, "wt", encoding="utf-8") as fout:
            fout.writelines(itertools.islice(fin, args.docs))
        if not args.no_annotate:
            rows += annotate_floor(str(src), Path(args.resources))
        attrs = str(Path(tmp) / "attrs")
        run_annotate(AnnotateConfig(inputs=[str(src)], output=attrs, signals=["rps_doc_word_count"], workers=1,
                                    progress=False))
        cold_embed(attrs, "wordllama")  # warm-up: page cache, .pyc files
        res, c, w = cold_embed(attrs, "wordllama")
        n = int(res["docs"])
        rows.append(("textsieve embed, 1 worker, cold process", n, c, w))
        rows.append(("  the stage's own seconds (after imports)", n, c * res["stage_s"] / w, res["stage_s"]))
        ours_ids, ours = read_embeddings(attrs, "wordllama")
        texts = read_texts(str(src), None)
        assert len(texts) == len(ours_ids) == n

        bpe_rows, bpe_line = bpe_agreement(texts)
        rows += bpe_rows
        lines = [bpe_line]
        joined = [" ".join(t.split()) for t in texts]
        wl = wordllama_baseline()
        theirs, c, w = timed(lambda: wordllama_embed(wl, joined))
        rows.append(("WordLlama inference (in memory, sorted batches)", n, c, w))
        lines.append(agreement("ours vs WordLlama(' '.join(text.split()))", ours, theirs))
        emb = load_embedder()
        mem, c, w = timed(lambda: emb.embed(texts))
        rows.append(("textsieve Embedder.embed (in memory, fresh model)", n, c, w))
        lines.append(agreement("float16 stored vs float32 in memory (ours)", ours, mem))

        try:
            from model2vec import StaticModel
        except ImportError:
            StaticModel = None
            lines.append("Model2Vec: not installed (pip install model2vec) - its rows are left out")
        if StaticModel is not None:
            folder = model2vec_folder(Path(tmp) / "m2v_wordllama")
            m2v = StaticModel.from_pretrained(str(folder), normalize=True, max_length=None, force_download=False)
            m2v_out, c, w = timed(lambda: m2v.encode(joined, max_length=None, use_multiprocessing=False,
                                                     batch_size=1024))
            rows.append(("Model2Vec StaticModel.encode (in memory)", n, c, w))
            lines.append(agreement("ours vs Model2Vec(' '.join(text.split())), same weights", ours,
                                   np.asarray(m2v_out)))
            res, c, w = cold_embed(attrs, str(folder))
            rows.append(("textsieve embed on the Model2Vec folder, cold", int(res["docs"]), c, w))

    print(f"{'run':<52} {'docs':>7} {'cpu s':>7} {'wall s':>7} {'docs/cpu-s':>11} {'docs/s':>8}")
    for name, n, c, w in rows:
        print(f"{name:<52} {n:>7} {c:>7.2f} {w:>7.2f} {n / c:>11.0f} {n / w:>8.0f}")
    by = {name: n / w for name, n, _, w in rows}
    ours_rate = by["textsieve embed, 1 worker, cold process"]
    print()
    for name, rate in by.items():
        if not name.startswith(("textsieve embed, 1 worker", "  distinct words")):
            print(f"textsieve embed (cold, 1 worker) vs {name.strip()}: {ours_rate / rate:.2f}x")
    words = {name: n / c for name, n, c, _ in rows if name.startswith("  distinct words")}
    if len(words) == 2:
        a, b = words.values()
        print(f"compiled BPE vs tokenizers, words per CPU-second: {a / b:.2f}x")
    print()
    for line in lines:
        print(line)
    print(f"\ntarget >= {TARGET:,} docs/s per core: {'met' if ours_rate >= TARGET else 'NOT met'} ({ours_rate:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
