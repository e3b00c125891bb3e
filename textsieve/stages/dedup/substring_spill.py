"""Pass 1 of `dedup substring`: one shard's documents as token work files (a worker's task).

Why apart from the stage: this is the per-shard part that runs in worker processes and the
part that knows how text becomes tokens; the stage module keeps the partition passes and the
publish. Files of one shard (`prefix` + suffix), all in corpus order:

* `.ids`   uint32 per token: a shard-local word id (first appearance order) or the tokenizer's id
* `.off`   `dedup.substring.OFFSET` per token: its code-point start and end in its document
* `.vocab` Arrow IPC, one string column: the shard's words by local id (word tokens only)
* `.base`  Arrow IPC: id, shard, row, tokens and chars per document, one batch per flush

A read batch is bounded by `share` bytes (`BYTES_PER_CHAR` per character of text held).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from textsieve.dedup.partitions import as_bytes
from textsieve.dedup.substring import OFFSET, Vocabulary, word_tokens
from textsieve.io.arrow_arrays import numeric_array, string_array
from textsieve.io.diskfull import disk_full_as_error
from textsieve.tokenization.tokenizer import load_tokenizer

BASE_SCHEMA = pa.schema([("id", pa.string()), ("shard", pa.string()), ("row", pa.int64()),
                         ("tokens", pa.int64()), ("chars", pa.int64())])
VOCAB_SCHEMA = pa.schema([("word", pa.string())])
#: documents per read batch (fewer when their characters reach the share)
BATCH = 2048
#: working bytes per character of a read batch: the text, its tokens as str, their ids and offsets
BYTES_PER_CHAR = 24

_TOKENIZERS: dict[str, Any] = {}  # per process: the loaded tokenizer, by path


@dataclass
class Spilled:
    """One shard's work files and counts."""

    prefix: str
    n_docs: int = 0
    n_tokens: int = 0
    words: bool = True  # word tokens (a `.vocab` file) or a tokenizer's ids

    def path(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}"

    def base_batches(self) -> Iterator[pa.RecordBatch]:
        with pa.memory_map(self.path("base"), "r") as src:
            reader = pa.ipc.open_file(src)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def vocab(self) -> pa.Array:
        with pa.memory_map(self.path("vocab"), "r") as src:
            table = pa.ipc.open_file(src).read_all()
        return table.column("word").combine_chunks() if table.num_rows else pa.array([], pa.string())

    def ids(self, start: int, stop: int) -> np.ndarray:
        return np.fromfile(self.path("ids"), dtype=np.uint32, count=stop - start, offset=start * 4)

    def offsets(self, start: int, stop: int) -> np.ndarray:
        return np.fromfile(self.path("off"), dtype=OFFSET, count=stop - start, offset=start * OFFSET.itemsize)


def _tokenizer(path: str) -> Any:
    if path not in _TOKENIZERS:
        _TOKENIZERS.clear()
        _TOKENIZERS[path] = load_tokenizer(path)
    return _TOKENIZERS[path]


def _encode(texts: list[str], vocab: Vocabulary | None, tokenizer: str | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ids, offsets) per text."""
    if tokenizer is not None:
        return _tokenizer(tokenizer).encode_offsets_batch(texts)
    assert vocab is not None
    out = []
    for text in texts:
        words, offsets = word_tokens(text)
        out.append((vocab.encode(words), offsets))
    return out


def spill_shard(task: tuple[Any, str, str | None, int]) -> Spilled:
    """Tokenize one shard (`DocSource`) into its work files (module doc)."""
    src, prefix, tokenizer, share = task
    out = Spilled(prefix, words=tokenizer is None)
    vocab = Vocabulary() if tokenizer is None else None
    max_chars = max(1, share // BYTES_PER_CHAR)
    with open(out.path("ids"), "wb") as ids_fh, open(out.path("off"), "wb") as off_fh, \
            open(out.path("base"), "wb") as base_fh, pa.ipc.new_file(base_fh, BASE_SCHEMA) as base:
        meta: tuple[list, list, list] = ([], [], [])
        texts: list[str] = []

        def flush() -> None:
            if not texts:
                return
            encoded = _encode(texts, vocab, tokenizer)
            with disk_full_as_error(out.path("ids"), written=ids_fh.tell, what="spilling tokens to"):
                for ids, offsets in encoded:
                    ids_fh.write(as_bytes(np.ascontiguousarray(ids, dtype=np.uint32)))
                    off_fh.write(as_bytes(offsets))  # OFFSET records or (n, 2) uint32: the same bytes
                base.write_batch(pa.record_batch(
                    [string_array(meta[0]), string_array(meta[1]), numeric_array(meta[2], pa.int64()),
                     numeric_array([len(i) for i, _ in encoded], pa.int64()),
                     numeric_array([len(t) for t in texts], pa.int64())],  # (from buffers: `pa.array` loads pandas)
                    schema=BASE_SCHEMA))
            out.n_tokens += sum(len(i) for i, _ in encoded)
            for c in meta:
                c.clear()
            texts.clear()

        chars = 0
        for doc_id, shard, row, text in src.docs():
            for c, v in zip(meta, (doc_id, shard, row)):
                c.append(v)
            texts.append(text)
            out.n_docs += 1
            chars += len(text)
            if len(texts) >= BATCH or chars >= max_chars:
                flush()
                chars = 0
        flush()
    if vocab is not None:
        with open(out.path("vocab"), "wb") as fh, pa.ipc.new_file(fh, VOCAB_SCHEMA) as w:
            w.write_table(pa.Table.from_arrays([string_array(vocab.words())], schema=VOCAB_SCHEMA))
    return out
