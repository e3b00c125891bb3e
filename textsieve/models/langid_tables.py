"""py3langid's model as the arrays our batch kernels read, cached once per machine.

py3langid ships its model as one xz-compressed NumPy archive; reading it (`from_model_file`:
lzma, unpickling, then our float16 -> float32 widening of the 100,053 x 142 score table) costs
~0.6 s in every process that runs language id, which `textsieve extract` pays per run and
`annotate --lang auto` per worker. The arrays derived from it are written once to the user's cache
(``($XDG_CACHE_HOME or ~/.cache)/textsieve/``, ~97 MB, beside the Unicode tables) as plain ``.npy``
files, and later processes map them read-only: no decompression, and workers share the pages.

The cache folder's name holds py3langid's version and the SHA-256 of its model file, so another
version or model is never read through a stale cache; a damaged or partial cache (it is published by
renaming a finished folder) is rebuilt, and a read-only home only means no cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: bump when the arrays written here change meaning
TABLE_FORMAT_VERSION = 1
_ARRAYS = ("nextmove", "rowbase", "out_feat", "ptc", "pc")


@dataclass(frozen=True)
class LangIdTables:
    """The DFA (`nextmove`, `rowbase`, `out_feat`), the score table `ptc` (features x classes,
    float32) and prior `pc`, the class labels and py3langid's alias column pairs (srl -> sr)."""

    nextmove: np.ndarray
    rowbase: np.ndarray
    out_feat: np.ndarray
    ptc: np.ndarray
    pc: np.ndarray
    classes: list[str]
    alias_pairs: list[tuple[int, int]]


def _model_file() -> Path:
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    path = Path(MODEL_FILE)
    return path if path.is_absolute() else Path(MODEL_DIR) / path


def cache_dir() -> Path | None:
    """This py3langid model's cache folder (None when the package or its model file is missing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        model = _model_file()
        digest = hashlib.sha256(model.read_bytes()).hexdigest()[:16]
        tag = f"py3langid-{version('py3langid')}-{digest}-v{TABLE_FORMAT_VERSION}"
    except (ImportError, OSError, PackageNotFoundError):
        return None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "textsieve" / tag


def tables_from_identifier(ident: Any) -> LangIdTables:
    """The arrays of a loaded py3langid ``LanguageIdentifier`` (the private attributes our kernels
    mirror; the caller checks they exist)."""
    nextmove = ident.tk_nextmove
    return LangIdTables(
        nextmove=np.frombuffer(nextmove, dtype=np.dtype(f"u{nextmove.itemsize}")).astype(np.uint32, copy=False),
        rowbase=np.asarray(ident.tk_row, dtype=np.int64) << 8,
        out_feat=np.asarray(ident.tk_output, dtype=np.int64),
        ptc=np.ascontiguousarray(ident.nb_ptc, dtype=np.float32),
        pc=np.ascontiguousarray(ident.nb_pc, dtype=np.float32),
        classes=[str(c) for c in ident.nb_classes],
        alias_pairs=[(int(i), int(j)) for i, j in ident._alias_pairs],
    )


def load_cached(folder: Path) -> LangIdTables | None:
    """The tables mapped from a finished cache folder, or None when there is none (or it is damaged)."""
    try:
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
        classes = (folder / "classes.txt").read_text("utf-8").split("\n")
        pairs = [tuple(int(x) for x in line.split()) for line in
                 (folder / "alias_pairs.txt").read_text("utf-8").splitlines()]
    except (OSError, ValueError):
        return None
    if len(classes) != arrays["ptc"].shape[1] or any(len(p) != 2 for p in pairs):
        return None
    return LangIdTables(classes=classes, alias_pairs=[(p[0], p[1]) for p in pairs], **arrays)


def save(tables: LangIdTables, folder: Path) -> None:
    """Write the tables to ``folder`` as a unit (a temporary sibling renamed into place), replacing
    a damaged one; a read-only or full disk leaves no cache and no error."""
    tmp = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
        for name in _ARRAYS:
            np.save(tmp / f"{name}.npy", getattr(tables, name))
        (tmp / "classes.txt").write_text("\n".join(tables.classes), "utf-8")
        (tmp / "alias_pairs.txt").write_text("".join(f"{i} {j}\n" for i, j in tables.alias_pairs), "utf-8")
        try:
            os.replace(tmp, folder)
        except OSError:
            if not folder.is_dir() or load_cached(folder) is not None:
                raise  # no room, or another process published a good cache first
            aside = folder.with_name(f".{folder.name}.damaged-{os.getpid()}")  # readers keep their maps
            os.replace(folder, aside)
            shutil.rmtree(aside, ignore_errors=True)
            os.replace(tmp, folder)
        tmp = None
    except OSError:
        pass  # a read-only or full disk, or another process's cache won: no cache from this one
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
