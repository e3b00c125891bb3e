"""Workers forked from the warm fork server (`textsieve.exec.warm_start`): when the command
starts it, and what a forked worker sees (its owner's environment, the owner's liveness, no copy
of the server's alive pipe)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from textsieve import cli
from textsieve.exec import warm_start


@pytest.mark.parametrize("argv, cores, want", [
    (["annotate", "in.jsonl.gz", "-o", "out"], 2, ("textsieve.stages.annotate.annotate",)),
    (["-v", "extract", "a.warc.gz", "-o", "docs"], 2, ("textsieve.stages.sources.extract",)),
    (["run", "pipeline.yaml"], 4, ()),
    (["annotate", "in.jsonl.gz", "-o", "out", "--workers", "2"], 2, ("textsieve.stages.annotate.annotate",)),
    (["annotate", "in.jsonl.gz", "-o", "out", "--workers", "1"], 2, None),
    (["annotate", "in.jsonl.gz", "-o", "out", "--workers=1"], 2, None),
    (["annotate", "in.jsonl.gz", "-o", "out", "--executor", "ray"], 2, None),
    (["annotate", "--help"], 2, None),
    (["annotate", "in.jsonl.gz", "-o", "out"], 1, None),  # one core: one worker
    (["report", "out"], 2, None),  # no stage, no pool
    (["--version"], 2, None),
])
def test_the_command_starts_the_server_only_for_a_multi_worker_stage(monkeypatch, argv, cores, want):
    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(warm_start, "usable_cores", lambda: cores)
    monkeypatch.setattr(warm_start, "start", lambda modules=(): started.append(tuple(modules)) or True)
    assert cli.warm_workers(argv) is (want is not None)
    assert started == ([] if want is None else [want])


PROBE = '''
import os
from textsieve.exec import warm_start


def probe(task):
    from multiprocessing import forkserver
    return {"task": task, "pid": os.getpid(), "ppid": os.getppid(), "x": os.environ.get("TS_PROBE"),
            "gone": "TS_GONE" in os.environ, "blas": os.environ.get("OPENBLAS_NUM_THREADS"),
            "alive_fd": forkserver._forkserver._forkserver_alive_fd, "run_alive": warm_start.run_alive()}
'''

DRIVER = '''
import json, os, sys
sys.path.insert(0, sys.argv[1])
os.environ["TS_GONE"] = "set before the server started"
os.environ.pop("OPENBLAS_NUM_THREADS", None)
from textsieve.exec import warm_start
from textsieve.exec.local import ordered_map
assert warm_start.start() and warm_start.started()
os.environ["TS_PROBE"] = "set after the server started"
del os.environ["TS_GONE"]
import probe
out = [r for _, r in ordered_map(probe.probe, range(4), workers=2)]
assert "OPENBLAS_NUM_THREADS" not in os.environ  # set for the server and the workers only
warm_start.stop()
spawned = [r for _, r in ordered_map(probe.probe, range(2), workers=2)]  # stopped: spawned again
print(json.dumps({"main": os.getpid(), "forked": out, "spawned": spawned}))
'''


def test_forked_workers_see_their_owners_environment_and_hold_no_server_pipe(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE))
    p = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    forked, spawned = got["forked"], got["spawned"]
    assert [r["task"] for r in forked] == [0, 1, 2, 3]  # in order
    for r in forked:
        assert r["ppid"] != got["main"], "forked by the server, not by the command"
        assert r["x"] == "set after the server started" and not r["gone"], "the owner's environment, as of now"
        assert r["blas"] == "1"  # WORKER_THREADS
        assert r["alive_fd"] is None, "a worker must not keep the server alive"
        assert r["run_alive"] is True
    assert {r["ppid"] for r in forked} == {forked[0]["ppid"]}  # one server for the pool
    for r in spawned:
        assert r["ppid"] == got["main"] and r["x"] == "set after the server started" and r["blas"] == "1"


def test_run_alive_outside_a_worker_is_true() -> None:
    assert warm_start.run_alive() is True


def test_the_environment_can_turn_the_server_off(monkeypatch, capsys):
    argv = ["annotate", "in.jsonl.gz", "-o", "out"]
    started: list[tuple[str, ...]] = []
    monkeypatch.setattr(warm_start, "usable_cores", lambda: 2)
    monkeypatch.setattr(warm_start, "start", lambda modules=(): started.append(tuple(modules)) or True)
    monkeypatch.setenv(warm_start.START_ENV, "spawn")
    assert cli.warm_workers(argv) is False and started == []
    monkeypatch.setenv(warm_start.START_ENV, "forkserver")
    assert cli.warm_workers(argv) is True and len(started) == 1
    monkeypatch.setenv(warm_start.START_ENV, "fork")
    monkeypatch.setattr(sys, "argv", ["textsieve", *argv])
    assert cli.main() == 2  # the process's command: a clear error, no traceback
    err = capsys.readouterr().err
    assert "TEXTSIEVE_WORKER_START must be one of forkserver, spawn, not 'fork'" in err
