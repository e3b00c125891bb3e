"""RedPajama-V2's released layout: where its files lie, how its records parse, how to write them.

The release (spec §2.3, §7.4, §9; the dataset card) is four trees under one root, each keyed by
the same `{snapshot}/{shard}/{lang}_{bucket}` *shard key*:

  documents/{key}.json.gz                CCNet `mine` records: raw_content + the CCNet fields
  quality_signals/{key}.signals.json.gz  {"id", "id_int", "metadata", "quality_signals"} per document
  minhash/{key}.minhash.parquet          shard_id, id, id_int, signature_sim{1.0,0.9,0.8,0.7}
  duplicates/{key}.duplicates.parquet    shard_id, doc_id, digest of the exact duplicates

A document is matched to its signals record by line index: `id` is
`{key}.json.gz/{index}`. The `tail` bucket has documents only. Why pyarrow's JSON reader and
not `json.loads`: the import is bounded by JSON parsing (issue 13 "Speed"), and Arrow parses a
whole file into columns in C++; the nested `[[start, end, score], ...]` lists then become span
columns by slicing their flat values, never a Python object per span.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import fsspec
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

from textsieve.errors import TextsieveError
from textsieve.io.parquet_read import read_table

log = logging.getLogger("textsieve.import_rpv2")

COMPONENTS = {"documents": ".json.gz", "quality_signals": ".signals.json.gz", "minhash": ".minhash.parquet",
              "duplicates": ".duplicates.parquet"}
KEY_RE = re.compile(r"^(?P<snapshot>\d{4}-\d{2})/(?P<shard>[^/]+)/(?P<lang>[a-z]{2})_(?P<bucket>[a-z]+)$")
CCNET_SIGNALS = ("ccnet_length", "ccnet_original_length", "ccnet_nlines", "ccnet_original_nlines",
                 "ccnet_language_score", "ccnet_perplexity", "ccnet_bucket")
# the CCNet record field each ccnet_* signal passes through (worker.py); bucket maps to 0/1/2
CCNET_SOURCE = {"ccnet_length": "length", "ccnet_original_length": "original_length", "ccnet_nlines": "nlines",
                "ccnet_original_nlines": "original_nlines", "ccnet_language_score": "language_score",
                "ccnet_perplexity": "perplexity", "ccnet_bucket": "bucket"}
BUCKETS = {"head": 0.0, "middle": 1.0, "tail": 2.0}
INT_SIGNALS = frozenset({"rps_doc_word_count", "rps_lines_num_words", "rps_doc_ut1_blacklist"})  # §2.2
METADATA_KEYS = ("cc_segment", "cc_net_source", "url", "source_domain", "language", "snapshot_id")
# CCNet document fields kept as plain ccnet_* string columns (the numeric ones are the spans above)
DOC_STRINGS = ("url", "date_download", "digest", "source_domain", "title", "cc_segment", "language")
_DOC_SCHEMA = pa.schema([("raw_content", pa.string()), *[(f, pa.string()) for f in DOC_STRINGS],
                         ("length", pa.int64()), ("nlines", pa.int64()), ("original_length", pa.int64()),
                         ("original_nlines", pa.int64()), ("language_score", pa.float64()),
                         ("perplexity", pa.float64()), ("bucket", pa.string())])
SIGNATURES = ("signature_sim1.0", "signature_sim0.9", "signature_sim0.8", "signature_sim0.7")
MINHASH_SCHEMA = pa.schema([("shard_id", pa.string()), ("id", pa.string()), ("id_int", pa.uint64()),
                            *[(s, pa.list_(pa.binary())) for s in SIGNATURES]])
DUPLICATES_SCHEMA = pa.schema([("shard_id", pa.string()), ("doc_id", pa.string()), ("digest", pa.string())])
_BLOCK = 1 << 24  # Arrow JSON block; grown for a file whose one line is longer


class ReleaseError(TextsieveError, ValueError):
    """A file of the release that cannot be read as what its place in the layout says."""


@dataclass(frozen=True)
class ReleaseShard:
    """One shard key of the release and which of its four files exist."""

    key: str  # {snapshot}/{shard}/{lang}_{bucket}
    present: frozenset[str]  # component names whose file exists

    @property
    def rel(self) -> str:
        """The documents file relative to documents/: the id prefix (`cc_net_source`)."""
        return self.key + COMPONENTS["documents"]

    @property
    def snapshot(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def lang(self) -> str:
        return self.key.rsplit("/", 1)[1].split("_", 1)[0]

    @property
    def bucket(self) -> str:
        return self.key.rsplit("_", 1)[1]

    def path(self, root: str, component: str) -> str:
        return f"{root}/{component}/{self.key}{COMPONENTS[component]}"


def id_int(doc_id: str) -> int:
    """RPv2's node id (§2.3): the first 8 SHA-1 bytes of the id, little-endian."""
    return int.from_bytes(hashlib.sha1(doc_id.encode("utf-8")).digest()[:8], "little")


def list_release(root: str, snapshots: Sequence[str] = (), langs: Sequence[str] = (),
                 buckets: Sequence[str] = ()) -> tuple[fsspec.AbstractFileSystem, str, list[ReleaseShard]]:
    """(fs, root path, the shard keys found under any of the four trees, sorted), optionally
    restricted to some snapshots, languages and buckets."""
    fs, base = fsspec.core.url_to_fs(root)
    base = base.rstrip("/")
    found: dict[str, set[str]] = {}
    for comp, suffix in COMPONENTS.items():
        top = f"{base}/{comp}"
        if not fs.isdir(top):
            continue
        for path in fs.find(top):
            rel = path[len(top) + 1:]
            if not rel.endswith(suffix):
                continue
            key = rel[: -len(suffix)]
            if comp == "documents" and key.endswith((".signals", ".minhash", ".duplicates")):
                continue
            if KEY_RE.match(key):
                found.setdefault(key, set()).add(comp)
    if not found:
        raise ReleaseError(f"{root}: no RedPajama-V2 release files (expected documents/{{snapshot}}/{{shard}}/"
                           "{lang}_{bucket}.json.gz, quality_signals/..., minhash/..., duplicates/...)")
    out = []
    for key in sorted(found):
        m = KEY_RE.match(key)
        assert m is not None
        if (snapshots and m["snapshot"] not in snapshots) or (langs and m["lang"] not in langs) or (
                buckets and m["bucket"] not in buckets):
            continue
        out.append(ReleaseShard(key, frozenset(found[key])))
    return fs, base, out


#: what a damaged gzip member or Parquet file raises while it is read (besides ReleaseError)
_DAMAGED = (OSError, EOFError, zlib.error, pa.ArrowException, ValueError)


def _gunzip(data: bytes, path: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ReleaseError(f"{path}: damaged gzip data ({exc})") from None


def _read_json(fs: fsspec.AbstractFileSystem, path: str, schema: pa.Schema, unexpected: str) -> pa.Table:
    with fs.open(path, "rb") as raw:
        data = _gunzip(raw.read(), path) if path.endswith(".gz") else raw.read()
    block = _BLOCK
    replaced = False
    while True:
        try:
            return pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(block_size=block, use_threads=False),
                                parse_options=pj.ParseOptions(explicit_schema=schema,
                                                              unexpected_field_behavior=unexpected))
        except pa.ArrowInvalid as exc:
            if "straddling" in str(exc) and block < len(data) + 1:
                block = min(4 * block, len(data) + 1)
                continue
            if "surrogate" in str(exc) and not replaced:
                data, n = _without_lone_surrogates(data, path)
                replaced = True
                log.warning("%s: %d lone UTF-16 surrogate escape(s) (\\ud800-\\udfff without a partner) read as "
                            "U+FFFD; lengths in code points are unchanged", path, n)
                continue
            raise ReleaseError(f"{path}: not a RedPajama-V2 JSON Lines file ({exc})") from None


_LONE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(data: bytes, path: str) -> tuple[bytes, int]:
    """The file with every lone surrogate (which JSON's `\\uXXXX` escapes can spell, Python's json
    accepts and UTF-8, hence Arrow, cannot hold) replaced by U+FFFD, re-encoded line by line; the
    count. Only files Arrow refuses take this slower path."""
    out: list[bytes] = []
    n = 0
    for i, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            out.append(line)
            continue
        text = line.decode("utf-8", "surrogatepass")
        if "\\u" not in text.lower() and not _LONE.search(text):
            out.append(line)
            continue
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ReleaseError(f"{path}: line {i} is not JSON ({exc})") from None
        dumped = json.dumps(value, ensure_ascii=False)
        n += len(_LONE.findall(dumped))
        out.append(_LONE.sub("\ufffd", dumped).encode("utf-8"))
    return b"\n".join(out), n


def read_documents(fs: fsspec.AbstractFileSystem, path: str) -> pa.Table:
    """The CCNet fields of a documents file, with `ts_length` (code points of raw_content) in
    place of the text (texts are re-read from the file when a selection is materialised)."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    table = _read_json(fs, path, _DOC_SCHEMA, "ignore")
    length = pc.utf8_length(table.column("raw_content")).cast(pa.int64())
    return table.drop_columns(["raw_content"]).append_column("ts_length", length)


def _first_record(fs: fsspec.AbstractFileSystem, path: str) -> dict | None:
    try:
        with fs.open(path, "rb") as raw, gzip.open(raw, "rb") as fh:
            line = fh.readline()
    except (OSError, EOFError, zlib.error) as exc:
        raise ReleaseError(f"{path}: damaged gzip data ({exc})") from None
    try:
        return json.loads(line) if line.strip() else None
    except ValueError as exc:
        raise ReleaseError(f"{path}: line 1 is not JSON ({exc})") from None


def _parquet(fs: fsspec.AbstractFileSystem, path: str) -> pa.Table:
    try:
        with fs.open(path, "rb") as fh:
            table = read_table(fh)
        table.validate(full=True)  # Parquet does not check that strings are UTF-8; reading them would fail later
        return table
    except _DAMAGED as exc:
        raise ReleaseError(f"{path}: not a readable Parquet file ({exc})") from None


def signal_type(name: str) -> pa.DataType:
    """The span type of a released signal: int scores for the three int signals (§2.2)."""
    score = pa.int64() if name in INT_SIGNALS else pa.float64()
    return pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64()), ("score", score)]))


@dataclass
class SignalsFile:
    """A parsed quality_signals file: per record id, id_int, metadata, one span column per
    signal; `order` is the records' key order (for writing them back byte for byte)."""

    ids: pa.Array
    id_ints: pa.Array
    metadata: dict[str, pa.Array]
    metadata_order: list[str]
    spans: dict[str, pa.Array]
    order: list[str]

    @property
    def n(self) -> int:
        return len(self.ids)


def read_signals(fs: fsspec.AbstractFileSystem, path: str) -> SignalsFile:
    first = _first_record(fs, path)
    if first is None:
        return SignalsFile(pa.array([], pa.string()), pa.array([], pa.uint64()), {}, list(METADATA_KEYS), {}, [])
    if not isinstance(first, dict) or not isinstance(first.get("quality_signals"), dict):
        raise ReleaseError(f"{path}: line 1 is not a RedPajama-V2 signals record (no quality_signals object)")
    order = list(first["quality_signals"])
    meta = first.get("metadata") or {}
    if not isinstance(meta, dict):
        raise ReleaseError(f"{path}: line 1's metadata is not an object")
    meta_order = list(meta)
    for key in [*order, *meta_order]:
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape in a key: no column can be named so
            raise ReleaseError(f"{path}: line 1 names a signal or metadata key {key!r} that is not valid "
                               "Unicode") from None
    nested = {n: pa.list_(pa.list_(pa.int64() if n in INT_SIGNALS else pa.float64())) for n in order}
    schema = pa.schema([("id", pa.string()), ("id_int", pa.uint64()),
                        ("metadata", pa.struct([(k, pa.string()) for k in meta_order])),
                        ("quality_signals", pa.struct(list(nested.items())))])
    table = _read_json(fs, path, schema, "ignore")
    qs = table.column("quality_signals").combine_chunks()
    md = table.column("metadata").combine_chunks()
    spans = {name: nested_to_spans(qs.field(name), name, path) for name in order}
    return SignalsFile(table.column("id").combine_chunks(), table.column("id_int").combine_chunks(),
                       {k: md.field(k) for k in meta_order}, meta_order, spans, order)


def nested_to_spans(arr: pa.Array, name: str, where: str) -> pa.Array:
    """list<list<T>> of [start, end, score] triples -> list<struct<start, end, score>>."""
    import pyarrow.compute as pc  # lazily: ~45 ms the CLI would pay for every command
    inner = arr.flatten()
    if len(inner) and pc.any(pc.not_equal(pc.list_value_length(inner), 3)).as_py():
        raise ReleaseError(f"{where}: signal {name!r} holds a span that is not [start, end, score]")
    flat = inner.flatten()
    idx = np.arange(0, len(flat), 3, dtype=np.int64)
    starts = pc.take(flat, pa.array(idx)).cast(pa.int64())
    ends = pc.take(flat, pa.array(idx + 1)).cast(pa.int64())
    scores = pc.take(flat, pa.array(idx + 2))
    typ = signal_type(name)
    struct = pa.StructArray.from_arrays([starts, ends, scores.cast(typ.value_type.field("score").type)],
                                        fields=list(typ.value_type))
    offsets = arr.offsets
    if arr.offset or len(offsets) != len(arr) + 1:
        offsets = pc.subtract(offsets, offsets[0])
    return pa.ListArray.from_arrays(offsets, struct, type=typ, mask=arr.is_null() if arr.null_count else None)


def read_minhash(fs: fsspec.AbstractFileSystem, path: str) -> pa.Table:
    table = _parquet(fs, path)
    missing = [c for c in ("id", *SIGNATURES) if c not in table.column_names]
    if missing:
        raise ReleaseError(f"{path}: not a RedPajama-V2 minhash file (no column {missing[0]!r})")
    return table


def read_duplicates(fs: fsspec.AbstractFileSystem, path: str) -> set[str]:
    table = _parquet(fs, path)
    if "doc_id" not in table.column_names:
        raise ReleaseError(f"{path}: not a RedPajama-V2 duplicates file (no column 'doc_id')")
    return set(table.column("doc_id").to_pylist())


def line_index(ids: pa.Array, key: str, where: str) -> np.ndarray:
    """The document line index of each released id `{key}.json.gz/{index}` (-1: another shard's)."""
    prefix = key + COMPONENTS["documents"] + "/"
    out = np.full(len(ids), -1, dtype=np.int64)
    for i, doc_id in enumerate(ids.to_pylist()):
        if doc_id and doc_id.startswith(prefix) and doc_id[len(prefix):].isdigit():
            out[i] = int(doc_id[len(prefix):])
    if len(out) and (out < 0).all():
        raise ReleaseError(f"{where}: its ids do not start with {prefix!r}; is the file in its own shard's place?")
    return out


def positions(index: np.ndarray, n_docs: int) -> pa.Array:
    """Indices that put records (at line `index`) in document order; null where a document has none."""
    if len(index) == n_docs and np.array_equal(index, np.arange(n_docs)):
        return pa.array(np.arange(n_docs, dtype=np.int64))
    pos = np.full(n_docs, -1, dtype=np.int64)
    ok = (index >= 0) & (index < n_docs)
    pos[index[ok]] = np.nonzero(ok)[0]
    return pa.array(pos, mask=pos < 0)


# ---------------------------------------------------------------- writing the layout

def _dumps(obj: object) -> bytes:
    """Compact JSON written by msgspec, as RPv2's workers wrote the release: no spaces, UTF-8
    text, and msgspec's own float spelling, which differs from Python's `json` outside
    1e-4..1e16 (`0.00001234` where json writes `1.234e-05`, `1e16` for `1e+16`, `1.5e-7` for
    `1.5e-07`; the same in msgspec 0.18.4 of RPv2's time and today). A string holding a lone
    surrogate, which msgspec cannot write, falls back to json with the surrogate passed through."""
    try:
        return msgspec.json.encode(obj)
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8", "surrogatepass")


def signals_line(doc_id: str, doc_id_int: int, metadata: dict, signals: Iterable[tuple[str, list | None]]) -> bytes:
    """One released quality_signals record (keys in the released order), newline-terminated."""
    return _dumps({"id": doc_id, "id_int": doc_id_int, "metadata": metadata,
                   "quality_signals": dict(signals)}) + b"\n"


def write_gzip_lines(fs: fsspec.AbstractFileSystem, path: str, lines: Iterable[bytes]) -> int:
    """Write lines to a gzip file (fixed header: no name, mtime 0), atomically; returns the count."""
    from textsieve.io.atomic import atomic_open

    n = 0
    fs.makedirs(path.rpartition("/")[0], exist_ok=True)
    with atomic_open(fs, path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        for line in lines:
            gz.write(line)
            n += 1
    return n


#: documents per row group of a released `.minhash.parquet`: the worker writes one record batch
#: per `flush_interval` (1000) documents through a default `pq.ParquetWriter`
RELEASE_ROW_GROUP = 1000


def write_parquet(fs: fsspec.AbstractFileSystem, path: str, table: pa.Table) -> None:
    """A Parquet file written as RPv2's worker wrote its minhash files (`ParquetBatchWriter`):
    pyarrow's default writer settings (snappy), one row group per 1,000 rows. With the same
    pyarrow the bytes equal such a file's; another pyarrow version writes its own `created_by`.
    Written to a temporary name and renamed when complete."""
    from textsieve.io.atomic import atomic_open

    fs.makedirs(path.rpartition("/")[0], exist_ok=True)
    table = table.combine_chunks()
    with atomic_open(fs, path, "wb") as fh:
        writer = pq.ParquetWriter(fh, table.schema)
        for batch in table.to_batches(max_chunksize=RELEASE_ROW_GROUP):  # none for no rows, as the worker
            writer.write_batch(batch)
        writer.close()


def minhash_table(key: str, ids: list[str], id_ints: list[int], bands: dict[str, list]) -> pa.Table:
    """A `.minhash.parquet` table in the worker's schema (§7.4)."""
    shard_id = key + COMPONENTS["documents"]
    return pa.table([pa.array([shard_id] * len(ids), pa.string()), pa.array(ids, pa.string()),
                     pa.array(id_ints, pa.uint64()), *[pa.array(bands[s], pa.list_(pa.binary())) for s in SIGNATURES]],
                    schema=MINHASH_SCHEMA)


def duplicates_table(key: str, doc_ids: list[str], digests: list[str | None]) -> pa.Table:
    shard_id = key + COMPONENTS["documents"]
    return pa.table([pa.array([shard_id] * len(doc_ids), pa.string()), pa.array(doc_ids, pa.string()),
                     pa.array(digests, pa.string())], schema=DUPLICATES_SCHEMA)
