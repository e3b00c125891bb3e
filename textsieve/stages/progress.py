"""One live progress line per stage: documents, docs/s and an ETA.

The ETA comes from input bytes consumed (compressed sizes are known up front, document counts
are not), the rate from documents. Drawn with tqdm on stderr; disabled by `--quiet`.
"""

from __future__ import annotations

import time

from tqdm import tqdm


class Progress:
    def __init__(self, stage: str, total_bytes: int, enabled: bool = True):
        self.docs = 0
        self._start = time.perf_counter()
        self._bar = tqdm(total=max(total_bytes, 1), desc=f"{stage}:", unit="B", unit_scale=True,
                         disable=not enabled, dynamic_ncols=True, leave=True,
                         bar_format="{desc} {percentage:3.0f}%|{bar:20}| [{elapsed}<{remaining}]")
        self._stage = stage
        self._bytes = 0

    def update(self, docs: int, bytes_done: int) -> None:
        """Record `docs` more documents and the total input bytes consumed so far."""
        self.docs += docs
        delta = max(0, bytes_done - self._bytes)
        self._bytes += delta
        rate = self.docs / max(time.perf_counter() - self._start, 1e-9)
        self._bar.set_description_str(f"{self._stage}: {self.docs:,} docs, {rate:,.0f} docs/s", refresh=False)
        self._bar.update(delta)

    def close(self) -> None:
        self._bar.close()
