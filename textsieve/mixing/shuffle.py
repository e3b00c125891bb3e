"""Out-of-core global shuffle with bounded memory: scatter records into bucket files by a seeded
random key, then read the buckets back one at a time, each sorted by key.

Why this shape: the output order is "all records sorted by (key, payload)", where a record's
key is a hash of (seed, source, shard, row, copy). That order does not depend on how many
workers scattered, in which order tasks finished, or how many buckets were used: bucket b holds
the key range [b·2⁶⁴/K, (b+1)·2⁶⁴/K), so concatenating the sorted buckets is the global sort.
Memory: a scatter buffer is flushed to disk past its limit, and a bucket larger than the read
limit is split again, streaming, into key sub-ranges (recursively) instead of being loaded. So
any `--memory` gives the same bytes; a smaller one only means more files.

Record layout in a bucket file: `<Q key><H source><I length>` then `length` payload bytes.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator

HEADER = struct.Struct("<QHI")
KEY_SPACE = 1 << 64
MAX_DEPTH = 16


def shard_hash(name: str) -> int:
    """64-bit hash of a shard's name (part of each record's key)."""
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "little")


def record_key(seed: int, source: int, shard: int, row: int, copy: int) -> int:
    """The seeded random key of one output record (its position in the shuffle)."""
    data = struct.pack("<qHQqq", seed, source, shard, row, copy)
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def bucket_of(key: int, lo: int, hi: int, parts: int) -> int:
    """Which of `parts` equal sub-ranges of [lo, hi) holds `key` (monotone in the key)."""
    return (key - lo) * parts // (hi - lo)


def bucket_range(lo: int, hi: int, parts: int, i: int) -> tuple[int, int]:
    """The keys [a, b) that `bucket_of` puts into part `i` of [lo, hi)."""
    span = hi - lo
    return lo - (-i * span // parts), lo - (-(i + 1) * span // parts)


class Scatter:
    """Append records to `parts` bucket files `folder/b{i:05d}`, buffering at most `limit` bytes."""

    def __init__(self, folder: str, parts: int, limit: int, lo: int = 0, hi: int = KEY_SPACE):
        self.folder, self.parts, self.limit, self.lo, self.hi = folder, parts, max(1, limit), lo, hi
        os.makedirs(folder, exist_ok=True)
        self._bufs: dict[int, list[bytes]] = {}
        self._size = 0

    def path(self, part: int) -> str:
        return os.path.join(self.folder, f"b{part:05d}")

    def add(self, key: int, source: int, payload: bytes) -> None:
        b = bucket_of(key, self.lo, self.hi, self.parts)
        rec = HEADER.pack(key, source, len(payload)) + payload
        self._bufs.setdefault(b, []).append(rec)
        self._size += len(rec)
        if self._size >= self.limit:
            self.flush()

    def flush(self) -> None:
        for b in sorted(self._bufs):
            with open(self.path(b), "ab") as fh:
                fh.write(b"".join(self._bufs[b]))
        self._bufs.clear()
        self._size = 0


def read_records(paths: list[str]) -> Iterator[tuple[int, int, bytes]]:
    """(key, source, payload) of every record in the files, streamed."""
    for path in paths:
        with open(path, "rb") as fh:
            while True:
                head = fh.read(HEADER.size)
                if not head:
                    break
                key, source, n = HEADER.unpack(head)
                yield key, source, fh.read(n)


class SortedBuckets:
    """Yields the records of bucket files in global key order, holding at most `limit` bytes of
    records at once (a larger bucket is split into key sub-ranges on disk first)."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.max_loaded = 0  # largest bucket held in memory (bytes of records), for the tests/summary
        self.splits = 0

    def records(self, paths: list[str], lo: int, hi: int, spill: str, depth: int = 0) -> Iterator[tuple[int, int,
                                                                                                        bytes]]:
        paths = [p for p in paths if os.path.exists(p)]
        size = sum(os.path.getsize(p) for p in paths)
        if size == 0:
            return
        if size <= self.limit or depth >= MAX_DEPTH or hi - lo <= 1:
            recs = sorted(read_records(paths), key=lambda r: (r[0], r[2]))
            self.max_loaded = max(self.max_loaded, size)
            yield from recs
            return
        self.splits += 1
        parts = min(4096, max(2, -(-2 * size // self.limit)))
        folder = os.path.join(spill, f"d{depth}")
        os.makedirs(folder, exist_ok=True)
        for p in os.listdir(folder):
            os.remove(os.path.join(folder, p))
        sub = Scatter(folder, parts, self.limit // 2, lo, hi)
        for key, source, payload in read_records(paths):
            sub.add(key, source, payload)
        sub.flush()
        step_paths = [sub.path(i) for i in range(parts)]
        for i, path in enumerate(step_paths):
            sub_lo, sub_hi = bucket_range(lo, hi, parts, i)
            if not os.path.exists(path):
                continue
            mine = os.path.join(folder, f"m{i:05d}")
            os.replace(path, mine)  # free the name: the recursion below reuses d{depth+1}
            yield from self.records([mine], sub_lo, sub_hi, spill, depth + 1)
            os.remove(mine)


__all__ = ["HEADER", "KEY_SPACE", "Scatter", "SortedBuckets", "bucket_of", "bucket_range", "read_records", "record_key",
           "shard_hash"]
