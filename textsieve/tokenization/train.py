"""`textsieve train tokenizer`: a byte-level BPE trained on the user's documents, so an offline
default tokenizer exists (`tokens --tokenizer tok.json`) without downloading one.

Documents are read with the same readers as every stage (JSONL, Parquet, WARC/WET, text; files,
folders, globs), streamed into `tokenizers`' trainer, so memory is the trainer's word counts,
not the corpus.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from textsieve.display import result_display
from textsieve.io.overlap import check_apart
from textsieve.options import option, progress_option
from textsieve.tokenization.tokenizer import ENDOFTEXT, TokenizerError, train_bpe


@dataclass
class TrainTokenizerConfig:
    """What `textsieve train tokenizer` (and the API) takes."""

    corpus: list[str] = option(help="document files, folders or globs to train on (JSONL, Parquet, WARC/WET, "
                                    "text)", positional=True, metavar="CORPUS")
    output: str = option(help="tokenizer file to write (Hugging Face tokenizer.json format)", short="-o",
                         metavar="FILE")
    vocab: int = option(32000, help="vocabulary size, special tokens and the 256 bytes included")
    min_frequency: int = option(2, help="a pair seen fewer times is never merged")
    special_tokens: list[str] = option(help="special tokens, ids 0, 1, ... in this order (repeatable); the first "
                                            f"is the end-of-text token (default: {ENDOFTEXT})",
                                       factory=lambda: [ENDOFTEXT], renamed_from=("--special-token",), repeat=True,
                                       metavar="TOKEN")
    text_field: str = option("text", help="JSON/Parquet field holding the text", metavar="FIELD")
    max_docs: int | None = option(None, help="train on the first N documents only (default: all)")
    progress: bool = progress_option()


@result_display
@dataclass
class TrainTokenizerResult:
    output: str
    documents: int
    vocab_size: int
    eos_id: int | None
    fingerprint: str
    tokenizer: dict[str, Any] = field(default_factory=dict)


def train_tokenizer(cfg: TrainTokenizerConfig) -> TrainTokenizerResult:
    """Train the BPE of `cfg` and write it to `cfg.output` (see the module doc)."""
    from textsieve.io.texts import input_shards, shard_documents

    check_apart("train tokenizer", cfg.output, cfg.corpus, what="output file")  # ts.train_tokenizer too
    if not cfg.special_tokens or any(not t for t in cfg.special_tokens):
        raise TokenizerError("train tokenizer: give at least one non-empty special token (the end-of-text token)")
    if len(set(cfg.special_tokens)) != len(cfg.special_tokens):
        raise TokenizerError(f"train tokenizer: a special token is listed twice: {cfg.special_tokens}")
    if cfg.max_docs is not None and cfg.max_docs < 1:
        raise TokenizerError(f"train tokenizer: max docs must be >= 1, not {cfg.max_docs}")
    shards = input_shards(cfg.corpus, skip_metadata=True)
    if not shards:
        raise TokenizerError(f"train tokenizer: no documents found in {' '.join(cfg.corpus)}")
    docs = itertools.islice(shard_documents(shards, cfg.text_field), cfg.max_docs)
    first = next(docs, None)
    if first is None:  # checked before training, so no empty tokenizer is written
        raise TokenizerError(f"train tokenizer: no documents in {' '.join(cfg.corpus)}")
    n = 0

    def texts() -> Iterator[str]:
        nonlocal n
        for doc in itertools.chain([first], docs):
            n += 1
            yield doc.text

    tok = train_bpe(texts(), cfg.vocab, cfg.output, min_frequency=cfg.min_frequency,
                    special_tokens=cfg.special_tokens, show_progress=cfg.progress)
    return TrainTokenizerResult(output=cfg.output, documents=n, vocab_size=tok.vocab_size, eos_id=tok.eos_id,
                                fingerprint=tok.fingerprint, tokenizer=tok.info())
