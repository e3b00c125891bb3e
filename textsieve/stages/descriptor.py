"""A stage described once: everything `textsieve run` needs to know about it, in its own module.

Each stage module ends with `STAGE = Stage(...)`: its config dataclass and YAML section, the
fields the pipeline's output layout fixes, how to run it, how to tell its outputs are complete
and what else its results depend on. `stages.registry` finds every `STAGE`; the pipeline's
schema, build and run loop iterate over them and name no stage, so adding a stage is one module
(plus its test). The pipeline hands a stage's hooks a `Layout`, not its own config object: the
stages layer never imports `pipeline/`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec

from textsieve.io.attributes import attribute_set_dir, attribute_sets, attribute_shards, shard_rel
from textsieve.io.identity import input_identities
from textsieve.io.publish import SUMMARY, content_key, read_bookkeeping, read_manifest
from textsieve.recipes.language import Recipe, RecipeError, load_recipe

if TYPE_CHECKING:
    from textsieve.stages.planning import Corpus, PlannedSet, StagePlan

PROGRESS_REASON = "set from the command line: --quiet turns progress off"
#: where a pipeline keeps each kind of output, below its `output:` folder
ATTRS, DOCS, SELECTED, TRAIN, SOURCES = "attrs", "docs", "selected", "train", "sources"


@dataclass
class Outcome:
    """What the pipeline records of one stage run: `detail` goes to the run log and, unless
    `summary` is given, makes the closing line; `ran` is False when there was nothing to do."""

    detail: dict[str, Any]
    ran: bool = True
    summary: str | None = None


@dataclass(frozen=True)
class Layout:
    """A pipeline run as its stages see it: the output folders and the resolved pipeline file
    (`data`: defaults filled, paths absolute), with the questions stage hooks ask of them."""

    output: str
    data: Mapping[str, Any]

    def _under(self, sub: str) -> str:
        return f"{self.output.rstrip('/')}/{sub}"

    @property
    def attrs(self) -> str:
        """The annotate folder `OUT/attrs`: annotate shards and every attribute set beside them."""
        return self._under(ATTRS)

    @property
    def docs(self) -> str:
        """Where `extract` writes its documents (annotate's input when the pipeline extracts)."""
        return self._under(DOCS)

    @property
    def selected(self) -> str:
        return self._under(SELECTED)

    def source(self, label: str) -> str:
        """Where the `sources:` item `label` writes its documents (annotate then reads them)."""
        return self._under(f"{SOURCES}/{label}")

    def sources(self) -> list[str]:
        """The document folders of every `sources:` item, in file order ([] without the section)."""
        items = self.data.get("sources") or []
        return [self.source(str(item.get("name") or item.get("family"))) for item in items if isinstance(item, dict)]

    def source_inputs(self) -> list[str]:
        """The `sources:` folders as annotate's inputs, each written as a one-name glob
        (OUT/sources/[n]ame): a glob's relative names start below its fixed part, so each shard is
        named NAME/shard (two items' `github_0.jsonl.gz` stay apart) while a folder left by a
        removed item is not read. Item names are plain folder names (checked by the stage)."""
        return [f"{self._under(SOURCES)}/[{name[0]}]{name[1:]}" for name in
                (folder.rsplit("/", 1)[1] for folder in self.sources())]

    @property
    def train(self) -> str:
        """Where `mix` writes the training shards and their manifest.json."""
        return self._under(TRAIN)

    def identities(self, paths: Sequence[str]) -> list[dict[str, Any]]:
        """Files' identities in the pipeline's fingerprint mode (a changed file redoes a stage)."""
        return input_identities(list(paths), self.data["fingerprint"])

    def folder_key(self, folder: str) -> Any:
        """The published contents of an output folder (its manifest's hashes)."""
        fs, root = fsspec.core.url_to_fs(folder)
        return content_key(fs, root)

    def annotated_rels(self) -> tuple[Any, list[str]]:
        """The file system and every annotate shard's rel name (`io.attributes.shard_rel`): each
        later stage writes one file of that name per annotate shard into its set."""
        fs, paths = attribute_shards(self.attrs)
        root = fsspec.core.url_to_fs(self.attrs)[1].rstrip("/")
        return fs, [shard_rel(root, p) for p in paths]

    def set_complete(self, set_name: str, summary: bool = True) -> bool:
        """Does attribute set `set_name` have one file per annotate shard (and its summary.json)?"""
        fs, rels = self.annotated_rels()
        set_root = fsspec.core.url_to_fs(attribute_set_dir(self.attrs, set_name))[1].rstrip("/")
        manifest = read_manifest(fs, set_root)  # published as one unit: the manifest lists it all or is absent
        return manifest is not None and (not summary or SUMMARY in manifest.files) and all(
            r in manifest.files for r in rels)

    def set_summary(self, set_name: str) -> dict[str, Any]:
        """An attribute set's summary.json (OSError or ValueError when it is missing or unreadable)."""
        fs, root = fsspec.core.url_to_fs(attribute_set_dir(self.attrs, set_name))
        return json.loads(read_bookkeeping(fs, root.rstrip("/"), SUMMARY))  # checked against the manifest

    def sets_now(self, prefix: str = "", skip: tuple[str, ...] = ()) -> list[Any]:
        """The content keys of OUT/attrs' attribute sets named `prefix*` (less those starting
        with one of `skip`) as they are when the stage is about to run: whatever made them (an
        `embed:` section, `annotate.signals: [embed]`, a stage earlier in the file or an earlier
        run), a changed set re-runs the stage that reads it."""
        try:
            names = attribute_sets(self.attrs)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for set_name in sorted(n for n in names if n.startswith(prefix) and not n.startswith(skip)):
            fs, root = fsspec.core.url_to_fs(attribute_set_dir(self.attrs, set_name))
            out.append([set_name, content_key(fs, root.rstrip("/"))])
        return out


#: upstream(layout, name, stage config, stage names in run order, keys of the stages before it)
Upstream = Callable[[Layout, str, Any, list[str], dict[str, str]], list[Any]]


def no_upstream(layout: Layout, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    return []


def every_stage_before(layout: Layout, name: str, c: Any, names: list[str], keys: dict[str, str]) -> list[Any]:
    """The keys of every stage before this one (a selection or mix may use any set they write)."""
    return [keys[n] for n in names[:names.index(name)] if n != "annotate"]


def set_named(set_name: str, summary: bool = True) -> Callable[[Layout, str, Any], bool]:
    """A `complete` hook: the stage's attribute set `set_name` is whole."""
    return lambda layout, name, c: layout.set_complete(set_name, summary)


def absolute(value: Any, base: Path) -> Any:
    """A path (or a list of them) from the pipeline file, made absolute against its folder; URLs,
    `builtin:` names and absolute paths are kept."""
    if value is None:
        return None
    if isinstance(value, list):
        return [absolute(v, base) for v in value]
    s = str(value)
    if "://" in s or s.startswith("builtin:") or Path(s).is_absolute():
        return s
    return str((base / s).resolve())


def recipe_path(value: Any, base: Path) -> Any:
    """A `recipe:` value: a recipe file (made absolute) or a bundled recipe's name (kept)."""
    if isinstance(value, str) and (value.endswith((".yaml", ".yml")) or (base / value).exists()):
        return absolute(value, base)
    return value


@dataclass(frozen=True)
class CliSpec:
    """How `textsieve <command>` shows a stage; its options are the config's fields
    (`commands.stage_commands` builds the parser, so no command module names the stage).

    `report(result)`: the closing line printed to stderr (not with --quiet); `summary(result)`:
    the JSON object `--json` prints instead (the flag exists only with it); `writes`: the field
    the command writes to, then the fields it must not overwrite (the one output check);
    `flags`: extra `store_true` flags as (flag, help), read by `main`; `main(config, args)`:
    the command's body where it does more than run and report (select's `--dry-run` funnel),
    returning the exit code. `examples` are run by tests/test_docs_commands.py on the sample."""

    help: str
    description: str
    examples: tuple[str, ...] = ()
    report: Callable[[Any], str] | None = None
    summary: Callable[[Any], dict[str, Any]] | None = None
    writes: tuple[str, ...] = ()
    flags: tuple[tuple[str, str], ...] = ()
    main: Callable[[Any, Any], int] | None = None


@dataclass(frozen=True)
class Stage:
    """One stage, as the pipeline runs it.

    `name`: the stage kind (`dsir` for the run's `dsir:web`); `config`: its config dataclass,
    which the CLI and the API fill too; `section`: its YAML section (`dedup.fuzzy`; `learn[]` for
    a list of items, each a stage named `learn:LABEL` with `label`); `order`: its place in the
    run. `shared`: fields read from another YAML key (field -> dotted path); `derived`: fields the
    pipeline fills (field -> why; `placed(layout)` gives their values, `progress` aside); `types`:
    YAML-side types where they differ from the dataclass.

    `run`: a config -> `Outcome`. `complete(layout, name, config)`: are all its outputs there?
    With it, the stage is tracked by a state file keyed by its content config and `upstream`
    (what it depends on besides the annotate shards, which everything depends on) and skipped
    when done. Without it the stage resumes shard by shard by itself, runs every time, and
    `output_key(layout)` fingerprints its outputs for the stages after it.

    `resolve(section, base)`: make the section's paths absolute beyond the common path fields;
    `check(data, errors)`: cross-checks of the whole resolved file that concern this stage;
    `finish(kwargs, base, where)`: turn YAML values into what the config takes (a recipe
    mapping into a `Recipe`), raising ValueError naming `where`; `record(section)`: fill the
    resolved file's section with what a run actually uses where the file left it to a default
    found at run time (annotate's word lists), so the resolved file repeats the run exactly.

    For `--dry-run`: `estimate(config, corpus)` is the stage's row of the plan (peak memory, disk
    written; `stages.planning`); `output_sets(config, layout, where)` lists the attribute sets it
    will write with their columns, so recipe rules are checked against them before anything runs
    (`planning.PlanError` naming `where` for a config that cannot work). A config with a
    `recipe` has it compiled against the sets of the stages before it.

    For the CLI and the API: `call(config)` runs the stage and returns its result dataclass
    (what `ts.<api_name>()` returns); `first` names the config field the API takes positionally
    (`directory`, `inputs`); `prepare(value, options)` turns that argument into the field's value
    (annotate takes a Hugging Face dataset); `preview(config)` is what `dry_run=True` returns
    instead of running (select's funnel, mix's plan); `cli_spec` is its `textsieve` command."""

    name: str
    config: type
    section: str
    run: Callable[[Any], Outcome]
    order: int
    placed: Callable[[Layout], dict[str, Any]]
    derived: dict[str, str]
    shared: dict[str, str] = field(default_factory=lambda: {"overwrite": "overwrite"})
    types: dict[str, Any] = field(default_factory=dict)
    complete: Callable[[Layout, str, Any], bool] | None = None
    upstream: Upstream = no_upstream
    output_key: Callable[[Layout], str] | None = None
    label: Callable[[dict[str, Any]], str] | None = None
    always: bool = False
    resolve: Callable[[dict[str, Any], Path], None] | None = None
    check: Callable[[Mapping[str, Any], list[str]], None] | None = None
    finish: Callable[[dict[str, Any], Path, str], None] | None = None
    record: Callable[[dict[str, Any]], None] | None = None
    estimate: Callable[[Any, Corpus], StagePlan] | None = None
    output_sets: Callable[[Any, Layout, str], list[PlannedSet]] | None = None
    call: Callable[[Any], Any] | None = None
    first: str = "directory"
    prepare: Callable[[Any, dict[str, Any]], Any] | None = None
    preview: Callable[[Any], Any] | None = None
    cli_spec: CliSpec | None = None
    command: str = ""  # its `textsieve` command, when not the name with spaces (`learn apply`)
    #: for a list section: the fields the layout fixes per item, given the item's label (`sources:`)
    placed_item: Callable[[Layout, str], dict[str, Any]] | None = None
    #: the section, when given, makes the documents (annotate reads them): the file needs no `inputs`
    feeds_inputs: bool = False
    api: str = ""  # its `textsieve.api` function, when not the name (`learn_apply`)

    @property
    def cli(self) -> str:
        return self.command or self.name.replace("_", " ")

    @property
    def api_name(self) -> str:
        return self.api or self.name

    def __post_init__(self) -> None:
        if (self.complete is None) == (self.output_key is None):
            raise ValueError(f"stage {self.name}: give exactly one of complete (state-tracked) or output_key "
                             "(self-resuming)")
        if self.cli_spec is not None and self.call is None and self.cli_spec.main is None:
            raise ValueError(f"stage {self.name}: a command needs call (or its own main)")
        if self.section.endswith("[]") != (self.label is not None):
            raise ValueError(f"stage {self.name}: a list section ({self.section}) needs a label, and only it")


def key_of(*parts: Any) -> str:
    """A short stable key of JSON-able parts: a state key, or a self-resuming stage's output key."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def recipe_value(value: Any, base: Path, where: str) -> Any:
    """A recipe from the pipeline file (a mapping written inline, a file or a bundled name) as a
    `Recipe`; None stays None. A bad recipe raises ValueError naming `where`."""
    if value is None:
        return None
    try:
        if isinstance(value, dict):
            return Recipe.from_dict(value, name=str(value.get("name", "pipeline")), base=base)
        return load_recipe(value)
    except RecipeError as exc:
        raise ValueError(f"{where}: {exc}") from None


#: a stage config's fields that are pipeline-wide wherever a config has them (top of the file)
EXECUTOR_FIELDS = ("executor", "address")


def shared_fields(stage: Stage) -> dict[str, str]:
    """`stage.shared`, plus the executor choice wherever a stage config has one: it is
    pipeline-wide (`executor`, `address` at the top of the file)."""
    names = {f.name for f in fields(stage.config)}
    return {**{k: k for k in EXECUTOR_FIELDS if k in names}, **stage.shared}
