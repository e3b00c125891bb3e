"""Model kinds: how a model file is loaded and which signals it contributes.

A *kind* (e.g. `classifier`, `langid`, `ut1`, `lm`, `importance`) registers two functions:
`load(path) -> loaded` (called once per worker process) and `signals(name, loaded) ->
list[Signal]` (the signals the model adds under the user's model name, e.g. `--models wiki=...`
gives `ts_perplexity_wiki`). These signals are not put in the global `REGISTRY`: they exist only
in runs that name the model. A signal function reads its model as `views.models[name]`.

`resolve_model(name, path)` picks the kind: a `.tsm` file by its header's `kind`; a foreign file
(fastText `.bin`, KenLM `.arpa`/`.binary`, ...) by the longest registered extension, asking the
kinds' optional `sniff(path)` when several claim it; a built-in model by its pseudo-path
`builtin:NAME` (e.g. `builtin:py3langid`). Every module of `textsieve.models` is imported on
first use, so a module registers its kinds just by calling `register_model_kind` at import.

A kind from outside the package makes the same call, at run time or from a module named by an
entry point of the `textsieve.model_kinds` group, which `discover_kinds` loads once per process
(`textsieve.extensions`; docs/architecture.md, "Add a model kind").
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from textsieve import extensions as extension_points  # `extensions` is a parameter name here
from textsieve.models.format import ModelFormatError, file_fingerprint, is_model_file, read_header
from textsieve.signals.registry import Signal

BUILTIN_PREFIX = "builtin:"
log = logging.getLogger("textsieve.models")
M = TypeVar("M")  # a kind's loaded-model type: what its `load` returns is what its `signals` receives


@dataclass(frozen=True)
class ModelKind:
    """How one kind of model is loaded, which files it claims and which signals it adds."""

    kind: str
    load: Callable[[str], object]
    # Any: the table holds every kind, each with its own model type; register_model_kind checks
    # that a kind's `load` and `signals` agree on it
    signals: Callable[[str, Any], list[Signal]]
    extensions: tuple[str, ...] = ()
    sniff: Callable[[str], bool] | None = None  # for foreign files whose extension is shared
    builtins: tuple[str, ...] = ()  # names usable as `builtin:NAME` paths


KINDS: dict[str, ModelKind] = {}
_NOT_KIND_MODULES = {"format", "registry"}
_discovered = False


def register_model_kind(kind: str, *, load: Callable[[str], M],
                        signals: Callable[[str, M], list[Signal]], extensions: tuple[str, ...] = (),
                        sniff: Callable[[str], bool] | None = None, builtins: tuple[str, ...] = ()) -> None:
    """Register a model kind. `extensions` (like `.bin`, `.arpa`) claim foreign files;
    `.tsm` files are matched by their header's kind, not by extension.

    Repeating an identical registration is a no-op (worker processes repeat the parent's run-time
    registrations, `textsieve.extensions`); another kind under a taken name is a `ValueError`.
    """
    entry = ModelKind(kind, load, signals, tuple(e.lower() for e in extensions), sniff, builtins)
    if not _builtin(entry):
        if not kind or not kind.replace("_", "").isalnum():
            raise ValueError(f"register_model_kind({kind!r}): a kind is letters, digits and '_'")
        if any(not e.startswith(".") for e in entry.extensions):
            raise ValueError(f"register_model_kind({kind!r}): extensions start with '.', e.g. '.bin'")
        discover_kinds()  # the built-in and installed kinds first, so ties between claims resolve stably
    existing = KINDS.get(kind)
    if existing is not None:
        if existing == entry:
            return
        raise ValueError(f"model kind {kind!r} registered twice")
    KINDS[kind] = entry
    extension_points.remember(_label(kind), register_model_kind, kind, load=load, signals=signals,
                              extensions=extensions, sniff=sniff, builtins=builtins)


def unregister_model_kind(kind: str) -> None:
    """Remove the extension model kind `kind` (for tests and notebooks; built-in kinds stay)."""
    entry = KINDS.get(kind)
    if entry is None:
        raise KeyError(f"model kind {kind!r} is not registered")
    if _builtin(entry):
        raise ValueError(f"model kind {kind!r} is built in and cannot be removed")
    del KINDS[kind]
    extension_points.forget(_label(kind))


def _builtin(entry: ModelKind) -> bool:
    return str(getattr(entry.load, "__module__", "")).startswith("textsieve.")


def _label(kind: str) -> str:
    return f"model kind {kind!r}"


def _why_missing(message: str, label: str) -> str:
    """`message`, plus why a kind registered in the parent process is absent here (workers)."""
    reason = extension_points.missing_reason(label)
    return f"{message}.{reason}" if reason else message


def discover_kinds() -> dict[str, ModelKind]:
    """Import every module of `textsieve.models` once, so all kinds are registered."""
    global _discovered
    if not _discovered:
        _discovered = True
        import textsieve.models as pkg
        for info in pkgutil.iter_modules(pkg.__path__):
            if not info.name.startswith("_") and info.name not in _NOT_KIND_MODULES:
                try:
                    importlib.import_module(f"textsieve.models.{info.name}")
                except Exception as exc:  # one broken module must not take every model kind down
                    log.warning("model module textsieve.models.%s failed to import (%s: %s); its model kinds "
                                "are unavailable", info.name, type(exc).__name__, exc)
        extension_points.load_entry_points(extension_points.MODEL_KINDS)
    return KINDS


def model_kind_of(path: str) -> str:
    """The kind of the model at `path` (without loading it)."""
    kinds = discover_kinds()
    if path.startswith(BUILTIN_PREFIX):
        name = path[len(BUILTIN_PREFIX):]
        for k in kinds.values():
            if name in k.builtins:
                return k.kind
        known = sorted(b for k in kinds.values() for b in k.builtins)
        raise ModelFormatError(f"unknown built-in model {path!r}; built-in models: "
                               + ", ".join(BUILTIN_PREFIX + b for b in known))
    if is_model_file(path):
        kind = read_header(path)["kind"]
        if kind not in kinds:
            raise ModelFormatError(_why_missing(f"{path}: model kind {kind!r} is unknown to this textsieve "
                                                f"(known: {', '.join(sorted(kinds))})", _label(kind)))
        return kind
    low = path.lower()
    claims = [(len(ext), k) for k in kinds.values() for ext in k.extensions if low.endswith(ext)]
    if not claims:  # e.g. a folder (a UT1 blacklists tree): ask every kind that can sniff
        claims = [(0, k) for k in kinds.values() if k.sniff is not None and k.sniff(path)]
    if not claims and not os.path.exists(path):
        raise FileNotFoundError(f"model file not found: {path}")
    if not claims:
        exts = sorted({e for k in kinds.values() for e in k.extensions})
        raise ModelFormatError(_why_missing(f"{path}: not a textsieve model (.tsm) and no model kind reads this "
                                            f"file type (foreign model files: {', '.join(exts)})", "model kind"))
    longest = max(n for n, _ in claims)
    candidates = [k for n, k in claims if n == longest]
    if len(candidates) > 1:
        sniffed = [k for k in candidates if k.sniff is not None and k.sniff(path)]
        candidates = sniffed or candidates
    return candidates[0].kind


def model_fingerprint(path: str) -> str:
    """Fingerprint of a model path: the file's sha256 (16 hex), or a hash of the built-in name and
    its package version."""
    if path.startswith(BUILTIN_PREFIX):
        return hashlib.sha256(repr((path, _builtin_info(path))).encode()).hexdigest()[:16]
    if os.path.isdir(path):  # a folder model: every file's relative path and bytes, in sorted order
        h = hashlib.sha256()
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                h.update(os.path.relpath(full, path).encode("utf-8", "surrogateescape") + b"\0")
                with open(full, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                h.update(b"\0")
        return h.hexdigest()[:16]
    return file_fingerprint(path)


def model_header(path: str, kind: str) -> dict:
    """The header recorded in shard metadata: a `.tsm` file's own header; for a foreign or
    built-in model, its kind and file name (its fingerprint is recorded beside it)."""
    if path.startswith(BUILTIN_PREFIX):
        return {"kind": kind, "builtin": path[len(BUILTIN_PREFIX):], **_builtin_info(path)}
    if is_model_file(path):
        return read_header(path)
    if os.path.isdir(path):
        return {"kind": kind, "foreign": True, "folder": os.path.basename(os.path.normpath(path))}
    return {"kind": kind, "foreign": True, "file": path.rstrip("/").rsplit("/", 1)[-1]}


def _builtin_info(path: str) -> dict:
    """Version of the package behind a built-in model, so the header says what made the column."""
    from importlib import metadata

    name = path[len(BUILTIN_PREFIX):]
    try:
        return {"package": name, "package_version": metadata.version(name)}
    except metadata.PackageNotFoundError:
        return {}


def resolve_model(name: str, path: str) -> tuple[str, object, str]:
    """(kind, loaded model, fingerprint) for the user's `--models name=path`."""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"--models {name}={path}: the model name must be letters, digits and '_' "
                         "(it becomes part of signal names)")
    kind = model_kind_of(path)
    loaded = KINDS[kind].load(path)
    return kind, loaded, model_fingerprint(path)


def model_signals(kind: str, name: str, loaded: object) -> list[Signal]:
    """The signals a loaded model contributes under `name`."""
    return list(discover_kinds()[kind].signals(name, loaded))
