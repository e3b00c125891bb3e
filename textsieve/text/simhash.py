"""64-bit SimHash fingerprints of texts over character n-grams, as RedPajama-1T's book dedup
computes them (spec rpv1-sources §5.2), compiled.

Definition (every step is the reference's, so the values are its values bit for bit):

* features: the text lower-cased (`str.lower`), every run of characters that are not word
  characters deleted (Python's Unicode ``\\w``: letters, digits, underscore; so spaces,
  punctuation, line breaks and ``\\r`` all go and the text becomes one string), then every
  substring of `width` code points at every offset (overlapping character n-grams; a string
  shorter than `width` is one feature, the whole string, possibly empty);
* each feature (repeats counted, weight 1) is hashed with MD5 of its UTF-8 bytes, and the last
  8 digest bytes are read as a big-endian 64-bit number;
* bit j of the fingerprint is 1 iff **more than half** of the features have bit j set (a tie
  gives 0).

Why compiled: the reference (`simhash` 2.1.2) hashes each n-gram with `hashlib` from Python,
~1.5 us a feature, and a book has a million of them. Here one numba pass per text hashes the
n-grams straight from the text's UTF-8 bytes (a feature is a slice; MD5's padding is made
word by word while a block is loaded, nothing is copied) and counts the bits as it goes.
Deleting the non-word characters stays with Python's `re`, whose ``\\w`` is the definition. The
kernel is in `text.simhash_kernel`, imported on first use, so the stages that import this
module for its constants do not load numba.

`near_duplicates` (`text.simhash_search`) finds the pairs of fingerprints within a Hamming
distance without comparing all pairs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

#: the reference's defaults: `dedup.py -w 6 -k 5`
WIDTH = 6
BITS = 64
#: what the fingerprints depend on besides width (recorded where a set or run is fingerprinted)
DEFINITION = "rpv1-books: lower, delete [^\\w]+, char n-grams, md5[-8:] big-endian, majority bits"

_NON_WORD = re.compile(r"[^\w]+")


def feature_string(text: str) -> str:
    """The string whose n-grams are the features: lower-cased, non-word characters deleted."""
    return _NON_WORD.sub("", text.lower())


def n_features(length: int, width: int = WIDTH) -> int:
    """How many features a feature string of `length` code points has."""
    return max(length - width + 1, 1)


def fingerprint(text: str, width: int = WIDTH) -> tuple[int, int]:
    """(64-bit SimHash, number of features) of `text` (see the module doc)."""
    if width < 1:
        raise ValueError(f"n-gram width must be at least 1, not {width}")
    from textsieve.text.simhash_kernel import simhash_kernel, word_flags  # numba: loaded when first used

    cps = np.frombuffer(text.lower().encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    fp, n = simhash_kernel(cps, word_flags(), width)
    return int(fp), int(n)


def fingerprints(texts: Iterable[str], width: int = WIDTH) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints (uint64) and feature counts (int64) of many texts, in order."""
    fps: list[int] = []
    counts: list[int] = []
    for text in texts:
        fp, n = fingerprint(text, width)
        fps.append(fp)
        counts.append(n)
    return np.asarray(fps, dtype=np.uint64), np.asarray(counts, dtype=np.int64)


def hamming(a: int, b: int) -> int:
    """Bits in which two fingerprints differ."""
    return (int(a) ^ int(b)).bit_count()
