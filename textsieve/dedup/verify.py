"""Exact Jaccard similarity of 13-word shingle sets (spec §7.1), to verify LSH candidate pairs.

MinHash-LSH only *estimates* similarity: a pair sharing one band can be far below the
threshold (the S-curve's tail), and a 128-value estimate has a standard deviation of ~0.03 near
0.9. `--verify exact` (the default) re-reads the texts of the documents in candidate pairs and
keeps a pair only when the true Jaccard of the shingle sets MinHash was defined on (normalized
words §3.3, overlapping 13-word windows, as a set) is at least T.

Memory stays bounded whatever the number of candidates: each document's shingle set is reduced
to its sorted distinct 64-bit shingle hashes and written to a temporary file as its shard is
streamed (one task per shard); pairs are then checked in order, reading two small arrays from
disk at a time. A shingle hash is the splitmix64 finaliser of a polynomial over the xxh3-64
hashes of its words; two different shingles collide with probability ~2**-64, so the
computed Jaccard equals the exact one for any corpus that fits on Earth.

Both modes first find the candidates in the annotate shards (`locate`): a pass over the id
column (and, for `estimated`, the signature column) in budget-sized batches, keeping only the
hits, so the pass stays within `--memory` whatever the corpus size.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from textsieve.text.normalize import normalize

if TYPE_CHECKING:  # dedup.corpus imports this module's store lazily, and so does this module
    from textsieve.dedup.corpus import ShardTable
    from textsieve.dedup.partitions import EdgeStore

NGRAM = 13  # = textsieve.dedup.minhash.NGRAM (§7.1)

_POLY = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def shingle_hashes(text: str, ngram: int = NGRAM) -> np.ndarray:
    """Sorted distinct uint64 hashes of the `ngram`-word shingles of the normalized words of
    `text` (empty when it has fewer than `ngram` words)."""
    norm = normalize(text).encode("utf-8", "surrogatepass")
    words = norm.split(b" ") if norm else []  # normalized words are separated by single spaces
    n = len(words) - ngram + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    wh = np.fromiter((xxhash.xxh3_64_intdigest(w) for w in words), dtype=np.uint64, count=len(words))
    h = wh[:n].copy()
    for j in range(1, ngram):  # h = ((w0 * P + w1) * P + w2) ... mod 2**64, position-sensitive
        h *= _POLY
        h += wh[j:j + n]
    h ^= h >> _S30
    h *= _M1
    h ^= h >> _S27
    h *= _M2
    h ^= h >> _S31
    return np.unique(h)


def jaccard_sorted(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted distinct arrays (0 when both are empty)."""
    if a.shape[0] == 0 and b.shape[0] == 0:
        return 0.0
    inter = np.intersect1d(a, b, assume_unique=True).shape[0]
    return inter / (a.shape[0] + b.shape[0] - inter)


def write_shingle_file(texts, path: str) -> np.ndarray:
    """Write the shingle hashes of each text in `texts` (an iterable) to `path`, back to back;
    return the int64 offsets (in values) of each document's array, length n + 1."""
    offsets = [0]
    with open(path, "wb") as fh:
        for text in texts:
            h = shingle_hashes(text)
            h.astype("<u8", copy=False).tofile(fh)
            offsets.append(offsets[-1] + h.shape[0])
    return np.asarray(offsets, dtype=np.int64)


@dataclass
class ShingleStore:
    """Shingle-hash arrays of candidate documents, on disk: document k is `count[k]` uint64
    values at value offset `start[k]` of file `files[file_of[k]]`."""

    work: str
    files: list[str]
    file_of: np.ndarray
    start: np.ndarray
    count: np.ndarray

    @classmethod
    def new_dir(cls, tmp_dir: str | None = None) -> str:
        return tempfile.mkdtemp(prefix="textsieve-verify-", dir=tmp_dir)

    def _read(self, fds: list[int], k: int) -> np.ndarray:
        n = int(self.count[k])
        if n == 0:
            return np.zeros(0, dtype=np.uint64)
        raw = os.pread(fds[int(self.file_of[k])], 8 * n, 8 * int(self.start[k]))
        return np.frombuffer(raw, dtype="<u8")

    def jaccard(self, a: np.ndarray, b: np.ndarray, progress=None, base: int = 0) -> np.ndarray:
        """Exact Jaccard of documents a[i] and b[i] (indexes into this store). `progress` (a
        `stages.progress.Progress` counting pairs, `base` of them done before) advances every
        16,384 pairs."""
        out = np.zeros(a.shape[0], dtype=np.float64)
        fds = [os.open(f, os.O_RDONLY) for f in self.files]
        try:
            last, arr_a = -1, np.zeros(0, dtype=np.uint64)  # replaced at the first pair (indexes are >= 0)
            for n, i in enumerate(np.lexsort((b, a)), 1):  # grouped by a: each a's array is read once
                if a[i] != last:
                    last, arr_a = int(a[i]), self._read(fds, int(a[i]))
                out[i] = jaccard_sorted(arr_a, self._read(fds, int(b[i])))
                if progress is not None and (n % 16384 == 0 or n == a.shape[0]):
                    progress.update(base + n - progress.docs, base + n)
        finally:
            for fd in fds:
                os.close(fd)
        return out


# --- the candidates' data, read within the budget, and the two verification modes ----------

def shard_batches(table: ShardTable, i: int, columns: list[str], rows: int) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Shard i's `columns` in batches of at most `rows`, each with the row offset it starts at.
    Read with `pre_buffer=False`: pyarrow's default pre-buffering keeps every column chunk read
    so far until the file is closed, i.e. a whole shard's band or signature columns (~1 MB per
    row group and column), whatever the batch size."""
    offset = 0
    with table.fs.open(table.paths[i], "rb") as fh:
        for rb in pq.ParquetFile(fh, pre_buffer=False).iter_batches(batch_size=rows, columns=columns,
                                                                    use_threads=False):
            yield offset, rb
            offset += rb.num_rows


#: bytes per document of a batch being read in `locate`: its id as a Python string and SHA-1
ID_ROW_BYTES = 300
#: ... plus, for `--verify estimated`, its 128-value signature as Arrow list<binary> and as uint32
SIG_ROW_BYTES = 1600


def locate(table: ShardTable, want: np.ndarray, budget: int, extra: str | None = None,
           decode: Callable[[pa.Array], np.ndarray] | None = None,
           row_bytes: int = ID_ROW_BYTES) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """For sorted unique id_ints `want`: (ids found, their ordinals, `decode(extra column)` rows)
    sorted by id_int. An id_int present twice in the corpus maps to its first occurrence.
    Memory: the outputs are allocated once, one slot per wanted id, and filled batch by batch
    (batches of `budget / 8` at `row_bytes` a document, each hit decoded at once), so the peak
    is the result plus one batch, not the Arrow values of every hit, their concatenation and
    their reordered copy, with a 32,768-row batch of 128-value signatures (~35 MB) beside them."""
    from textsieve.dedup.corpus import id_ints

    n = want.shape[0]
    ords = np.full(n, -1, dtype=np.int64)
    values: np.ndarray | None = None
    rows = int(max(1024, min(32768, budget // (8 * row_bytes))))
    for i in range(len(table.paths)):
        for offset, rb in shard_batches(table, i, ["id", *([extra] if extra else [])], rows):
            ii = id_ints(rb.column("id"))
            pos = np.minimum(np.searchsorted(want, ii), max(0, n - 1))
            hit = np.flatnonzero(want[pos] == ii) if n else np.zeros(0, dtype=np.int64)
            hit = hit[ords[pos[hit]] < 0]  # not found in an earlier batch
            slot, first = np.unique(pos[hit], return_index=True)  # nor earlier in this one
            hit = hit[first]
            if not hit.shape[0]:
                continue
            ords[slot] = hit + offset + table.base[i]
            if extra is not None and decode is not None:
                got = decode(rb.column(extra).take(pa.array(hit)))
                if values is None:
                    values = np.zeros((n, *got.shape[1:]), dtype=got.dtype)
                values[slot] = got
    if extra is not None and values is None:  # nothing found
        values = np.zeros(0, dtype=np.int64)
    found = ords >= 0
    if found.all():
        return want, ords, values
    return want[found], ords[found], (values[found] if values is not None else None)


def estimated_edges(table: ShardTable, sig_col: str, edges: dict[float, EdgeStore], ends: np.ndarray,
                    budget: int, out: Callable[[float], EdgeStore]) -> dict[float, EdgeStore]:
    """`--verify estimated`: per threshold, the edges whose MinHash estimate (`sig_col`, the
    128-value signature) is >= T, into `out(T)`. `ends`: the sorted distinct documents of all
    edges. Memory: the candidates' signatures (512 B each) and one chunk of pairs."""
    from textsieve.dedup.lsh import band_values, estimated_jaccard

    def decode(arr: pa.Array) -> np.ndarray:
        valid, sig = band_values(arr, f"column {sig_col}")
        if not valid.all():  # a candidate's bands come from its signature
            raise ValueError(f"--verify estimated: a candidate document has no {sig_col}")
        return sig.reshape(sig.shape[0], -1)

    ii, _, sig = locate(table, ends, budget, sig_col, decode, ID_ROW_BYTES + SIG_ROW_BYTES)
    assert sig is not None
    # pairs a piece at a time: gathering both ends of every edge at once costs 2 x edges x 512 B
    step = max(1024, budget // (16 * max(1, sig.shape[1] * sig.itemsize)))
    result = {}
    for t, store in edges.items():
        kept = out(t)
        for e in store.chunks():
            a, b = np.searchsorted(ii, e[:, 0]), np.searchsorted(ii, e[:, 1])
            keep = np.zeros(e.shape[0], dtype=bool)
            for s in range(0, e.shape[0], step):
                keep[s:s + step] = estimated_jaccard(sig[a[s:s + step]], sig[b[s:s + step]]) >= t
            kept.add(e[keep])
        result[t] = kept.close()
    return result


def exact_edges(table: ShardTable, edges: dict[float, EdgeStore], ends: np.ndarray, budget: int, work: str,
                out: Callable[[float], EdgeStore], workers: int = 1, progress: bool = False) -> dict[float, EdgeStore]:
    """`--verify exact`: per threshold, the edges whose exact shingle Jaccard is >= T, into
    `out(T)`, from a `ShingleStore` of the candidates built in the folder `work`; the edges are
    read a chunk at a time."""
    from textsieve.dedup.corpus import shingle_store
    from textsieve.exec.progress import Progress

    ii, ords, _ = locate(table, ends, budget)
    order = np.argsort(ords, kind="stable")  # the store is indexed by sorted ordinal
    bar = Progress("dedup fuzzy [verify: re-read texts]", ords.shape[0], enabled=progress)
    store = shingle_store(table, ords[order], work, workers=workers, progress=bar)
    bar.close()
    slot = np.empty(order.shape[0], dtype=np.int64)
    slot[order] = np.arange(order.shape[0])  # id_int position -> store index
    result = {}
    for t, src in edges.items():
        kept = out(t)
        bar = Progress(f"dedup fuzzy [verify t{t}]", src.n, enabled=progress, unit="pairs")
        done = 0
        for e in src.chunks():
            a, b = slot[np.searchsorted(ii, e[:, 0])], slot[np.searchsorted(ii, e[:, 1])]
            kept.add(e[store.jaccard(a, b, progress=bar, base=done) >= t])
            done += e.shape[0]
        bar.close()
        result[t] = kept.close()
    return result
