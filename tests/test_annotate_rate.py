"""Issue 10 item 13: annotate's docs/s is the compute rate; a first run's kernel compile is
reported beside it, not folded into it (the quick start said 71 docs/s for a 290 docs/s run)."""

from __future__ import annotations

import gzip
import itertools
import re
import time
from pathlib import Path

import pytest

from textsieve.cli import main
from textsieve.stages.annotate import annotate as annotate_mod
from textsieve.stages.annotate import kernel_timing
from textsieve.stages.annotate.annotate import AnnotateConfig, AnnotateResult, run_annotate


def test_rate_excludes_compile_and_names_it() -> None:
    res = AnnotateResult(output="attrs", documents=500, seconds=7.0, compile_seconds=5.0, kernels_compiled=3)
    assert res.docs_per_second == pytest.approx(250.0)
    assert res.rate_text() == "250 docs/s; 5.0 s one-time kernel compile"
    cached = AnnotateResult(output="attrs", documents=500, seconds=2.2, compile_seconds=0.2, kernels_compiled=0)
    assert cached.rate_text() == "250 docs/s"  # a cache load is excluded from the rate but not announced


def _web_slice(shared_dir: Path, tmp_path: Path, n: int) -> Path:
    src = shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz"
    dst = tmp_path / "web.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as fin, gzip.open(dst, "wt", encoding="utf-8") as fout:
        fout.writelines(itertools.islice(fin, n))
    return dst


def test_run_reports_measured_compile_apart(shared_dir, tmp_path, monkeypatch, capsys) -> None:
    """A warm-up that takes 1.5 s and compiles kernels is measured, excluded from docs/s and
    printed as the one-time compile, with one worker too (where no warm-up used to run)."""
    real_warm_up = annotate_mod.warm_up
    counts = iter([0, 4])

    def slow_warm_up(setup):
        real_warm_up(setup)
        time.sleep(1.5)

    monkeypatch.setattr(annotate_mod, "warm_up", slow_warm_up)
    monkeypatch.setattr(kernel_timing, "compiled_kernels", lambda: next(counts))
    src = _web_slice(shared_dir, tmp_path, 150)
    res = run_annotate(AnnotateConfig(inputs=[str(src)], output=str(tmp_path / "attrs"), workers=1,
                                      progress=False))
    assert res.documents == 150
    assert res.kernels_compiled == 4
    assert 1.5 <= res.compile_seconds < res.seconds
    assert res.docs_per_second == pytest.approx(150 / (res.seconds - res.compile_seconds))
    assert res.docs_per_second > 150 / (res.seconds - 1.5) * 0.999


def test_cli_line_shows_compile(shared_dir, tmp_path, monkeypatch, capsys) -> None:
    def compiling_warm_up(fn):
        seconds, _ = real_timed(fn)
        return seconds, 2

    real_timed = annotate_mod.timed
    monkeypatch.setattr(annotate_mod, "timed", compiling_warm_up)
    src = _web_slice(shared_dir, tmp_path, 50)
    assert main(["annotate", str(src), "-o", str(tmp_path / "attrs"), "--workers", "1"]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(r"annotated 50 documents in 1 shard\(s\) \(\d[\d,]* docs/s; \d+\.\d s one-time "
                        r"kernel compile\); 0 shard\(s\) already done; .*", line), line


def test_compiled_kernels_counts_compiles_not_calls() -> None:
    """The counter behind `kernels_compiled` sees a fresh compile, and not a second call."""
    numba = pytest.importorskip("numba")

    @numba.njit
    def twice(x):
        return 2 * x

    globals()["_twice_kernel"] = twice  # compiled_kernels looks for dispatchers in module globals
    try:
        before = kernel_timing.compiled_kernels((__name__,))
        twice(3)
        assert kernel_timing.compiled_kernels((__name__,)) == before + 1
        twice(4)  # same signature: nothing new to compile
        assert kernel_timing.compiled_kernels((__name__,)) == before + 1
    finally:
        del globals()["_twice_kernel"]


def test_main_process_warms_up_only_where_workers_share_a_compile(monkeypatch) -> None:
    """With several workers and every kernel in C there is nothing to compile once for all of
    them, so the main process does not spend ~0.2 s on a warm-up before the pool starts; one
    worker, models, extension or numba-only signals, or libraries not built, keep it."""
    from textsieve import native
    from textsieve.stages.annotate.worker import WorkerSetup, warm_up_here

    rpv2 = tuple(n for n, s in annotate_mod.REGISTRY.items() if s.group in ("natural_language", "repetition",
                                                                              "lines", "content"))
    setup = WorkerSetup(rpv2, ("rpv2",), {}, {})
    built = all(k() is not None for k in (native.scan_raw, native.word_stats, native.normalize_collapse,
                                          native.bad_word_hits, native.rpv2_signatures))
    assert warm_up_here(setup, 2) is (not built)
    assert warm_up_here(setup, 1)
    assert warm_up_here(WorkerSetup(rpv2, ("rpv2",), {}, {}, models=(("m", "m.json"),)), 2)
    assert warm_up_here(WorkerSetup(rpv2, ("rpv2",), {}, {}, lang_model="ft176"), 2)
    assert warm_up_here(WorkerSetup(rpv2, ("fast",), {}, {}), 2)
    code = [n for n, s in annotate_mod.REGISTRY.items() if s.group == "rpv1_code"][:1]
    assert warm_up_here(WorkerSetup(rpv2 + tuple(code), ("rpv2",), {}, {}), 2)
    if built:
        monkeypatch.setattr(native, "word_stats", lambda: None)
        assert warm_up_here(setup, 2)
