"""Optional C kernels, loaded with ctypes (built by ``setup.py`` at install time).

Most exist for memory and start-up, not speed (``_extract`` is for speed): a process that imports
numba and runs one kernel carries about 125 MB of LLVM and numba state, more than the rest of a MinHash run, and a fresh
install compiles annotate's numba kernels for ~8 s before its first document. A C library adds
well under 1 MB and nothing to wait for. ``_rpv2_minhash`` holds the MinHash signatures,
``_annotate_scan`` annotate's raw-text scan, word statistics and normalization, ``_extract`` the
extraction engine's boilerplate marking, block parsing and block classifier, ``_langid`` py3langid's walk and
scores (language id in `extract` and `annotate` without numba). When a
library was not built (no C compiler at install time) or when ``TEXTSIEVE_NATIVE=0`` is set, the
accessors return None and callers use the numba kernels (or Python), which compute the same values.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import logging
import os
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
_P = ctypes.c_void_p
_I64 = ctypes.c_int64


def _library_dirs() -> list[Path]:
    """This package's folder, then ``textsieve/native`` under every other ``sys.path`` entry:
    when a source checkout shadows the installed package (running from the repository root),
    the built library is only in the installed copy."""
    dirs = [_HERE]
    for entry in sys.path:
        folder = Path(entry or ".") / "textsieve" / "native"
        try:
            if folder.is_dir() and folder.resolve() not in {d.resolve() for d in dirs}:
                dirs.append(folder)
        except OSError:
            continue
    return dirs


def _library_path(name: str) -> Path | None:
    for folder in _library_dirs():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / (name + suffix)
            if path.is_file():
                return path
    return None


def _function(name: str, argtypes: list, library: str = "_rpv2_minhash", restype: Any = ctypes.c_int):
    if os.environ.get("TEXTSIEVE_NATIVE", "1") == "0":
        return None
    path = _library_path(library)
    if path is None:
        log.debug("native library %s not built; using numba", library)
        return None
    try:
        fn = getattr(ctypes.CDLL(str(path)), name)
    except (OSError, AttributeError) as exc:  # a stale or foreign build
        log.warning("cannot load %s from %s (%s); using the numba kernel", name, path, exc)
        return None
    fn.argtypes = argtypes
    fn.restype = restype
    log.debug("native kernel %s: %s", name, path)
    return fn


@functools.lru_cache(maxsize=1)
def rpv2_signatures():
    """The C function ``ts_rpv2_signatures`` (RPv2 MinHash; see ``rpv2_minhash.c``), or None."""
    return _function("ts_rpv2_signatures", [_P, _P, _I64, _I64, _P, _P, _I64, _P, _P, _P])


@functools.lru_cache(maxsize=1)
def fast_signatures():
    """The C function ``ts_fast_signatures`` (the ``minhash_fast`` group), or None."""
    return _function("ts_fast_signatures", [_P, _P, _I64, _I64, _P, _I64, _P, _P])


#: `annotate_scan.c`'s output layout, as `ts_scan_layout` encodes it (N_DOC_STATS, N_LINE_STATS,
#: N_WORD_STATS); a library built from other sources is not used
SCAN_LAYOUT = 11 * 100 + 9 * 10000 + 15


@functools.lru_cache(maxsize=1)
def _scan_library_ok() -> bool:
    layout = _function("ts_scan_layout", [], "_annotate_scan")
    if layout is None:
        return False
    if layout() != SCAN_LAYOUT:
        log.warning("the native scan library has another output layout (%d); using numba", layout())
        return False
    return True


@functools.lru_cache(maxsize=1)
def scan_raw():
    """The C function ``ts_scan_raw`` (annotate's raw-text scan; ``annotate_scan.c``), or None."""
    if not _scan_library_ok():
        return None
    return _function("ts_scan_raw", [_P] * 2 + [_I64] + [_P] * 12, "_annotate_scan", restype=_I64)


@functools.lru_cache(maxsize=1)
def word_stats():
    """The C function ``ts_word_stats`` (word and n-gram statistics; ``annotate_scan.c``), or None."""
    if not _scan_library_ok():
        return None
    return _function("ts_word_stats", [_P, _P, _I64, _P, _P], "_annotate_scan")


@functools.lru_cache(maxsize=1)
def normalize_collapse():
    """The C function ``ts_normalize_collapse`` (RPv2 normalization's byte-level part: punctuation,
    A-Z, whitespace runs; ``annotate_scan.c``), or None: callers normalize in Python then."""
    if not _scan_library_ok():
        return None
    return _function("ts_normalize_collapse", [_P, _P, _I64, _P, _P], "_annotate_scan", restype=None)


@functools.lru_cache(maxsize=1)
def bad_word_hits():
    """The C function ``ts_bad_word_hits`` (LDNOOBW n-gram counts; ``annotate_scan.c``), or None."""
    if not _scan_library_ok():
        return None
    return _function("ts_bad_word_hits", [_P, _P, _P, _I64, _P, _I64, _P, _P, _P, _P, _I64, _P, _I64, _P, _P],
                     "_annotate_scan", restype=None)


@functools.lru_cache(maxsize=1)
def tree_raw():
    """The C function ``ts_tree_raw`` (gradient-boosted trees' raw scores; ``extract_kernels.c``), or
    None: the caller walks the trees in NumPy then, with the same arithmetic."""
    return _function("ts_tree_raw", [_P, _I64, _I64, _P, _I64, _I64, _P, _P, _P, _P, _P, ctypes.c_double,
                                     ctypes.c_double, _P], "_extract", restype=None)


@functools.lru_cache(maxsize=1)
def boilerplate_edits():
    """The C function ``ts_boilerplate_edits`` (`sieve.mark_boilerplate`'s edits in one pass;
    ``extract_kernels.c``), or None: the caller finds and checks the words in Python then."""
    return _function("ts_boilerplate_edits", [_P, _I64, _P, _P, _I64, _I64, _P, _P, _P, _I64], "_extract",
                     restype=_I64)


@functools.lru_cache(maxsize=1)
def parse_blocks():
    """The C function ``ts_parse_blocks`` (`blocks.parse_blocks` over resiliparse's minimal HTML;
    ``extract_kernels.c``), or None: the caller parses the lines in Python then."""
    return _function("ts_parse_blocks", [_P, _I64, _P, _P, _I64], "_extract", restype=_I64)


@functools.lru_cache(maxsize=1)
def block_features():
    """The C function ``ts_block_features`` (`blocks.features`' matrix in one pass;
    ``extract_kernels.c``), or None: the caller builds it with NumPy then."""
    return _function("ts_block_features", [_I64] + [_P] * 10 + [_I64, _P, _I64, _I64, _P, _P, _I64, _I64, _P],
                     "_extract", restype=None)


@functools.lru_cache(maxsize=1)
def langid_scores():
    """The C function ``ts_langid_scores`` (py3langid's DFA walk and naive Bayes scores for a batch;
    ``langid_kernels.c``), or None: the caller uses the numba kernels then, with the same arithmetic."""
    return _function("ts_langid_scores", [_P, _P, _I64, _P, _P, _P, _I64, _P, _P, _I64, _P, _P], "_langid",
                     restype=_I64)
