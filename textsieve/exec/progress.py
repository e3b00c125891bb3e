"""One live progress line per stage: documents, docs/s and an ETA.

The ETA comes from input bytes consumed (compressed sizes are known up front, document counts
are not), the rate from documents. Disabled by `--quiet` (`progress=False`). A stage with
several passes (dedup: scan, group, write) shows the current pass in its label
(`dedup fuzzy [group t0.8]`), one line per pass.

Where the line goes decides how it is drawn (`display_mode`):

* a terminal: a tqdm bar on stderr, redrawn in place with `\\r`;
* a Jupyter kernel with ipywidgets: tqdm's notebook bar (`tqdm.auto`), one widget per pass;
* anything else (stderr piped to a file or a pipe, CI, a Jupyter kernel without ipywidgets):
  one plain line per finished shard, `annotate: data/a.jsonl.gz done; 1,200 docs so far, 290
  docs/s, 40%, ETA 00:07`, and a line every `LINE_EVERY_S` seconds while no shard finishes. A `\\r` bar
  there is noise: a log file fills with every redraw, and Jupyter turned each redraw into a
  stream output of its own, dozens of them, empty once the `\\r` had wiped them.

Two ways to move the line, for the two ways stages know their position: `update` takes the
total bytes consumed so far (a reader's byte offset), `advance` the bytes of the work just
finished (a shard, a partition). Every move goes through `update`, once per batch of work; a
stage that knows a shard just finished passes its name (`shard=`), which is when the plain
form writes its line.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tqdm import tqdm

LINE_EVERY_S = 30.0  # the plain form's line while a long pass finishes no shard
BAR_FORMAT = "{desc} {percentage:3.0f}%|{bar:20}| [{elapsed}<{remaining}]"


def in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (tqdm.autonotebook asks the same question)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # an IPython too old or half imported: not a kernel we can draw in
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def widgets_available() -> bool:
    """Whether ipywidgets imports: tqdm's notebook bar is one of its widgets (an import, not a
    look-up: a package that is there but broken must give the plain lines, not tqdm's warning)."""
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def display_mode(enabled: bool = True) -> str:
    """"off", "widget" (Jupyter with ipywidgets), "bar" (a terminal) or "lines" (the rest)."""
    if not enabled:
        return "off"
    if in_jupyter():  # the kernel's stderr is no terminal, and a \r bar there is a stream of outputs
        return "widget" if widgets_available() else "lines"
    try:
        return "bar" if sys.stderr.isatty() else "lines"
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return "lines"


def _bar(mode: str, **kwargs: Any) -> Any:
    if mode == "widget":
        from tqdm.auto import tqdm as auto  # tqdm.notebook's widget inside a kernel

        return auto(**kwargs)
    return tqdm(**kwargs)


class Progress:
    def __init__(self, stage: str, total_bytes: int, enabled: bool = True, unit: str = "docs"):
        self.docs = 0
        self.mode = display_mode(enabled)
        self._start = time.perf_counter()
        self._stage = stage
        self._unit = unit
        self._total = max(total_bytes, 1)
        self._bytes = 0
        self._bar: Any = None
        if self.mode in ("bar", "widget"):
            self._bar = _bar(self.mode, total=self._total, desc=f"{stage}:", unit="B", unit_scale=True,
                             dynamic_ncols=True, leave=True, bar_format=BAR_FORMAT)
        self._last_line = self._start
        self._unreported = False  # moved since the plain form's last line
        self._closed = False

    def update(self, docs: int, bytes_done: int, shard: str | None = None) -> None:
        """Record `docs` more documents and the total input bytes consumed so far; `shard`: the
        shard this call finishes, if it finishes one."""
        self.docs += docs
        delta = max(0, bytes_done - self._bytes)
        self._bytes += delta
        if self._bar is not None:
            self._bar.set_description_str(f"{self._stage}: {self.docs:,} {self._unit}, {self._rate():,.0f} "
                                          f"{self._unit}/s", refresh=False)
            self._bar.update(delta)
        elif self.mode == "lines":
            self._unreported = self._unreported or bool(docs or delta)
            now = time.perf_counter()
            if shard is not None or now - self._last_line >= LINE_EVERY_S:
                self._write(self._line(shard), now)

    def advance(self, docs: int, nbytes: int, shard: str | None = None) -> None:
        """Record `docs` more documents and `nbytes` more input bytes consumed."""
        self.update(docs, self._bytes + nbytes, shard)

    def close(self) -> None:
        """End the display (a second call does nothing: a stage may close a phase's progress early
        and again in its `finally`)."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "lines" and self._unreported:  # work no shard line has told of yet
            elapsed = time.perf_counter() - self._start
            self._write(f"{self._stage}: {self.docs:,} {self._unit} in {elapsed:.1f} s, {self._rate():,.0f} "
                        f"{self._unit}/s", time.perf_counter())

    def _rate(self) -> float:
        return self.docs / max(time.perf_counter() - self._start, 1e-9)

    def _line(self, shard: str | None) -> str:
        """`stage: [SHARD done; ]N docs so far, R docs/s, P%, ETA T` (the ETA from the bytes left)."""
        done = min(self._bytes / self._total, 1.0)
        elapsed = time.perf_counter() - self._start
        eta = tqdm.format_interval(elapsed * (1 - done) / done) if done > 0 else "?"
        head = f"{self._stage}: {shard} done; " if shard is not None else f"{self._stage}: "
        return (f"{head}{self.docs:,} {self._unit} so far, {self._rate():,.0f} {self._unit}/s, {100 * done:.0f}%, "
                f"ETA {eta}")

    def _write(self, line: str, now: float) -> None:
        print(line, file=sys.stderr, flush=True)
        self._last_line = now
        self._unreported = False
