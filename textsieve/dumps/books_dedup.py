"""The reference's near-duplicate decision for books (`book/dedup.py`, spec rpv1-sources §5.3),
quirks included, over fingerprints found by `text.simhash_search` (not all pairs).

Per record, in reading order, with its numeric id (`line + slot × 2000`) and SimHash:

1. near-duplicates: every record within Hamming distance `DISTANCE` (itself included);
2. `flag` = 0 if one of them has a numerically smaller id, else 1 (equal ids never count);
3. the flag is stored under the id, records in order, so the last record of an id decides for
   all records of that id (`value`): with PG-19 and Books3 numbered alike, a Books3 book's
   flag replaces its PG-19 namesake's;
4. a record is written iff the value stored under its id is 1.

`near_ids` lists what step 1 finds by id (what the reference's `SimhashIndex` returns: ids, one
entry per id), for checking the per-record goldens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from textsieve.text.simhash_search import NearGraph, near_graph

#: the reference's Hamming threshold (`dedup.py -k 5`)
DISTANCE = 5


@dataclass(frozen=True)
class BookDecisions:
    """Per record in reading order: its own flag, the value its id ended with, and whether it
    is written; `graph` holds the near-duplicate pairs."""

    ids: np.ndarray  # int64, the reference's numeric ids
    flag: np.ndarray  # int8: 1 = no near-duplicate with a smaller id
    value: np.ndarray  # int8: the flag last stored under the record's id
    written: np.ndarray  # bool
    collision: np.ndarray  # bool: another record has the same id
    graph: NearGraph


def reference_decisions(ids: Sequence[int], fingerprints: Sequence[int], distance: int = DISTANCE) -> BookDecisions:
    """The reference's decisions for records given in reading order (see the module doc)."""
    id_arr = np.asarray(ids, dtype=np.int64)
    fps = np.asarray([int(f) for f in fingerprints], dtype=np.uint64)
    graph = near_graph(fps, distance)
    flag = (graph.earliest(id_arr) >= id_arr).astype(np.int8) if id_arr.shape[0] else np.zeros(0, np.int8)
    # last writer wins: the flag of each id's last record in reading order
    last: dict[int, int] = {}
    for i, rid in enumerate(id_arr.tolist()):
        last[rid] = i
    value = np.array([flag[last[rid]] for rid in id_arr.tolist()], dtype=np.int8)
    counts = np.unique(id_arr, return_counts=True)
    repeated = set(counts[0][counts[1] > 1].tolist())
    collision = np.array([rid in repeated for rid in id_arr.tolist()], dtype=bool)
    return BookDecisions(id_arr, flag, value, value == 1, collision, graph)


def near_ids(decisions: BookDecisions, i: int) -> list[tuple[int, int]]:
    """(id, Hamming distance) of record i's near-duplicates, one entry per id (its nearest
    record of that id), sorted by id: the ids the reference's index returns for it."""
    best: dict[int, int] = {}
    for j, d in decisions.graph.neighbours(i):
        rid = int(decisions.ids[j])
        best[rid] = min(d, best.get(rid, d))
    return sorted(best.items())
