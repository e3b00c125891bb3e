"""What every stage after `annotate` needs to treat fsspec URLs like local paths.

Two things break once attributes live at a URL rather than a local folder:

- DuckDB opens the files of a `read_parquet([...])` itself. It knows local paths (and, with
  extensions we do not load, a few clouds), not fsspec protocols such as ``memory://``, so a
  query fails with "No files found". `register_filesystems` hands DuckDB the same fsspec
  filesystem the rest of textsieve uses, so every URL annotate accepted can be queried.
- ``memory://`` lives inside this Python process. A worker process (spawned pool) or a Ray task
  sees an empty memory filesystem and fails far from the cause. `pool_workers` decides how many
  processes a stage may use: a stage left at its default runs in-process, and an explicit
  request for more workers (or Ray) is one clear error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import fsspec

from textsieve.errors import TextsieveError
from textsieve.io.publish import ANNOTATE_JSON, read_bookkeeping

LOCAL_PROTOCOLS = frozenset({"file", "local"})
IN_PROCESS_PROTOCOLS = frozenset({"memory"})  # state that no other process can see


class LocationError(TextsieveError, ValueError):
    """A location that cannot be used the way the stage was asked to use it."""


def protocols_of(location: str) -> tuple[str, ...]:
    """Every protocol in a (possibly chained, ``simplecache::s3://``) location; ``("file",)`` for paths."""
    if "://" not in location and "::" not in location:
        return ("file",)
    out = []
    for part in location.split("::"):
        out.append(part.split("://", 1)[0] if "://" in part else part)
    return tuple(out)


def is_in_process(location: str) -> bool:
    """Whether the location lives in this process only (``memory://``), so other processes cannot read it."""
    return any(p in IN_PROCESS_PROTOCOLS for p in protocols_of(location))


def register_filesystems(con, locations: Iterable[str]):
    """Register with DuckDB connection `con` the fsspec filesystem of every non-local location,
    once per protocol, so `read_parquet` of such URLs works. Returns `con`."""
    have = set(con.list_filesystems())
    for location in locations:
        if "://" not in location or location.split("://", 1)[0] in LOCAL_PROTOCOLS:
            continue
        fs = fsspec.core.url_to_fs(location)[0]
        names = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if any(n in LOCAL_PROTOCOLS for n in names) or any(n in have for n in names):
            continue
        con.register_filesystem(fs)
        have.update(names)
        have.add(type(fs).__name__)
    return con


def source_locations(directory: str) -> list[str]:
    """The inputs `annotate` read into the attribute folder `directory` (from its annotate.json;
    [] when absent): where a later stage re-reads texts from. One small read, not one per shard."""
    summary = annotate_summary(directory)
    # absolute (`input_roots`), else as the user typed them (older folders)
    inputs = (summary.get("input_roots") or summary.get("config", {}).get("inputs") or []) if summary else []
    return [inputs] if isinstance(inputs, str) else [str(i) for i in inputs]


def annotate_summary(directory: str) -> dict | None:
    """The annotate.json of attribute folder `directory`, checked against its manifest (an edited
    one raises `PublishError` naming it; `io.publish.read_bookkeeping`); None when there is none
    or it is not JSON."""
    fs, root = fsspec.core.url_to_fs(directory)
    try:
        summary = json.loads(read_bookkeeping(fs, root.rstrip("/"), ANNOTATE_JSON))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def pool_workers(stage: str, requested: int | None, planned: int, locations: Iterable[str],
                 executor: str = "local") -> int:
    """How many worker processes `stage` may use for work that reads or writes `locations`.

    `planned` is the count the stage would use (from `requested` or its default). Without an
    in-process location (``memory://``) that is the answer. With one, the work must stay in this
    process: a default becomes 1, and an explicit `requested` > 1 or the Ray executor raises
    `LocationError` naming the location and the fix. `locations` is only scanned when more than
    one process is planned, so it may be a lazy iterable."""
    if planned <= 1 and executor == "local":
        return max(planned, 1)
    held = next((loc for loc in locations if loc and is_in_process(loc)), None)
    if held is None:
        return planned
    if executor != "local":
        raise LocationError(f"{stage}: {held} lives in this process's memory, which Ray tasks cannot see; "
                            f"use the local executor with workers=1 (--workers 1), or a shared location")
    if requested is not None and requested > 1:
        raise LocationError(f"{stage}: {held} lives in this process's memory, which worker processes cannot "
                            f"see; use workers=1 (--workers 1), or a location on disk")
    return 1


__all__ = ["LocationError", "is_in_process", "pool_workers", "protocols_of", "register_filesystems",
           "source_locations"]
