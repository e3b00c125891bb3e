"""Benchmark (evaluation) data the user provides: which files, their examples, their fingerprint.

A benchmark is `name=path` or `path` (named by the file's stem, or the folder's name); the path
is one file or a folder of them (searched recursively, hidden files left out; a folder's files
with other suffixes are left out, a folder with none of these is an error):

* JSON Lines (`.jsonl`, `.json`, `.ndjson`, each optionally `.gz`/`.zst`): one record per
  line; the example is the record's `fields` joined by a newline, in the order given. A field
  may be a dotted path (`meta.question`); a list value (multiple-choice options) is its items
  joined by newlines, a number is its decimal text, a missing or null field is left out. A
  record holding none of the fields is an error (a misspelt `--fields` would else match nothing);
* Parquet (`.parquet`): the same per row, over the columns named by `fields` that exist;
* plain text (`.txt`, optionally compressed): each non-blank line is one example.

Why strict errors: a benchmark read wrongly decontaminates nothing and says nothing. Each bad
input is one `BenchmarkError` naming the file and line/record. The fingerprint (SHA-256 of each
file's relative path and bytes, and the fields) goes into the set's info, so a changed
benchmark re-runs.

Files are streamed, never held whole: JSONL and text line by line from 1 MB reads (decompressed
on the way), Parquet by record batch, the fingerprint over the raw bytes in 1 MB reads (no
decompression or parsing, so a re-run that changed nothing costs one cheap read).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fsspec

from textsieve.errors import TextsieveError
from textsieve.io.compression import ZSTD_SUFFIXES, CorruptStream, compression_of, iter_chunks

JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
TEXT_SUFFIXES = (".txt",)
PARQUET_SUFFIXES = (".parquet",)
_COMPRESSED = (".gz", *ZSTD_SUFFIXES)
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
#: the bit set of matched benchmarks is one uint64 per n-gram
MAX_BENCHMARKS = 64


class BenchmarkError(TextsieveError, ValueError):
    """A benchmark file or setting that cannot be read as evaluation examples."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    path: str  # as given
    files: tuple[str, ...]  # fsspec paths, sorted
    root: str  # the folder files are relative to (for the fingerprint)


def _base(name: str) -> str:
    lower = name.lower()
    for c in _COMPRESSED:
        if lower.endswith(c):
            return name[: -len(c)]
    return name


def kind_of(path: str) -> str | None:
    """"jsonl", "parquet", "text" or None from the file name."""
    base = _base(path.rsplit("/", 1)[-1]).lower()
    if base.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if base.endswith(PARQUET_SUFFIXES) and base == path.rsplit("/", 1)[-1].lower():
        return "parquet"
    if base.endswith(TEXT_SUFFIXES):
        return "text"
    return None


def _stem(path: str) -> str:
    base = _base(path.rstrip("/").rsplit("/", 1)[-1])
    for s in (*JSONL_SUFFIXES, *PARQUET_SUFFIXES, *TEXT_SUFFIXES):
        if base.lower().endswith(s):
            return base[: -len(s)]
    return base


def parse_benchmarks(specs: list[str]) -> list[Benchmark]:
    """The benchmarks of `--against` values, files resolved; errors name the value."""
    if not specs:
        raise BenchmarkError("decontaminate: no benchmark given (--against NAME=PATH or PATH)")
    out: list[Benchmark] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not _NAME.fullmatch(name) or not path:
            name, path = "", spec
        fs, root = fsspec.core.url_to_fs(path)
        root = root.rstrip("/") or "/"
        if fs.isdir(root):
            files = tuple(sorted(p for p in fs.find(root) if kind_of(p) is not None and not any(
                part.startswith(".") for part in p[len(root):].split("/"))))
            if not files:
                raise BenchmarkError(f"--against {spec}: folder {path} holds no benchmark files (.jsonl, .json, "
                                     ".ndjson, .parquet or .txt, optionally .gz/.zst)")
            folder = root
        elif fs.isfile(root):
            if kind_of(root) is None:
                raise BenchmarkError(f"--against {spec}: {path}: unknown format; expected .jsonl/.json/.ndjson, "
                                     ".parquet or .txt (optionally .gz/.zst)")
            files, folder = (root,), root.rsplit("/", 1)[0]
        else:
            raise BenchmarkError(f"--against {spec}: {path} does not exist")
        name = name or _stem(root)
        if not _NAME.fullmatch(name):
            raise BenchmarkError(f"--against {spec}: benchmark name {name!r} may only hold letters, digits, _ . - "
                                 "(name it: --against NAME=PATH)")
        if any(b.name == name for b in out):
            raise BenchmarkError(f"--against {spec}: benchmark name {name!r} given twice (name them: NAME=PATH)")
        out.append(Benchmark(name, path, tuple(f"{_proto(fs)}{p}" for p in files), f"{_proto(fs)}{folder}"))
    if len(out) > MAX_BENCHMARKS:
        raise BenchmarkError(f"decontaminate: {len(out)} benchmarks; at most {MAX_BENCHMARKS} per run (a folder "
                             "of files counts as one benchmark)")
    return out


def _proto(fs: fsspec.AbstractFileSystem) -> str:
    proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return "" if proto in ("file", "local") else f"{proto}://"


READ_SIZE = 1 << 20  # bytes per read (fingerprint and line reading)
PARQUET_BATCH_ROWS = 4096


def _file_sha256(path: str) -> bytes:
    h = hashlib.sha256()
    with fsspec.open(path, "rb") as fh:
        while chunk := fh.read(READ_SIZE):
            h.update(chunk)
            del chunk  # not held while the next one is read
    return h.digest()


def _lines(path: str) -> Iterator[bytes]:
    """The lines of a file (without the newline), decompressed on the way, 1 MB read at a time."""
    with fsspec.open(path, "rb") as fh:
        head: list[bytes] = []  # the start of a line that goes on in the next read
        try:
            for chunk, _ in iter_chunks(fh, compression_of(path), READ_SIZE):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if head:
                        head.append(chunk[start:end])
                        yield b"".join(head)
                        head.clear()
                    else:
                        yield chunk[start:end]
                    start = end + 1
                if start < len(chunk):
                    head.append(chunk[start:])
                del chunk  # not held while the next one is read
        except CorruptStream as exc:
            raise BenchmarkError(f"benchmark {path}: {exc}") from None
        if head:
            yield b"".join(head)


def fingerprint(benches: list[Benchmark], fields: list[str]) -> dict[str, str]:
    """{name: 16 hex digits}: SHA-256 of the fields and every file's relative path and bytes."""
    out = {}
    for b in benches:
        h = hashlib.sha256(json.dumps(fields).encode())
        for f in b.files:
            h.update(f[len(b.root):].encode() + b"\0")
            h.update(_file_sha256(f))
        out[b.name] = h.hexdigest()[:16]
    return out


def _value(rec: dict[str, Any], field: str) -> Any:
    if field in rec:
        return rec[field]
    cur: Any = rec
    for part in field.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _text(value: Any, where: str, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) or v is None for v in value):
        return "\n".join(str(v) for v in value if v is not None)
    raise BenchmarkError(f"{where}: field {field!r} holds a {type(value).__name__}, not text (a string, a "
                         "number or a list of them)")


def _example(rec: Any, fields: list[str], where: str) -> str:
    if not isinstance(rec, dict):
        raise BenchmarkError(f"{where}: a JSON {type(rec).__name__}, not an object with the field(s) "
                             f"{', '.join(fields)}")
    parts = [t for f in fields if (t := _text(_value(rec, f), where, f)) is not None]
    if not parts:
        keys = ", ".join(list(rec)[:8]) or "none"
        raise BenchmarkError(f"{where}: none of the field(s) {', '.join(fields)} (its fields: {keys}); "
                             "choose them with --fields")
    return "\n".join(parts)


def file_examples(path: str, fields: list[str]) -> Iterator[str]:
    """The examples of one benchmark file, in order (see the module doc)."""
    kind = kind_of(path)
    if kind == "parquet":
        yield from _parquet_examples(path, fields)
        return
    for no, raw in enumerate(_lines(path), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BenchmarkError(f"benchmark {path}:{no}: not UTF-8 text ({exc.reason})") from None
        if not line.strip():
            continue
        if kind == "text":
            yield line
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise BenchmarkError(f"benchmark {path}:{no}: not a JSON record ({exc})") from None
        yield _example(rec, fields, f"benchmark {path}:{no}")


def _parquet_examples(path: str, fields: list[str]) -> Iterator[str]:
    import pyarrow.parquet as pq

    def damaged(exc: Exception) -> BenchmarkError:
        return BenchmarkError(f"benchmark {path}: not a readable Parquet file ({exc})")

    with fsspec.open(path, "rb") as fh:
        try:
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise damaged(exc) from None
        top = [f for f in fields if f.split(".")[0] in names]
        if not top:
            raise BenchmarkError(f"benchmark {path}: none of the field(s) {', '.join(fields)} is a column "
                                 f"(its columns: {', '.join(names[:8])}); choose them with --fields")
        cols = sorted({f.split(".")[0] for f in top})
        row = 0
        # unthreaded: Arrow threads reading a Python file object can abort the process at exit
        # (`io.parquet_read`)
        batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols, use_threads=False)
        while True:
            try:
                batch = next(batches, None)
            except Exception as exc:
                raise damaged(exc) from None
            if batch is None:
                return
            for rec in batch.to_pylist():
                yield _example(rec, fields, f"benchmark {path} (record {row})")
                row += 1


def examples(bench: Benchmark, fields: list[str]) -> Iterator[str]:
    """Every example of a benchmark, file by file in sorted order."""
    for f in bench.files:
        yield from file_examples(f, fields)
