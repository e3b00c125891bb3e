"""Shared fixtures: where ../shared is, and an isolated user cache for every test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    return SHARED


@pytest.fixture
def resources_dir(shared_dir: Path) -> Path:
    return shared_dir / "golden" / "rpv2_resources"


@pytest.fixture(autouse=True)
def _isolated_user_cache(tmp_path_factory, monkeypatch) -> None:
    """Tests never read or fill the real per-user resources cache."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("TEXTSIEVE_RESOURCES", raising=False)
