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
from textsieve.commands import warm
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
    assert warm.warm_workers(argv) is (want is not None)
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
    assert warm.warm_workers(argv) is False and started == []
    monkeypatch.setenv(warm_start.START_ENV, "forkserver")
    assert warm.warm_workers(argv) is True and len(started) == 1
    monkeypatch.setenv(warm_start.START_ENV, "fork")
    monkeypatch.setattr(sys, "argv", ["textsieve", *argv])
    assert cli.main() == 2  # the process's command: a clear error, no traceback
    err = capsys.readouterr().err
    assert "TEXTSIEVE_WORKER_START must be one of forkserver, spawn, not 'fork'" in err


def test_the_commands_without_a_pool_by_default_are_derived_from_the_parsers(monkeypatch):
    """`warm.NO_POOL` is every stage command without a --workers option and `warm.ONE_WORKER` every
    one whose --workers defaults to 1 (both derived from the parsers); neither starts the server
    unless the line asks for workers."""
    import argparse

    from textsieve.commands.index import COMMANDS

    def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            option = [a for a in parser._actions if "--workers" in a.option_strings]
            yield " ".join(path), option[0].default if option else "no option"
        for action in subs:
            for name, sub in action.choices.items():
                yield from leaves(sub, (*path, name))

    stage_words = {word for word, (_, stages) in COMMANDS.items() if stages}
    defaults = {path: d for path, d in leaves(cli.build_parser()) if path.split(" ")[0] in stage_words}
    assert {path for path, d in defaults.items() if d == "no option"} == warm.NO_POOL
    assert {path for path, d in defaults.items() if d not in ("no option", None)} == warm.ONE_WORKER
    assert all(defaults[path] == 1 for path in warm.ONE_WORKER)
    monkeypatch.setattr(warm_start, "usable_cores", lambda: 2)
    monkeypatch.setattr(warm_start, "start", lambda modules=(): True)
    for path in sorted(warm.NO_POOL | warm.ONE_WORKER):
        assert warm.warm_workers([*path.split(" "), "x"]) is False, path
    for path in sorted(warm.ONE_WORKER):
        assert warm.warm_workers([*path.split(" "), "x", "--workers", "2"]) is True, path


@pytest.mark.parametrize("tail, want", [
    (["--work", "2"], True),  # argparse's abbreviations
    (["--work", "1"], False),
    (["--workers=01"], False),
    (["--workers", "4", "--workers", "1"], False),  # the last one wins
    (["--workers", "1", "--workers", "4"], True),
    (["--exec", "ray"], False),
    (["--executor=local"], True),
    (["--dry-run"], False),
    (["--workers", "many"], False),  # unreadable: the command's parser says why
    (["--workers", "0"], True),  # 0: the stage's default, all cores
])
def test_the_pool_options_are_read_as_argparse_reads_them(monkeypatch, tail, want):
    monkeypatch.setattr(warm_start, "usable_cores", lambda: 2)
    monkeypatch.setattr(warm_start, "start", lambda modules=(): True)
    assert warm.warm_workers(["select", "attrs", "--recipe", "gopher", *tail]) is want


def test_a_bad_worker_start_value_only_matters_to_pool_commands(monkeypatch):
    monkeypatch.setenv(warm_start.START_ENV, "fork")
    assert warm.warm_workers(["--version"]) is False
    assert warm.warm_workers(["report", "out"]) is False
    monkeypatch.setattr(warm_start, "usable_cores", lambda: 2)
    with pytest.raises(ValueError, match="TEXTSIEVE_WORKER_START"):
        warm.warm_workers(["annotate", "in.jsonl.gz"])


def test_a_server_that_cannot_start_leaves_the_workers_spawned(tmp_path: Path) -> None:
    """A $TMPDIR too deep for a Unix socket's path (108 bytes): spawned workers, no traceback."""
    import os

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    script = ("import json\nfrom textsieve.exec import warm_start\nfrom textsieve.exec.local import ordered_map\n"
              "ok = warm_start.start()\n"
              "print(json.dumps([ok, warm_start.started(), [r for _, r in ordered_map(abs, [-1, -2], workers=2)]]))")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "TMPDIR": str(deep)})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [False, False, [1, 2]]


def test_a_command_that_used_no_pool_takes_its_server_down_with_it(tmp_path: Path) -> None:
    """A command that stops before any pool (here at a missing input) kills its server at exit,
    instead of leaving it to finish its imports while holding the command's output streams."""
    import time

    import psutil

    cmd = [sys.executable, "-m", "textsieve.cli", "annotate", str(tmp_path / "missing.jsonl.gz"), "-o",
           str(tmp_path / "out"), "--workers", "2"]
    err_file = tmp_path / "stderr.txt"
    with open(err_file, "wb") as err_fh:  # not a pipe: reading one to the end would wait for the server too
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_fh)
    me = psutil.Process(proc.pid)
    servers: list[psutil.Process] = []
    while proc.poll() is None and not servers:
        try:
            servers = [c for c in me.children() if "forkserver" in " ".join(c.cmdline())]
        except psutil.Error:
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert proc.returncode == 2 and b"missing.jsonl.gz" in err_file.read_bytes()
    assert servers, "the command ended before its fork server could be seen"
    try:  # the command reaped it before it exited; without that it would still be importing now
        alive = servers[0].status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        alive = False
    assert not alive, "the server outlived the command"


SLOW_PROBE = '''
import os, time


def nap(task):
    time.sleep(60)
    return task
'''

SLOW_DRIVER = '''
import os, sys, tempfile
sys.path.insert(0, sys.argv[1])
from textsieve.exec import warm_start
from textsieve.exec.local import ordered_map
assert warm_start.start()
import probe_slow
list(ordered_map(probe_slow.nap, range(4), workers=2))
'''


def test_a_killed_command_takes_its_server_and_every_pool_worker_with_it(tmp_path: Path) -> None:
    """Pool workers block on their task queue for ever once the command is gone (spawned ones too).
    Forked by the server, they end with it (PR_SET_PDEATHSIG), and it ends with the command. The
    command's temporary folder, left behind by the kill, goes at the next server's start."""
    import os
    import signal
    import tempfile
    import time

    import psutil

    (tmp_path / "probe_slow.py").write_text(SLOW_PROBE)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_DRIVER, str(tmp_path)], cwd=tmp_path)
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    workers: list[psutil.Process] = []
    servers: list[psutil.Process] = []
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
        servers = [c for c in me.children() if "forkserver" in " ".join(c.cmdline())]
        workers = [w for s in servers for w in s.children()]
        time.sleep(0.05)
    assert len(workers) == 2, "the workers could not be seen"
    left = [Path(tempfile.gettempdir()) / n for n in os.listdir(tempfile.gettempdir())
            if n.startswith(f"{warm_start.TEMP_PREFIX}{proc.pid}-")]
    assert len(left) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _, alive = psutil.wait_procs(servers + workers, timeout=20)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"outlived the killed command: {alive}"
    # killed, so no exit handler removed it; the next start removes it (another test's command,
    # running beside this one, may already have)
    p = subprocess.run([sys.executable, "-c", "from textsieve.exec import warm_start; assert warm_start.start()"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not left[0].exists()


def test_the_server_imports_nothing_from_the_folder_it_starts_in(tmp_path: Path) -> None:
    """The command's working folder is not on its module path (the console script); the server's
    preloads must not find a module there either (Python 3.11's fork server would: `-c`)."""
    folder, code = tmp_path / "work", tmp_path / "code"
    folder.mkdir()
    code.mkdir()
    (folder / "fsspec.py").write_text("raise SystemExit('the shadow fsspec was imported')\n")
    (code / "probe.py").write_text(textwrap.dedent(PROBE) + "\n\ndef where(task):\n    import fsspec\n"
                                   "    return fsspec.__file__\n")
    (code / "driver.py").write_text(
        "import json\nfrom textsieve.exec import warm_start\nfrom textsieve.exec.local import ordered_map\n"
        "import probe\nassert warm_start.start()\n"
        "print(json.dumps([r for _, r in ordered_map(probe.where, range(2), workers=2)]))\n")
    p = subprocess.run([sys.executable, str(code / "driver.py")], capture_output=True, text=True, cwd=folder,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    files = json.loads(p.stdout)
    assert len(files) == 2 and all("site-packages" in f and str(folder) not in f for f in files)


def test_the_server_imports_what_the_stage_modules_workers_import_lazily() -> None:
    """`warm_preload` imports the `WORKER_IMPORTS` of the loaded stage modules (extract's engine
    libraries), skipping one that is not installed."""
    script = ("import sys, types\n"
              "import textsieve.stages.sources.extract as extract\n"
              "fake = types.ModuleType('textsieve.stages.fake')\n"
              "fake.WORKER_IMPORTS = ('no_such_library_here', 'colorsys')\n"
              "sys.modules['textsieve.stages.fake'] = fake\n"
              "from textsieve.exec import warm_preload\n"
              "assert 'trafilatura' in sys.modules and 'ftfy' in sys.modules, warm_preload.IMPORTED\n"
              "assert 'colorsys' in warm_preload.IMPORTED and 'no_such_library_here' not in warm_preload.IMPORTED\n"
              "assert set(extract.WORKER_IMPORTS) <= set(warm_preload.IMPORTED)\n")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_worker_takes_ctrl_c_inside_a_task_only() -> None:
    """Between tasks (waiting for one, unpickling it) a worker ignores Ctrl-C, so it neither dies
    with a traceback nor turns the command's interrupt into a crashed-worker error; inside a task
    it raises KeyboardInterrupt, so the task cleans up."""
    import signal as signals

    from textsieve.exec import local

    assert local._on_ctrl_c(signals.SIGINT, None) is None  # idle: nothing happens

    def task(x: int) -> int:
        local._on_ctrl_c(signals.SIGINT, None)
        return x

    with pytest.raises(KeyboardInterrupt):
        local._in_task(task, 1)
    assert local._TASK["running"] is False  # reset by the interrupt too
    assert local._in_task(abs, -3) == 3
