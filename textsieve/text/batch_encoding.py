"""A batch of strings as one flat buffer plus offsets: the input every text kernel takes.

Kernels never see Python strings. `str.encode` turns a whole batch into one contiguous buffer in
C, and the n+1 offsets say where each document starts, so a kernel walks all documents in one
call. Two encodings are used:

* `encode_batch`: UTF-8 bytes with byte offsets, for kernels that work on bytes (words of the
  normalized content, MinHash, the language-id automaton, hashed fastText-style features);
* `codepoints_batch`: UTF-32 code points with code-point offsets, for kernels that index the
  per-code-point tables of `unicode_props` (the raw-text scan, WordPunct tokens, DSIR features).

Both use `surrogatepass`, so a lone surrogate in the input (legal in a Python `str`, e.g. from
JSON) is carried through instead of raising. The returned arrays are read-only views of the
encoded bytes (no copy); kernels only read them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def encode_batch(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets): the UTF-8 bytes of all texts concatenated (uint8) and n+1 int64 byte
    offsets, text i being ``data[offsets[i]:offsets[i + 1]]``."""
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    if parts:
        offsets[1:] = np.cumsum([len(p) for p in parts])
    return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets


def join_batch(parts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """`encode_batch` for texts already encoded (one part: no copy)."""
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    if parts:
        offsets[1:] = np.cumsum([len(p) for p in parts])
    return np.frombuffer(parts[0] if len(parts) == 1 else b"".join(parts), dtype=np.uint8), offsets


#: the most code points one batch may hold: the kernels' token bounds are int32 (`wordpunct_numba.doc_scratch`)
MAX_BATCH_CODE_POINTS = 2**31 - 1


def codepoints_batch(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(cps, offsets): the code points of all texts concatenated (uint32) and n+1 int64
    code-point offsets, text i being ``cps[offsets[i]:offsets[i + 1]]``."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    joined = texts[0] if len(texts) == 1 else "".join(texts)  # one (big) text: no copy before encoding
    cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return cps, offsets

