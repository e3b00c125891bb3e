"""The documents each mix source offers, their token counts and languages, and their texts.

Why a module of its own: a mix source is either a selection made on the fly over an annotate
folder (a recipe and/or a DSIR draw, with exactly `select`'s semantics: this module calls
select's own resolution) or an existing `select` output folder, and both must look the same to
the planner and the shuffle: per shard the rows, ids, DSIR multiplicities, token counts and
languages (`ShardPool`), and a way to read the rows' texts back (`texts`).

Token counts (`stages.training.mix_counts`): the counts `textsieve tokens` stored with the
mix's tokenizer file, when they are counts of the texts the mix writes; otherwise the texts are
read and encoded with the mix's tokenizer; with `tokenizer: words` the word/punctuation count
(an estimate, labelled so in the plan and the manifest). A source's `redact:` names (`select
--redact`'s, resolved by `pii.redact_plan`) are applied wherever its texts are read, so counts
are of the redacted text and stored counts (of the unredacted text) are not used for it.

A selection source is resolved in two steps: what identifies it (its manifest, its
selection.json) at once, its records (ids, languages, the annotate `shard`/`row` keys) only
when they are needed (`load_records`): a finished mix is recognised without reading them.

Languages (the manifest's and report's per-language table, each record's `lang`): an attributes
source takes annotate's `ts_lang` column, else the record field annotate read languages from
(its recorded `lang_field`, e.g. `meta.lang`, re-read from the source shard); a selection source
takes the field its `selection.json` records as `read_options.lang_field`, else `ts_lang`,
`lang` or `meta.lang` of each record.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import numpy as np
import pyarrow.parquet as pq

from textsieve.io.arrow_arrays import to_numpy
from textsieve.io.attributes import attribute_shards, shard_rel, source_documents
from textsieve.io.fields import MISSING, FieldPath
from textsieve.io.publish import PublishError, check_file, content_key, read_manifest, summary_of
from textsieve.mixing.spec import WORDS, MixError, SourceSpec
from textsieve.personal_data.redact_plan import RedactError, RedactSource

#: record fields a selection's language is read from when its selection.json records none
SELECTION_LANG_FIELDS = ("ts_lang", "lang", "meta.lang")

_WORDS = re.compile(r"\w+|[^\w\s]")


@dataclass
class ShardPool:
    """One shard's documents in a source: rows in order, with what the plan and shuffle need."""

    key: str  # source shard rel name (attributes) or the selection file's rel path
    kind: str  # "attributes" | "selection"
    meta: dict  # annotate footer meta, or {"path", "format", "text_field"} of a selection file
    rows: np.ndarray
    ids: list[str]
    lengths: np.ndarray  # characters (-1: unknown)
    mult: np.ndarray  # DSIR multiplicity (1 otherwise)
    starts: list[np.ndarray] | None = None  # kept line spans (recipe line rules)
    ends: list[np.ndarray] | None = None
    tokens: np.ndarray | None = None
    lang: list[str | None] = field(default_factory=list)
    redact: list[RedactSource] | None = None  # span columns replaced when the texts are read
    redact_labels: tuple[str, ...] = ()
    src_shard: list[str] | None = None  # a selection record's annotate key (shard, row), for stored counts
    src_row: np.ndarray | None = None


@dataclass
class SourcePool:
    """A source's shards and how its counts were made."""

    spec: SourceSpec
    shards: list[ShardPool]
    inputs: dict[str, Any]  # fingerprints of what it was read from
    token_count: str = "tokenizer"  # tokenizer | column:<name> | words
    details: dict[str, Any] = field(default_factory=dict)  # DSIR summary, recipe name
    count_note: str = ""  # where the counts come from, or why the texts had to be encoded
    selection: dict[str, Any] = field(default_factory=dict, repr=False)  # a selection source's selection.json
    loaded: bool = True  # False: a selection source whose records are not read yet (`load_records`)

    @property
    def documents(self) -> int:
        return sum(len(s.rows) for s in self.shards)


class Counter:
    """Counts (and, for `bin`, encodes) texts: a real tokenizer or the word/punctuation estimate."""

    def __init__(self, spec: str | None):
        self.spec = spec
        self.tok: Any = None
        if spec is not None and spec != WORDS:
            from textsieve.tokenization.tokenizer import load_tokenizer

            self.tok = load_tokenizer(spec)

    def count(self, texts: list[str]) -> np.ndarray:
        if self.tok is not None:
            return np.asarray(self.tok.count_batch(texts), np.int64)
        if self.spec == WORDS:
            return np.fromiter((len(_WORDS.findall(t)) for t in texts), np.int64, len(texts))
        raise MixError("tokenizer: the mix needs token counts: give tokenizer: PATH (a tokenizer.json or tiktoken "
                       "file), run `textsieve tokens` on the attribute folders, or set tokenizer: words for an "
                       "estimate")

    def encode(self, texts: list[str]) -> list[list[int]]:
        if self.tok is None:
            raise MixError("format: bin needs a real tokenizer (tokenizer: PATH), not word counts")
        return self.tok.encode_batch(texts)


def _attribute_pool(spec: SourceSpec, seed: int, threads: int | None, source_roots: list[str]) -> SourcePool:
    from textsieve.stages.select.select import SelectConfig

    assert spec.attributes is not None
    cfg = SelectConfig(directory=spec.attributes, recipe=spec.recipe, dsir=spec.dsir, k=spec.k,
                       tokens=spec.dsir_tokens, replace=spec.replace, seed=seed, threads=threads,
                       source_roots=list(source_roots))
    if spec.temperature is not None:
        cfg.temperature = spec.temperature
    return select_pool(spec, cfg)


def select_pool(spec: SourceSpec, cfg: Any) -> SourcePool:
    """The documents `select` with config `cfg` (a `SelectConfig`, every setting of it) chooses
    from `spec.attributes` (`select --shards` passes its own config)."""
    from textsieve.stages.select.select import published_inputs, resolve_select_config, selected_rows, shard_metas

    assert spec.attributes is not None
    source_roots = list(cfg.source_roots)
    where = f"sources: {spec.name}"
    try:
        cfg = resolve_select_config(cfg)
        _, _, metas = shard_metas(spec.attributes, source_roots)
        selected, dsir_summary, used = selected_rows(cfg)
    except FileNotFoundError as exc:
        raise MixError(f"{where}: {exc}") from None
    shards = []
    for shard in sorted(selected, key=lambda s: metas[s][0] if s in metas else s):
        if shard not in metas:
            raise MixError(f"{where}: selected rows name source shard {shard!r}, which has no annotate shard")
        d = selected[shard]
        if not len(d["rows"]):
            continue
        meta = {k: v for k, v in metas[shard][1].items() if k != "_attr_size"}
        meta["_attr_rel"] = metas[shard][0]
        shards.append(ShardPool(shard, "attributes", meta, d["rows"], list(d["ids"]), d["lengths"], d["counts"],
                                d.get("starts"), d.get("ends")))
    fs, root = fsspec.core.url_to_fs(spec.attributes)
    inputs = {"attributes": spec.attributes, "content": published_inputs(spec.attributes),
              "annotate": content_key(fs, root.rstrip("/")), "attribute_sets": used}
    pool = SourcePool(spec, shards, inputs, details={"dsir": dsir_summary, "recipe": spec.recipe})
    if spec.redact:
        _plan_redaction(pool)
    _attribute_langs(spec.attributes, pool)
    return pool


def _plan_redaction(pool: SourcePool) -> None:
    """Give each shard the span columns its texts are redacted with (`select --redact`'s plan)."""
    from textsieve.personal_data.redact_plan import resolve_redact

    assert pool.spec.attributes is not None and pool.spec.redact
    try:
        plan = resolve_redact(pool.spec.attributes, pool.spec.redact)
        for sp in pool.shards:
            sp.redact = plan.sources(sp.meta["_attr_rel"]) if plan.columns else None
            sp.redact_labels = plan.labels
    except RedactError as exc:
        why = str(exc).removeprefix("select --redact").lstrip(" :")
        raise MixError(f"sources: {pool.spec.name}: redact: {why}") from None
    pool.details["redact"] = {"names": plan.names, "columns": [c.column for c in plan.columns]}


def _attribute_langs(directory: str, pool: SourcePool) -> None:
    """Each document's `ts_lang` (annotate's language id) when the shards have it, else the
    language annotate read from the records (`read_options.lang_field`), else None."""
    fs, files = attribute_shards(directory)
    root = fsspec.core.url_to_fs(directory)[1].rstrip("/")
    paths = {shard_rel(root, f): f for f in files}  # where each annotate shard is, in any layout
    for sp in pool.shards:
        with fs.open(paths[sp.meta["_attr_rel"]], "rb") as fh:
            pf = pq.ParquetFile(fh)
            if "ts_lang" not in pf.schema_arrow.names:
                lang_field = (sp.meta.get("read_options") or {}).get("lang_field")
                sp.lang = source_langs(sp.meta, sp.rows) if lang_field else [None] * len(sp.rows)
                continue
            t = pf.read(columns=["row", "ts_lang"], use_threads=False)  # see io.parquet_read
        rows = to_numpy(t.column("row")).astype(np.int64)
        langs = t.column("ts_lang").to_pylist()
        at = np.searchsorted(rows, sp.rows)
        sp.lang = [langs[i] for i in at.tolist()]


def source_langs(meta: dict, rows: np.ndarray) -> list[str | None]:
    """The language of each of `rows` of the source shard an annotate shard was made from, as
    annotate read it (`read_options.lang_field`): a Parquet source's column alone, other formats
    through annotate's own reader (so rows, skipped records and renamed ids match)."""
    lang_field = FieldPath(meta["read_options"]["lang_field"])
    src = meta["source_shard"]
    if src.get("format") == "parquet":
        with fsspec.open(src["path"], "rb") as fh:
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
            top = lang_field.name if lang_field.name in names else lang_field.parts[0]
            if top not in names:
                return [None] * len(rows)
            values = pf.read(columns=[top], use_threads=False).column(top).take(np.asarray(rows, np.int64)).to_pylist()
        return [_lang_str(lang_field.get({top: v})) for v in values]
    want = {int(r): i for i, r in enumerate(rows.tolist())}
    out: list[str | None] = [None] * len(rows)
    last = max(want) if want else -1
    for doc in source_documents({k: v for k, v in meta.items() if not k.startswith("_")}):
        if doc.row > last:
            break
        i = want.get(doc.row)
        if i is not None:
            out[i] = doc.lang
    return out


def _lang_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def record_lang(rec: dict, fields: tuple[FieldPath, ...]) -> str | None:
    """A selection record's language: the first of `fields` it has as a string."""
    for f in fields:
        value = f.get(rec)
        if value is not MISSING and _lang_str(value):
            return str(value)
    return None


def _selection_pool(spec: SourceSpec) -> SourcePool:
    """An existing `select` output folder, identified by its manifest and selection.json; every
    record of its published shards is one document (read by `load_records`)."""
    from textsieve.stages.select.select import SUMMARY

    assert spec.selection is not None
    where = f"sources: {spec.name}"
    fs, root = fsspec.core.url_to_fs(spec.selection)
    root = root.rstrip("/")
    manifest = read_manifest(fs, root)
    if manifest is not None and manifest.stage == "mix":
        raise MixError(f"{where}: {spec.selection} holds training shards (of `mix` or `select --shards`), not "
                       "selection files; give the annotate folder with its recipe (attributes:) instead")
    if manifest is None or manifest.stage != "select":
        raise MixError(f"{where}: {spec.selection} is not a published `textsieve select` output (no "
                       ".textsieve/manifest.json of stage select)")
    inputs = {"selection": spec.selection, "manifest_key": manifest.key,
              "files": {r: manifest.files[r]["sha256"] for r in sorted(manifest.files)}}
    try:
        summary = (summary_of(spec.selection, SUMMARY) or {}) if SUMMARY in manifest.files else {}
    except PublishError as exc:  # edited since published: not believed (no language field, no stored counts)
        summary = {"untrusted": str(exc)}
    return SourcePool(spec, [], inputs, selection=summary, loaded=False)


def load_records(pool: SourcePool) -> None:
    """Read a selection source's records: per published shard the ids, languages and annotate
    keys (no text). Attributes sources are read when resolved; this does nothing for them."""
    if pool.loaded:
        return
    assert pool.spec.selection is not None
    fs, root = fsspec.core.url_to_fs(pool.spec.selection)
    root = root.rstrip("/")
    manifest = read_manifest(fs, root)
    if manifest is None or manifest.key != pool.inputs["manifest_key"]:
        raise MixError(f"sources: {pool.spec.name}: {pool.spec.selection} changed while the mix was reading it; "
                       "run it again")
    lang_fields = _selection_lang_fields(pool.selection)
    for rel in sorted(manifest.files):
        if not rel.endswith((".jsonl.gz", ".parquet")):
            continue
        path = check_file(fs, root, manifest, rel)
        meta = {"path": path, "format": "parquet" if rel.endswith(".parquet") else "jsonl.gz",
                "text_field": pool.spec.text_field, "lang_fields": [f.name for f in lang_fields]}
        ids: list[str] = []
        langs: list[str | None] = []
        shard: list[Any] = []
        row: list[Any] = []
        for rec in _selection_records(meta, fields=True):
            ids.append(str(rec.get("id")))
            langs.append(record_lang(rec, lang_fields))
            shard.append(rec.get("shard"))
            row.append(rec.get("row"))
        n = len(ids)
        if n:
            keyed = all(isinstance(x, str) for x in shard) and all(isinstance(x, int) for x in row)
            pool.shards.append(ShardPool(rel, "selection", meta, np.arange(n, dtype=np.int64), ids,
                                         np.full(n, -1, np.int64), np.ones(n, np.int64), lang=langs,
                                         src_shard=shard if keyed else None,
                                         src_row=np.asarray(row, np.int64) if keyed else None))
    pool.loaded = True


def _selection_lang_fields(summary: dict[str, Any]) -> tuple[FieldPath, ...]:
    """Where a selection's records hold their language: the `lang_field` its selection.json
    records (annotate's read option; the records keep the source's fields), else the usual names."""
    recorded = (summary.get("read_options") or {}).get("lang_field") if isinstance(summary, dict) else None
    names = ([recorded] if isinstance(recorded, str) and recorded else []) + list(SELECTION_LANG_FIELDS)
    return tuple(FieldPath(n) for n in dict.fromkeys(names))


def _selection_records(meta: dict, fields: bool = False) -> Iterator[dict]:
    """The records of one selection file (without the text when only `fields` are wanted)."""
    if meta["format"] == "parquet":
        with fsspec.open(meta["path"], "rb") as fh:
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
            wanted = {"id", "shard", "row", *(f.split(".", 1)[0] for f in meta.get("lang_fields", ())),
                      *meta.get("lang_fields", ())}
            cols = [c for c in names if c in wanted or (not fields and c == meta["text_field"])]
            for batch in pf.iter_batches(columns=cols, batch_size=2000):
                yield from batch.to_pylist()
        return
    with fsspec.open(meta["path"], "rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def texts(sp: ShardPool, want: np.ndarray | None = None, copies: np.ndarray | None = None,
          redacted: dict[str, int] | None = None) -> Iterator[tuple[int, str]]:
    """(position in `sp.rows`, text as written: line rules applied and spans redacted) for the
    rows (all, or where `want` is true), in order. With `redacted`, the spans replaced per label
    are added to it once the rows are read, each row's counted `copies[row]` times (default 1)."""
    if sp.kind == "selection":
        field_name = sp.meta["text_field"]
        for i, rec in enumerate(_selection_records(sp.meta)):
            if want is not None and not want[i]:
                continue
            text = rec.get(field_name)
            if not isinstance(text, str):
                raise MixError(f"{sp.meta['path']}: record {i} has no text field {field_name!r} (set text_field: "
                               "in the source)")
            yield i, text
        return
    from textsieve.stages.select.output import stream_selected
    from textsieve.stages.select.select import ShardTask

    keep = np.ones(len(sp.rows), bool) if want is None else want
    idx = np.flatnonzero(keep)
    meta = {k: v for k, v in sp.meta.items() if not k.startswith("_")}
    task = ShardTask(meta, "", "", sp.rows[idx], [sp.ids[i] for i in idx.tolist()], sp.lengths[idx],
                 np.ones(len(idx), np.int64) if copies is None else np.asarray(copies, np.int64)[idx],
                 [sp.starts[i] for i in idx.tolist()] if sp.starts else None,
                 [sp.ends[i] for i in idx.tolist()] if sp.ends else None, sp.redact, sp.redact_labels)
    selected, check = stream_selected(task, MixError)
    for j, (_doc, text, _n) in enumerate(selected()):
        yield int(idx[j]), text
    counts = check()
    if redacted is not None:
        for label, k in counts.items():
            redacted[label] = redacted.get(label, 0) + int(k)


def resolve_pool(spec: SourceSpec, seed: int, threads: int | None = None,
                 source_roots: list[str] | None = None, records: bool = True) -> SourcePool:
    """The documents a source offers (no texts read). `records=False`: a selection source's
    records are left for `load_records` (what identifies it is read at once)."""
    if spec.selection is not None:
        pool = _selection_pool(spec)
        if records:
            load_records(pool)
        return pool
    return _attribute_pool(spec, seed, threads, list(source_roots or []))


__all__ = ["Counter", "ShardPool", "SourcePool", "load_records", "resolve_pool", "select_pool", "texts"]
