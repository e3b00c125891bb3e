"""Imported last by the fork server (`warm_start.start`), and by nothing else: the modules that
the stage modules it preloaded say their workers import on their first task.

Why: a stage's worker often imports its heavy libraries lazily (extract's trafilatura and ftfy,
~0.24 s), so that `--help` and the main process stay light. A worker forked from the server would
then still import them itself, each worker again. A stage module lists them in `WORKER_IMPORTS`
(module names; a missing optional one is skipped), and the server imports them once after the
stage modules, so every worker it forks starts with them loaded.
"""

from __future__ import annotations

import importlib
import sys


def import_worker_modules() -> list[str]:
    """Import the `WORKER_IMPORTS` of every loaded `textsieve.stages` module; the names imported."""
    done: list[str] = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("textsieve.stages.") or module is None:
            continue
        for wanted in getattr(module, "WORKER_IMPORTS", ()):
            try:
                importlib.import_module(wanted)
            except ImportError:  # an optional library that is not installed: the worker says so
                continue
            done.append(wanted)
    return done


IMPORTED = import_worker_modules()
