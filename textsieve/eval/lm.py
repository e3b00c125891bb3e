"""Is a selection closer to the target than a random one? The perplexity, on held-out target
documents, of a small n-gram LM trained on each (`textsieve eval lm`).

Why this measure: perplexity of a cheap LM trained on a selection, measured on target text, is
the classic proxy for "is this selection closer to what I want" (DSIR, CCNet). The LM is
`textsieve.models.kneser_ney.NgramLM` (interpolated modified Kneser-Ney, `UNICODE_WORDS` tokens).

* the **held-out target**: documents whose id hashes below `heldout_fraction` (`target_heldout`),
  stable across runs and tools, so a selector fitted on the other part (e.g. `dsir fit` on the
  complement) never saw the documents it is evaluated on;
* the **random baseline**: drawn from the pool with a fixed seed, matched to the selection by
  tokens (default; perplexity depends mostly on training size) or by documents.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from textsieve.io.texts import corpus_documents
from textsieve.models.kneser_ney import DEFAULT_ORDER, DEFAULT_VOCAB, UNICODE_WORDS, NgramLM, take_documents
from textsieve.options import option

MATCHES = ("tokens", "docs")


@dataclass
class LMEvalConfig:
    """`textsieve eval lm` options."""

    selection: str = option(help="select output folder or any input (JSONL/Parquet/... with a text field), or an "
                                 "annotate output folder", metavar="S")
    target: str = option(help="target documents (any input)", metavar="T")
    pool: str = option(help="where the random baseline is drawn from: the annotate output folder (or input) the "
                            "selection was made from", metavar="P")
    order: int = option(DEFAULT_ORDER, help="n-gram order")
    vocab_size: int = option(DEFAULT_VOCAB, help="open-vocabulary size for the uniform base distribution (default "
                                                 "2^20; only compare runs with equal values)")
    heldout_fraction: float = option(0.5, help="share of target documents (by id hash) used for evaluation "
                                               "(default 0.5; 1 = all, when the selector never saw the target)")
    match: str = option("tokens", help="size the random baseline by tokens or documents", choices=MATCHES)
    seed: int = option(0, help="seed of the held-out split and of the random baseline")
    progress: bool = option(True, help="report each step on stderr", cli=False, cli_reason="-q turns it off")


@dataclass
class LMEvalResult:
    """Perplexity of the LM fitted on the selection and of the one fitted on the random sample."""

    perplexity: float
    perplexity_random: float
    oov_rate: float
    oov_rate_random: float
    documents: int
    tokens: int
    documents_random: int
    tokens_random: int
    target_documents: int
    target_tokens: int
    pool_documents: int
    config: dict = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


def ids_and_texts(path: str) -> tuple[list[str], list[str]]:
    """(ids, texts) of any input textsieve reads, of a `select` output folder (its metadata
    files are skipped), or of an annotate output folder (texts re-read from its sources)."""
    ids: list[str] = []
    texts: list[str] = []
    for doc in corpus_documents([path], on_error="fail"):
        ids.append(doc.id)
        texts.append(doc.text)
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


def evaluate_lm(cfg: LMEvalConfig) -> LMEvalResult:
    """Fit one LM on the selection and one on a random pool sample of equal size; perplexity of
    both on the held-out target documents."""
    if cfg.match not in MATCHES:
        raise ValueError(f"--match must be 'tokens' or 'docs', not {cfg.match!r}")
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if cfg.progress:
            print(f"eval lm: {msg}", file=sys.stderr)

    tids, ttexts = ids_and_texts(cfg.target)
    held = target_heldout(tids, cfg.heldout_fraction, cfg.seed)
    if not held.any():
        raise ValueError(f"{cfg.target}: no target document falls in the held-out part "
                         f"(--heldout-fraction {cfg.heldout_fraction}); raise it")
    heldout = [t for t, h in zip(ttexts, held) if h]
    say(f"target: {len(heldout):,} of {len(ttexts):,} documents held out for evaluation")
    tok = UNICODE_WORDS
    _, stexts = ids_and_texts(cfg.selection)
    sw, sl = tok.split(stexts)
    say(f"selection: {len(sl):,} documents, {int(sl.sum()):,} tokens; reading the pool")
    _, ptexts = ids_and_texts(cfg.pool)
    pw, pl = tok.split(ptexts)
    pick = random_baseline(pl, len(sl), int(sl.sum()), cfg.match, cfg.seed)
    rw, rl = take_documents(pw, pl, pick)
    say(f"random baseline: {len(rl):,} of {len(pl):,} pool documents, {int(rl.sum()):,} tokens; fitting")
    sel = NgramLM.fit_tokens(sw, sl, cfg.order, cfg.vocab_size, tok).evaluate(heldout)
    rnd = NgramLM.fit_tokens(rw, rl, cfg.order, cfg.vocab_size, tok).evaluate(heldout)
    return LMEvalResult(
        perplexity=sel["perplexity"], perplexity_random=rnd["perplexity"],
        oov_rate=sel["oov_rate"], oov_rate_random=rnd["oov_rate"],
        documents=len(sl), tokens=int(sl.sum()), documents_random=len(rl), tokens_random=int(rl.sum()),
        target_documents=len(heldout), target_tokens=int(sel["tokens"]), pool_documents=len(pl),
        config={k: v for k, v in asdict(cfg).items() if k != "progress"},
        seconds=round(time.perf_counter() - t0, 3))
