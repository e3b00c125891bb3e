"""The `.tsm` model file: a ZIP archive with a JSON header and named NumPy arrays.

Why a file format of our own: a signal column must always be traceable to the model that made
it (kind, parameters, training-data fingerprint), and a model must load without pickle (safe to
share) and without the code that trained it. ZIP keeps it one file that standard tools open:

    header.json   {"kind", "version", "textsieve_version", "created", "params": {...},
                   "training_data": {"fingerprint": sha256-of-inputs, "documents": n, ...},
                   "metrics": {...}}
    arrays.npz    named NumPy arrays (no pickled objects)
    <other>       optional extra members (e.g. a vocabulary as text), `extra_files`

The model's fingerprint is the first 16 hex digits of the SHA-256 of the whole file, so two
files with equal fingerprints give equal signals.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import zipfile
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np

from textsieve._version import __version__
from textsieve.io.atomic import atomic_open

FORMAT_VERSION = 1
HEADER = "header.json"
ARRAYS = "arrays.npz"
MAGIC = b"PK\x03\x04"


class ModelFormatError(ValueError):
    """A model file is unreadable or is not a textsieve model."""


@dataclass
class ModelFile:
    """A loaded `.tsm` file: its header, its arrays, extra members and the file fingerprint."""

    header: dict[str, Any]
    arrays: dict[str, np.ndarray]
    path: str
    fingerprint: str
    extra: dict[str, bytes] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.header["kind"]

    @property
    def params(self) -> dict[str, Any]:
        return self.header.get("params", {})


def file_fingerprint(path: str) -> str:
    """First 16 hex digits of the SHA-256 of a file's bytes (any model file, ours or foreign)."""
    h = hashlib.sha256()
    with fsspec.open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _created_time() -> _dt.datetime:
    """Now, or `SOURCE_DATE_EPOCH` when set (the reproducible-builds convention): the same
    training run then writes the same model file, byte for byte (zip entry times included)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None and epoch.strip().isdigit():
        when = _dt.datetime.fromtimestamp(max(int(epoch), 315532800), _dt.UTC)  # zip: 1980+
    else:
        when = _dt.datetime.now(_dt.UTC)
    return when.replace(microsecond=0)


def save_model(path: str, kind: str, params: dict[str, Any], arrays: dict[str, np.ndarray],
               training_data: dict[str, Any], metrics: dict[str, Any] | None = None,
               extra_files: dict[str, bytes] | None = None) -> str:
    """Write a `.tsm` file atomically and return its fingerprint.

    `training_data` should hold at least `fingerprint` (sha256 of the training inputs) and
    `documents`; `params` and `metrics` must be JSON-serialisable.
    """
    created = _created_time()
    header = {"kind": kind, "version": FORMAT_VERSION, "textsieve_version": __version__,
              "created": created.isoformat(timespec="seconds"),
              "params": params, "training_data": training_data, "metrics": metrics or {}}
    npz = io.BytesIO()
    for name, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise ModelFormatError(f"array {name!r} has dtype object; model files hold no pickled data")
    stamp = created.timetuple()[:6]
    with zipfile.ZipFile(npz, "w", compression=zipfile.ZIP_STORED) as arrays_zip:  # an .npz, as np.savez writes
        for name, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arr), allow_pickle=False)
            arrays_zip.writestr(zipfile.ZipInfo(f"{name}.npy", stamp), member.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        def put(name: str, data: bytes | str) -> None:
            zf.writestr(zipfile.ZipInfo(name, stamp), data, compress_type=zipfile.ZIP_DEFLATED)

        put(HEADER, json.dumps(header, indent=2, sort_keys=True))
        put(ARRAYS, npz.getvalue())
        for name, data in (extra_files or {}).items():
            if name in (HEADER, ARRAYS):
                raise ModelFormatError(f"extra file name {name!r} is reserved")
            put(name, data)
    data = buf.getvalue()
    fs, p = fsspec.core.url_to_fs(path)
    with atomic_open(fs, p, "wb") as fh:
        fh.write(data)
    return hashlib.sha256(data).hexdigest()[:16]


def is_model_file(path: str) -> bool:
    """True if `path` is a ZIP with a textsieve header (cheap: reads the archive directory)."""
    try:
        with fsspec.open(path, "rb") as fh:
            if fh.read(4) != MAGIC:
                return False
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                return HEADER in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def read_header(path: str) -> dict[str, Any]:
    """Only the JSON header of a `.tsm` file."""
    try:
        with fsspec.open(path, "rb") as fh, zipfile.ZipFile(fh) as zf:
            return _parse_header(path, zf.read(HEADER))
    except (zipfile.BadZipFile, KeyError) as exc:
        raise ModelFormatError(f"{path}: not a textsieve model file (.tsm): {exc}") from None


def _parse_header(path: str, raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise ModelFormatError(f"{path}: header.json is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or "kind" not in header:
        raise ModelFormatError(f"{path}: header.json has no 'kind'")
    if header.get("version", 0) > FORMAT_VERSION:
        raise ModelFormatError(f"{path}: model format version {header['version']} is newer than this "
                               f"textsieve ({__version__}) reads (<= {FORMAT_VERSION}); upgrade textsieve")
    return header


def load_model_file(path: str) -> ModelFile:
    """Read a whole `.tsm` file; errors name the file and what is wrong."""
    try:
        with fsspec.open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"model file not found: {path}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            if HEADER not in names:
                raise ModelFormatError(f"{path}: not a textsieve model file (no {HEADER} in the archive)")
            header = _parse_header(path, zf.read(HEADER))
            arrays: dict[str, np.ndarray] = {}
            if ARRAYS in names:
                with np.load(io.BytesIO(zf.read(ARRAYS)), allow_pickle=False) as npz:
                    arrays = {k: npz[k] for k in npz.files}
            extra = {n: zf.read(n) for n in names if n not in (HEADER, ARRAYS)}
    except zipfile.BadZipFile:
        raise ModelFormatError(f"{path}: not a textsieve model file (not a ZIP archive)") from None
    return ModelFile(header, arrays, path, hashlib.sha256(data).hexdigest()[:16], extra)
