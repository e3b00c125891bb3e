"""The identity of an input file, for deciding whether a finished output still matches it.

Why: a shard's output is reused only when it was made from the same bytes. Hashing every
input on every run costs a full read, so the default identity is what storage reports cheaply:
size plus modification time for files, plus the ETag / checksum object stores keep. With
`verify` (annotate's `--verify-inputs`) it is a SHA-256 of the content instead, for storage whose
times cannot be trusted (copies that keep mtimes, clocks that jump).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import fsspec

from textsieve.io.paths import expand_inputs

#: fsspec `info()` keys that change when an object's content changes (by filesystem)
_CHANGE_KEYS = ("ETag", "etag", "md5Hash", "crc32c", "checksum", "mtime", "LastModified", "last_modified",
                "updated", "created", "modified")


def file_identity(location: str, verify: bool = False) -> dict[str, Any]:
    """{size, and mtime/etag... or sha256} of one file (local path or fsspec URL)."""
    fs, path = fsspec.core.url_to_fs(location)
    info = fs.info(path)
    out: dict[str, Any] = {"size": int(info.get("size") or 0)}
    if verify:
        h = hashlib.sha256()
        with fs.open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        out["sha256"] = h.hexdigest()
        return out
    keys = [k for k in _CHANGE_KEYS if k != "created"] if "mtime" in info else _CHANGE_KEYS
    for key in keys:  # a local file's `created` is its ctime: chmod or `cp -p` change it, not the bytes
        if key in info and info[key] is not None:
            value = info[key]
            out[key] = value if isinstance(value, (int, float, str)) else str(value)
    return out


def shard_identity(path: str, members: tuple[str, ...] = (), verify: bool = False) -> str:
    """A short fingerprint of an input shard's identity (all member files of a txt shard)."""
    records = [(p, file_identity(p, verify)) for p in (members or (path,))]
    return hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()[:16]


def input_identities(inputs: list[str], mode: str = "stat") -> list[dict[str, Any]]:
    """Per input file (globs and folders expanded as every stage reads them): path, size and
    mtime (`stat`) or a SHA-256 of its bytes (`content`), the identity annotate keys its shards on."""
    return [{"path": path, **file_identity(path, verify=mode == "content")}
            for shard in expand_inputs(inputs) for path in (shard.members or (shard.path,))]
