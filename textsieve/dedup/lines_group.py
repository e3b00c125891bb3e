"""The duplicate flags of one group of shards for `dedup lines`, exact (spilled) or Bloom.

Input: every non-blank line of the group as a `dedup.lines.LINE_ROW` (key, line ordinal in the
group, document ordinal in the group, repeat-in-document bit), fed in corpus order. Output: one
byte per line of the group (1 = duplicate under CCNet's rule, `dedup.lines`), in a file mapped
into memory, so the flags of a group of any size cost disk, not the process's working set.

* `ExactGroup`: rows are scattered by key bits into partition files (`dedup.partitions`), then
  each partition, loaded alone, gives its duplicates (`lines.flagged_lines`). A partition still
  larger than the budget is scattered again on the next key bits; one that does not shrink that
  way (a single line repeated more often than a sort pass holds) is summarised chunk by chunk
  (`lines.key_stats` merges by min/max), then flagged chunk by chunk.
* `ExactGroup(rule=later_lines)` and `BloomFirst`: `dedup paragraphs`' keep-first rule (the first
  occurrence in corpus order kept, every later one flagged; `lines.later_lines`); the Bloom one is
  a single filter tested and filled in corpus order, a first occurrence wrongly flagged with
  probability at most the rate.
* `BloomGroup`: two Bloom filters instead of any spill: "seen in a document" and "seen in a
  second document". A line is flagged when its key is (probably) in the second filter or it
  repeats a line of its own document. Every true duplicate is flagged (Bloom filters have no
  false negatives); a line of a single document is wrongly flagged with probability at most
  the stated rate (each filter gets half of it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from textsieve.dedup.lines import LINE_ROW, flagged_lines, key_stats, merge_stats
from textsieve.dedup.partitions import FANOUT_BITS, PartitionWriter, partition_bits

MAX_LEVEL = 64 // FANOUT_BITS - 1


class GroupFlags:
    """One byte per line of the group in `path` (see the module doc); `dedup substring` keeps one
    per token of its corpus the same way (`merge`)."""

    def __init__(self, path: str, n_lines: int):
        self.path = path
        self.n_lines = int(n_lines)
        self.flags = np.memmap(path, dtype=np.uint8, mode="w+", shape=(max(1, self.n_lines),))

    def set(self, lines: np.ndarray) -> None:
        if lines.shape[0]:
            self.flags[lines.astype(np.int64)] = 1

    def merge(self, ranges: list[tuple[int, int]], marked: np.ndarray) -> None:
        """OR `marked` (its items laid end to end) into the flags of `ranges`, in order."""
        at = 0
        for lo, hi in ranges:
            self.flags[lo:hi] |= marked[at:at + hi - lo].astype(np.uint8)
            at += hi - lo

    def slice(self, start: int, stop: int) -> np.ndarray:
        return np.asarray(self.flags[start:stop])

    def close(self) -> None:
        del self.flags
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


def _chunks(path: str, n: int, rows: int) -> Iterator[np.ndarray]:
    for start in range(0, n, rows):
        yield np.fromfile(path, dtype=LINE_ROW, count=rows, offset=start * LINE_ROW.itemsize)


class ExactGroup:
    """Exact flags through key partitions on disk, `max_rows` rows per in-memory pass."""

    def __init__(self, work: str, n_rows: int, max_rows: int, flags: GroupFlags,
                 rule: Callable[..., np.ndarray] = flagged_lines):
        self.work, self.max_rows, self.flags, self.rule = work, max(1024, int(max_rows)), flags, rule
        self.writer = PartitionWriter(f"{work}/parts", partition_bits(n_rows, self.max_rows), self.max_rows // 4)
        self.passes = 0

    def add(self, rows: np.ndarray) -> None:
        self.writer.add(rows)

    def finish(self) -> None:
        for path, n in self.writer.close():
            self._partition(path, n, 0)

    def _partition(self, path: str, n: int, level: int) -> None:
        if n <= self.max_rows:
            self.passes += 1
            self.flags.set(self.rule(np.fromfile(path, dtype=LINE_ROW)))
            os.remove(path)
            return
        if level < MAX_LEVEL:
            sub = PartitionWriter(f"{path}.d", FANOUT_BITS, self.max_rows // 4, level=level + 1)
            for chunk in _chunks(path, n, self.max_rows // 2):
                sub.add(chunk)
            os.remove(path)
            parts = sub.close()
            if len(parts) > 1:  # the next key bits split it: each part is a smaller problem
                for p, m in parts:
                    self._partition(p, m, level + 1)
                return
            path, n = parts[0]
        self._summarised(path, n)

    def _summarised(self, path: str, n: int) -> None:
        """A partition of few keys and more rows than a pass holds: summarise, then flag, by chunks."""
        step = max(1, self.max_rows // 2)
        stats: list[np.ndarray] = []
        held = 0
        for chunk in _chunks(path, n, step):
            self.passes += 1
            stats.append(key_stats(chunk))
            held += stats[-1].shape[0]
            if held > step:  # keep the summary compact (it is small when splitting did not help)
                stats = [merge_stats(stats)]
                held = stats[0].shape[0]
        summary = merge_stats(stats)
        for chunk in _chunks(path, n, step):
            self.flags.set(self.rule(chunk, summary))
        os.remove(path)


def _bloom_filter() -> Any:
    """The Bloom filter class, imported on first use: numba is loaded only in Bloom mode."""
    from textsieve.dedup.bloom import BloomFilter

    return BloomFilter


class BloomGroup:
    """Bloom-filter flags: `capacity` first occurrences at false-positive rate `rate` (module doc)."""

    def __init__(self, capacity: int, rate: float, flags: GroupFlags):
        bloom = _bloom_filter()
        self.seen = bloom(max(1, capacity), rate / 2)
        self.twice = bloom(max(1, capacity), rate / 2)
        self.flags = flags

    @staticmethod
    def size_bytes(capacity: int, rate: float) -> int:
        return 2 * _bloom_filter().size_bytes(max(1, capacity), rate / 2)

    def add(self, rows: np.ndarray) -> None:
        """First pass, in corpus order: each document's distinct keys (rep == 0)."""
        first = rows[rows["rep"] == 0]
        again = self.seen.test_add(first["h1"], first["h2"])
        if again.any():
            self.twice.test_add(first["h1"][again], first["h2"][again])

    def flag(self, rows: np.ndarray) -> None:
        """Second pass: flag the rows whose key is (probably) in two documents, and repeats."""
        dup = self.twice.contains(rows["h1"], rows["h2"]) | rows["rep"].astype(bool)
        self.flags.set(rows["line"][dup])


class BloomFirst:
    """Keep-first Bloom flags: one filter, each row tested then added in corpus order (module doc)."""

    def __init__(self, capacity: int, rate: float, flags: GroupFlags):
        self.seen = _bloom_filter()(max(1, capacity), rate)
        self.flags = flags

    @staticmethod
    def size_bytes(capacity: int, rate: float) -> int:
        return _bloom_filter().size_bytes(max(1, capacity), rate)

    def add(self, rows: np.ndarray) -> None:
        self.flags.set(rows["line"][self.seen.test_add(rows["h1"], rows["h2"])])
