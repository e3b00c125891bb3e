"""Measure the peak memory of a command's whole process tree (the CLI and every worker it spawns).

Why not `resource.getrusage(RUSAGE_CHILDREN)`: its `ru_maxrss` is the peak of the *largest*
single descendant, while a memory budget that covers the tree must bound the *sum*. Polling
the tree's summed RSS can miss a short peak between two polls, so this sums, over every process
ever seen in the tree, the largest `VmHWM` (the kernel's own per-process peak RSS) it showed:
an upper bound of the tree's true peak, which is what a "peak <= budget" test needs. Linux only
(/proc).

A child caught between `fork` and `exec` (a spawned worker's first microseconds) still maps its
parent's pages, so its RSS reads as the parent's: counting it would add the parent's peak twice
(seen under `pytest -n auto`, where the machine is loaded and the window is wider). `exec` starts
a fresh `VmHWM`, so a process whose command line changed since the last poll has its peak taken
anew, and one whose command line is still its parent's is not counted until it execs. The one
exception: the workers a fork server (`textsieve.exec.warm_start`) forks run without exec, under
the server's command line, and are counted from the start. Their peaks include the pages they
share with the server (counted again in the server's own peak), so the sum stays an upper bound.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

#: in the command line of Python's fork server, and so of every worker it forks
FORK_SERVER = b"multiprocessing.forkserver"


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def _cmdline(pid: int) -> bytes:
    """The command line of `pid` (b"" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _hwm(pid: int) -> int:
    """Peak RSS (bytes) of `pid` so far, 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class TreePeak:
    """What `run_measured` saw: the command's exit status, output and per-process peaks."""

    returncode: int
    stdout: str
    stderr: str
    peaks: dict[int, int] = field(default_factory=dict)  # pid -> peak RSS bytes

    @property
    def total(self) -> int:
        """Upper bound of the tree's peak RSS: the sum of every process's own peak."""
        return sum(self.peaks.values())

    @property
    def processes(self) -> int:
        return len(self.peaks)


def run_measured(cmd: list[str], env: Mapping[str, str] | None = None, interval: float = 0.005,
                 timeout: float = 300) -> TreePeak:
    """Run `cmd`, polling its process tree every `interval` s; return its peaks and output."""
    proc = subprocess.Popen(cmd, env=dict(env) if env is not None else None, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peaks: dict[int, int] = {}
    images: dict[int, bytes] = {}  # pid -> the command line its peak belongs to
    deadline = time.monotonic() + timeout
    out_chunks: list[str] = []
    import threading

    def drain(stream, sink: list[str]) -> None:
        sink.append(stream.read())

    err_chunks: list[str] = []
    threads = [threading.Thread(target=drain, args=(proc.stdout, out_chunks)),
               threading.Thread(target=drain, args=(proc.stderr, err_chunks))]
    for t in threads:
        t.start()
    try:
        while proc.poll() is None:
            stack: list[tuple[int, bytes | None]] = [(proc.pid, None)]
            while stack:
                pid, parent_cmdline = stack.pop()
                cmdline = _cmdline(pid)
                # not a fork that has yet to exec; a fork server's children never exec: they are workers
                if cmdline and (cmdline != parent_cmdline or FORK_SERVER in cmdline):
                    hwm = _hwm(pid)
                    if images.get(pid) != cmdline:  # a new image: its own peak starts here
                        images[pid], peaks[pid] = cmdline, hwm
                    else:
                        peaks[pid] = max(peaks[pid], hwm)
                stack += [(child, cmdline) for child in _children(pid)]
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"timed out: {cmd}")
            time.sleep(interval)
    finally:
        proc.wait()
        for t in threads:
            t.join()
    return TreePeak(proc.returncode, "".join(out_chunks), "".join(err_chunks),
                    {p: v for p, v in peaks.items() if v})
