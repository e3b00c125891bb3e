"""Unique document ids within a shard: detect repeats, or rename them deterministically.

Why: every later stage addresses a document by its id (dedup keys its graphs by RPv2's
`id_int`, the SHA-1 of the id), so two different documents with one id become one node there;
a unique document sharing an id with a near-duplicate was flagged `keep=false` and dropped.
`annotate` therefore checks each shard as it reads it (a dict of the shard's ids: memory grows
with one shard, not the corpus); repeats across shards are found by dedup's id table
(`textsieve.dedup.id_table`).

Policies (`DEDUPE_IDS`): "fail" raises `DuplicateIdError` naming the id and both records;
"suffix" renames the 2nd, 3rd, ... document with an id to `id#2`, `id#3`, ... in document order
(skipping a name the shard already used), so a re-read of the same source gives the same ids.
Documents without an id get `<shard rel>/<row>` from the readers and txt documents their rel path,
both unique already. A shard whose ids were renamed says so in its footer (`renamed_ids`), and
`textsieve.io.attributes.source_documents` applies the same renaming when it re-reads the source,
so the ids of re-read documents match the attribute rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from textsieve.document import Document
from textsieve.io.errors import InputError
from textsieve.io.paths import Shard
from textsieve.io.readers import ReadOptions, ShardReader

DEDUPE_IDS = ("fail", "suffix")
RENAMED_KEY = "renamed_ids"  # footer / annotate.json: documents whose id was renamed
EXAMPLES_KEY = "renamed_ids_examples"  # footer: the first few renames, with their locations
MAX_EXAMPLES = 20


class DuplicateIdError(InputError):
    """Two documents of one shard carry the same id (dedup would merge them)."""


def record_location(shard: Shard, row: int) -> str:
    """Where document `row` of `shard` is, in the readers' conventions (`textsieve.io.errors`):
    `path:LINE` for JSON Lines, the member file for txt, `path:row N` for Parquet, else
    `path:record N`."""
    if shard.format == "jsonl":
        return f"{shard.path}:{row + 1}"
    if shard.format in ("txt", "html") and 0 <= row < len(shard.members):
        return shard.members[row]
    if shard.format == "parquet":
        return f"{shard.path}:row {row}"
    return f"{shard.path}:record {row}"


def effective_mode(dedupe_ids: str | None, on_error: str) -> str:
    """The policy a run uses: `dedupe_ids` when given, else "suffix" under `--on-error skip`
    (skip mode keeps going, and renaming loses nothing) and "fail" otherwise."""
    if dedupe_ids is None:
        return "suffix" if on_error == "skip" else "fail"
    if dedupe_ids not in DEDUPE_IDS:
        raise ValueError(f"dedupe_ids (--dedupe-ids) must be one of {', '.join(DEDUPE_IDS)}, not {dedupe_ids!r}")
    return dedupe_ids


class UniqueIds:
    """The id check of one shard, fed its documents in order (`check`)."""

    def __init__(self, shard: Shard, mode: str = "fail"):
        if mode not in DEDUPE_IDS:
            raise ValueError(f"unknown id policy {mode!r}; expected one of {', '.join(DEDUPE_IDS)}")
        self.shard = shard
        self.mode = mode
        self.reset()

    def reset(self) -> None:
        """Forget the ids seen (a reader iterated again starts over)."""
        self._first: dict[str, int] = {}  # id (original or given) -> row of the document holding it
        self._next: dict[str, int] = {}  # original id -> next suffix to try
        self.renamed = 0
        self.examples: list[dict] = []

    def check(self, doc: Document) -> Document:
        """`doc`, with its id renamed when an earlier document of the shard holds it ("suffix"),
        or `DuplicateIdError` ("fail")."""
        first = self._first.get(doc.id)
        if first is None:
            self._first[doc.id] = doc.row
            return doc
        here = record_location(self.shard, doc.row)
        if self.mode == "fail":
            raise DuplicateIdError.at(
                here, f"duplicate id {doc.id!r}: the document at {record_location(self.shard, first)} has it "
                      "too, and dedup would merge the two; pass --dedupe-ids suffix (or --on-error skip) to "
                      f"rename repeats to '{doc.id}#2', ..., or give an --id-field that is unique")
        k = self._next.get(doc.id, 2)
        while f"{doc.id}#{k}" in self._first:
            k += 1
        new = f"{doc.id}#{k}"
        self._next[doc.id] = k + 1
        self._first[new] = doc.row
        self.renamed += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append({"location": here, "id": doc.id, "new_id": new})
        doc.id = new
        return doc

    def documents(self, docs: Iterable[Document]) -> Iterator[Document]:
        """`docs` (one shard's, in order) with unique ids; starts over on each call."""
        self.reset()
        for doc in docs:
            yield self.check(doc)

    def meta(self) -> dict:
        """What the shard footer records: the count of renamed ids and the first renames."""
        return {RENAMED_KEY: self.renamed, EXAMPLES_KEY: self.examples} if self.renamed else {RENAMED_KEY: 0}


class UniqueIdReader(ShardReader):
    """A `ShardReader` whose documents have unique ids within the shard (`UniqueIds`)."""

    def __init__(self, shard: Shard, options: ReadOptions | None = None, mode: str = "fail"):
        super().__init__(shard, options)
        self.ids = UniqueIds(shard, mode)

    def __iter__(self) -> Iterator[Document]:
        return self.ids.documents(super().__iter__())
