"""Every stage `textsieve run` knows: the `STAGE` descriptor of each module under `stages/`.

Found by walking the package, not listed, so a new stage module is registered by existing: no
table elsewhere names it. Importing every stage module costs ~0.3 s; their heavy dependencies
(numba kernels, models) load only when a stage runs.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import textsieve.stages as _package
from textsieve.stages.descriptor import Stage


@functools.cache
def stage_modules() -> tuple[tuple[str, Stage], ...]:
    """(module name, its STAGE) for every registered stage, in run order."""
    found: dict[str, tuple[str, Stage]] = {}
    for info in pkgutil.walk_packages(_package.__path__, f"{_package.__name__}."):
        stage = getattr(importlib.import_module(info.name), "STAGE", None)
        if isinstance(stage, Stage):
            if stage.name in found:
                raise RuntimeError(f"two stages are named {stage.name!r}: {found[stage.name][0]} and {info.name}")
            found[stage.name] = (info.name, stage)
    return tuple(sorted(found.values(), key=lambda item: item[1].order))


def stages() -> tuple[Stage, ...]:
    """The registered stages in run order."""
    return tuple(stage for _, stage in stage_modules())


def stage(name: str) -> Stage:
    """The stage of kind `name` (`dsir` for the run's `dsir:web`)."""
    for s in stages():
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r}; registered: {', '.join(s.name for s in stages())}")
