"""A time limit per page, enforced inside the worker (`extract --page-timeout`).

Why not a process per page, or a thread that watches: a process per page costs more than most
pages take (trafilatura averages ~30 ms), and a watching thread cannot stop the extracting one.
A real-time interval timer (`setitimer`) delivers SIGALRM to the process, and its handler raises
`PageTimeout` in the main thread, between two bytecodes of whatever Python code is running
(trafilatura, readability, the decoders). The exception derives from `BaseException`, so an
engine's own `except Exception` cannot swallow it.

Limits, said plainly: a signal handler runs only when the interpreter regains control, so a
single C call that runs long (one lxml parse or one resiliparse extraction of a huge body) ends
before the timeout is raised; `--max-doc-bytes` bounds those. The timer works in a process's main
thread on POSIX systems; elsewhere (a thread, Windows) pages run without the limit, and
`PageClock.enforced` says so, so the caller can warn once.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType


class PageTimeout(BaseException):
    """A page ran past its time limit (a BaseException: engines' `except Exception` lets it pass)."""


def _raise(signum: int, frame: FrameType | None) -> None:
    raise PageTimeout


class PageClock:
    """The timer for a run of pages: install once (`with PageClock(seconds) as clock:`), then
    time each page with `with clock.page():`. `seconds` <= 0 means no limit."""

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.enforced = (self.seconds > 0 and hasattr(signal, "setitimer")
                         and threading.current_thread() is threading.main_thread())
        self._previous: object = None

    def __enter__(self) -> PageClock:
        if self.enforced:
            self._previous = signal.signal(signal.SIGALRM, _raise)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enforced:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)  # type: ignore[arg-type]

    def page(self) -> _Page:
        """A context for one page: `PageTimeout` is raised inside it once `seconds` have passed."""
        return _Page(self.seconds if self.enforced else 0.0)


class _Page:
    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.seconds > 0:  # a timer that fires just before this line raises here: still inside the page
            signal.setitimer(signal.ITIMER_REAL, 0)
