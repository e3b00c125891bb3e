"""`textsieve eval lm`: is a selection closer to the target than a random one? Perplexity of a
small n-gram LM trained on each, measured on held-out target documents.

The target is split by a hash of each document id (`target_heldout`): stable across runs and
tools, so a selector fitted on the other part (e.g. `dsir fit` on the complement) never saw the
documents it is evaluated on. The random baseline draws from `--pool` with a fixed seed, matched
to the selection by tokens (default; perplexity depends mostly on training size) or documents.
The `eval` parent command (`textsieve/commands/eval.py`) calls `register_lm`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

_METADATA_FILES = frozenset({"selection.json", "annotate.json"})


@dataclass
class LMEvalConfig:
    selection: str
    target: str
    pool: str
    order: int = 3
    vocab_size: int = 1 << 20
    heldout_fraction: float = 0.5
    match: str = "tokens"  # "tokens" | "docs"
    seed: int = 0
    quiet: bool = False


def read_texts(path: str) -> tuple[list[str], list[str]]:
    """(ids, texts) of any input textsieve reads, of a `select` output folder (its metadata
    files are skipped), or of an annotate output folder (texts re-read from its sources)."""
    from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents
    from textsieve.io.paths import expand_inputs
    from textsieve.io.readers import ShardReader

    ids: list[str] = []
    texts: list[str] = []
    try:
        fs, shards = attribute_shards(path)
        metas = [read_shard_meta(fs, p) for p in shards]
        annotated = all("source_shard" in m and "read_options" in m for m in metas)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        annotated = False
    if annotated:
        for m in metas:
            for d in source_documents(m, on_error="fail"):
                ids.append(d.id)
                texts.append(d.text)
        return ids, texts
    import fsspec

    fs, root = fsspec.core.url_to_fs(path)
    is_dir = fs.isdir(root)
    shards = [s for s in expand_inputs([path])
              if not (is_dir and s.rel.rsplit("/", 1)[-1] in _METADATA_FILES)]
    for s in shards:
        for d in ShardReader(s):
            ids.append(d.id)
            texts.append(d.text)
    if not texts:
        raise ValueError(f"{path}: no documents")
    return ids, texts


def target_heldout(ids: list[str], fraction: float, seed: int = 0) -> np.ndarray:
    """Which target documents are held out for evaluation: xxh64(id, seed) / 2^64 < fraction."""
    import xxhash

    if not 0 < fraction <= 1:
        raise ValueError(f"--heldout-fraction must be in (0, 1], got {fraction}")
    if fraction == 1:
        return np.ones(len(ids), bool)
    h = np.fromiter((xxhash.xxh64_intdigest(i.encode("utf-8"), seed) for i in ids), dtype=np.uint64, count=len(ids))
    return h.astype(np.float64) / 2.0**64 < fraction


def random_baseline(lengths: np.ndarray, want_docs: int, want_tokens: int, match: str, seed: int) -> np.ndarray:
    """Indices of a random sample of the pool (without replacement, fixed seed) with as many
    documents as the selection, or the fewest documents reaching its token count."""
    perm = np.random.default_rng(seed).permutation(len(lengths))
    if match == "docs":
        return perm[:want_docs]
    cum = np.cumsum(lengths[perm])
    k = int(np.searchsorted(cum, want_tokens)) + 1
    return perm[:min(k, len(perm))]


def evaluate(cfg: LMEvalConfig) -> dict[str, object]:
    """Fit one LM on the selection and one on a random pool sample of equal size; perplexity of
    both on the held-out target documents."""
    from textsieve.eval.ngram_lm import NgramLM, take_documents, tokenize

    if cfg.match not in ("tokens", "docs"):
        raise ValueError(f"--match must be 'tokens' or 'docs', not {cfg.match!r}")
    t0 = time.perf_counter()
    say = (lambda msg: None) if cfg.quiet else (lambda msg: print(f"eval lm: {msg}", file=sys.stderr))
    tids, ttexts = read_texts(cfg.target)
    held = target_heldout(tids, cfg.heldout_fraction, cfg.seed)
    if not held.any():
        raise ValueError(f"{cfg.target}: no target document falls in the held-out part "
                         f"(--heldout-fraction {cfg.heldout_fraction}); raise it")
    heldout = [t for t, h in zip(ttexts, held) if h]
    say(f"target: {len(heldout):,} of {len(ttexts):,} documents held out for evaluation")
    _, stexts = read_texts(cfg.selection)
    sw, sl = tokenize(stexts)
    say(f"selection: {len(sl):,} documents, {int(sl.sum()):,} tokens; reading the pool")
    _, ptexts = read_texts(cfg.pool)
    pw, pl = tokenize(ptexts)
    pick = random_baseline(pl, len(sl), int(sl.sum()), cfg.match, cfg.seed)
    rw, rl = take_documents(pw, pl, pick)
    say(f"random baseline: {len(rl):,} of {len(pl):,} pool documents, {int(rl.sum()):,} tokens; fitting")
    sel = NgramLM.fit_tokens(sw, sl, cfg.order, cfg.vocab_size).evaluate(heldout)
    rnd = NgramLM.fit_tokens(rw, rl, cfg.order, cfg.vocab_size).evaluate(heldout)
    return {
        "perplexity": sel["perplexity"], "perplexity_random": rnd["perplexity"],
        "oov_rate": sel["oov_rate"], "oov_rate_random": rnd["oov_rate"],
        "documents": len(sl), "tokens": int(sl.sum()),
        "documents_random": len(rl), "tokens_random": int(rl.sum()),
        "target_documents": len(heldout), "target_tokens": sel["tokens"],
        "pool_documents": len(pl),
        "config": {k: v for k, v in asdict(cfg).items() if k != "quiet"},
        "seconds": round(time.perf_counter() - t0, 3),
    }


def run(args: argparse.Namespace) -> int:
    cfg = LMEvalConfig(selection=args.selection, target=args.target, pool=args.pool, order=args.order,
                       vocab_size=args.vocab_size, heldout_fraction=args.heldout_fraction,
                       match=args.match, seed=args.seed, quiet=args.quiet or args.json)
    res = evaluate(cfg)
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"{cfg.order}-gram LM perplexity on {res['target_documents']:,} held-out target documents "
          f"({res['target_tokens']:,} tokens):")
    print(f"  selection  {res['perplexity']:12.2f}   ({res['documents']:,} docs, {res['tokens']:,} tokens, "
          f"OOV {res['oov_rate']:.1%})")
    print(f"  random     {res['perplexity_random']:12.2f}   ({res['documents_random']:,} docs, "
          f"{res['tokens_random']:,} tokens, OOV {res['oov_rate_random']:.1%})")
    return 0


def register_lm(eval_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add `lm` to the `eval` subcommands."""
    p = eval_sub.add_parser("lm", parents=[common], help="perplexity of an n-gram LM trained on the selection "
                            "vs on a random sample", description=__doc__.split("\n\n")[0])
    p.add_argument("--selection", required=True, metavar="S", help="select output folder or any input "
                   "(JSONL/Parquet/... with a text field), or an annotate output folder")
    p.add_argument("--target", required=True, metavar="T", help="target documents (any input)")
    p.add_argument("--pool", required=True, metavar="P", help="where the random baseline is drawn from: the "
                   "annotate output folder (or input) the selection was made from")
    p.add_argument("--order", type=int, default=3, help="n-gram order (default 3)")
    p.add_argument("--vocab-size", type=int, default=1 << 20, help="open-vocabulary size for the uniform base "
                   "distribution (default 2^20; only compare runs with equal values)")
    p.add_argument("--heldout-fraction", type=float, default=0.5, help="share of target documents (by id hash) "
                   "used for evaluation (default 0.5; 1 = all, when the selector never saw the target)")
    p.add_argument("--match", choices=("tokens", "docs"), default="tokens",
                   help="size the random baseline by tokens (default) or documents")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
