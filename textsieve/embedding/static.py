"""Static (bag-of-token) embedding models: WordLlama and Model2Vec, run with NumPy/SciPy.

Why our own inference: a static model's document vector is a pooled sum of token vectors, so
it needs only the document's token counts: each distinct word is tokenised once per process,
and the document vector is one sparse-dense product of the counts with the token vectors.
Tokenising every document in full is the slow part of other inference (~700 docs/s per core
on the dev corpus for WordLlama's Llama-2 tokenizer). For a SentencePiece-style BPE
(WordLlama's) the words, the cache and the merges run in Numba (`bag`, `bpe`); for other
tokenizers each new word goes through the `tokenizers` library.

The rule (documented in docs/embeddings.md, the same for every static model):
- A document's words are its text split on Unicode whitespace (`str.split()`). Each word is
  tokenised on its own, without special tokens (for a Llama/SentencePiece tokenizer this is the
  token sequence of " word"; for a BERT-style tokenizer, whose pre-tokenizer splits on
  whitespace anyway, it is exactly the in-context tokens). Unknown-token ids are dropped, as
  Model2Vec does.
- Long documents: every token counts - the document vector is the mean over *all* its tokens,
  which is the token-weighted mean of the means of any chunking of it (chunk-and-pool with
  weights = tokens per chunk), so no chunk size is needed and nothing is truncated.
- The vector is L2-normalised (cosine similarity = dot product); a document without tokens is
  the zero vector.
Token counts are integers (exact in any order) and the product sums them in token-id order,
so a document's vector does not depend on the batch, the cache or the worker count.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: words whose token ids are cached per process (~100 B each); the cache is emptied when full
CACHE_WORDS = 1_000_000


@dataclass
class StaticModel:
    """Token vectors (vocab x dim) + the tokenizer that maps words to their rows."""

    tokenizer: Any  # tokenizers.Tokenizer, padding and truncation off
    vectors: np.ndarray  # float32 (vocab, dim), Model2Vec's per-token weights already applied
    unk_id: int | None = None
    _direct: Any = field(default=None, repr=False)  # word -> model input, or False (see `_direct_form`)
    _bpe: Any = field(default=None, repr=False)  # bpe.BPETables when the compiled BPE runs it, else False
    _bag: Any = field(default=None, repr=False)  # bag.TokenBag: that path's word cache
    # the word cache: word -> slot; a slot's token ids are store[start:start + len]
    _slots: dict[str, int] = field(default_factory=dict, repr=False)
    _starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    _lens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    _chunks: list[np.ndarray] = field(default_factory=list, repr=False)
    _n_tokens: int = 0

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def _word_ids(self, word: str) -> list[int]:
        """The token ids of one word: the tokenizer's model run on the word as its normalizer and
        pre-tokenizer leave it (`tokenizer.encode(word)` gives the same ids, at ~1/4 the speed)."""
        if not word:  # Arrow's split leaves "" at a text's edges: no tokens
            return []
        if self._direct is None:
            self._direct = _direct_form(self.tokenizer)
        if self._direct is False:
            return list(self.tokenizer.encode(word, add_special_tokens=False).ids)
        return [t.id for t in self.tokenizer.model.tokenize(self._direct(word))]

    def _tokenise(self, words: list[str]) -> None:
        """Cache the token ids of `words` (unknown and out-of-range ids dropped), appended to the
        flat token store; each word gets a slot (its start and length there)."""
        vocab = self.vectors.shape[0]
        if self._direct is None:
            self._direct = _direct_form(self.tokenizer)
        flat: list[int] = []
        lens: list[int] = []
        if self._direct is False:
            for w in words:
                ids = self._word_ids(w)
                lens.append(len(ids))
                flat.extend(ids)
        else:  # the hot loop: one Rust call per new word, nothing else per token in Python
            tokenize, prefix = self.tokenizer.model.tokenize, self._direct("")
            for w in words:
                ids = [t.id for t in tokenize(prefix + w)] if w else []
                lens.append(len(ids))
                flat.extend(ids)
        ids_a = np.asarray(flat, np.int64)
        lens_a = np.asarray(lens, np.int64)
        keep = (ids_a >= 0) & (ids_a < vocab)
        if self.unk_id is not None:
            keep &= ids_a != self.unk_id
        if not keep.all():  # drop unknown / out-of-range ids, per word
            owner = np.repeat(np.arange(len(words)), lens_a)
            lens_a = np.bincount(owner[keep], minlength=len(words)).astype(np.int64)
            ids_a = ids_a[keep]
        n0 = len(self._lens)
        self._slots.update(zip(words, range(n0, n0 + len(words))))
        starts = self._n_tokens + np.concatenate([[0], np.cumsum(lens_a)[:-1]]).astype(np.int64)
        self._starts = np.concatenate([self._starts, starts])
        self._lens = np.concatenate([self._lens, lens_a])
        self._n_tokens += int(lens_a.sum())
        self._chunks.append(ids_a)

    def _reset(self) -> None:
        self._slots, self._chunks, self._n_tokens = {}, [], 0
        self._starts, self._lens = np.zeros(0, np.int64), np.zeros(0, np.int64)

    def token_counts(self, texts: list[str]) -> Any:
        """scipy CSR (len(texts), vocab) of token counts, indices sorted (token id order)."""
        bag = self._compiled()
        return bag.counts(texts) if bag is not None else self._token_counts_cached(texts)

    def _compiled(self) -> Any:
        """The `bag.TokenBag` (words, word cache and counts in compiled code; no word becomes a
        Python object) when `bpe` runs this tokenizer, else None."""
        if self._bpe is None:
            from textsieve.embedding.bpe import tables_for

            self._bpe = tables_for(self.tokenizer) or False
        if self._bpe is False:
            return None
        if self._bag is None:
            from textsieve.embedding.bag import TokenBag

            self._bag = TokenBag(self._bpe, self.vectors.shape[0])
        return self._bag

    def _token_counts_cached(self, texts: list[str]) -> Any:
        """token_counts through the tokenizer library, one call per word new to this process.

        The batch's words are split and dictionary-encoded by Arrow (C++), so Python touches
        each *distinct* word of the batch once (a cache lookup) and tokenises it once per process."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from scipy.sparse import coo_matrix, csr_matrix

        words = pc.utf8_split_whitespace(pa.array(texts, pa.large_string()))
        offsets = np.asarray(words.offsets)
        flat = pc.dictionary_encode(words.flatten())
        uniq = flat.dictionary.to_pylist()
        if len(self._slots) + len(uniq) > CACHE_WORDS:
            self._reset()
        # one C-level pass over the distinct words: their slots, -1 for words not cached yet
        slot = np.fromiter(map(self._slots.get, uniq, itertools.repeat(-1)), np.int64, len(uniq))
        miss = np.flatnonzero(slot < 0)
        if len(miss):
            first = len(self._lens)
            self._tokenise([uniq[i] for i in miss])
            slot[miss] = np.arange(first, first + len(miss))
        if len(self._chunks) > 1:  # one flat store again
            self._chunks = [np.concatenate(self._chunks)]
        store = self._chunks[0] if self._chunks else np.zeros(0, np.int64)
        starts = self._starts[slot]
        lens = self._lens[slot]
        indptr = np.concatenate([[0], np.cumsum(lens)])
        pos = np.arange(int(indptr[-1]), dtype=np.int64) + np.repeat(starts - indptr[:-1], lens)
        w2t = csr_matrix((np.ones(len(pos), np.float32), store[pos], indptr),
                         shape=(len(uniq), self.vectors.shape[0]))
        doc = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(offsets))
        word = np.asarray(flat.indices, np.int64)
        docs = coo_matrix((np.ones(len(word), np.float32), (doc, word)), shape=(len(texts), len(uniq))).tocsr()
        out = docs @ w2t  # integer counts: exact in float32 whatever the order they are added in
        out.sort_indices()
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), dim), unit length (zero rows for documents without tokens)."""
        bag = self._compiled()
        if bag is not None:  # the same float32 sums as the product below, without the matrix
            out = bag.sums(texts, self.vectors)
        else:
            out = np.asarray(self.token_counts(texts) @ self.vectors, dtype=np.float32)  # tokens in id order
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))
        np.divide(out, norms[:, None], out=out, where=norms[:, None] > 0)
        return out


def _direct_form(tok: Any) -> Any:
    """How a whitespace-free word reaches the tokenizer's model, when that is a plain string
    rewrite: SentencePiece-style BPE (WordLlama's Llama-2 tokenizer) prepends "▁" and has no
    pre-tokenizer (`bpe.prepend_prefix`). Otherwise False: the word goes through `tokenizer.encode`."""
    from textsieve.embedding.bpe import prepend_prefix

    prefix = prepend_prefix(json.loads(tok.to_str()))
    if prefix is None:
        return False
    return lambda w: prefix + w


def _tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    return tok


def _unk_id(tokenizer_path: str, tok: Any) -> int | None:
    with open(tokenizer_path, encoding="utf-8") as fh:
        model = json.load(fh).get("model", {})
    unk = model.get("unk_token")
    if isinstance(unk, str):
        i = tok.token_to_id(unk)
        return int(i) if i is not None else None
    if isinstance(unk, int):  # Unigram stores the id
        return unk
    return None


def load_static(tokenizer_path: str, weights_path: str, tensor: str | None = None) -> StaticModel:
    """A static model from a tokenizer.json and a safetensors file (`tensor`: its key; default:
    `embeddings` (Model2Vec) or `embedding.weight` (WordLlama), else the only 2-D tensor)."""
    from safetensors.numpy import load_file

    arrays = load_file(weights_path)
    names = [tensor] if tensor else [n for n in ("embeddings", "embedding.weight") if n in arrays]
    if not names:
        names = [n for n, a in arrays.items() if a.ndim == 2 and n != "mapping"]
    if len(names) != 1 or names[0] not in arrays:
        raise ValueError(f"{weights_path}: cannot tell which tensor holds the token vectors "
                         f"(tensors: {', '.join(sorted(arrays))})")
    vectors = np.ascontiguousarray(arrays[names[0]], dtype=np.float32)
    mapping = arrays.get("mapping")
    if mapping is not None:  # Model2Vec's vocabulary quantization: token id -> row of the vectors
        vectors = np.ascontiguousarray(vectors[np.asarray(mapping, np.int64).reshape(-1)])
    weights = arrays.get("weights")
    tok = _tokenizer(tokenizer_path)
    if weights is not None:  # Model2Vec: a token's vector is scaled by its weight before pooling
        vectors *= np.asarray(weights, np.float32).reshape(-1)[:, None]
    return StaticModel(tokenizer=tok, vectors=vectors, unk_id=_unk_id(tokenizer_path, tok))


def wordllama_files() -> tuple[str, str]:
    """(tokenizer, weights) of WordLlama's L2-Supercat 256-d model inside the installed wheel.
    Found without importing the package (its import costs ~0.3 s); ImportError when absent."""
    import importlib.util

    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'wordllama'")
    root = list(spec.submodule_search_locations)[0]
    return (os.path.join(root, "tokenizers", "l2_supercat_tokenizer_config.json"),
            os.path.join(root, "weights", "l2_supercat_256.safetensors"))
