"""One live progress line per stage: documents, docs/s and an ETA.

The ETA comes from input bytes consumed (compressed sizes are known up front, document counts
are not), the rate from documents. Drawn with tqdm on stderr; disabled by `--quiet`. A stage
with several passes (dedup: scan, group, write) shows the current pass in its label
(`dedup fuzzy [group t0.8]`), one line per pass.

Two ways to move the line, for the two ways stages know their position: `update` takes the
total bytes consumed so far (a reader's byte offset), `advance` the bytes of the work just
finished (a shard, a partition). Every move goes through `update`, once per batch of work.
"""

from __future__ import annotations

import time

from tqdm import tqdm


class Progress:
    def __init__(self, stage: str, total_bytes: int, enabled: bool = True, unit: str = "docs"):
        self.docs = 0
        self._start = time.perf_counter()
        self._bar = tqdm(total=max(total_bytes, 1), desc=f"{stage}:", unit="B", unit_scale=True,
                         disable=not enabled, dynamic_ncols=True, leave=True,
                         bar_format="{desc} {percentage:3.0f}%|{bar:20}| [{elapsed}<{remaining}]")
        self._stage = stage
        self._unit = unit
        self._bytes = 0

    def update(self, docs: int, bytes_done: int) -> None:
        """Record `docs` more documents and the total input bytes consumed so far."""
        self.docs += docs
        delta = max(0, bytes_done - self._bytes)
        self._bytes += delta
        rate = self.docs / max(time.perf_counter() - self._start, 1e-9)
        self._bar.set_description_str(f"{self._stage}: {self.docs:,} {self._unit}, {rate:,.0f} {self._unit}/s",
                                      refresh=False)
        self._bar.update(delta)

    def advance(self, docs: int, nbytes: int) -> None:
        """Record `docs` more documents and `nbytes` more input bytes consumed."""
        self.update(docs, self._bytes + nbytes)

    def close(self) -> None:
        self._bar.close()
