"""Shared fixtures: where ../shared is, and an isolated user cache for every test."""

from __future__ import annotations

from pathlib import Path

import pytest

from _shared import SHARED, SKIP_TAG, missing_reason


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip(missing_reason(SHARED))
    return SHARED


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """End the run with one line counting the tests skipped for want of shared data, so a
    checkout outside the sibling layout cannot silently run a third of the suite. (An outermost
    wrapper, so the line comes after pytest's short summary of the skip reasons.)"""
    yield
    n = sum(SKIP_TAG in _skip_reason(rep) for rep in terminalreporter.stats.get("skipped", []))
    if n:
        terminalreporter.write_line(f"{n} test{'s' if n != 1 else ''} skipped: shared data not found at "
                                    f"{SHARED} {SKIP_TAG}", yellow=True, bold=True)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, lineno, "Skipped: reason")
        return str(longrepr[2])
    return str(longrepr)


@pytest.fixture
def resources_dir(shared_dir: Path) -> Path:
    return shared_dir / "golden" / "rpv2_resources"


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path_factory, monkeypatch) -> None:
    """Tests never read or fill the real per-user resources cache."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("TEXTSIEVE_RESOURCES", raising=False)
