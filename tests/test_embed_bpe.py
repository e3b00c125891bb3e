"""The compiled BPE (`embedding.bpe`) and word cache (`embedding.bag`) against the libraries.

The default model's speed rests on tokenising words in Numba instead of through `tokenizers`,
so these tests hold it to the library: the same ids as `tokenizer.model.tokenize` for every
distinct word of real web text (both merge paths: scan and heap), for byte fallback, unknown
tokens (fused or not) and repeated merges on small tokenizers built here, the same words as
`str.split()`, and the same document vectors as the library path whatever the batch or cache.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _files import web_docs

from textsieve.embedding import bag, bpe
from textsieve.embedding.static import load_static, wordllama_files

EDGE_WORDS = ["😀x", "a\x00b", "日本語のテキスト", "x" * 3000, "é́́", "\U0010FFFF", "▁▁", "<s>", "</s>", "<unk>",
              "a\u0301\u0302" * 40, "https://example.org/" + "path/" * 30, "🇩🇪🇫🇷", "\ufeffword", "ǅungla"]


def _arrow_words(words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    arr = pa.array(words, pa.large_string())
    bufs = arr.buffers()
    return np.frombuffer(bufs[2], np.uint8), np.frombuffer(bufs[1], np.int64)[:len(arr) + 1]


def _library_ids(tok, prefix: str, words: list[str], drop: set[int]) -> list[list[int]]:
    return [[t.id for t in tok.model.tokenize(prefix + w) if t.id not in drop] if w else [] for w in words]


def _compiled_ids(tables, words: list[str], n_rows: int, scan: int = bpe.SCAN_SYMBOLS) -> list[list[int]]:
    data, offsets = _arrow_words(words)
    ids, lens = bpe.tokenize_words(tables, data, offsets, n_rows, scan)
    ends = np.cumsum(lens)
    return [ids[e - n:e].tolist() for e, n in zip(ends, lens)]


@pytest.fixture(scope="module")
def wordllama():
    tok_path, weights = wordllama_files()
    model = load_static(tok_path, weights)
    tables = bpe.tables_for(model.tokenizer)
    assert tables is not None, "WordLlama's tokenizer takes the compiled path"
    return model, tables


@pytest.fixture(scope="module")
def texts(dev_dir) -> list[str]:
    return [d["text"] for d in web_docs(dev_dir, 1500)]


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_compiled_bpe_gives_the_librarys_ids_for_every_word_of_real_text(wordllama, texts):
    model, tables = wordllama
    words = list(dict.fromkeys(w for t in texts for w in t.split())) + EDGE_WORDS + [""]
    assert len(words) > 50_000
    want = _library_ids(model.tokenizer, "▁", words, {tables.unk_id})
    assert _compiled_ids(tables, words, model.vectors.shape[0]) == want
    # both merge paths: every word by the heap, every word by the scan
    assert _compiled_ids(tables, words, model.vectors.shape[0], scan=0) == want
    assert _compiled_ids(tables, words, model.vectors.shape[0], scan=10**9) == want
    assert want[words.index("😀x")][1:5] == [model.tokenizer.token_to_id(f"<0x{b:02X}>") for b in "😀".encode()]


def _small_tokenizer(byte_fallback: bool, fuse_unk: bool, unk: bool = True):
    """A SentencePiece-style BPE over a few letters: duplicate merge lines, byte tokens for some
    bytes only, so characters take every branch (known, bytes, unknown)."""
    from tokenizers import Tokenizer, normalizers
    from tokenizers.models import BPE

    vocab = {"<unk>": 0, "▁": 1, "a": 2, "b": 3, "c": 4, "ab": 5, "bc": 6, "abc": 7, "▁a": 8, "<0xC3>": 9,
             "<0xA9>": 10, "cc": 11, "▁ab": 12}
    merges = [("a", "b"), ("b", "c"), ("▁", "a"), ("ab", "c"), ("c", "c"), ("▁a", "b"), ("b", "c")]
    kwargs = {"unk_token": "<unk>"} if unk else {}
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, byte_fallback=byte_fallback, fuse_unk=fuse_unk, **kwargs))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    return tok


@pytest.mark.parametrize("byte_fallback,fuse_unk,unk", [(True, True, True), (True, False, True),
                                                         (False, True, True), (False, False, True),
                                                         (False, False, False)])
def test_compiled_bpe_follows_the_library_on_unknowns_bytes_and_repeated_merges(byte_fallback, fuse_unk, unk):
    tok = _small_tokenizer(byte_fallback, fuse_unk, unk)
    tables = bpe.tables_for(tok)
    assert tables is not None
    rng = np.random.default_rng(0)
    alphabet = list("abcé") + ["ü", "x", "日"]
    words = ["".join(rng.choice(alphabet, size=rng.integers(1, 40))) for _ in range(3000)] + ["abcabc", "ccc", "xé"]
    # the library also returns unknown-token ids; the compiled path leaves them out, as the embedder does
    want = [[t.id for t in tok.model.tokenize("▁" + w) if t.id != 0] for w in words]
    for scan in (0, 10**9):
        assert _compiled_ids(tables, words, 13, scan) == want


def test_unsupported_tokenizers_take_the_library_path():
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import BPE, WordPiece

    wp = Tokenizer(WordPiece(vocab={"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    assert bpe.tables_for(wp) is None
    byte_level = _small_tokenizer(True, True)
    byte_level.pre_tokenizer = pre_tokenizers.ByteLevel()
    assert bpe.tables_for(byte_level) is None
    dropout = Tokenizer(BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")], dropout=0.1))
    assert bpe.tables_for(dropout) is None
    from tokenizers import normalizers

    rewrites = _small_tokenizer(True, True)  # a Replace of a letter changes the word: not a plain prefix
    rewrites.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace("a", "b")])
    assert bpe.tables_for(rewrites) is None


def test_words_are_str_split_words():
    assert np.array_equal(np.flatnonzero(bag.SPACE), [c for c in range(0x110000) if chr(c).isspace()])
    spaces = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
    texts = ["", "   ", "one", f"a{spaces}b", " lead trail ", "x\u3000y\u2029z\x85w\xa0v", "日本\u2003語 😀\t😀",
             "\x1c\x1d\x1e\x1fsep", "\u200bzero\u200bwidth is not space"]
    data, offsets = _arrow_words(texts)
    starts, ends, doc_words = bag._split(data, offsets, bag.SPACE)
    for d, text in enumerate(texts):
        got = [bytes(data[s:e]).decode() for s, e in zip(starts[doc_words[d]:doc_words[d + 1]],
                                                          ends[doc_words[d]:doc_words[d + 1]])]
        assert got == text.split(), text


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_document_vectors_equal_the_library_path_whatever_the_batch_or_cache(wordllama, texts, monkeypatch):
    tok_path, weights = wordllama_files()
    library = load_static(tok_path, weights)
    library._bpe = False  # the per-word `tokenizers` path
    sample = texts[:600] + ["", " \n ", "😀 😀 x"]
    want = library.embed(sample)
    compiled = load_static(tok_path, weights)
    assert np.array_equal(compiled.embed(sample), want)
    a, b = compiled.token_counts(sample), library.token_counts(sample)  # the counts themselves, too
    assert (a != b).nnz == 0 and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    monkeypatch.setattr(bag, "CACHE_WORDS", 500)  # emptied before nearly every batch
    fresh = load_static(tok_path, weights)
    got = np.concatenate([fresh.embed(sample[i:i + 37]) for i in range(0, len(sample), 37)])
    assert np.array_equal(got, want)
    assert fresh._bag.n_words < 500 + 37 * 400
