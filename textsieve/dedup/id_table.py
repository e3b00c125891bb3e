"""The corpus-wide id check of the dedup stages: no two documents may share an `id_int`.

Why: dedup keys documents by RPv2's `id_int` (the first 8 SHA-1 bytes of the id), so two
documents with one id (or, far more rarely, two ids with one 64-bit prefix) would become one
node: clustered together, and a unique document sharing an id with a near-duplicate dropped.
`annotate` makes ids unique *within* a shard (`textsieve.io.ids`); only dedup sees the whole
corpus, and there nothing can be renamed any more (every stage's rows carry the annotate ids),
so a repeat is an error naming both documents and the fix.

Memory stays bounded: (id_int, ordinal) rows go through the same on-disk partitions as LSH
(`dedup.partitions`, 24 B per document on disk, sorts within the `--memory` budget). The
second key word is a bijective mix of the id_int, so rows with equal id_ints group together
(both an equal id and a SHA-1 prefix collision are found) while a partition too large for one
sort still splits on well-spread bits. Equal neighbours are then told apart by their ids.
"""

from __future__ import annotations

import bisect
import shutil
from collections.abc import Callable

import numpy as np
import pyarrow.parquet as pq

from textsieve.dedup.corpus import ShardTable, id_ints
from textsieve.dedup.partitions import ROW, Grouper, PartitionWriter, partition_bits, rows_per_pass
from textsieve.errors import TextsieveError
from textsieve.io.attributes import read_shard_meta
from textsieve.io.ids import record_location
from textsieve.io.leftovers import work_dir
from textsieve.io.paths import Shard
from textsieve.io.readers import ReadOptions, ShardReader

SHOWN = 3  # pairs named in the message
ID_BATCH = 65_536  # ids hashed per step while reading a shard's id column

Locate = Callable[[int], tuple[str, str, str]]
"""ordinal -> (id, its shard, where the document is, e.g. `a.parquet row 3 (source in/a.jsonl:4)`)."""


class DuplicateIdsError(TextsieveError, ValueError):
    """Documents of the corpus share an id (or an id_int); dedup would merge them."""


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a bijection of uint64, so equal inputs stay equal and the low bits
    the partitions split on are spread even when the id_ints share theirs."""
    with np.errstate(over="ignore"):
        z = h.astype(np.uint64, copy=True)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


class IdTable:
    """(id_int, ordinal) of every document, added shard by shard, in partition files under
    `work`; `pairs()` are the (earlier ordinal, later ordinal) pairs with equal id_ints."""

    def __init__(self, work: str, max_rows: int, n_docs: int | None = None):
        bits = partition_bits(n_docs, max_rows) if n_docs is not None else 4
        self.work = work
        self.max_rows = max_rows
        self.writer = PartitionWriter(f"{work}/ids", bits, max(1, max_rows // 4))

    def add(self, ii: np.ndarray, first_ordinal: int) -> None:
        """The id_ints of documents `first_ordinal`, `first_ordinal + 1`, ..."""
        n = ii.shape[0]
        if n:
            rec = np.empty(n, dtype=ROW)
            rec["h1"], rec["h2"] = ii, _mix(ii)
            rec["doc"] = np.arange(first_ordinal, first_ordinal + n, dtype=np.uint64)
            self.writer.add(rec)

    def pairs(self) -> np.ndarray:
        """Every (first ordinal of an id_int, another ordinal with it), sorted; shape (e, 2)."""
        grouper = Grouper(f"{self.work}/ids", self.max_rows)
        grouper.group_partitions(self.writer.close())
        return grouper.all_edges()

    def check(self, locate: Locate, stage: str, annotated: bool = True) -> None:
        """Raise `DuplicateIdsError` when two documents share an id_int; `locate` names them."""
        pairs = self.pairs()
        if pairs.shape[0]:
            raise DuplicateIdsError(duplicate_message(pairs, locate, stage, annotated))


def equal_pairs(ii: np.ndarray) -> np.ndarray:
    """In memory, for one shard's id_ints: (first index of an id_int, another index with it),
    sorted; shape (e, 2). The shard's ids are already in memory where this is used."""
    order = np.lexsort((np.arange(ii.shape[0]), ii))
    s = ii[order]
    same = np.flatnonzero(s[1:] == s[:-1]) + 1  # positions equal to their left neighbour
    if same.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    start = np.ones(s.shape[0], dtype=bool)
    start[1:] = s[1:] != s[:-1]
    head = np.maximum.accumulate(np.where(start, np.arange(s.shape[0]), 0))  # each run's first position
    pairs = np.stack([order[head[same]], order[same]], axis=1).astype(np.uint64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


class SourceIds:
    """The id check of a stage that reads raw input shards itself (`dedup exact` on files):
    `add` each shard's ids as it is read (repeats within it fail at once, before anything of it
    is written), `check` at the end for repeats across shards."""

    def __init__(self, work: str, memory: int, shards: list[Shard], options: ReadOptions, stage: str):
        self.table = IdTable(work, rows_per_pass(memory))
        self.shards, self.options, self.stage = shards, options, stage
        self.starts: list[int] = []

    def add(self, index: int, ids: list[str], first_ordinal: int) -> None:
        """The ids of shard `index` (in `shards`), whose first document has ordinal `first_ordinal`."""
        import pyarrow as pa

        while len(self.starts) <= index:
            self.starts.append(first_ordinal)
        ii = id_ints(pa.array(ids, pa.string()))
        local = equal_pairs(ii)
        if local.shape[0]:
            raise DuplicateIdsError(duplicate_message(local + np.uint64(first_ordinal), self.locate, self.stage,
                                                      annotated=False))
        self.table.add(ii, first_ordinal)

    def locate(self, ordinal: int) -> tuple[str, str, str]:
        """Re-read the shard holding `ordinal` up to that document (only for the error message)."""
        i = bisect.bisect_right(self.starts, ordinal) - 1
        k = ordinal - self.starts[i]
        for n, doc in enumerate(ShardReader(self.shards[i], self.options)):
            if n == k:
                return doc.id, self.shards[i].rel, record_location(self.shards[i], doc.row)
        return "?", self.shards[i].rel, f"{self.shards[i].path} (document {k})"  # pragma: no cover - source changed

    def check(self) -> None:
        self.table.check(self.locate, self.stage, annotated=False)


def duplicate_message(pairs: np.ndarray, locate: Locate, stage: str, annotated: bool = True) -> str:
    """One line: how many documents repeat an id, the first pairs with their places, the fix."""
    n = int(np.unique(pairs[:, 1]).shape[0])
    shown, same_id, same_shard = [], True, True
    for a, b in pairs[:SHOWN]:
        (ida, shard_a, at_a), (idb, shard_b, at_b) = locate(int(a)), locate(int(b))
        if ida == idb:
            shown.append(f"id {ida!r} at {at_a} and at {at_b}")
        else:
            same_id = False
            shown.append(f"ids {ida!r} ({at_a}) and {idb!r} ({at_b}) have the same id_int {id_ints_of(ida)}")
        same_shard = same_shard and shard_a == shard_b
    if not same_id:
        fix = ("different ids with one 64-bit SHA-1 prefix (RPv2's id_int) cannot be told apart: rename one "
               "of each pair in the input and re-annotate")
    elif not annotated:
        fix = ("annotate the inputs (--dedupe-ids suffix renames repeats within a shard to ID#2, ID#3, ...) and "
               "dedup the annotate folder, or give an --id-field that is unique across the inputs")
    elif same_shard:
        fix = ("re-annotate with --dedupe-ids suffix (renames repeats within a shard to ID#2, ID#3, ...) or "
               "with an --id-field that is unique")
    else:
        fix = ("ids must be unique across the corpus, and --dedupe-ids suffix renames only within a shard: "
               "re-annotate with an --id-field that is unique across the inputs, or make the ids unique there")
    more = f" (and {n - len(shown)} more)" if n > len(shown) else ""
    return (f"{stage}: {n} document(s) repeat the id of an earlier one, so dedup would merge different documents: "
            f"{'; '.join(shown)}{more}. Fix: {fix}")


def id_ints_of(doc_id: str) -> int:
    import pyarrow as pa

    return int(id_ints(pa.array([doc_id], pa.string()))[0])


def table_locator(table: ShardTable) -> Locate:
    """`Locate` over an annotate folder: the attribute shard and row, and the source record."""

    def locate(ordinal: int) -> tuple[str, str, str]:
        i = int(np.searchsorted(table.base, ordinal, side="right") - 1)
        k = int(ordinal - table.base[i])
        t = table.read(i, ["id", "row"]).slice(k, 1).to_pylist()[0]
        where = f"{table.rels[i]} row {k}"
        meta = read_shard_meta(table.fs, table.paths[i])
        if "source_shard" in meta and t["row"] is not None:
            src = dict(meta["source_shard"])
            src["members"] = tuple(src.get("members") or ())
            where += f" (source {record_location(Shard(**src), int(t['row']))})"
        return t["id"], table.rels[i], where

    return locate


def check_unique_ids(table: ShardTable, memory: int, tmp_dir: str | None, stage: str) -> None:
    """Fail (`DuplicateIdsError`) unless every document of the annotate folder `table` has its
    own id_int. Reads only the id columns, before any other work, so a bad corpus fails fast."""
    if table.n_docs < 2:
        return
    work = work_dir("dedup-ids", tmp_dir)
    try:
        ids = IdTable(work, rows_per_pass(memory), table.n_docs)
        for i, path in enumerate(table.paths):
            at = int(table.base[i])
            with table.fs.open(path, "rb") as fh:
                for rb in pq.ParquetFile(fh).iter_batches(batch_size=ID_BATCH, columns=["id"], use_threads=False):
                    ids.add(id_ints(rb.column("id")), at)
                    at += rb.num_rows
        ids.check(table_locator(table), stage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
