"""A small source family for the `source` stage's own tests: JSON Lines files whose records are
`{"t": text}`. It has every part a real family may have (read skips, a whole-input decision,
a per-record filter with per-worker state), so the stage's plumbing is tested apart from any
real dump format."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import fsspec

from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.io.errors import InputError


class ToyFamily(SourceFamily):
    name = "toy"
    help = "JSON Lines of {t: text} (a test family)"
    reasons = ("bad_record", "duplicate", "too_short")

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        out = []
        for raw in inputs:
            fs, path = fsspec.core.url_to_fs(raw)
            files = sorted(fs.glob(f"{path.rstrip('/')}/*.toy")) if fs.isdir(path) else [path]
            for p in files:
                if not p.endswith(".toy"):
                    raise SourceError(f"{p}: not a .toy file")
                out.append(Unit(fs.unstrip_protocol(p), p.rsplit("/", 1)[-1], int(fs.size(p))))
        return out

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        with fsspec.open(unit.path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                try:
                    text = json.loads(line)["t"]
                except (ValueError, KeyError) as exc:
                    if opts.on_error == "fail":
                        raise InputError.at(f"{unit.path}:{n}", f"not a toy record ({exc})") from None
                    yield Skip("bad_record", f"{unit.rel}:{n}", str(exc))
                    continue
                yield SourceRecord(f"{unit.rel}/{n}", text, {"line": n, "file": unit.rel},
                                   key=hashlib.md5(text.encode()).hexdigest())

    def decide(self, keys: list[list[Any]], units: list[Unit], opts: SourceOptions) -> dict[tuple[int, int], str]:
        seen: set[str] = set()
        out = {}
        for u, unit_keys in enumerate(keys):
            for r, key in enumerate(unit_keys):
                if key in seen:
                    out[(u, r)] = "duplicate"
                seen.add(key)
        return out

    def prepare(self, opts: SourceOptions) -> Any:
        return {"min": 5}

    def keep(self, record: SourceRecord, opts: SourceOptions, state: Any) -> str | None:
        return "too_short" if opts.rp_v1 and len(record.text) < state["min"] else None


register_family(ToyFamily())
