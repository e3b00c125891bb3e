"""Sleep in every `Progress.update` (once per batch of every stage), so that a test can SIGKILL
a run at a point where some work is finished and some is not.

textsieve knows nothing of this: `sitecustomize.py` (this folder, first on the PYTHONPATH that
`slowed_env` gives a subprocess) calls `install_from_env()` at interpreter start-up, in the CLI
process and in every worker it spawns (they inherit the environment).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

DELAY_ENV = "TEXTSIEVE_TEST_DELAY_PER_BATCH"
HERE = Path(__file__).resolve().parent


def slowed_env(delay: float, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a subprocess whose stages sleep `delay` seconds per progress update
    (0: not slowed, whatever the parent has)."""
    env = dict(os.environ if base is None else base)
    env.pop(DELAY_ENV, None)
    if delay:
        env[DELAY_ENV] = str(delay)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


def install(delay: float) -> None:
    """Make `Progress.update` sleep `delay` seconds after each update."""
    from textsieve.exec.progress import Progress

    update = Progress.update

    def slow_update(self: Progress, docs: int, bytes_done: int, shard: str | None = None) -> None:
        update(self, docs, bytes_done, shard)
        time.sleep(delay)

    Progress.update = slow_update


def install_from_env() -> None:
    delay = float(os.environ.get(DELAY_ENV) or 0)
    if delay:
        install(delay)


def kill_when(cmd: list[str], ready: Callable[[], bool], delay: float, what: str, timeout: float = 120) -> None:
    """Start `cmd` slowed down by `delay` seconds per progress update; SIGKILL it as soon as
    `ready()` holds. Fails when the run ends (or `timeout` passes) before that, so a kill test
    cannot pass without killing."""
    proc = subprocess.Popen(cmd, env=slowed_env(delay), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if proc.poll() is not None:
                raise AssertionError(f"the run ended before {what}: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, f"killed {what}, but it had already exited"
