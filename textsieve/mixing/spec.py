"""The mix file (`mix.yaml`): which selections go into a training mix, at what shares.

Why a module of its own: the same file drives `textsieve mix`, `ts.mix` and a pipeline's `mix:`
section, and a typo in it must fail before any document is read, naming the key (a share that
silently defaulted would skew a whole training run). Schema (relative paths are relative to the
mix file's folder)::

    tokens: 5M                # total token budget (int, or 500K / 5M / 2B)
    tokenizer: tok.json       # tokenizers JSON or tiktoken file; `words` = estimated counts (no `bin`)
    seed: 0
    shard_size: 5M tokens     # or bytes: 64MB (uncompressed record bytes; a document is never split)
    format: jsonl.zst         # jsonl.zst | parquet | bin
    sources:
      - name: web
        attributes: attrs/    # an annotate folder, with
        recipe: gopher        #   a recipe (bundled name or YAML path) and/or
        dsir: wiki            #   a DSIR draw (after `dsir fit`): k: N or dsir_tokens: N, replace, temperature
        share: 0.7            # of the total tokens (or `weight:`, normalised over the sources)
        max_epochs: 2         # upsampling cap (default 1: no document repeats)
        redact: [pii]         # optional: spans replaced as `select --redact` does (pii placeholders,
                              #   or span columns such as ts_contam_spans removed), before counting
      - name: wiki
        selection: wiki-sel/  # a `textsieve select` output folder
        share: 0.3

Every source needs exactly one of `attributes:` / `selection:`; all sources use `share:` or all
use `weight:`. `mix` options on the command line (`--tokens`, `--seed`, ...) override the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from textsieve.errors import TextsieveError

FORMATS = ("jsonl.zst", "parquet", "bin")
WORDS = "words"  # `tokenizer: words`: estimated token counts (word/punctuation tokens), labelled as such
TOP_KEYS = ("sources", "tokens", "tokenizer", "seed", "shard_size", "format")
SOURCE_KEYS = ("name", "attributes", "selection", "recipe", "dsir", "k", "dsir_tokens", "replace", "temperature",
               "share", "weight", "max_epochs", "text_field", "redact")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_COUNT = re.compile(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmbgt]?)\s*", re.I)
_SHARD = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)\s*(i?b|bytes|tokens?)\s*", re.I)


class MixError(TextsieveError, ValueError):
    """A mix file or mix setting that cannot be used (the message names the key)."""


@dataclass
class SourceSpec:
    """One source of a mix, as the file gives it (paths resolved against the file's folder)."""

    name: str
    attributes: str | None = None
    selection: str | None = None
    recipe: str | None = None
    dsir: str | None = None
    k: int | None = None
    dsir_tokens: int | None = None
    replace: bool = False
    temperature: float | None = None
    share: float | None = None
    weight: float | None = None
    max_epochs: float = 1.0
    text_field: str = "text"
    redact: list[str] | None = None  # `select --redact` names (attributes sources), None: no redaction

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class MixSpec:
    """A parsed, checked mix file."""

    sources: list[SourceSpec]
    tokens: int | None = None
    tokenizer: str | None = None
    seed: int = 0
    shard_size: str = "5M tokens"
    format: str = "jsonl.zst"
    path: str | None = None  # the file it came from
    extra: dict[str, Any] = field(default_factory=dict)

    def shares(self) -> list[float]:
        """Each source's share of the total tokens (weights normalised; shares as given)."""
        if all(s.weight is not None for s in self.sources):
            total = sum(s.weight or 0.0 for s in self.sources)
            return [(s.weight or 0.0) / total if total > 0 else 0.0 for s in self.sources]
        return [float(s.share or 0.0) for s in self.sources]


def parse_count(value: Any, key: str) -> int:
    """A token count: an int or '500K', '5M', '2B' (decimal)."""
    if isinstance(value, bool):
        raise MixError(f"{key}: expected a token count such as 5000000 or 5M, not {value!r}")
    if isinstance(value, (int, float)):
        n = int(value)
    else:
        m = _COUNT.fullmatch(str(value))
        if not m:
            raise MixError(f"{key}: cannot read {value!r}; use a count such as 5000000, 500K, 5M or 2B")
        n = int(float(m.group(1)) * 1000 ** " kmbt".index((m.group(2) or " ").lower().replace("g", "b")))
    if n < 1:
        raise MixError(f"{key}: {value!r} must be at least 1")
    return n


def parse_shard_size(value: Any, key: str = "shard_size") -> tuple[int, str]:
    """(amount, unit) of a shard size: '5M tokens' / 5000 (tokens) or '64MB' / '512KiB' (bytes)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_count(value, key), "tokens"
    m = _SHARD.fullmatch(str(value))
    if m is None:
        try:
            return parse_count(value, key), "tokens"
        except MixError:
            raise MixError(f"{key}: cannot read {value!r}; use e.g. '5M tokens', 20000 (tokens) or '64MB', "
                           "'512KiB' (bytes)") from None
    number, prefix, unit = float(m.group(1)), (m.group(2) or "").lower(), m.group(3).lower()
    if unit.startswith("token"):
        n = int(number * 1000 ** " kmgt".index(prefix or " "))
        kind = "tokens"
    else:
        base = 1024 if unit == "ib" else 1000
        n = int(number * base ** " kmgt".index(prefix or " "))
        kind = "bytes"
    if n < 1:
        raise MixError(f"{key}: {value!r} must be positive")
    return n, kind


def _num(value: Any, key: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MixError(f"{key}: expected a number, not {value!r}")
    if value < 0 or (positive and value <= 0):
        raise MixError(f"{key}: must be {'> 0' if positive else '>= 0'}, not {value!r}")
    return float(value)


def _path(value: Any, key: str, base: str | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MixError(f"{key}: expected a path, not {value!r}")
    if base is None or "://" in value or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(base, value))


def _recipe_value(value: Any, key: str, base: str | None) -> str:
    """A bundled recipe name stays a name; a YAML path is resolved against the mix file."""
    if not isinstance(value, str) or not value.strip():
        raise MixError(f"{key}: expected a bundled recipe name or a YAML path, not {value!r}")
    if value.endswith((".yaml", ".yml")):
        return _path(value, key, base)
    return value


def _redact_names(value: Any, key: str) -> list[str]:
    """`redact:` as `select --redact` takes it: a list of names (a string may list them with commas)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(v, str) and v.strip() for v in items):
        raise MixError(f"{key}: expected a list of names, e.g. [pii] or [pii, ts_contam_spans], not {value!r}")
    return list(dict.fromkeys(n.strip() for v in items for n in v.split(",") if n.strip()))


def parse_source(raw: Any, i: int, base: str | None) -> SourceSpec:
    """One `sources:` entry, checked."""
    where = f"sources[{i}]"
    if not isinstance(raw, dict):
        raise MixError(f"{where}: expected a mapping with name, attributes or selection, share or weight")
    unknown = sorted(set(raw) - set(SOURCE_KEYS))
    if unknown:
        raise MixError(f"{where}.{unknown[0]}: unknown key (expected one of {', '.join(SOURCE_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise MixError(f"{where}.name: expected a name of letters, digits, '_', '-', '.', not {name!r}")
    where = f"sources[{i}] ({name})"
    if ("attributes" in raw) == ("selection" in raw):
        raise MixError(f"{where}: give exactly one of attributes: (an annotate folder) or selection: "
                       "(a `textsieve select` output folder)")
    spec = SourceSpec(name=name)
    if "selection" in raw:
        bad = [k for k in ("recipe", "dsir", "k", "dsir_tokens", "replace", "temperature") if k in raw]
        if bad:
            raise MixError(f"{where}.{bad[0]}: only for an attributes: source (a selection is already selected)")
        if "redact" in raw:
            raise MixError(f"{where}.redact: only for an attributes: source (write the selection with "
                           "`textsieve select --redact` instead)")
        spec.selection = _path(raw["selection"], f"{where}.selection", base)
    else:
        spec.attributes = _path(raw["attributes"], f"{where}.attributes", base)
        if "recipe" in raw:
            spec.recipe = _recipe_value(raw["recipe"], f"{where}.recipe", base)
        if "dsir" in raw:
            if not isinstance(raw["dsir"], str):
                raise MixError(f"{where}.dsir: expected targets such as 'wiki' or 'wiki:0.7,code:0.3'")
            spec.dsir = raw["dsir"]
            if ("k" in raw) == ("dsir_tokens" in raw):
                raise MixError(f"{where}.dsir: give exactly one of k: (documents to draw) or dsir_tokens:")
        elif any(k in raw for k in ("k", "dsir_tokens", "replace", "temperature")):
            key = next(k for k in ("k", "dsir_tokens", "replace", "temperature") if k in raw)
            raise MixError(f"{where}.{key}: only with dsir:")
        if spec.recipe is None and spec.dsir is None:
            raise MixError(f"{where}: an attributes: source needs recipe: and/or dsir:")
        if "k" in raw:
            spec.k = parse_count(raw["k"], f"{where}.k")
        if "dsir_tokens" in raw:
            spec.dsir_tokens = parse_count(raw["dsir_tokens"], f"{where}.dsir_tokens")
        if "replace" in raw:
            if not isinstance(raw["replace"], bool):
                raise MixError(f"{where}.replace: expected true or false")
            spec.replace = raw["replace"]
        if "temperature" in raw:
            spec.temperature = _num(raw["temperature"], f"{where}.temperature", positive=True)
        if "redact" in raw:
            spec.redact = _redact_names(raw["redact"], f"{where}.redact")
    if ("share" in raw) == ("weight" in raw):
        raise MixError(f"{where}: give exactly one of share: (of the total tokens) or weight:")
    if "share" in raw:
        spec.share = _num(raw["share"], f"{where}.share")
    else:
        spec.weight = _num(raw["weight"], f"{where}.weight")
    if "max_epochs" in raw:
        spec.max_epochs = _num(raw["max_epochs"], f"{where}.max_epochs", positive=True)
    if "text_field" in raw:
        if not isinstance(raw["text_field"], str) or not raw["text_field"]:
            raise MixError(f"{where}.text_field: expected a field name")
        spec.text_field = raw["text_field"]
    return spec


def parse_mix(data: Any, base: str | None = None, path: str | None = None) -> MixSpec:
    """A mix from its parsed YAML (`base`: the folder relative paths are resolved against)."""
    where = path or "mix"
    if not isinstance(data, dict):
        raise MixError(f"{where}: expected a mapping with sources:, tokens:, ...")
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise MixError(f"{where}: {unknown[0]}: unknown key (expected one of {', '.join(TOP_KEYS)})")
    raw_sources = data.get("sources")
    if not isinstance(raw_sources, list) or not raw_sources:
        raise MixError(f"{where}: sources: expected a list of at least one source")
    sources = [parse_source(s, i, base) for i, s in enumerate(raw_sources)]
    names = [s.name for s in sources]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise MixError(f"sources: name {dup!r} given twice")
    if len({s.share is None for s in sources}) > 1:
        raise MixError("sources: mix share: and weight: is ambiguous; give every source a share: or every "
                       "source a weight:")
    spec = MixSpec(sources=sources, path=path)
    if "tokens" in data:
        spec.tokens = parse_count(data["tokens"], "tokens")
    if "tokenizer" in data:
        tok = data["tokenizer"]
        spec.tokenizer = WORDS if tok == WORDS else _path(tok, "tokenizer", base)
    if "seed" in data:
        if isinstance(data["seed"], bool) or not isinstance(data["seed"], int):
            raise MixError(f"seed: expected an integer, not {data['seed']!r}")
        spec.seed = data["seed"]
    if "shard_size" in data:
        parse_shard_size(data["shard_size"])
        spec.shard_size = str(data["shard_size"])
    if "format" in data:
        if data["format"] not in FORMATS:
            raise MixError(f"format: expected one of {', '.join(FORMATS)}, not {data['format']!r}")
        spec.format = data["format"]
    return spec


def bundled_mixes() -> list[str]:
    """The names of the mixes that ship with textsieve (`llama1`: LLaMA-1's sources and shares)."""
    from importlib import resources

    return sorted(p.name[:-len(".yaml")] for p in resources.files("textsieve.mixing").joinpath("bundled").iterdir()
                  if p.name.endswith(".yaml"))


def load_mix(path: str) -> MixSpec:
    """Read and check a mix file (YAML), or a bundled mix by name (`llama1`), whose relative
    paths are resolved in the current folder (a bundled file cannot know where your data is)."""
    import yaml

    if not os.path.exists(path) and os.sep not in path and path in bundled_mixes():
        from importlib import resources

        text = resources.files("textsieve.mixing").joinpath("bundled", f"{path}.yaml").read_text("utf-8")
        return parse_mix(yaml.safe_load(text), os.getcwd(), f"{path} (bundled)")
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise MixError(f"{path}: no such mix file (bundled mixes: {', '.join(bundled_mixes())})") from None
    except yaml.YAMLError as exc:
        raise MixError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    return parse_mix(data, os.path.dirname(os.path.abspath(path)), path)


__all__ = ["FORMATS", "WORDS", "MixError", "MixSpec", "SourceSpec", "bundled_mixes", "load_mix", "parse_count",
           "parse_mix", "parse_shard_size"]
