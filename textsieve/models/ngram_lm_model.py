"""The word n-gram LM of the `ts_perplexity_*` signals: its tokens, KenLM-style training, and fast
backoff scoring.

Why our own: the `kenlm` PyPI package builds here, but it only *queries* models; KenLM's trainer
(`lmplz`) is a separate C++/Boost build that no wheel ships. So training is ours: Chen & Goodman's
interpolated modified Kneser-Ney with three discounts per order, as `lmplz` does, counted and
smoothed by `kneser_ney` (the code `eval lm` fits with too) in its `KENLM` variant and read out in
backoff form; scoring is a numba loop over the same keys. The model is
kept in ARPA's backoff form (log10 p of every seen n-gram, log10 backoff of every context), so
one scorer serves both our models and a user's ARPA file, and our models export to ARPA.

Tokens: the RPv2-normalized text (spec §3.2: ASCII punctuation removed, lower-cased, whitespace
collapsed, NFD; already computed once per batch by annotate) split on spaces, with ASCII digits
mapped to `0` as CCNet does. A document is one sentence `<s> w1 … wn </s>`, as CCNet scores it.
A word is identified by a 64-bit hash of its UTF-8 bytes; an n-gram by chaining its words' hashes
right to left, so the key of (w_{i-n+1} … w_i) extends the key of (w_{i-n+2} … w_i). With ~10^7
n-grams the chance of any 64-bit collision is ~10^-5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from numba import njit

from textsieve.models import kneser_ney
from textsieve.models.kneser_ney import NgramKeys, Texts, Tokenizer
from textsieve.text.batch_encoding import encode_batch
from textsieve.text.hashing import fmix64 as _fmix
from textsieve.text.normalize import normalize

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
TOKENIZER = "rpv2-normalized-words+digits0"

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_CHAIN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _extend(suffix_key, word_hash):
    """Key of (w, *suffix) from the key of suffix and the hash of w."""
    return _fmix(suffix_key * _CHAIN ^ word_hash)


@njit(cache=True)
def word_hashes(buf, off, sep):
    """Hash every word of the UTF-8 buffer `buf` (documents at `off`), words separated by byte `sep`.

    Returns (hashes uint64, tok_off int64[n_docs+1]). ASCII digits hash as '0'.
    """
    n_docs = off.shape[0] - 1
    out = np.empty(buf.shape[0] // 2 + n_docs + 1, dtype=np.uint64)
    tok_off = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        h = _FNV_OFFSET
        in_word = False
        for i in range(off[d], off[d + 1]):
            b = buf[i]
            if b == sep:
                if in_word:
                    out[k] = _fmix(h)
                    k += 1
                    in_word = False
                    h = _FNV_OFFSET
                continue
            if 49 <= b <= 57:
                b = 48
            h = (h ^ np.uint64(b)) * _FNV_PRIME
            in_word = True
        if in_word:
            out[k] = _fmix(h)
            k += 1
        tok_off[d + 1] = k
    return out[:k], tok_off


def hash_words(words: list[str]) -> np.ndarray:
    """The hashes `word_hashes` gives these words (for vocabularies and ARPA files)."""
    buf, off = encode_batch(words)
    h, tok_off = word_hashes(buf, off, 32)
    if not np.array_equal(np.diff(tok_off), np.ones(len(words), dtype=np.int64)):
        raise ValueError("a vocabulary word is empty or contains a space")
    return h


BOS_H, EOS_H, UNK_H = (int(x) for x in hash_words([BOS, EOS, UNK]))


def digits0(text: str) -> str:
    return text.translate(_DIGITS)


_DIGITS = str.maketrans("123456789", "000000000")


# ---------------------------------------------------------------------------------------------
# the model in backoff (ARPA) form
# ---------------------------------------------------------------------------------------------

@dataclass
class BackoffTables:
    """Per order n = 1..N: sorted n-gram keys, log10 probabilities and log10 backoffs."""

    keys: list[np.ndarray]
    logprob: list[np.ndarray]
    backoff: list[np.ndarray]
    unk_logprob: float
    meta: dict = field(default_factory=dict)
    _probe: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def order(self) -> int:
        return len(self.keys)

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for n in range(self.order):
            out[f"keys_{n + 1}"] = self.keys[n]
            out[f"logprob_{n + 1}"] = self.logprob[n]
            out[f"backoff_{n + 1}"] = self.backoff[n]
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], order: int, unk_logprob: float) -> BackoffTables:
        return cls([arrays[f"keys_{n}"] for n in range(1, order + 1)],
                   [arrays[f"logprob_{n}"] for n in range(1, order + 1)],
                   [arrays[f"backoff_{n}"] for n in range(1, order + 1)], unk_logprob)

    def doc_log10(self, hashes: np.ndarray, tok_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum of log10 p over each document's words and </s>, number of predicted tokens)."""
        if self._probe is None:
            self._probe = _build_probe(self)
        slot_keys, slot_val, slot_off, slot_mask, lp, bo = self._probe
        return _score_docs(hashes, tok_off, self.order, np.uint64(BOS_H), np.uint64(EOS_H), np.uint64(UNK_H),
                           self.unk_logprob, slot_keys, slot_val, slot_off, slot_mask, lp, bo)


def _build_probe(t: BackoffTables) -> tuple:
    """Open-addressing hash tables of all orders, concatenated: one probe per lookup instead of a
    binary search (the keys are already mixed, so their low bits index the table)."""
    sizes = []
    for k in t.keys:
        size = 16
        while size < 2 * len(k):
            size <<= 1
        sizes.append(size)
    slot_off = np.zeros(t.order + 1, dtype=np.int64)
    np.cumsum(sizes, out=slot_off[1:])
    slot_mask = np.array([s - 1 for s in sizes], dtype=np.uint64)
    val_off = np.zeros(t.order + 1, dtype=np.int64)
    np.cumsum([len(k) for k in t.keys], out=val_off[1:])
    slot_keys = np.zeros(int(slot_off[-1]), dtype=np.uint64)
    slot_val = np.full(int(slot_off[-1]), -1, dtype=np.int64)
    for n, k in enumerate(t.keys):
        _insert(slot_keys, slot_val, slot_off[n], slot_mask[n], np.ascontiguousarray(k, dtype=np.uint64),
                val_off[n])
    lp = np.concatenate([x.astype(np.float64) for x in t.logprob])
    bo = np.concatenate([x.astype(np.float64) for x in t.backoff])
    return slot_keys, slot_val, slot_off, slot_mask, lp, bo


@njit(cache=True)
def _insert(slot_keys, slot_val, base, mask, keys, val_base):
    for i in range(keys.shape[0]):
        j = keys[i] & mask
        while slot_val[base + j] >= 0:
            if slot_keys[base + j] == keys[i]:
                break
            j = (j + np.uint64(1)) & mask
        slot_keys[base + j] = keys[i]
        slot_val[base + j] = val_base + i


@njit(cache=True, inline="always")
def _probe(slot_keys, slot_val, base, mask, key):
    """Value index of `key` in one order's table, or -1."""
    j = key & mask
    while True:
        v = slot_val[base + j]
        if v < 0:
            return -1
        if slot_keys[base + j] == key:
            return v
        j = (j + np.uint64(1)) & mask


@njit(cache=True)
def _score_docs(hashes, tok_off, order, bos, eos, unk, unk_lp, slot_keys, slot_val, slot_off, slot_mask, lp, bo):
    n_docs = tok_off.shape[0] - 1
    total = np.zeros(n_docs, dtype=np.float64)
    count = np.zeros(n_docs, dtype=np.int64)
    maxlen = 0
    for d in range(n_docs):
        if tok_off[d + 1] - tok_off[d] > maxlen:
            maxlen = tok_off[d + 1] - tok_off[d]
    seq = np.empty(maxlen + 2, dtype=np.uint64)
    for d in range(n_docs):
        m = tok_off[d + 1] - tok_off[d]
        seq[0] = bos
        for j in range(m):
            w = hashes[tok_off[d] + j]
            seq[j + 1] = w if _probe(slot_keys, slot_val, slot_off[0], slot_mask[0], w) >= 0 else unk
        seq[m + 1] = eos
        s = 0.0
        for i in range(1, m + 2):
            hist = min(order - 1, i)  # words of history available
            # the longest n-gram ending at i that the model has (orders 1..hist+1)
            key = seq[i]
            best_lp = unk_lp
            best = 0
            for n in range(1, hist + 2):
                if n > 1:
                    key = _extend(key, seq[i - n + 1])
                v = _probe(slot_keys, slot_val, slot_off[n - 1], slot_mask[n - 1], key)
                if v < 0:
                    break  # in a backoff model every suffix of a listed n-gram is listed
                best = n
                best_lp = lp[v]
            # back off through the contexts (w_{i-n} .. w_{i-1}) with n >= the match's order
            ctx = seq[i - 1]
            for n in range(1, hist + 1):
                if n > 1:
                    ctx = _extend(ctx, seq[i - n])
                if n >= best:
                    v = _probe(slot_keys, slot_val, slot_off[n - 1], slot_mask[n - 1], ctx)
                    if v >= 0:
                        best_lp += bo[v]
            s += best_lp
        total[d] = s
        count[d] = m + 1
    return total, count


# ---------------------------------------------------------------------------------------------
# training: interpolated modified Kneser-Ney (`kneser_ney`, KenLM's variant) in backoff form
# ---------------------------------------------------------------------------------------------

@njit(cache=True)
def _extend_keys(suffix_keys, word_hashes):
    """`_extend` over arrays: the scorer's own key fold, so trained keys are what it probes."""
    out = np.empty(suffix_keys.shape[0], dtype=np.uint64)
    for i in range(out.shape[0]):
        out[i] = _extend(suffix_keys[i], word_hashes[i])
    return out


def _combine(suffix_keys: np.ndarray, word_hashes: np.ndarray) -> np.ndarray:
    return _extend_keys(np.ascontiguousarray(suffix_keys, dtype=np.uint64),
                        np.ascontiguousarray(word_hashes, dtype=np.uint64))


RPV2_KEYS = NgramKeys(bos=np.uint64(BOS_H), eos=np.uint64(EOS_H), combine=_combine, fold="right")


def rpv2_words(texts: Texts) -> tuple[np.ndarray, np.ndarray]:
    """`RPV2_WORDS`' split: the hashes `word_hashes` gives the RPv2-normalized texts."""
    items = texts.to_pylist() if isinstance(texts, (pa.Array, pa.ChunkedArray)) else list(texts)
    buf, off = encode_batch([normalize(t or "") for t in items])
    hashes, tok_off = word_hashes(buf, off, 32)
    return hashes, np.diff(tok_off)


RPV2_WORDS = Tokenizer(TOKENIZER, rpv2_words, RPV2_KEYS)


@dataclass
class TrainedLM:
    """A freshly trained model: its backoff tables, plus the n-grams as word-id tuples (for ARPA)."""

    tables: BackoffTables
    vocab: list[str]
    ngram_ids: list[np.ndarray]  # per order, rows aligned with tables.keys[n] (sorted order)
    discounts: list[tuple[float, float, float]]
    tokens: int


def train_kn(docs_words: list[list[str]], order: int = 3) -> TrainedLM:
    """Train an interpolated modified Kneser-Ney model on tokenized documents (each a sentence)."""
    if not 1 <= order <= 6:
        raise ValueError(f"n-gram order must be 1..6, got {order}")
    vocab: dict[str, int] = {BOS: 0, EOS: 1, UNK: 2}
    flat: list[int] = []
    lengths: list[int] = []
    for words in docs_words:
        for w in words:
            i = vocab.get(w)
            if i is None:
                i = vocab[w] = len(vocab)
            flat.append(i)
        lengths.append(len(words))
    if not lengths:
        raise ValueError("no training documents")
    words = list(vocab)
    ids, lens = np.asarray(flat, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    levels = kneser_ney.fit(hash_words(words)[ids], lens, order, RPV2_KEYS, kneser_ney.KENLM)
    logprob, backoff, unk_p = kneser_ney.backoff_form(levels, len(words) - 1)  # predictable: all but <s>
    keys = [lv.keys for lv in levels]
    # the words of every n-gram, for ARPA: ids at the token where its first occurrence ends
    target, hist, _ = kneser_ney.histories(ids, lens, order, 0, 1)
    ngram_ids = []
    for n, lv in enumerate(levels, start=1):
        at = np.maximum(lv.first, 0)
        rows = np.stack([c[at] for c in kneser_ney.ngram_words(target, hist, n)], axis=1)
        ngram_ids.append(np.where(lv.first[:, None] >= 0, rows, 0))  # the <s> unigram
    # <unk> becomes a real unigram entry with the uniform share
    unk_row = int(np.searchsorted(keys[0], np.uint64(UNK_H)))
    if unk_row < len(keys[0]) and keys[0][unk_row] == np.uint64(UNK_H):
        logprob[0][unk_row] = np.float32(math.log10(unk_p))
    else:
        keys[0] = np.insert(keys[0], unk_row, np.uint64(UNK_H))
        logprob[0] = np.insert(logprob[0], unk_row, np.float32(math.log10(unk_p)))
        backoff[0] = np.insert(backoff[0], unk_row, np.float32(0.0))
        ngram_ids[0] = np.insert(ngram_ids[0], unk_row, 2, axis=0)
    tables = BackoffTables(keys, logprob, backoff, float(math.log10(unk_p)))
    return TrainedLM(tables, words, ngram_ids, [lv.d for lv in levels], int(lens.sum()) + len(lens))


# ---------------------------------------------------------------------------------------------
# ARPA
# ---------------------------------------------------------------------------------------------

def write_arpa(lm: TrainedLM, fh) -> None:
    """Write the model as an ARPA text file (log10 probabilities and backoffs)."""
    t = lm.tables
    fh.write("\n\\data\\\n")  # 9 significant digits: float32 values round-trip exactly
    for n in range(t.order):
        fh.write(f"ngram {n + 1}={len(t.keys[n])}\n")
    for n in range(t.order):
        fh.write(f"\n\\{n + 1}-grams:\n")
        rows = lm.ngram_ids[n]
        lp = t.logprob[n]
        bo = t.backoff[n]
        for r in range(len(rows)):
            words = " ".join(lm.vocab[i] for i in rows[r])
            if n + 1 < t.order:
                fh.write(f"{lp[r]:.9g}\t{words}\t{bo[r]:.9g}\n")
            else:
                fh.write(f"{lp[r]:.9g}\t{words}\n")
    fh.write("\n\\end\\\n")


def read_arpa(fh, source: str = "ARPA file") -> BackoffTables:
    """Read an ARPA n-gram model (text) into backoff tables keyed like our models."""
    counts: dict[int, int] = {}
    section = 0
    grams: dict[int, tuple[list[str], list[float], list[float]]] = {}
    line_no = 0
    for raw in fh:
        line_no += 1
        line = raw.strip()
        if not line:
            continue
        if line == "\\data\\":
            section = -1
            continue
        if line == "\\end\\":
            break
        if line.startswith("\\") and line.endswith("-grams:"):
            try:
                section = int(line[1:-7])
            except ValueError:
                raise ValueError(f"{source}:{line_no}: bad section header {line!r}") from None
            grams[section] = ([], [], [])
            continue
        if section == -1:
            if line.startswith("ngram "):
                k, _, v = line[6:].partition("=")
                counts[int(k)] = int(v)
            continue
        if section <= 0:
            raise ValueError(f"{source}:{line_no}: n-gram line outside a section (not an ARPA file?)")
        parts = line.split("\t") if "\t" in line else line.split()
        if "\t" in line:
            if len(parts) not in (2, 3):
                raise ValueError(f"{source}:{line_no}: expected 'logprob<TAB>words[<TAB>backoff]'")
            lp, words, bo = float(parts[0]), parts[1].split(), float(parts[2]) if len(parts) == 3 else 0.0
        else:
            lp = float(parts[0])
            words = parts[1:1 + section]
            bo = float(parts[1 + section]) if len(parts) > 1 + section else 0.0
        if len(words) != section:
            raise ValueError(f"{source}:{line_no}: expected a {section}-gram, got {len(words)} words")
        g = grams[section]
        g[0].append(" ".join(words))
        g[1].append(lp)
        g[2].append(bo)
    if not grams:
        raise ValueError(f"{source}: no n-gram sections (not an ARPA file)")
    order = max(grams)
    if order > 6:
        raise ValueError(f"{source}: order {order} > 6 is not supported")
    for n, c in counts.items():
        if n in grams and len(grams[n][0]) != c:
            raise ValueError(f"{source}: header says {c} {n}-grams, found {len(grams[n][0])}")
    keys, lps, bos = [], [], []
    unk_lp = -100.0
    for n in range(1, order + 1):
        texts, lp_n, bo_n = grams.get(n, ([], [], []))
        flat = [digits0(w) for t in texts for w in t.split(" ")]
        h = hash_words(flat).reshape(-1, n) if flat else np.zeros((0, n), dtype=np.uint64)
        k = _chain_rows(h)
        order_idx = np.argsort(k, kind="stable")
        keys.append(k[order_idx])
        lps.append(np.asarray(lp_n, dtype=np.float32)[order_idx])
        bos.append(np.asarray(bo_n, dtype=np.float32)[order_idx])
        if n == 1 and UNK in texts:
            unk_lp = lp_n[texts.index(UNK)]
    return BackoffTables(keys, lps, bos, unk_lp)


@njit(cache=True)
def _chain_rows(h):
    out = np.empty(h.shape[0], dtype=np.uint64)
    n = h.shape[1]
    for r in range(h.shape[0]):
        k = h[r, n - 1]
        for j in range(n - 2, -1, -1):
            k = _extend(k, h[r, j])
        out[r] = k
    return out
