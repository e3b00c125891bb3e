"""Content keys for exact dedup: a 128-bit hash of the text after a documented normalization.

`--normalize`:
* ``none``: the raw text, byte for byte (UTF-8). Only identical strings match.
* ``rpv2``: RPv2's normalization (spec §3.2, `textsieve.text.normalize.normalize`): ASCII
  punctuation removed, lowercased, whitespace runs collapsed to one space and trimmed, Unicode
  NFD. Documents that differ only in case, punctuation or spacing match.

The key is XXH3-128 of the UTF-8 bytes, split into two uint64 (h1 = high, h2 = low). Two
different texts share a key with probability ~2**-128 per pair. (RPv2 itself keys on the CCNet
WET digest, §9, which ordinary corpora lack.)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xxhash

from textsieve.text.normalize import normalize

NORMALIZATIONS = ("none", "rpv2")


def check_normalize(mode: str) -> None:
    if mode not in NORMALIZATIONS:
        raise ValueError(f"--normalize must be one of {', '.join(NORMALIZATIONS)}, not {mode!r}")


def content_keys(texts: Iterable[str], mode: str = "none") -> tuple[np.ndarray, np.ndarray]:
    """(h1, h2) uint64 arrays: the 128-bit content key of each text under `mode`."""
    check_normalize(mode)
    digest = xxhash.xxh3_128_digest
    if mode == "rpv2":
        raw = b"".join(digest(normalize(t).encode("utf-8", "surrogatepass")) for t in texts)
    else:
        raw = b"".join(digest(t.encode("utf-8", "surrogatepass")) for t in texts)
    pairs = np.frombuffer(raw, dtype=">u8").reshape(-1, 2)
    return pairs[:, 0].astype(np.uint64), pairs[:, 1].astype(np.uint64)
