"""Annotating whole shards in workers (`stages.annotate.shards`): when the input has enough
shards, each worker reads, annotates and writes its own, and the files, the summary and the
counts are those of a one-worker run; a bad record is located and counted the same way, a
failing shard fails the run with the same one-line error, and a re-run resumes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from textsieve.cli import main
from textsieve.io.paths import Shard
from textsieve.stages.annotate import annotate as annotate_mod
from textsieve.stages.annotate import shards as shards_mod
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.annotate.shards import by_whole_shards


def _topics() -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    return sorted(topics.items())


def _corpus(root: Path, n_shards: int = 4, per_shard: int = 30, bad: bool = False) -> Path:
    """pydoc's help topics (real English text) in `n_shards` .jsonl.gz shards; `bad`: the second
    shard's fifth line is broken JSON and its seventh repeats an id."""
    root.mkdir(parents=True, exist_ok=True)
    items = _topics()
    for s in range(n_shards):
        lines = []
        for i in range(per_shard):
            key, text = items[(s * per_shard + i) % len(items)]
            lines.append(json.dumps({"id": f"{s}/{i}/{key}", "text": text}))
        if bad and s == 1:
            lines[4] = lines[4][:-9]
            lines[6] = lines[5]
        with gzip.open(root / f"part{s}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return root


def _tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _summary(out: Path) -> dict:
    got = json.loads((out / ".textsieve" / "annotate.json").read_text("utf-8"))
    for key in ("seconds", "compile_seconds", "output", "workers", "docs_per_second"):
        got.get("config", {}).pop(key, None)
        got.get("result", {}).pop(key, None)
        got.pop(key, None)
    return got


def test_shards_in_workers_give_the_one_worker_files(tmp_path, resources_dir, monkeypatch):
    src = _corpus(tmp_path / "src", bad=True)
    calls = []
    real = shards_mod.by_whole_shards
    monkeypatch.setattr(annotate_mod, "by_whole_shards", lambda *a: calls.append(real(*a)) or calls[-1])
    results = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        results[workers] = run_annotate(AnnotateConfig([str(src)], str(out), workers=workers, on_error="skip",
                                                       dedupe_ids="suffix", resources=str(resources_dir),
                                                       progress=False))
    assert calls == [False, True]  # one worker reads here; two annotate whole shards
    one, two = results[1], results[2]
    assert (two.documents, two.skipped_records, two.renamed_ids) == (one.documents, one.skipped_records,
                                                                      one.renamed_ids) == (119, 1, 1)
    assert sorted(two.shards_written) == sorted(one.shards_written)
    files = {w: _tree(tmp_path / f"w{w}" / "docs") for w in (1, 2)}
    assert files[1] == files[2] and len(files[1]) == 4
    assert _summary(tmp_path / "w1") == _summary(tmp_path / "w2")


def test_a_failing_shard_fails_the_run_in_one_line_and_a_rerun_resumes(tmp_path, resources_dir, capsys):
    src = _corpus(tmp_path / "src", bad=True)
    out = tmp_path / "attrs"
    assert main(["annotate", str(src), "-o", str(out), "--workers", "2", "-q"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "part1.jsonl.gz:5" in err[0] and "Traceback" not in err[0], err
    assert not (out / "docs" / "part1.parquet").exists()
    _corpus(tmp_path / "src")  # the shard repaired
    assert main(["annotate", str(src), "-o", str(out), "--workers", "2", "-q"]) == 0
    clean = tmp_path / "clean"
    assert main(["annotate", str(src), "-o", str(clean), "--workers", "1", "-q"]) == 0
    assert _tree(out / "docs") == _tree(clean / "docs")


@pytest.mark.parametrize(("sizes", "workers", "executor", "output", "want"), [
    ([10, 10, 10, 10], 2, "local", "out", True),
    ([10, 10, 10, 10], 1, "local", "out", False),  # one worker: the main process is the worker
    ([10], 2, "local", "out", False),  # one shard: cut into batches for both workers
    ([30, 5, 5], 2, "local", "out", False),  # one shard over an even share would run alone at the end
    ([10, 10], 2, "ray", "out", False),
    ([10, 10], 2, "local", "memory://out", False),  # other processes cannot see it
])
def test_when_whole_shards_are_handed_out(sizes, workers, executor, output, want):
    shards = [Shard(path=f"/in/{i}.jsonl", rel=f"{i}", format="jsonl", size=n) for i, n in enumerate(sizes)]
    assert by_whole_shards(shards, output, workers, executor) is want


def test_workers_end_with_a_killed_run_and_the_rerun_equals_a_clean_run(tmp_path):
    """A worker writing a shard must not outlive a killed run: the re-run resumes from the same
    staging folder, which the orphan would go on changing."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    src = _corpus(tmp_path / "src", n_shards=4, per_shard=2500)  # ~1 s per shard
    out = tmp_path / "attrs"
    cmd = [sys.executable, "-m", "textsieve.cli", "annotate", str(src), "-o", str(out), "--workers", "2", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    main_ps = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and proc.poll() is None:
        # the command started a fork server (exec.warm_start) and the workers are its children
        servers = [c for c in main_ps.children() if "forkserver" in " ".join(c.cmdline())]
        workers = [w for s in servers for w in s.children()]
        if len(workers) == 2 and (out / ".textsieve").exists():
            break
        time.sleep(0.05)
    assert len(workers) == 2, "the run ended before its workers could be seen"
    workers += servers
    time.sleep(0.5)  # the workers are annotating their first shards (~1 s each)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)
    staging = sorted((str(p), p.stat().st_size) for p in out.rglob("*") if p.is_file())
    time.sleep(2)  # an orphan would finish its shard in this time and write its file
    assert sorted((str(p), p.stat().st_size) for p in out.rglob("*") if p.is_file()) == staging

    def running(p: psutil.Process) -> bool:  # a zombie has ended (its reaper is the container's init)
        try:
            return p.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    alive = [p.pid for p in workers if running(p)]
    assert not alive, f"workers outlived the killed run: {alive}"
    assert subprocess.run(cmd, capture_output=True).returncode == 0
    clean = tmp_path / "clean"
    assert main(["annotate", str(src), "-o", str(clean), "--workers", "1", "-q"]) == 0
    assert _tree(out / "docs") == _tree(clean / "docs")


def test_ctrl_c_stops_a_run_and_its_workers_without_a_traceback(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group: the command, its fork server, its workers)
    while the workers annotate: exit 130, the one-line message, no traceback, nothing left
    running. The server ignores Ctrl-C until it forks; its workers take it as spawned ones do."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    src = _corpus(tmp_path / "src", n_shards=4, per_shard=1500)
    cmd = [sys.executable, "-m", "textsieve.cli", "annotate", str(src), "-o", str(tmp_path / "attrs"), "--workers",
           "2", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    tree: list[psutil.Process] = []
    while time.monotonic() < deadline and proc.poll() is None and len(tree) < 3:
        servers = [c for c in me.children() if "forkserver" in " ".join(c.cmdline())]
        tree = servers + [w for s in servers for w in s.children()]
        time.sleep(0.05)
    assert len(tree) >= 3, "the run ended before its workers could be seen"
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 130, err
    assert "interrupted; finished shards are kept" in err and "Traceback" not in err
    _, alive = psutil.wait_procs(tree, timeout=20)
    assert not [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_ctrl_c_while_the_command_imports_is_no_traceback(monkeypatch, capsys):
    from textsieve import cli

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_parse", interrupted)
    assert cli.main(["annotate", "x.jsonl.gz"]) == 130
    assert capsys.readouterr().err == "textsieve: interrupted\n"
