"""LSH banding over stored MinHash bands (spec §8 steps 1-3), without Python loops per document.

A band column (`signature_sim0.8`, `list<binary>`) is read straight from its Arrow buffers into
a uint32 array `[docs, bands, rows]`. Each (document, band index k, band bytes) becomes one
row of the partition table (`partitions.ROW`) keyed by a 128-bit hash of (k, band values):
two independent 64-bit chains of a splitmix64 finaliser. RPv2 groups by the exact bytes; two
different bands get the same 128-bit key with probability about 2**-128 per pair, i.e. never
in practice (for 10**10 band rows the chance of any false collision is below 10**-18).
Band count and width are read from the data, so any banded signature column works (RPv2's
`signature_sim*` or the fast mode's `ts_fastsig_sim*`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from textsieve.dedup.partitions import ROW
from textsieve.io.arrow_arrays import to_numpy

BAND_PREFIXES = {"rpv2": "signature_sim", "fast": "ts_fastsig_sim"}


def band_column(prefix: str, threshold: float) -> str:
    """Column name of the bands for `threshold`, e.g. `signature_sim0.8` (Python str(float))."""
    return f"{prefix}{float(threshold)}"


class BandError(ValueError):
    """A band column that is missing or not a well-formed list<binary> of equal-width bands."""


def band_values(arr: pa.Array | pa.ChunkedArray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """`(valid, values)`: bool per document and uint32 `[n_valid, bands, rows]` for the valid
    (non-null) documents, decoded from big-endian band bytes (§7.3)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)) or not (
            pa.types.is_binary(arr.type.value_type) or pa.types.is_large_binary(arr.type.value_type)):
        raise BandError(f"{where}: expected list<binary> bands, found {arr.type}")
    valid = np.asarray(to_numpy(arr.is_valid()), dtype=bool)
    flat = arr.flatten()  # skips the children of null lists
    n_valid = int(valid.sum())
    if n_valid == 0 or len(flat) == 0:
        return valid, np.zeros((0, 0, 0), dtype=np.uint32)
    lengths = np.diff(to_numpy(arr.offsets))[valid]  # (value_lengths has nulls: to_numpy would load pandas)
    bands = int(lengths[0])
    if bands == 0 or np.any(lengths != bands):
        raise BandError(f"{where}: documents have different numbers of bands")
    off_type = np.int64 if pa.types.is_large_binary(flat.type) else np.int32
    offsets = np.frombuffer(flat.buffers()[1], dtype=off_type)[flat.offset: flat.offset + len(flat) + 1]
    width = int(offsets[1] - offsets[0])
    if width == 0 or width % 4 or np.any(np.diff(offsets) != width):
        raise BandError(f"{where}: bands must all have the same width, a multiple of 4 bytes")
    data = np.frombuffer(flat.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    values = data.view(">u4").astype(np.uint32).reshape(n_valid, bands, width // 4)
    return valid, values


_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_C1, _C2, _C3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03), np.uint64(0xC2B2AE3D27D4EB4F)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array, in place (uint64 arithmetic wraps)."""
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def band_rows(values: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Partition-table rows (h1, h2, doc) for every band of every document in `values`,
    document-major (row d * bands + k). Vectorised over documents and bands, one pass per band
    row: no numba, so a `dedup` process does not pay for loading a JIT."""
    n, bands = values.shape[0], (values.shape[1] if values.ndim == 3 else 0)
    rows = np.empty(n * bands, dtype=ROW)
    if n * bands == 0:
        return rows
    k = np.arange(bands, dtype=np.uint64)
    h1 = np.broadcast_to(_mix(_C1 + k), (n, bands)).copy()
    h2 = np.broadcast_to(_mix(_C2 ^ k), (n, bands)).copy()
    v = np.empty((n, bands), dtype=np.uint64)
    for j in range(values.shape[2]):
        v[...] = values[:, :, j]
        h1 ^= v
        _mix(h1)
        v *= _C3
        h2 += v
        _mix(h2)
    rows["h1"], rows["h2"] = h1.ravel(), h2.ravel()
    rows["doc"] = np.repeat(np.asarray(docs, dtype=np.uint64), bands)
    return rows


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fraction of equal MinHash values, row-wise (the MinHash estimate of Jaccard similarity)."""
    a = np.asarray(a).reshape(a.shape[0], -1)
    b = np.asarray(b).reshape(b.shape[0], -1)
    return (a == b).mean(axis=1) if a.shape[1] else np.zeros(a.shape[0])


def signature_column(names: list[str], prefix: str) -> str | None:
    """The band column of `prefix` whose threshold is highest (RPv2's 1.0 column holds all 128
    values); used for estimated Jaccard when verifying pairs and by `dedup show`."""
    cols = [c for c in names if c.startswith(prefix)]
    def thr(c: str) -> float:
        try:
            return float(c[len(prefix):])
        except ValueError:
            return -1.0
    cols = [c for c in cols if thr(c) >= 0]
    return max(cols, key=lambda c: (thr(c), c)) if cols else None
