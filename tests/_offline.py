"""Run a textsieve command in a fresh process with the network cut off, for the tests that
prove nothing is downloaded at run time (sockets refuse to connect, HF_HUB_OFFLINE=1, no proxy)."""

from __future__ import annotations

import os
import subprocess
import sys


def run_offline_cli(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    """`textsieve ARGS` in a new interpreter whose sockets cannot connect; its completed process."""
    code = ("import socket, sys\n"
            "def refuse(*a, **k):\n    raise OSError('network is cut off in this test')\n"
            "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
            "from textsieve.cli import main\n"
            f"sys.exit(main({args!r}))\n")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
