"""Extension points: signals, model kinds and readers added from outside the package.

Three registries accept additions, each through one documented call and one entry-point group:

| what       | call                                         | entry-point group          |
|------------|----------------------------------------------|----------------------------|
| signal     | `textsieve.signals.register_signal(...)`     | `textsieve.signals`        |
| model kind | `textsieve.models.register_model_kind(...)`  | `textsieve.model_kinds`    |
| reader     | `textsieve.io.register_reader(...)`          | `textsieve.readers`        |

An entry point names a module (`digits = "my_pkg.signals"`); loading it imports the module,
whose import-time registry calls do the registering. Each group is loaded lazily, once per
process, the first time its registry is read, so `import textsieve` stays cheap and an installed
plugin is seen by the CLI, the API and every worker process alike. A plugin that fails to import
is reported with a warning and left out: one broken package must not take every command down.

Why the worker hand-over below: stages compute on worker processes (`exec.local`,
`exec.ray_exec`) that start from a fresh interpreter (spawned, or forked by a fork server that
started before the user's code ran). Entry points reach them by themselves,
but a registry *call* made at run time by the user's code (a script, a test) would not. So each
such call is remembered here (`remember`), and the pools pass the remembered calls to every
worker, which repeats them before its first task (`worker_initializer`). The callables travel by
reference (module and name), so they must live in an importable module; a function defined in
`__main__` (a script or notebook) or inside another function cannot, and the worker then names
the extension and the reason when it is asked for it (`missing_reason`) instead of failing
obscurely.

This module is a leaf: it imports no other textsieve module, so the lowest layers (`io`, `exec`)
can use it; the registries register themselves into it, never the other way round.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SIGNALS = "textsieve.signals"
MODEL_KINDS = "textsieve.model_kinds"
READERS = "textsieve.readers"
GROUPS = (SIGNALS, MODEL_KINDS, READERS)

log = logging.getLogger("textsieve.extensions")

_loaded: set[str] = set()
_loading = 0  # > 0 while entry points are being imported: their registrations are not remembered


def load_entry_points(group: str) -> None:
    """Import every module the installed entry points of `group` name, once per process.

    Sorted by entry-point name, so registration order (and with it the order of `--signals all`
    style listings) does not depend on the order distributions happen to be found in."""
    global _loading
    if group in _loaded:
        return
    _loaded.add(group)
    try:
        found = sorted(importlib.metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))
    except Exception as exc:  # a damaged distribution's metadata must not stop the run
        log.warning("cannot list the %s entry points (%s: %s)", group, type(exc).__name__, exc)
        return
    _loading += 1
    try:
        for ep in found:
            try:
                ep.load()
            except Exception as exc:
                dist = f" of {ep.dist.name}" if ep.dist is not None else ""
                log.warning("extension %r%s (entry point %s = %s) failed to import (%s: %s); it is left out",
                            ep.name, dist, group, ep.value, type(exc).__name__, exc)
    finally:
        _loading -= 1


@dataclass(frozen=True)
class Registration:
    """One registry call made at run time, to be repeated in worker processes.

    `register` is the registry function (`register_signal`, ...); `label` says what it adds
    (`signal 'ts_digit_fraction'`) for error messages."""

    label: str
    register: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def not_portable(self) -> str | None:
        """Why a fresh process could not import this call's callables, or None when it can."""
        for value in (*self.args, *self.kwargs.values()):
            if callable(value):
                reason = _unimportable(value)
                if reason:
                    return reason
        return None


_remembered: list[Registration] = []
_missing: dict[str, str] = {}  # label -> why this process lacks it (set in workers)


def remember(label: str, register: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Record a run-time registry call so worker processes repeat it (see the module doc).

    Calls made by textsieve's own modules and by entry-point modules are not recorded: every
    process makes those itself."""
    if _loading:
        return
    callables = [v for v in (*args, *kwargs.values()) if callable(v)]
    if callables and all(str(getattr(v, "__module__", "")).startswith("textsieve.") for v in callables):
        return
    _remembered.append(Registration(label, register, args, kwargs))


def forget(label: str) -> None:
    """Drop the remembered call of `label` (the registry removed that extension)."""
    _remembered[:] = [r for r in _remembered if r.label != label]


def worker_initializer(initializer: Callable[..., Any] | None,
                       initargs: tuple[Any, ...]) -> tuple[Callable[..., Any] | None, tuple[Any, ...]]:
    """The (initializer, initargs) a process pool should use so each worker first repeats the
    remembered registry calls; unchanged when there are none (the common case costs nothing)."""
    if not _remembered:
        return initializer, initargs
    portable: list[Registration] = []
    missing: dict[str, str] = {}
    for reg in _remembered:
        reason = reg.not_portable()
        if reason is None:
            portable.append(reg)
        else:
            missing[reg.label] = reason
    return _init_worker, (tuple(portable), missing, initializer, initargs)


def _init_worker(registrations: tuple[Registration, ...], missing: dict[str, str],
                 initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    _missing.update(missing)
    for reg in registrations:
        reg.register(*reg.args, **reg.kwargs)
    if initializer is not None:
        initializer(*initargs)


def missing_reason(label: str) -> str:
    """A sentence to append to a "not found" error in a worker process: why the parent's
    registration of `label` (or of every label starting with it, e.g. "model kind") did not
    reach this process; "" when nothing is known."""
    return "".join(f" The {name} was registered in the parent process by a function that worker processes "
                   f"cannot import ({reason}): define it at module level of an importable module, or use "
                   "one worker." for name, reason in _missing.items() if name.startswith(label))


def _unimportable(fn: Callable[..., Any]) -> str | None:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module or not qualname:
        return f"{fn!r} has no module-level name"
    if module == "__main__":
        return f"{qualname} is defined in __main__, a script or notebook"
    if "<" in qualname:  # <lambda>, <locals>
        return f"{module}.{qualname} is not a module-level name"
    obj: Any = sys.modules.get(module)
    if obj is None:
        try:
            obj = importlib.import_module(module)
        except Exception as exc:
            return f"module {module} cannot be imported ({type(exc).__name__})"
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if obj is not fn:
        return f"{module}.{qualname} does not name this function"
    return None
