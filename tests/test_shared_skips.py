"""Issue 10 item 12: without the shared data, skips say why (always, not only with -rs) and the
run ends with one line counting them and naming where the data was looked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _shared import SKIP_TAG, find_shared

TESTS = Path(__file__).resolve().parent

# One test skipped by the `shared_dir` fixture, one by a module-level `SHARED` constant.
PROBES = ["tests/test_importance.py::test_features_equal_the_rpv2_golden_vectors",
          "tests/test_io.py::test_reads_the_whole_web_sample_fast"]


def test_lookup_order(tmp_path: Path) -> None:
    assert find_shared({"TEXTSIEVE_SHARED": str(tmp_path)}) == tmp_path
    assert find_shared({}, tmp_path / "repo" / "tests") == tmp_path / "shared"  # ../shared of the repo


def test_skips_print_reason_and_summary_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-shared-here"
    env = {**os.environ, "TEXTSIEVE_SHARED": str(missing)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PROBES],
                          cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "2 skipped" in out, out
    assert out.count("SKIPPED [") == 2, out  # -rs is on by default: each skip with its reason
    assert f"{missing}" in out and SKIP_TAG in out
    assert f"2 tests skipped: shared data not found at {missing} {SKIP_TAG}" in out.splitlines(), out
