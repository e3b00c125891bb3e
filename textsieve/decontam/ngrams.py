"""Normalised words and their hashed n-grams: the one rule benchmark examples and documents share.

Normalisation (`NORMALIZATION`, recorded in the set's info), GPT-3's rule ("n-grams ignore case
and punctuation and are split on whitespace", 13-grams) with datatrove's diacritics folding:

* a word is a maximal run of alphanumeric code points (`str.isalnum`); everything else
  (whitespace, punctuation, symbols, `_`) separates words, so `don't` is `don`, `t` (as in
  datatrove, whose punctuation table turns `'` into a space);
* combining marks (category Mn) never split a word and add nothing to it, so `e` + U+0301 is the
  same word as `é`;
* each code point is folded: `lower()`, then NFD with the combining marks dropped (`Élan` ->
  `elan`); where that leaves several code points (Hangul syllables: jamo) the lower-cased code
  point is kept as it is;
* CJK ideographs, kana and Hangul compatibility jamo are one word each: those scripts put no
  spaces between words, and a whole sentence as one "word" could never match a 13-gram;
* digits stay as they are. datatrove maps every number to `0`; here that would make every
  13 numbers of a benchmark table match every other table of numbers.

An n-gram is n consecutive words. One made only of single letters or digits (each word one
folded code point, CJK/kana excepted) is left out on both sides, benchmark and document
(`LEFT_OUT`): alphabet index lines (`A B C ... Z`, `0-9 A B ...`), spelled-out words and digit
tables are navigation or layout, not benchmark content, and every held-out "hit" of a real run
against a Wikipedia target was such a line. An n-gram with at least one longer word still
counts, so `Themensuche A B C ...` matches where the benchmark has it too.

An n-gram's key is a 64-bit hash: FNV-1a over the folded code points
of each word (MurmurHash3-finalised), a polynomial rolling hash of the n word hashes, and the
finaliser over that plus n (a 9-gram and a 13-gram never share a key). Two different n-grams
share a key with probability ~2^-64 per pair; a document n-gram falsely matches an index of K
keys with probability ~K / 2^64 (5e-13 for ten million keys).

The word rule is `fold_table()` (a per-code-point table, cached on disk like
`text.unicode_props`) plus the kernels of `ngram_kernels`; `words_reference` is its pure-Python
twin that the tests compare with.
"""

from __future__ import annotations

import os
import sys
import tempfile
import unicodedata
from pathlib import Path

import numpy as np

NORMALIZATION = "gpt3-words-v1: alnum runs, lowercase, NFD minus Mn, CJK/kana one word per char, digits kept"
#: the n-grams never indexed nor looked up (recorded in the set's info: a set made before this
#: rule is matched again, not refused)
LEFT_OUT = "n-grams made only of single letters or digits (e.g. an A-Z index line)"

#: fold-table value of a separator
SEP = 0
#: fold-table value of a combining mark: part of the word around it, adds nothing
IGNORE = 0xFFFFFFFF
#: fold-table flag of a code point that is a word by itself (CJK ideographs, kana)
SOLO = 0x80000000
CP_MASK = 0x1FFFFF

#: code point ranges whose characters are one word each
SOLO_RANGES = ((0x3040, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
               (0xF900, 0xFAFF), (0xFF66, 0xFF9F), (0x20000, 0x323AF))

TABLE_VERSION = 1


def fold_char(c: str) -> str:
    """The folded form of one alphanumeric character (see the module doc)."""
    low = c.lower()
    s = "".join(x for x in unicodedata.normalize("NFD", low) if unicodedata.category(x) != "Mn")
    if len(s) == 1:
        return s
    return low if len(low) == 1 else c


def _is_solo(cp: int) -> bool:
    return any(a <= cp <= b for a, b in SOLO_RANGES)


def _build() -> np.ndarray:
    table = np.zeros(0x110000, dtype=np.uint32)
    cat = unicodedata.category
    for cp in range(0x110000):
        c = chr(cp)
        if c.isalnum():
            table[cp] = (SOLO | cp) if _is_solo(cp) else ord(fold_char(c))
        elif cat(c) == "Mn":
            table[cp] = IGNORE
    return table


def _cache_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "textsieve"
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-ucd{unicodedata.unidata_version}-v{TABLE_VERSION}"
    return base / f"decontam-fold-{tag}.npy"


_TABLE: np.ndarray | None = None


def fold_table() -> np.ndarray:
    """uint32 per code point: SEP, IGNORE, SOLO | cp, or the folded code point. Built once (1-2 s)
    and cached per (Python, Unicode) version, since `isalnum` and NFD follow the interpreter's
    Unicode database."""
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    path = _cache_path()
    table = None
    if path.exists():
        try:
            table = np.load(path)
            if table.shape != (0x110000,) or table.dtype != np.uint32:
                table = None
        except (OSError, ValueError):
            table = None  # a damaged cache file is rebuilt
    if table is None:
        table = _build()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
            with os.fdopen(fd, "wb") as fh:
                np.save(fh, table)
            os.replace(tmp, path)
        except OSError:
            pass  # read-only home: keep the table in memory only
    _TABLE = table
    return table


def words_reference(text: str) -> list[tuple[int, int, str]]:
    """(start, end, folded word) of every word of `text`, code-point offsets: the definition that
    the compiled tokenizer (`ngram_kernels.doc_words`) must agree with."""
    out: list[tuple[int, int, str]] = []
    start = -1
    end = 0
    parts: list[str] = []

    def close() -> None:
        nonlocal start
        if start >= 0:
            out.append((start, end, "".join(parts)))
            parts.clear()
            start = -1

    for i, c in enumerate(text):
        if c.isalnum():
            if _is_solo(ord(c)):
                close()
                out.append((i, i + 1, c))
                continue
            if start < 0:
                start = i
            parts.append(fold_char(c))
            end = i + 1
        elif unicodedata.category(c) == "Mn":
            if start >= 0:
                end = i + 1
        else:
            close()
    close()
    return out
