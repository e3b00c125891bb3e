"""The per-page timer of `extract --page-timeout` (`extraction.deadline`): it interrupts Python
code that runs past the limit, lets a page that finishes in time through, cannot be swallowed by
an engine's `except Exception`, and leaves no timer or handler behind."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from textsieve.extraction.deadline import PageClock, PageTimeout


def _endless() -> None:
    try:
        while True:
            sum(range(1000))
    except Exception:  # an engine's catch-all does not stop the timeout
        pass


def test_a_page_past_its_time_is_interrupted_and_the_next_one_runs():
    before = signal.getsignal(signal.SIGALRM)
    with PageClock(0.05) as clock:
        assert clock.enforced
        start = time.perf_counter()
        with pytest.raises(PageTimeout), clock.page():
            _endless()
        assert time.perf_counter() - start < 2
        with clock.page():  # a quick page is untouched, and its timer is disarmed afterwards
            sum(range(1000))
        time.sleep(0.1)
    assert signal.getsignal(signal.SIGALRM) == before and signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_no_limit_and_threads_run_pages_without_a_timer():
    with PageClock(0) as clock, clock.page():
        assert not clock.enforced and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    seen = []
    thread = threading.Thread(target=lambda: seen.append(PageClock(1.0).enforced))
    thread.start()
    thread.join()
    assert seen == [False]  # SIGALRM reaches the main thread only: the worker says it ran without the limit
