"""Per-code-point property tables for the compiled text kernels.

RPv2's signals are defined through Python's own Unicode behaviour (`re`'s `\\w`, `str.isspace`,
`str.isupper`, `str.lower`, NFD, `str.isnumeric`), whose answers depend on the running CPython's
Unicode database (14.0.0 on CPython 3.11, the version the reference ran on). Rather than
re-deriving those rules, we ask CPython itself once per code point and store the answers in
flat arrays that numba kernels index by code point. Building takes a few seconds, so the tables
are cached per (Python version, Unicode version) in the user cache directory.
"""

from __future__ import annotations

import os
import string
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

N_CODEPOINTS = 0x110000

# Bit flags in `UnicodeTables.flags`.
F_WORD = 1  # Python-re `\w`: c.isalnum() or c == "_"
F_SPACE = 2  # str.isspace() (== re `\s`)
F_ASCII_ALPHA = 4  # [a-zA-Z]
F_UPPER = 8  # Py_UNICODE_ISUPPER: counts as a cased upper character in str.isupper()
F_LOWER_OR_TITLE = 16  # Py_UNICODE_ISLOWER or ISTITLE: makes str.isupper() false
F_ASCII_PUNCT = 32  # a character of string.punctuation (deleted by RPv2 normalization)

TABLE_FORMAT_VERSION = 1


@dataclass(frozen=True)
class UnicodeTables:
    """Arrays indexed by code point.

    flags: uint8 bit set of the F_* flags above.
    norm_len: len(NFD(c.lower())), the code points c contributes to normalized text.
    norm_numeric: how many of those code points satisfy str.isnumeric().
    norm_ascii: the code point of NFD(c.lower()) when that is one ASCII character, else 0
        (lets a kernel compare a normalized token against an ASCII word such as "javascript").
    """

    flags: np.ndarray
    norm_len: np.ndarray
    norm_numeric: np.ndarray
    norm_ascii: np.ndarray


def _build() -> UnicodeTables:
    flags = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    norm_len = np.ones(N_CODEPOINTS, dtype=np.uint8)
    norm_numeric = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    norm_ascii = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    punct = set(string.punctuation)
    nfd = unicodedata.normalize
    for cp in range(N_CODEPOINTS):
        c = chr(cp)
        f = 0
        if c.isalnum() or c == "_":
            f |= F_WORD
        if c.isspace():
            f |= F_SPACE
        if cp < 128:
            if c in string.ascii_letters:
                f |= F_ASCII_ALPHA
            if c in punct:
                f |= F_ASCII_PUNCT
        if c.isupper():
            f |= F_UPPER
        # "A" + c is upper exactly when c is neither lowercase nor titlecase (CPython's rule).
        if not ("A" + c).isupper():
            f |= F_LOWER_OR_TITLE
        flags[cp] = f
        low = c.lower()
        if low == c and cp < 0xC0:
            continue  # ASCII and Latin-1 controls: NFD is the identity, defaults are right
        n = nfd("NFD", low)
        norm_len[cp] = len(n)
        norm_numeric[cp] = sum(1 for x in n if x.isnumeric())
        if len(n) == 1 and ord(n) < 128:
            norm_ascii[cp] = ord(n)
    for cp in range(0xC0):
        n = chr(cp).lower()
        norm_numeric[cp] = 1 if n.isnumeric() else 0
        norm_ascii[cp] = ord(n) if ord(n) < 128 else 0
    return UnicodeTables(flags, norm_len, norm_numeric, norm_ascii)


def _cache_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "textsieve"
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-ucd{unicodedata.unidata_version}-v{TABLE_FORMAT_VERSION}"
    return base / f"unicode-props-{tag}.npz"


_TABLES: UnicodeTables | None = None


def unicode_tables() -> UnicodeTables:
    """The tables for the running Python, loaded from the cache or built (and cached) once."""
    global _TABLES
    if _TABLES is not None:
        return _TABLES
    path = _cache_path()
    tables = None
    if path.exists():
        try:
            with np.load(path) as z:
                tables = UnicodeTables(z["flags"], z["norm_len"], z["norm_numeric"], z["norm_ascii"])
        except (OSError, KeyError, ValueError):
            tables = None  # a damaged cache file is rebuilt below
    if tables is None:
        tables = _build()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, flags=tables.flags, norm_len=tables.norm_len,
                                    norm_numeric=tables.norm_numeric, norm_ascii=tables.norm_ascii)
            os.replace(tmp, path)
        except OSError:
            pass  # read-only home: keep the in-memory tables only
    _TABLES = tables
    return tables
