"""Optional C kernels, loaded with ctypes (built by ``setup.py`` at install time).

They exist for memory, not speed: a process that imports numba and runs one kernel carries
about 125 MB of LLVM and numba state, more than the rest of a MinHash run. The C library adds
well under 1 MB. When it was not built (no C compiler at install time) or when
``TEXTSIEVE_NATIVE=0`` is set, ``rpv2_signatures`` returns None and callers use the numba
kernels, which compute the same values.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

_HERE = Path(__file__).resolve().parent
_P = ctypes.c_void_p
_I64 = ctypes.c_int64


def _library_path(name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = _HERE / (name + suffix)
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def rpv2_signatures():
    """The C function ``ts_rpv2_signatures`` (see ``rpv2_minhash.c``), or None."""
    if os.environ.get("TEXTSIEVE_NATIVE", "1") == "0":
        return None
    path = _library_path("_rpv2_minhash")
    if path is None:
        log.debug("native MinHash kernel not built; using numba")
        return None
    try:
        fn = ctypes.CDLL(str(path)).ts_rpv2_signatures
    except (OSError, AttributeError) as exc:  # a stale or foreign build
        log.warning("cannot load %s (%s); using the numba MinHash kernel", path, exc)
        return None
    fn.argtypes = [_P, _P, _I64, _I64, _P, _P, _I64, _P, _P, _P]
    fn.restype = ctypes.c_int
    log.debug("native MinHash kernel: %s", path)
    return fn
