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
    embed:    {model, name, ...}                           (-> OUT/attrs/_embed_MODEL; semantic dedup, DSIR read it)
    dedup:    {exact: {normalize, bloom_fp, ...}, fuzzy: {thresholds, bands, verify, keep, ...},
               lines: {normalize, group_shards, bloom_fp, ...}, semantic: {eps, keep, clusters, ...}}
              (semantic needs embeddings: an embed: section, or annotate.signals naming embed)
    decontaminate: {against: [name=path, ...], fields, ngram, bloom_fp, ...}   (-> OUT/attrs/_decontam)
    pii:      {types, phone_regions, ...}                  (-> OUT/attrs/_pii; select.redact: [pii] uses it)
    tokens:   {tokenizer, name, ...}                       (-> OUT/attrs/_tokens_NAME)
    learn:    [{model}, ...]     (`learn apply`: a learned model over embeddings, n-grams or trees
              -> OUT/attrs/_learned_NAME, which select's recipe reads for NAME.predict)
    dsir:     [{name, targets, buckets, ngrams, ..., recipe}, ...]   (recipe: fit the raw side on its survivors)
    select:   {recipe and/or dsir, k, tokens, format, redact, ...}  (both: DSIR draws from the survivors)
    mix:      {mix: FILE or {sources: [...], tokens, tokenizer, ...}, seed, format, ...}   (-> OUT/train)

Relative paths are relative to the pipeline file's folder. Errors name the YAML path
(`dedup.fuzzy.thresholds[1]`), and unknown keys the nearest valid one.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from textsieve.options import choices_of, default_of
from textsieve.stages.annotate import AnnotateConfig
from textsieve.stages.decontaminate import DecontamConfig
from textsieve.stages.dedup_exact import ExactConfig
from textsieve.stages.dedup_fuzzy import FuzzyConfig
from textsieve.stages.dedup_lines import LinesConfig
from textsieve.stages.dedup_semantic import SemanticConfig
from textsieve.stages.dsir_fit import DsirFitConfig
from textsieve.stages.embed import EmbedConfig
from textsieve.stages.extract import ExtractConfig
from textsieve.stages.learn_apply import LearnApplyConfig
from textsieve.stages.mix import MixConfig
from textsieve.stages.pii import PiiConfig
from textsieve.stages.select import SelectConfig
from textsieve.stages.tokens import TokensConfig

EXECUTORS = ("local", "ray")
EXECUTOR_FIELDS = ("executor", "address")
FINGERPRINTS = ("stat", "content")
PROGRESS_REASON = "set from the command line: --quiet turns progress off"
OVERWRITE_REASON = "the pipeline-wide `overwrite` key"


class PipelineConfigError(ValueError):
    """A pipeline file that does not fit the schema; the message lists every problem."""


@dataclass(frozen=True)
class StageSpec:
    """How one stage config dataclass maps onto the YAML file.

    `section`: the YAML section holding its own fields; `shared`: fields read from another YAML
    key (field -> dotted path); `derived`: fields the pipeline fills (field -> why)."""

    name: str
    cls: type
    section: str
    shared: dict[str, str] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)  # YAML-side type where it differs

    def shared_fields(self) -> dict[str, str]:
        """`shared`, plus the executor choice wherever a stage config has one: it is
        pipeline-wide (`executor`, `address` at the top of the file)."""
        names = {f.name for f in fields(self.cls)}
        return {**{k: k for k in EXECUTOR_FIELDS if k in names}, **self.shared}


STAGES: tuple[StageSpec, ...] = (
    StageSpec("extract", ExtractConfig, "extract",
              shared={"inputs": "inputs", "on_error": "read.on_error", "overwrite": "overwrite"},
              derived={"output": "always OUT/docs (annotate then reads OUT/docs instead of the inputs)",
                       "progress": PROGRESS_REASON}),
    StageSpec("annotate", AnnotateConfig, "annotate",
              shared={"inputs": "inputs", "text_field": "read.text_field", "id_field": "read.id_field",
                      "lang_field": "read.lang_field", "on_error": "read.on_error", "overwrite": "overwrite"},
              derived={"output": "always OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("embed", EmbedConfig, "embed", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("dedup_exact", ExactConfig, "dedup.exact",
              shared={"text_field": "read.text_field", "id_field": "read.id_field", "overwrite": "overwrite"},
              derived={"inputs": "always the annotate folder OUT/attrs (texts are re-read from its sources)",
                       "output": "always OUT/attrs (the set goes to OUT/attrs/_dedup_exact, or "
                                 "_dedup_exact_rpv2 etc. named by the settings)",
                       "progress": PROGRESS_REASON}),
    StageSpec("dedup_fuzzy", FuzzyConfig, "dedup.fuzzy", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("dedup_lines", LinesConfig, "dedup.lines", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("dedup_semantic", SemanticConfig, "dedup.semantic", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs (its _embed_MODEL set)",
                       "progress": PROGRESS_REASON}),
    StageSpec("decontaminate", DecontamConfig, "decontaminate", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("pii", PiiConfig, "pii", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("tokens", TokensConfig, "tokens", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("learn", LearnApplyConfig, "learn[]", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON}),
    StageSpec("dsir", DsirFitConfig, "dsir[]", shared={"overwrite": "overwrite"},
              derived={"raw": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              types={"recipe": str | dict | None}),
    StageSpec("select", SelectConfig, "select", shared={"overwrite": "overwrite"},
              derived={"directory": "always the annotate folder OUT/attrs", "output": "always OUT/selected",
                       "progress": PROGRESS_REASON},
              types={"recipe": str | dict | None, "dsir": str | list | dict | None}),
    StageSpec("mix", MixConfig, "mix", shared={"overwrite": "overwrite"},
              derived={"output": "always OUT/train (shards and manifest.json)", "progress": PROGRESS_REASON},
              types={"mix": str | dict}),
)

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

    @property
    def required(self) -> bool:
        return self.default is MISSING


def _hints(cls: type) -> dict[str, Any]:
    import textsieve.recipes.language as recipe_mod

    return typing.get_type_hints(cls, {**vars(recipe_mod), **vars(__import__(cls.__module__, fromlist=["_"]))})


def section_keys(spec: StageSpec) -> dict[str, Key]:
    """The YAML keys of a stage's own section, from its dataclass (minus shared/derived fields)."""
    hints = _hints(spec.cls)
    choices = choices_of(spec.cls)
    out = {}
    for f in fields(spec.cls):
        if f.name in spec.shared_fields() or f.name in spec.derived:
            continue
        out[f.name] = Key(spec.types.get(f.name, hints[f.name]), default_of(f), choices.get(f.name))
    return out


def schema() -> dict[str, Any]:
    """The whole YAML schema: {key: Key | {sub-schema} | [sub-schema]} (a list = a list of sections)."""
    top: dict[str, Any] = {k: Key(t, d, c) for k, (t, d, c) in TOP_KEYS.items()}
    ann_hints = _hints(AnnotateConfig)
    ann_defaults = {f.name: default_of(f) for f in fields(AnnotateConfig)}
    ann_choices = choices_of(AnnotateConfig)
    top["read"] = {name: Key(ann_hints[name], ann_defaults[name], ann_choices.get(name))
                   for name in ("text_field", "id_field", "lang_field", "on_error")}
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
                out[k] = None if k not in ("read", "annotate", "dedup") else _walk({}, spec, sub, errors)
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
        if kind == "dsir":
            return next(j for j, f in enumerate(self.data["dsir"]) if f["name"] == label)
        return next(j for j, item in enumerate(self.data[kind]) if learn_label(item) == label)

    def stages(self) -> list[str]:
        """Stage names in run order."""
        d = self.data
        out = (["extract"] if d["extract"] is not None else []) + ["annotate"]
        if d["embed"] is not None:
            out.append("embed")
        if d["dedup"]["exact"] is not None:
            out.append("dedup_exact")
        if d["dedup"]["fuzzy"] is not None:
            out.append("dedup_fuzzy")
        if d["dedup"]["lines"] is not None:
            out.append("dedup_lines")
        if d["dedup"].get("semantic") is not None:
            out.append("dedup_semantic")
        out += [name for name in ("decontaminate", "pii", "tokens") if d[name] is not None]
        out += [f"learn:{learn_label(item)}" for item in d["learn"]]
        out += [f"dsir:{fit['name']}" for fit in d["dsir"]]
        if d["select"] is not None:
            out.append("select")
        if d["mix"] is not None:
            out.append("mix")
        return out


def learn_label(item: dict[str, Any]) -> str:
    """A `learn:` item's name in the run: its model file's name without the extension."""
    return Path(str(item.get("model") or "model")).name.removesuffix(".json")


def _absolute(value: Any, base: Path) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_absolute(v, base) for v in value]
    s = str(value)
    if "://" in s or s.startswith("builtin:") or Path(s).is_absolute():
        return s
    return str((base / s).resolve())


def _resolve_paths(d: dict[str, Any], base: Path) -> None:
    d["inputs"] = _absolute([d["inputs"]] if isinstance(d["inputs"], str) else d["inputs"], base)
    d["output"] = _absolute(d["output"], base)
    dedup = d["dedup"]
    emb = d["embed"]
    if emb and emb.get("model") is not None:  # a builtin model name is not a path
        from textsieve.embedding.models import BUILTINS

        model = str(emb["model"])
        if model.removeprefix("builtin:") not in BUILTINS or (base / model).exists():
            emb["model"] = _absolute(model, base)
    sections = [d["extract"], d["annotate"], dedup["exact"], dedup["fuzzy"], dedup["lines"],
                dedup.get("semantic"), d["decontaminate"],
                d["pii"], d["tokens"], d["select"], *d["dsir"], d["mix"]]
    for item in d["learn"]:  # a learned model file
        if item.get("model") is not None:
            item["model"] = _absolute(item["model"], base)
    for sec in sections:
        if not sec:
            continue
        for k in PATH_FIELDS & set(sec):
            if k == "tokenizer" and sec[k] == "words":
                continue  # mix's estimated counts, not a file
            sec[k] = _absolute(sec[k], base)
    if d["decontaminate"]:  # `name=path` keeps its name; the path is the file's
        d["decontaminate"]["against"] = [_named_path(v, base) for v in d["decontaminate"]["against"]]
    if d["mix"]:
        d["mix"]["mix"] = _mix_paths(d["mix"]["mix"], base)
    ann = d["annotate"]
    ann["models"] = {name: _absolute(path, base) for name, path in (ann.get("models") or {}).items()}
    for sec in [d["select"], *d["dsir"]]:  # a recipe file (not a bundled name) is a path
        if sec and isinstance(sec.get("recipe"), str):
            r = sec["recipe"]
            if r.endswith((".yaml", ".yml")) or (base / r).exists():
                sec["recipe"] = _absolute(r, base)


def _named_path(value: str, base: Path) -> str:
    """A benchmark given as `name=path` or `path`, with the path made absolute."""
    name, sep, rest = value.partition("=")
    if sep and name and "/" not in name and "://" not in name:
        return f"{name}={_absolute(rest, base)}"
    return str(_absolute(value, base))


def _mix_paths(value: Any, base: Path) -> Any:
    """The mix: a file (made absolute) or a mapping written inline, whose sources' folders,
    recipe files and tokenizer are made absolute against the pipeline file's folder."""
    if isinstance(value, str):
        return _absolute(value, base)
    if not isinstance(value, dict):
        return value
    out = dict(value)
    if isinstance(out.get("tokenizer"), str) and out["tokenizer"] != "words":
        out["tokenizer"] = _absolute(out["tokenizer"], base)
    sources = []
    for src in out.get("sources") or []:
        if isinstance(src, dict):
            src = dict(src)
            for k in ("attributes", "selection"):
                if isinstance(src.get(k), str):
                    src[k] = _absolute(src[k], base)
            r = src.get("recipe")
            if isinstance(r, str) and (r.endswith((".yaml", ".yml")) or (base / r).exists()):
                src["recipe"] = _absolute(r, base)
        sources.append(src)
    if "sources" in out:
        out["sources"] = sources
    return out


def parse_dsir_targets(value: Any, path: str) -> list[tuple[str, float]]:
    """select.dsir: "wiki", "wiki:0.7,books:0.3", ["wiki", ...], [[name, w]] or {name: w}
    (the one parser, `textsieve.dsir.targets`), errors naming the YAML path."""
    from textsieve.dsir.targets import DsirTargetsError
    from textsieve.dsir.targets import parse_dsir_targets as parse

    try:
        return parse(value, path)
    except DsirTargetsError as exc:
        raise PipelineConfigError(str(exc)) from None


def _signal_items(spec: Any) -> list[str]:
    if spec is None:
        return []
    items = spec.split(",") if isinstance(spec, str) else [str(s) for s in spec]
    return [s.strip() for s in items]


def has_embeddings(d: dict[str, Any]) -> bool:
    """Does the pipeline make embeddings (an `embed:` section, or `embed` in annotate.signals)?"""
    return d["embed"] is not None or "embed" in _signal_items((d["annotate"] or {}).get("signals"))


def _cross_checks(d: dict[str, Any], errors: list[str]) -> None:
    if d["executor"] != "ray" and d["address"]:
        errors.append("address: only used with executor: ray")
    if isinstance(d["inputs"], list) and not d["inputs"]:
        errors.append("inputs: give at least one file, folder or glob")
    fz = d["dedup"]["fuzzy"]
    if fz and isinstance(fz.get("thresholds"), list):
        for i, t in enumerate(fz["thresholds"]):
            if isinstance(t, (int, float)) and not isinstance(t, bool) and not 0 < t <= 1:
                errors.append(f"dedup.fuzzy.thresholds[{i}]: {t} must be in (0, 1]")
        if not fz["thresholds"]:
            errors.append("dedup.fuzzy.thresholds: give at least one threshold")
    sem = d["dedup"].get("semantic")
    if sem and isinstance(sem.get("eps"), list):
        for i, e in enumerate(sem["eps"]):
            if isinstance(e, (int, float)) and not isinstance(e, bool) and not 0 < e < 1:
                errors.append(f"dedup.semantic.eps[{i}]: {e} must be in (0, 1)")
    if sem and isinstance(sem.get("keep"), str) and sem["keep"].startswith(("ts_tokens_", "ts_pii", "ts_contam",
                                                                          "ts_dsir_", "ts_learned_")):
        errors.append(f"dedup.semantic.keep: {sem['keep']} is written by a stage that runs after dedup; keep by "
                      "first, longest, none or an annotate signal (or run dedup semantic by hand afterwards)")
    embeds = has_embeddings(d)
    needs = (["dedup.semantic"] if sem is not None else []) + [
        f"dsir[{i}]" for i, fit in enumerate(d["dsir"]) if fit.get("features") in ("embed", "combined")]
    if needs and not embeds:
        errors.append(f"{needs[0]}: needs embeddings; add an `embed:` section (or `embed` to annotate.signals)")
    names = [fit.get("name") for fit in d["dsir"]]
    for i, n in enumerate(names):
        if n is not None and names.index(n) != i:
            errors.append(f"dsir[{i}].name: {n!r} is used twice")
    labels = [learn_label(item) for item in d["learn"]]
    for i, item in enumerate(d["learn"]):
        if not item.get("model"):
            errors.append(f"learn[{i}].model: give the model file `textsieve learn` wrote")
        elif labels.index(labels[i]) != i:
            errors.append(f"learn[{i}].model: another learn item's model file is also named {labels[i]}")
    dec = d["decontaminate"]
    if dec is not None and not dec.get("against"):
        errors.append("decontaminate.against: give at least one benchmark file or folder (name=path or path)")
    tok = d["tokens"]
    if tok is not None and not tok.get("tokenizer"):
        errors.append("tokens.tokenizer: give the tokenizer file (a tokenizer.json or tiktoken file)")
    sel = d["select"]
    if sel is not None:
        if sel.get("recipe") is None and sel.get("dsir") is None:
            errors.append("select: give 'recipe' (filter), 'dsir' (resample) or both (DSIR then draws from the "
                          "recipe's survivors)")
        elif sel.get("dsir") is not None and (sel.get("k") is None) == (sel.get("tokens") is None):
            errors.append("select: with 'dsir', give exactly one of 'k' (documents) or 'tokens'")


def validate(doc: Any, source: str = "<string>", base: Path | None = None) -> PipelineConfig:
    """Check a parsed pipeline mapping; raise PipelineConfigError listing every problem."""
    errors: list[str] = []
    if not isinstance(doc, dict):
        raise PipelineConfigError(f"{source}: expected a mapping of keys (inputs, output, ...), got {_show(doc)}")
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

