"""The pipeline file: its schema, built from the stage config dataclasses, and its validation.

Every stage already has one typed config dataclass that its CLI command fills
(`AnnotateConfig`, `ExactConfig`, `FuzzyConfig`, `DsirFitConfig`, `SelectConfig`). The YAML
schema is generated from those same dataclasses (`STAGES`: which YAML key holds each field, or
why a field is derived by the pipeline), so a new stage option is a YAML key the moment it is a
dataclass field, with the same type and default; `tests/test_pipeline.py` checks that
mechanically against the CLI parsers too.

Layout of the file (all sections optional except `inputs` and `output`; a stage runs when its
section is present, annotate always runs, after extract when there is one):

    inputs: [docs/*.jsonl.gz]      output: out/      executor: local|ray   address: null
    workers: null                  overwrite: false  fingerprint: stat|content
    read:     {text_field, id_field, lang_field, on_error}
    extract:  {engine, fix_text, format, ...}   (web archives/HTML pages -> OUT/docs, which annotate reads)
    annotate: {signals, lang, models, resources, batch_size, workers}
    embed:    {model, name, ...}                           (-> OUT/attrs/sets/embed_MODEL; semantic dedup, DSIR read it)
    dedup:    {exact: {normalize, bloom_fp, ...}, fuzzy: {thresholds, bands, verify, keep, ...},
               lines: {normalize, group_shards, bloom_fp, ...}, semantic: {eps, keep, clusters, ...}}
              (semantic needs embeddings: an embed: section, or annotate.signals naming embed)
    decontaminate: {against: [name=path, ...], fields, ngram, bloom_fp, ...}   (-> OUT/attrs/sets/decontam)
    pii:      {types, phone_regions, ...}                  (-> OUT/attrs/sets/pii; select.redact: [pii] uses it)
    tokens:   {tokenizer, name, ...}                       (-> OUT/attrs/sets/tokens_NAME)
    learn:    [{model}, ...]     (`learn apply`: a learned model over embeddings, n-grams or trees
              -> OUT/attrs/sets/learned_NAME, which select's recipe reads for NAME.predict)
    dsir:     [{name, targets, buckets, ngrams, ..., recipe}, ...]   (recipe: fit the raw side on its survivors)
    select:   {recipe and/or dsir, k, tokens, format, redact, ...}  (both: DSIR draws from the survivors)
    mix:      {mix: FILE or {sources: [...], tokens, tokenizer, ...}, seed, format, ...}   (-> OUT/train)

Every key is the name of its setting on the CLI (`--thresholds`) and in Python (`thresholds=`)
too: the config dataclass's field name (`textsieve.options`; docs/options.md lists them all).

`read:` holds the reading settings of every stage that reads documents (extract's `on_error`,
annotate's and dedup exact's `text_field`, ...). A stage's own section may repeat one of them to
override it for that stage only: `extract: {on_error: skip}` skips damaged archive records while
annotate still stops at a bad record; `read: {on_error: skip}` is both. Why both places: the
CLI offers `--on-error` on each command, so users write it under the stage's section, while one
`read:` key keeps stages that must read alike (annotate and dedup exact) from drifting apart. An
override is kept only where it is written (the resolved file shows it there).

Relative paths are relative to the pipeline file's folder. Errors name the YAML path
(`dedup.fuzzy.thresholds[1]`), and unknown keys the nearest valid one.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from textsieve.options import choices_of, default_of
from textsieve.stages.descriptor import Stage, absolute, shared_fields
from textsieve.stages.registry import stages as registered_stages

EXECUTORS = ("local", "ray")
FINGERPRINTS = ("stat", "content")
OVERWRITE_REASON = "the pipeline-wide `overwrite` key"


class PipelineConfigError(ValueError):
    """A pipeline file that does not fit the schema; the message lists every problem."""


#: Every registered stage (`stages.registry`), in run order: each module's `STAGE` says which
#: YAML section holds its config's fields, which fields are shared or derived, and how it runs.
STAGES: tuple[Stage, ...] = registered_stages()

#: The section of reading options that every stage reading documents shares.
READ = "read"
#: Sections filled with their defaults when the file leaves them out: `read:`, the always-running
#: stage's own (annotate), and the groups of dotted sections (`dedup:`).
FILLED_WHEN_ABSENT = frozenset({READ} | {s.section for s in STAGES if s.always}
                               | {s.section.split(".")[0] for s in STAGES if "." in s.section})

#: Pipeline-wide keys that belong to no single stage: (type, default, choices).
TOP_KEYS: dict[str, tuple[Any, Any, tuple | None]] = {
    "inputs": (str | list[str], MISSING, None),
    "output": (str, MISSING, None),
    "executor": (str, "local", EXECUTORS),
    "address": (str | None, None, None),
    "workers": (int | None, None, None),
    "overwrite": (bool, False, None),
    "fingerprint": (str, "stat", FINGERPRINTS),
    "provenance": (dict | None, None, None),  # written into pipeline.resolved.yaml; checked on re-runs
}
#: Stage-config fields that are paths (resolved against the pipeline file's folder).
PATH_FIELDS = {"inputs", "output", "resources", "tmp_dir", "targets", "model_path", "tokenizer", "source_roots"}
@dataclass(frozen=True)
class Key:
    """One accepted YAML key: its type, default (MISSING = required) and allowed values."""

    type: Any
    default: Any = None
    choices: tuple | None = None
    inherits: str | None = None  # a `read:` key a stage section may override: left out when absent

    @property
    def required(self) -> bool:
        return self.default is MISSING


def _hints(cls: type) -> dict[str, Any]:
    import textsieve.recipes.language as recipe_mod

    return typing.get_type_hints(cls, {**vars(recipe_mod), **vars(__import__(cls.__module__, fromlist=["_"]))})


def read_overrides(spec: Stage) -> dict[str, str]:
    """{field: `read.` path} of the reading settings a stage's section may override."""
    return {name: path for name, path in shared_fields(spec).items() if path.startswith(f"{READ}.")}


def section_keys(spec: Stage) -> dict[str, Key]:
    """The YAML keys of a stage's own section, from its dataclass (minus shared/derived fields),
    plus the `read:` keys it may override for itself."""
    hints = _hints(spec.config)
    choices = choices_of(spec.config)
    overrides = read_overrides(spec)
    out = {}
    for f in fields(spec.config):
        if f.name in spec.derived or (f.name in shared_fields(spec) and f.name not in overrides):
            continue
        out[f.name] = Key(spec.types.get(f.name, hints[f.name]), default_of(f), choices.get(f.name),
                          overrides.get(f.name))
    return out


def read_settings(data: dict[str, Any], spec: Stage, item: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `read:` settings as stage `spec` reads with them: `read:` and the overrides in its
    section (`item`: the section, or the list section's item, when already at hand)."""
    own = item if item is not None else section_value(data, spec)
    own = own if isinstance(own, dict) else {}
    return {**data[READ], **{path[len(READ) + 1:]: own[name] for name, path in read_overrides(spec).items()
                             if name in own}}


def read_keys() -> dict[str, Key]:
    """The `read:` section: the reading fields stages share (`read.text_field`, ...), typed and
    defaulted by the first stage that reads them, the always-running one (annotate) first."""
    keys: dict[str, Key] = {}
    for spec in sorted(STAGES, key=lambda s: not s.always):
        hints, choices = _hints(spec.config), choices_of(spec.config)
        by_name = {f.name: f for f in fields(spec.config)}
        for name, path in shared_fields(spec).items():
            if path.startswith(f"{READ}."):
                keys.setdefault(path[len(READ) + 1:], Key(hints[name], default_of(by_name[name]), choices.get(name)))
    return keys


def schema() -> dict[str, Any]:
    """The whole YAML schema: {key: Key | {sub-schema} | [sub-schema]} (a list = a list of sections)."""
    top: dict[str, Any] = {k: Key(t, d, c) for k, (t, d, c) in TOP_KEYS.items()}
    top[READ] = read_keys()
    for spec in STAGES:
        keys = section_keys(spec)
        if spec.section.endswith("[]"):
            top[spec.section[:-2]] = [keys]
            continue
        node = top
        *parents, leaf = spec.section.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = keys
    return top


# ---------------------------------------------------------------- type checking

def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]" if args else origin.__name__
    return {"str": "a string", "int": "an integer", "float": "a number", "bool": "true/false",
            "dict": "a mapping", "list": "a list"}.get(getattr(tp, "__name__", str(tp)), str(tp))


def _matches(value: Any, tp: Any, path: str, errors: list[str]) -> bool:
    """Does `value` fit `tp`? Appends errors for the innermost mismatch of containers."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        for opt in options:  # the first shape that fits without errors wins
            trial: list[str] = []
            if _matches(value, opt, path, trial) and not trial:
                return True
        containers = [o for o in options if typing.get_origin(o) in (list, dict, tuple)
                      and isinstance(value, (list, tuple) if typing.get_origin(o) in (list, tuple) else dict)]
        if len(containers) == 1:  # right container, wrong element: say which element
            return _matches(value, containers[0], path, errors)
        errors.append(f"{path}: expected {_type_name(tp)}, got {_show(value)}")
        return False
    if tp is type(None):
        return value is None
    if origin in (list, tuple):
        if not isinstance(value, list):
            return False
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                errors.append(f"{path}: expected {len(args)} items, got {len(value)}")
                return True
            for i, (v, a) in enumerate(zip(value, args)):
                if not _matches(v, a, f"{path}[{i}]", errors):
                    errors.append(f"{path}[{i}]: expected {_type_name(a)}, got {_show(v)}")
            return True
        inner = args[0] if args else Any
        for i, v in enumerate(value):
            if not _matches(v, inner, f"{path}[{i}]", errors):
                errors.append(f"{path}[{i}]: expected {_type_name(inner)}, got {_show(v)}")
        return True
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            return False
        kt, vt = typing.get_args(tp) or (Any, Any)
        for k, v in value.items():
            if not _matches(k, kt, f"{path}.{k}", errors):
                errors.append(f"{path}: key {k!r} must be {_type_name(kt)}")
            if not _matches(v, vt, f"{path}.{k}", errors):
                errors.append(f"{path}.{k}: expected {_type_name(vt)}, got {_show(v)}")
        return True
    if tp is list:
        return isinstance(value, list)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return isinstance(value, tp) if isinstance(tp, type) else True


def _show(value: Any) -> str:
    kind = {bool: "true/false", int: "integer", float: "number", str: "string", list: "list", dict: "mapping",
            type(None): "null"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} {text if len(text) < 40 else text[:37] + '...'}"


def _check_value(value: Any, key: Key, path: str, errors: list[str]) -> None:
    before = len(errors)
    if not _matches(value, key.type, path, errors) and len(errors) == before:
        errors.append(f"{path}: expected {_type_name(key.type)}, got {_show(value)}")
    if key.choices and len(errors) == before and value is not None and value not in key.choices:
        errors.append(f"{path}: {value!r} is not one of {', '.join(map(str, key.choices))}")


def _unknown(key: Any, valid: list[str], path: str) -> str:
    near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]!r}?" if near else f"; valid keys: {', '.join(valid)}"
    return f"{path}: unknown key {key!r}{hint}"


def _walk(doc: Any, sch: dict[str, Any], path: str, errors: list[str], optional_sections: bool = True) -> dict:
    """Validate mapping `doc` against `sch`; return it with defaults filled."""
    where = path or "the pipeline file"
    if doc is None or doc is True:
        doc = {}
    if not isinstance(doc, dict):
        errors.append(f"{where}: expected a mapping, got {_show(doc)}")
        return {}
    out: dict[str, Any] = {}
    for k in doc:
        if k not in sch:
            errors.append(_unknown(k, list(sch), f"{path}.{k}" if path else str(k)))
    for k, spec in sch.items():
        sub = f"{path}.{k}" if path else k
        present = k in doc
        value = doc.get(k)
        if isinstance(spec, Key):
            if not present and spec.inherits:
                continue  # the stage reads `read:`'s value
            if not present:
                if spec.required:
                    errors.append(f"{sub}: required key missing")
                else:
                    out[k] = spec.default
                continue
            _check_value(value, spec, sub, errors)
            out[k] = value
        elif isinstance(spec, list):  # list of sections (dsir fits)
            if not present or value is None:
                out[k] = []
                continue
            items = value if isinstance(value, list) else None
            if items is None:
                errors.append(f"{sub}: expected a list of mappings, got {_show(value)}")
                continue
            out[k] = [_walk(item, spec[0], f"{sub}[{i}]", errors) for i, item in enumerate(items)]
        else:  # a nested section: absent or false = stage off (None)
            if not present or value is None or value is False:
                out[k] = None if k not in FILLED_WHEN_ABSENT else _walk({}, spec, sub, errors)
                continue
            out[k] = _walk(value, spec, sub, errors)
    return out


# ---------------------------------------------------------------- the validated config

@dataclass
class PipelineConfig:
    """A validated pipeline file: `data` is the resolved mapping (defaults filled, paths absolute)."""

    data: dict[str, Any]
    source: str  # the pipeline file ("<string>" when parsed from text)
    base: Path

    @property
    def output(self) -> str:
        return self.data["output"]

    def section_index(self, name: str) -> int | None:
        """Which item of its list section the stage `name` is (`dsir:web`, `learn:wiki_like`)."""
        kind, _, label = name.partition(":")
        if not label:
            return None
        stage = next(s for s in STAGES if s.name == kind)
        assert stage.label is not None
        return next(j for j, item in enumerate(self.data[stage.section[:-2]]) if stage.label(item) == label)

    def stages(self) -> list[str]:
        """Stage names in run order: every stage whose section is present (one per item of a
        list section, `dsir:NAME`), and those that always run."""
        out = []
        for stage in STAGES:
            value = section_value(self.data, stage)
            if stage.label is not None:
                out += [f"{stage.name}:{stage.label(item)}" for item in value]
            elif stage.always or value is not None:
                out.append(stage.name)
        return out


def section_value(data: dict[str, Any], stage: Stage) -> Any:
    """A stage's section of the resolved file: a mapping, a list (`learn[]`) or None (absent)."""
    node: Any = data
    for part in stage.section.removesuffix("[]").split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _resolve_paths(d: dict[str, Any], base: Path) -> None:
    """Paths made absolute against the pipeline file's folder: the inputs and output, every
    section's path fields (`PATH_FIELDS`) and what a stage's `resolve` hook knows of its own."""
    d["inputs"] = absolute([d["inputs"]] if isinstance(d["inputs"], str) else d["inputs"], base)
    d["output"] = absolute(d["output"], base)
    for stage in STAGES:
        value = section_value(d, stage)
        for sec in (value if isinstance(value, list) else [value]):
            if not sec:
                continue
            for k in PATH_FIELDS & set(sec):
                if k == "tokenizer" and sec[k] == "words":
                    continue  # mix's estimated counts, not a file
                sec[k] = absolute(sec[k], base)
            if stage.resolve is not None:
                stage.resolve(sec, base)


def parse_dsir_targets(value: Any, path: str) -> list[tuple[str, float]]:
    """select.dsir: "wiki", "wiki:0.7,books:0.3", ["wiki", ...], [[name, w]] or {name: w}
    (the one parser, `textsieve.dsir.targets`), errors naming the YAML path."""
    from textsieve.dsir.targets import DsirTargetsError
    from textsieve.dsir.targets import parse_dsir_targets as parse

    try:
        return parse(value, path)
    except DsirTargetsError as exc:
        raise PipelineConfigError(str(exc)) from None


def _fed(d: dict[str, Any]) -> bool:
    """Does a section of `d` make the documents, standing in for `inputs`?"""
    return any(d.get(s.section.removesuffix("[]")) for s in STAGES if s.feeds_inputs)


def _cross_checks(d: dict[str, Any], errors: list[str]) -> None:
    if d["executor"] != "ray" and d["address"]:
        errors.append("address: only used with executor: ray")
    if isinstance(d["inputs"], list) and not d["inputs"] and not _fed(d):
        feeders = ", ".join(f"`{s.section.removesuffix('[]')}:`" for s in STAGES if s.feeds_inputs)
        errors.append(f"inputs: give at least one file, folder or glob (or a {feeders} section, which makes them)")
    for stage in STAGES:
        if stage.check is not None:
            stage.check(d, errors)


def validate(doc: Any, source: str = "<string>", base: Path | None = None) -> PipelineConfig:
    """Check a parsed pipeline mapping; raise PipelineConfigError listing every problem."""
    errors: list[str] = []
    if not isinstance(doc, dict):
        raise PipelineConfigError(f"{source}: expected a mapping of keys (inputs, output, ...), got {_show(doc)}")
    if _fed(doc) and "inputs" not in doc:
        doc = {**doc, "inputs": []}  # a section makes the documents (`Stage.feeds_inputs`)
    data = _walk(doc, schema(), "", errors)
    if not errors:
        _cross_checks(data, errors)
    if errors:
        raise PipelineConfigError(f"{source}: {len(errors)} problem(s):\n  " + "\n  ".join(errors))
    base = base or Path.cwd()
    _resolve_paths(data, base)
    return PipelineConfig(data, source, base)


def load(path: str | Path) -> PipelineConfig:
    """Read and validate a pipeline file."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except OSError as exc:
        raise PipelineConfigError(f"{p}: cannot read the pipeline file: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PipelineConfigError(f"{p}: not valid YAML: {exc}") from None
    return validate(doc, str(p), p.resolve().parent)

