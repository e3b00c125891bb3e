"""Books: PG-19 and Books3 records (JSON Lines), as RedPajama-1T's `book/dedup.py` reads them.

What the reference does (spec rpv1-sources §5): it reads fixed split files of 2,000 records,
`pg19_000 … pg19_014` then `books3_000 … books3_098`, numbers every record
`line + slot × 2000` (the same numbers for PG-19 and Books3), fingerprints each text with a
64-bit SimHash of its character 6-grams (`text.simhash`), drops a record when a record within
Hamming distance 5 has a numerically smaller id, stores that decision under the id (so a
Books3 record's decision overwrites its PG-19 namesake's, and both are written or dropped by
it) and writes `{meta: every field but text, text}` unchanged.

Why the slot matters and where it comes from: the ids, hence which copy of a book survives,
depend on the slot a file sits in, so each input file is named by its slot, `pg19_NNN` or
`books3_NNN` (with or without `.jsonl`, `.jsonl.gz`, `.jsonl.zst`), exactly the reference's
split names. `--reference rp_v1` takes only those names (slots 0-14 and 0-98); the default
mode also takes any other JSON Lines file of `{text, ...}` records, after the slot files.

Default mode reads and writes every record (no dedup: `textsieve dedup simhash` makes the
near-duplicate decision an attribute set, and the bundled recipe `rpv1-books` selects on it).
Record ids are `<file stem>/<line>` in both modes, unique per record (not the reference's
shared numbers). Output shards are named `1-pg19_NNN`, `2-books3_NNN`, `3-<other>` so that
their sorted order, which is the corpus order later stages use, is the reference's reading
order: `dedup simhash` keeps the first copy in that order, which is the reference's lowest id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fsspec

from textsieve.dumps.books_dedup import DISTANCE, reference_decisions
from textsieve.dumps.family import Skip, SourceError, SourceFamily, SourceOptions, SourceRecord, Unit, register_family
from textsieve.io.compression import CorruptStream, compression_of, iter_chunks
from textsieve.io.errors import InputError
from textsieve.io.fields import surrogate_field_reason
from textsieve.text.simhash import DEFINITION, WIDTH, fingerprint

#: records per split file in the reference, and its slots per dataset (`data/book/split/`)
LINES_PER_SLOT = 2000
REFERENCE_SLOTS = {"pg19": 15, "books3": 99}
#: the reading order of the datasets; other files (default mode) come after them
DATASET_RANK = {"pg19": 1, "books3": 2}
OTHER_RANK = 3
SLOT_NAME = re.compile(r"^(pg19|books3)_(\d{3,})$")
#: what a book file's name may end with (the stem before it is the slot name)
SUFFIXES = (".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".json.gz", ".jsonl", ".json")
_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}


@dataclass(frozen=True)
class BookFile:
    """One input file: its name's stem, its dataset and slot (None when it is not a slot name)."""

    path: str
    name: str  # the file name
    stem: str  # the name without its JSON Lines suffix: `pg19_000`
    dataset: str | None
    slot: int | None

    @property
    def rank(self) -> int:
        return DATASET_RANK.get(self.dataset or "", OTHER_RANK)

    @property
    def offset(self) -> int:
        """What the reference adds to a line index to make its id (`slot × 2000`)."""
        return (self.slot or 0) * LINES_PER_SLOT


def book_file(path: str) -> BookFile:
    """What a file's name says: `…/books3_050.jsonl.gz` is Books3 slot 50."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    stem = name
    for suffix in SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            break
    m = SLOT_NAME.match(stem)
    return BookFile(path, name, stem, m.group(1) if m else None, int(m.group(2)) if m else None)


#: what a file in a folder input must end with to be read when its name is not a slot's
#: (default mode; not `.json`, the suffix of a folder's metadata such as `provenance.json`)
FOLDER_SUFFIXES = (".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".jsonl")


def _in_folder(name: str, reference: bool) -> bool:
    """Whether a folder input's file is a book file: a slot name, or (default mode) JSON Lines."""
    if name.startswith((".", "_")):
        return False
    return book_file(name).dataset is not None or (not reference and name.lower().endswith(FOLDER_SUFFIXES))


def _expand(inputs: list[str], reference: bool) -> list[tuple[fsspec.AbstractFileSystem, str]]:
    """Files, folders (their book files, sorted; other files are passed over, as the reference
    reads only its slot names) and globs."""
    out = []
    for raw in inputs:
        fs, path = fsspec.core.url_to_fs(raw)
        if any(ch in path for ch in "*?["):
            found = sorted(fs.glob(path))
            if not found:
                raise SourceError(f"books: {raw}: no file matches")
            out += [(fs, p) for p in found if not fs.isdir(p)]
        elif fs.isdir(path):
            found = sorted(p for p in fs.find(path) if _in_folder(p.rsplit("/", 1)[-1], reference))
            if not found:
                what = "pg19_NNN / books3_NNN" + ("" if reference else " or .jsonl[.gz|.zst]")
                raise SourceError(f"books: {raw}: no {what} file in the folder")
            out += [(fs, p) for p in found]
        elif fs.exists(path):
            out.append((fs, path))
        else:
            raise SourceError(f"books: {raw}: no such file or folder")
    return out


def _check_reference_slot(f: BookFile) -> None:
    if f.dataset is None:
        raise SourceError(f"books --reference rp_v1: {f.path}: the reference reads split files named by their slot "
                          "(pg19_000 … pg19_014, books3_000 … books3_098, optionally .jsonl/.jsonl.gz); name the "
                          "file after the slot it had there, since the record ids depend on it")
    if f.slot is None or f.slot >= REFERENCE_SLOTS[f.dataset]:
        last = REFERENCE_SLOTS[f.dataset] - 1
        raise SourceError(f"books --reference rp_v1: {f.path}: slot {f.slot} of {f.dataset} is not one the reference "
                          f"reads ({f.dataset}_000 … {f.dataset}_{last:03d})")


def _compression(fs: fsspec.AbstractFileSystem, path: str) -> str | None:
    """From the name, else from the first bytes (a slot file `pg19_000` may be gzipped)."""
    by_name = compression_of(path)
    if by_name is not None:
        return by_name
    with fs.open(path, "rb") as fh:
        head = fh.read(4)
    return next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)


def _lines(fs: fsspec.AbstractFileSystem, path: str, compression: str | None) -> Iterator[bytes]:
    """The file's lines without their `\\n` (a final line without one included). A book is one
    line of megabytes: its pieces are joined once, when its end arrives."""
    pieces: list[bytes] = []
    with fs.open(path, "rb") as raw:
        for chunk, _ in iter_chunks(raw, compression):
            parts = chunk.split(b"\n")
            if len(parts) == 1:
                pieces.append(chunk)
                continue
            pieces.append(parts[0])
            yield b"".join(pieces)
            yield from parts[1:-1]
            pieces = [parts[-1]]
    if any(pieces):
        yield b"".join(pieces)


class BooksFamily(SourceFamily):
    name = "books"
    help = "PG-19 / Books3 JSON Lines split files (pg19_NNN, books3_NNN), RedPajama-1T's book/dedup.py"
    reasons = ("bad_record", "damaged_file", "near_duplicate", "id_collision")
    reference_reasons = ("near_duplicate", "id_collision")
    meta_schema = None  # PG-19 and Books3 records carry different fields: meta is JSON in Parquet
    version = "1"

    def units(self, inputs: list[str], opts: SourceOptions) -> list[Unit]:
        files = []
        for fs, path in _expand(inputs, opts.rp_v1):
            f = book_file(fs.unstrip_protocol(path))
            if opts.rp_v1:
                _check_reference_slot(f)
            elif f.dataset is None and f.stem == f.name:
                raise SourceError(f"books: {f.path}: not a book file (pg19_NNN, books3_NNN or a .jsonl[.gz|.zst] "
                                  "file of {\"text\": ...} records)")
            files.append((f, int(fs.size(path))))
        seen: dict[str, str] = {}
        for f, _ in files:
            if f.stem in seen:
                raise SourceError(f"books: {seen[f.stem]} and {f.path} are both {f.stem!r}; each slot (each name) "
                                  "once")
            seen[f.stem] = f.path
        files.sort(key=lambda x: (x[0].rank, x[0].slot if x[0].slot is not None else -1, x[0].stem))
        return [Unit(f.path, f"{f.rank}-{f.stem}.jsonl", size,
                     {"name": f.name, "stem": f.stem, "dataset": f.dataset, "slot": f.slot, "offset": f.offset})
                for f, size in files]

    def read(self, unit: Unit, opts: SourceOptions) -> Iterator[SourceRecord | Skip]:
        fs, path = fsspec.core.url_to_fs(unit.path)
        stem, offset, name = unit.info["stem"], int(unit.info["offset"]), unit.info["name"]
        shown = unit.path.removeprefix("file://")  # a local file as its path
        line = -1
        try:
            for line, raw in enumerate(_lines(fs, path, _compression(fs, path))):
                if not raw.strip():
                    continue  # a blank line: no record, but its line number is used up
                where = f"{shown}:{line + 1}"
                rec, why = _record(raw)
                if why is not None:
                    if opts.on_error == "fail":
                        raise InputError.at(where, why)
                    yield Skip("bad_record", f"{name}:{line + 1}", why)
                    continue
                assert rec is not None
                text = rec["text"]
                meta = {k: v for k, v in rec.items() if k != "text"}
                key = [offset + line, fingerprint(text, WIDTH)[0]] if opts.rp_v1 else None
                yield SourceRecord(f"{stem}/{line}", text, meta, key)
        except CorruptStream as exc:
            where = f"{shown}:{line + 2}"
            if opts.on_error == "fail":
                raise InputError.at(where, f"{exc}; the last complete line read is {line + 1}") from None
            yield Skip("damaged_file", f"{name}:{line + 2}", str(exc))

    def decide(self, keys: list[list[Any]], units: list[Unit], opts: SourceOptions) -> dict[tuple[int, int], str]:
        """Reference mode: the near-duplicate flags and the id-collision overwrite (spec §5.3).
        Default mode decides nothing (`dedup simhash` does, as an attribute set)."""
        if not opts.rp_v1:
            return {}
        where = [(u, r) for u, unit_keys in enumerate(keys) for r in range(len(unit_keys))]
        ids = [int(k[0]) for unit_keys in keys for k in unit_keys]
        fps = [int(k[1]) for unit_keys in keys for k in unit_keys]
        decisions = reference_decisions(ids, fps, DISTANCE)
        out = {}
        for at, flag, written in zip(where, decisions.flag.tolist(), decisions.written.tolist()):
            if not written:
                out[at] = "near_duplicate" if flag == 0 else "id_collision"
        return out

    def settings(self, opts: SourceOptions) -> dict[str, Any]:
        return {"simhash": DEFINITION, "width": WIDTH, "distance": DISTANCE} if opts.rp_v1 else {}


def _record(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A line as a book record, or why it is not one."""
    try:
        rec = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 at byte {exc.start}"
    except ValueError as exc:
        return None, f"not a JSON record ({exc})"
    if not isinstance(rec, dict):
        return None, f"not a JSON object but {type(rec).__name__}"
    if "text" not in rec:
        return None, "no \"text\" string"
    if not isinstance(rec["text"], str):
        return None, f"\"text\" is {type(rec['text']).__name__}, not a string"
    surrogate = surrogate_field_reason(rec)
    if surrogate is not None:
        return None, surrogate
    return rec, None


register_family(BooksFamily())
