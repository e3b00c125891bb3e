"""The columns a recipe can use in one annotate folder: annotate's shards plus every attribute
set `DIR/_<name>/`, each column with its kind, relation alias and files.

Why apart from the compiler (`sql`): the pipeline checks recipes against the schemas its
planned stages *will* write (`schema_from_arrow`), the report and the funnel read it once and
share it, and a schema is plain data about Parquet files, not SQL generation.

Column kinds:
  doc   RPv2 doc-level span list: its value is the score of the single span (`col[1].score`)
  line  RPv2 line-level span list: reduce it (sum/mean/...), or use it in a `line:` rule
  scalar any plain column of an attribute set (dedup flags, DSIR weights, ...)
  other list/binary columns such as MinHash bands: only `is null` / `is not null`
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from textsieve.io.attributes import LENGTH_COLUMN, SCORE_SUFFIX, attribute_sets, attribute_shards, stale_attribute_sets
from textsieve.recipes.language import RecipeError

KEY_COLUMNS = ("id", "shard", "row")
END = '"end"'  # the span field `end` is an SQL keyword


def q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # doc | line | scalar | other
    alias: str  # SQL relation alias
    type: pa.DataType
    source: str  # "" for annotate's shards, else the attribute set name
    scalar: str | None = None  # a plain `<name>__score` twin of a doc-level span column, if stored

    def numeric(self) -> bool:
        t = self.type
        if self.kind in ("doc", "line"):
            t = t.value_type.field("score").type
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _span_kind(name: str, typ: pa.DataType, metadata: dict | None = None) -> str | None:
    """"doc" / "line" for a span column (registry level, else the name), "other" for free spans
    (`signals.spans.free_spans`: anywhere, any number), None for any other column."""
    if not (pa.types.is_list(typ) or pa.types.is_large_list(typ)):
        return None
    v = typ.value_type
    if not (pa.types.is_struct(v) and {v.field(i).name for i in range(v.num_fields)} >= {"start", "end", "score"}):
        return None
    if metadata and metadata.get(b"textsieve.level") == b"spans":
        return "other"
    if metadata and metadata.get(b"textsieve.level") == b"lines":  # `signals.spans.line_spans`
        return "line"
    try:
        from textsieve.signals.registry import REGISTRY
        if name in REGISTRY:
            return REGISTRY[name].level
    except ImportError:  # pragma: no cover
        pass
    return "line" if "_lines_" in name else "doc"


@dataclass
class Schema:
    """Every column usable in rules, and the Parquet files of each relation."""

    directory: str
    files: dict[str, list[str]]  # relation alias -> files ("a" = annotate shards)
    sets: dict[str, str]  # alias -> attribute set name
    columns: dict[str, Column] = field(default_factory=dict)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)  # sets left out: made before a re-annotate
    # sets a pipeline's stages (re)write before this recipe runs -> the fingerprint of the model
    # a `learn:` item writes it with (None for other stages' sets)
    planned: dict[str, str | None] = field(default_factory=dict)

    def valid_names(self) -> list[str]:
        return sorted(self.columns)

    @property
    def length_column(self) -> Column:
        """The column of `a` document lengths come from: `ts_length`, else a doc-level span
        (its `end`), else a line-level one (the last line's `end`)."""
        length = self.columns.get(LENGTH_COLUMN)
        if length is not None and length.alias == "a":
            return length
        doc = [c for c in self.columns.values() if c.kind == "doc" and c.alias == "a"]
        if doc:
            return next((c for c in doc if c.name == "rps_doc_word_count"), doc[0])
        line = [c for c in self.columns.values() if c.kind == "line" and c.alias == "a"]
        if line:
            return line[0]
        raise RecipeError(f"{self.directory}: no span column to take document lengths from")

    @property
    def length_sql(self) -> str:
        """Document length in characters: the `end` of a doc-level span (no text read)."""
        col = self.length_column
        ref = f"a.{q(col.name)}"
        if col.name == LENGTH_COLUMN:
            return f"coalesce({ref}, 0)"
        return f"coalesce({ref}[{'1' if col.kind == 'doc' else '-1'}].{END}, 0)"


def _local(path: str, fs: fsspec.AbstractFileSystem) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return path if protocol in ("file", "local") else f"{protocol}://{path}"


def read_schema(directory: str) -> Schema:
    """Columns of annotate's shards and of every attribute set under `directory`."""
    fs, files = attribute_shards(directory)
    sets = [("", arrow_schema(fs, files[0]), [_local(p, fs) for p in files])]
    for name in attribute_sets(directory):
        try:
            sfs, sfiles = attribute_shards(directory, name)
        except FileNotFoundError:
            continue
        sets.append((name, arrow_schema(sfs, sfiles[0]), [_local(p, sfs) for p in sfiles]))
    schema = schema_from_arrow(directory, sets)
    schema.stale = stale_attribute_sets(directory)
    return schema


def arrow_schema(fs: fsspec.AbstractFileSystem, path: str) -> pa.Schema:
    with fs.open(path, "rb") as fh:
        return pq.ParquetFile(fh).schema_arrow


def schema_from_arrow(directory: str, sets: list[tuple[str, pa.Schema, list[str]]]) -> Schema:
    """The rule columns of attribute sets given as (set name, Arrow schema, files); "" is
    annotate's shards and comes first. `read_schema` reads the schemas from storage; the
    pipeline's dry-run passes the schemas its planned stages *will* write (files empty), so
    every rule is checked before anything runs."""
    (_, main, main_files), rest = sets[0], sets[1:]
    schema = Schema(directory, {"a": list(main_files)}, {})
    owners: dict[str, list[str]] = {}

    def add(alias: str, set_name: str, arrow: pa.Schema) -> None:
        names = set(arrow.names)
        for f in arrow:
            if f.name in KEY_COLUMNS or (f.name.endswith(SCORE_SUFFIX) and f.name[: -len(SCORE_SUFFIX)] in names):
                continue  # scalar twins are used transparently (see Column.scalar), not listed
            kind = _span_kind(f.name, f.type, f.metadata)
            if kind is None:
                nested = pa.types.is_nested(f.type) or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
                kind = "other" if nested else "scalar"
            owners.setdefault(f.name, []).append(set_name or "(annotate)")
            twin = f.name + SCORE_SUFFIX
            schema.columns.setdefault(f.name, Column(f.name, kind, alias, f.type, set_name,
                                                     twin if kind == "doc" and twin in names else None))

    add("a", "", main)
    for i, (name, arrow, files) in enumerate(rest):
        alias = f"s{i}"
        schema.files[alias] = list(files)
        schema.sets[alias] = name
        add(alias, name, arrow)
    schema.ambiguous = {k: v for k, v in owners.items() if len(v) > 1}
    return schema
