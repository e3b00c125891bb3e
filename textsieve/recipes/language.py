"""Selection recipes: named rules over attribute columns, parsed and checked before any data is read.

A recipe is an ordered list of named rules (YAML mapping or the Python API). Every rule is a
condition; a document is kept when every document rule is TRUE. The rule language:

  rps_doc_word_count between 50 and 100000     doc-level signal: the score of its single span
  rps_doc_mean_word_length >= 3 and rps_doc_mean_word_length <= 10
  rps_doc_ldnoobw_words == 0                   comparisons: < <= > >= == (or =) !=
  rps_doc_curly_bracket not between 0.01 and 1
  lang in ["en", "de"]                         membership: in [...] / not in [...] (lang: if a set has it)
  dup_exact_keep                               boolean column (any attribute set under DIR)
  not dup_fuzzy_t80_size > 1                   not, and, or, parentheses
  ts_dsir_wiki > -3.5                          DSIR log weight column (attribute set sets/dsir_wiki)
  quality.predict > 0.5                        a learned model declared under `models:`
  rps_doc_mean_word_length is null             explicit null tests: is null / is not null
  frac(rps_lines_start_with_bulletpoint == 1) <= 0.9   line-level reductions:
  sum(col)  mean(col)  min(col)  max(col)        over the document's line scores
  count(cond)  frac(cond)                        lines where cond is true (/ lines where it is known)
  sum(rps_lines_num_words) / max(rps_doc_word_count, 1)    arithmetic: + - * / and max/min(a, b)
  line: rps_lines_num_words >= 5               a LINE rule (C4): cuts the lines failing it

Nulls: a rule keeps a document only when it is TRUE. Unknown is not true, so a null score
(RPv2 gives null for e.g. the mean word length of a document without words) fails every
comparison and `not` does not rescue it (`not (x > 3)` is unknown too). Keep such documents
explicitly: `x is null or x between 3 and 10`. Reductions ignore null line scores; `sum` and
`count` of no lines are 0, `mean`, `min`, `max` and `frac` of no lines are null. A document
missing from an attribute set (no row for its shard/row) has nulls in that set's columns.

Line rules (`line: <condition>`): the condition is evaluated per line, where a line-level
column means that line's score (doc-level columns keep their document value). A line is kept
when every line rule is TRUE for it; the document's text becomes its kept lines (raw slices
[start, end) from the spans, trailing newlines included) and a document without any kept line
is dropped. Document rules are independent of line removal (they see whole-document signals,
as in spec §10).

A bare line-level column in a document rule is an error (it has one score per line): reduce
it. Invalid rules fail with the rule name, the offending column/operator and the valid names.

`extends: c4` (beside `rules:`) starts from another recipe's rules (a bundled name or a file); a
rule of the same name replaces the base's, new ones come after them.

`redact: [pii]` (beside `rules:`) makes `select` replace spans when it writes the documents, as
`select --redact pii` does: `pii` puts placeholders over the `sets/pii` set's spans (`textsieve
pii`), a span column's name (e.g. `ts_contam_spans`) removes its spans.

`repeat: {by: dup_fuzzy_t80_size, cap: 5}` (beside `rules:`) writes each kept document
min(by, cap) times (once where `by` is null or below 1): rehydration, the kept copy of a
duplicate cluster standing for the cluster.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from textsieve.recipes.rule_parser import (
    KEYWORDS,
    LINE_PREFIX,
    OPERATORS,
    REDUCTIONS,
    SCALAR_FUNCS,
    Between,
    Binary,
    Call,
    Col,
    In,
    IsNull,
    Lit,
    Node,
    RecipeError,
    Unary,
    columns_of,
    parse_rule,
)

__all__ = ["KEYWORDS", "LINE_PREFIX", "OPERATORS", "REDUCTIONS", "SCALAR_FUNCS", "Between", "Binary", "Call", "Col",
           "In", "IsNull", "Lit", "Node", "Recipe", "RecipeError", "Repeat", "Rule", "Unary", "bundled_recipes",
           "bundled_text", "columns_of", "load_recipe", "parse_rule", "resolve_model_path", "rule_errors"]

# ---------------------------------------------------------------- recipes

@dataclass(frozen=True)
class Repeat:
    """`repeat: {by: dup_fuzzy_t80_size, cap: 5}`: each kept document is written
    min(max(1, floor(by)), cap) times (1 where `by` is null). With `by` a duplicate cluster's size
    and a rule keeping one member per cluster, this is FineWeb-2's rehydration: the kept copy
    stands for its removed duplicates, up to `cap` times, without a second pass over the data.
    `by` is an expression of the rule language (a column, or arithmetic over columns)."""

    by: str
    cap: int

    @classmethod
    def from_value(cls, value: Any, recipe: str) -> Repeat:
        where = f"recipe {recipe!r}: repeat"
        if not isinstance(value, dict) or set(value) - {"by", "cap"} or "by" not in value:
            raise RecipeError(f"{where}: expected a mapping like {{by: dup_fuzzy_t80_size, cap: 5}} (keys: by, cap), "
                              f"not {value!r}")
        by, cap = value["by"], value.get("cap")
        if not isinstance(by, str) or not by.strip():
            raise RecipeError(f"{where}.by: expected a column or expression, e.g. dup_fuzzy_t80_size, not {by!r}")
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise RecipeError(f"{where}.cap: expected a whole number of copies >= 1 (the most a document is "
                              f"written), not {cap!r}")
        parse_rule(by, "repeat")  # a syntax error is reported now, with the recipe's name
        return cls(by.strip(), cap)

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "cap": self.cap}


@dataclass(frozen=True)
class Rule:
    name: str
    text: str  # the condition as written, without the `line:` prefix
    line: bool = False

    @cached_property
    def node(self) -> Node:
        """The parsed condition (parsed on first use, then kept: every consumer walks the AST)."""
        return parse_rule(self.text, self.name)

    def source(self) -> str:
        return f"{LINE_PREFIX} {self.text}" if self.line else self.text


@dataclass
class Recipe:
    """An ordered list of rules plus the learned models they may use (`models: {alias: path}`)."""

    rules: list[Rule]
    name: str = "recipe"
    description: str = ""
    models: dict[str, str] = field(default_factory=dict)
    # alias -> [path as written, places looked in] for a relative model path found nowhere, so
    # the error can say where it looked (see `resolve_model_path`)
    model_search: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)
    # span columns `select` replaces when writing (`redact: [pii]`; see `textsieve.personal_data.redact_plan`)
    redact: list[str] = field(default_factory=list)
    # rehydration: each kept document written min(max(1, floor(BY)), CAP) times (`repeat: {by:, cap:}`)
    repeat: Repeat | None = None
    # rule name -> its line in the YAML the recipe was read from, and that file: where an error points
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    origin: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.rules:
            raise RecipeError(f"recipe {self.name!r} has no rules")
        if not isinstance(self.redact, (list, tuple)) or not all(isinstance(r, str) and r.strip() for r in self.redact):
            raise RecipeError(f"recipe {self.name!r}: 'redact' must be a list of names, e.g. [pii] or "
                              f"[pii, ts_contam_spans], not {self.redact!r}")
        _checked_rules(self.name, [(r.name, r) for r in self.rules], self.lines)  # parsed now (and kept)
        if self.repeat is not None and not isinstance(self.repeat, Repeat):
            self.repeat = Repeat.from_value(self.repeat, self.name)

    @classmethod
    def from_rules(cls, rules: dict[str, str] | list[tuple[str, str]], **kw: Any) -> Recipe:
        """Python API: `Recipe.from_rules({"words": "rps_doc_word_count >= 50", "c4": "line: ..."})`."""
        items = rules.items() if isinstance(rules, dict) else rules
        return cls(rules=_checked_rules(str(kw.get("name", "recipe")), items, {}), **kw)

    @classmethod
    def from_dict(cls, doc: dict[str, Any], name: str = "recipe", base: Path | None = None,
                  lines: Mapping[str, int] | None = None, origin: str | None = None) -> Recipe:
        if not isinstance(doc, dict):
            raise RecipeError(f"recipe {name!r}: expected a mapping with a 'rules' key")
        unknown = set(doc) - {"name", "description", "rules", "models", "redact", "extends", "repeat"}
        if unknown:
            raise RecipeError(f"recipe {name!r}: unknown keys {sorted(unknown)}; "
                              "valid: name, description, extends, rules, models, redact, repeat")
        if "rules" not in doc and "extends" not in doc:
            raise RecipeError(f"recipe {name!r}: expected a mapping with a 'rules' key")
        raw = doc.get("rules") or {}
        if isinstance(raw, list):  # a list of one-key mappings also keeps order
            items: list[tuple[Any, Any]] = []
            for entry in raw:
                if not isinstance(entry, dict) or len(entry) != 1:
                    raise RecipeError(f"recipe {name!r}: each list item of 'rules' must be one 'name: condition'")
                items.extend(entry.items())
        elif isinstance(raw, dict):
            items = list(raw.items())
        else:
            raise RecipeError(f"recipe {name!r}: 'rules' must be a mapping of name: condition")
        inherited: Repeat | None = None
        if "extends" in doc:  # the base recipe's rules first; a rule of the same name replaces its own
            parent = load_recipe(str(doc["extends"]))
            inherited = parent.repeat
            own = dict(items)
            items = [(r.name, own.pop(r.name, r.source())) for r in parent.rules] + list(own.items())
        models, search = {}, {}
        for alias, path in (doc.get("models") or {}).items():
            models[str(alias)], tried = resolve_model_path(str(path), base)
            if tried:
                search[str(alias)] = [str(path), *tried]
        redact = doc.get("redact") or []
        title = str(doc.get("name", name))
        where = dict(lines or {})
        return cls(rules=_checked_rules(title, [(str(n), t) for n, t in items], where), name=title,
                   description=str(doc.get("description", "")), models=models, model_search=search,
                   redact=[redact] if isinstance(redact, str) else redact, lines=where, origin=origin,
                   repeat=Repeat.from_value(doc["repeat"], title) if doc.get("repeat") is not None else inherited)

    @classmethod
    def from_yaml(cls, text: str, name: str = "recipe", base: Path | None = None,
                  origin: str | None = None) -> Recipe:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise RecipeError(f"recipe {name!r} is not valid YAML: {exc}") from None
        return cls.from_dict(doc, name=name, base=base, lines=_rule_lines(text), origin=origin)

    @property
    def line_rules(self) -> list[Rule]:
        return [r for r in self.rules if r.line]

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description,
               "rules": {r.name: r.source() for r in self.rules}, "models": dict(self.models)}
        out |= {"repeat": self.repeat.to_dict()} if self.repeat is not None else {}
        return out | ({"redact": list(self.redact)} if self.redact else {})

    def fingerprint(self) -> str:
        """Hash of the rules, the repeat rule and model files (contents), so changed thresholds
        redo a selection (a recipe without `repeat:` hashes as before it existed)."""
        what: Any = self.to_dict()["rules"]
        if self.repeat is not None:
            what = {"rules": what, "repeat": self.repeat.to_dict()}
        h = hashlib.sha256(json.dumps(what, sort_keys=False).encode())
        for alias, path in sorted(self.models.items()):
            h.update(alias.encode())
            try:
                h.update(Path(path).read_bytes())
            except OSError:
                h.update(path.encode())
        return h.hexdigest()[:16]


def resolve_model_path(path: str, base: Path | None) -> tuple[str, list[str]]:
    """Where a recipe's `models:` entry lives: an absolute path or URL as is; a relative one
    beside the recipe file (`base`) first, then in the working directory, so a recipe and its
    model travel together but `textsieve learn -o q.json` in the current folder also works.
    Returns (path, []) when found, else (the first candidate, every place tried)."""
    p = Path(path)
    if "://" in path or p.is_absolute():
        return path, []
    places = list(dict.fromkeys(([str((base / p).resolve())] if base is not None else [])
                                + [str((Path.cwd() / p).resolve())]))
    for place in places:
        if Path(place).exists():
            return place, []
    return places[0], places


def _rule(name: str, text: Any) -> Rule:
    if not isinstance(text, str):
        raise RecipeError(f"rule {name!r}: condition must be a string, got {text!r}")
    t = text.strip()
    if t.lower().startswith(LINE_PREFIX):
        return Rule(name, t[len(LINE_PREFIX):].strip(), line=True)
    return Rule(name, t)


def _checked_rules(recipe: str, items: Iterable[tuple[str, Any]], lines: Mapping[str, int]) -> list[Rule]:
    """The rules of (name, condition text or `Rule`) items, each parsed; every bad one (not a
    string, a syntax error, a name used twice) is collected and all are raised as one error."""
    rules: list[Rule] = []
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, text in items:
        if name in seen:
            problems.append((name, f"recipe {recipe!r}: rule name {name!r} used twice"))
            continue
        seen.add(name)
        try:
            rule = text if isinstance(text, Rule) else _rule(name, text)
            _ = rule.node  # parse now (kept): syntax errors surface when the recipe is built
        except RecipeError as exc:
            problems.append((name, str(exc)))
            continue
        rules.append(rule)
    if problems:
        raise rule_errors(recipe, problems, lines)
    return rules


#: long tails several rules' messages end with: said once under the list
_SHARED_TAILS = ("valid names: ", "valid operators: ")


def rule_errors(recipe: str, problems: list[tuple[str, str]], lines: Mapping[str, int] | None = None,
                origin: str | None = None) -> RecipeError:
    """One error naming every bad rule of a recipe, so fixing a recipe takes one run, not one
    per typo. `problems`: (rule, message) in recipe order; `lines`: where each rule is in the
    YAML; `origin`: the file (when no caller names it). One problem: its message, prefixed with
    its line. Several: "recipe 'r' has N bad rules:" and one line per rule; a tail the messages
    share (the list of valid names or operators) is said once at the end, not N times."""
    where = lines or {}

    def at(rule: str) -> str:
        return f"line {where[rule]}: " if rule in where else ""

    file = f"recipe file {origin}: " if origin else ""
    if len(problems) == 1:
        rule, message = problems[0]
        return RecipeError(f"{file}{at(rule)}{message}", problems)
    shared = ""
    for tail in _SHARED_TAILS:
        ends = {m[m.index(tail):] for _, m in problems if tail in m}
        if len(ends) == 1 and sum(tail in m for _, m in problems) > 1:
            shared = ends.pop()
            break
    items = "".join(f"\n  - {at(rule)}{m.replace(shared, '').rstrip('; ') if shared else m}" for rule, m in problems)
    foot = f"\n  {shared}" if shared else ""
    return RecipeError(f"{file}recipe {recipe!r} has {len(problems)} bad rules:{items}{foot}", problems)


def _rule_lines(text: str) -> dict[str, int]:
    """Rule name -> its line (1-based) in a recipe's YAML text, for error messages; {} when the
    text has no `rules:` mapping or list of mappings."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    out: dict[str, int] = {}
    for key, value in node.value if isinstance(node, yaml.MappingNode) else []:
        if getattr(key, "value", None) != "rules":
            continue
        if isinstance(value, yaml.MappingNode):
            pairs = list(value.value)
        elif isinstance(value, yaml.SequenceNode):
            pairs = [p for item in value.value if isinstance(item, yaml.MappingNode) for p in item.value]
        else:
            pairs = []
        for rule_key, _ in pairs:
            out.setdefault(str(rule_key.value), rule_key.start_mark.line + 1)
    return out


# ---------------------------------------------------------------- bundled recipes

def _bundled_dir():
    return resources.files("textsieve.recipes") / "bundled"


def bundled_recipes() -> dict[str, str]:
    """Bundled recipe name -> its description (what `textsieve recipes` lists)."""
    out = {}
    for entry in sorted(_bundled_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            doc = yaml.safe_load(entry.read_text("utf-8")) or {}
            out[entry.name[:-5]] = str(doc.get("description", ""))
    return out


def bundled_text(name: str) -> str:
    entry = _bundled_dir() / f"{name}.yaml"
    if not entry.is_file():
        raise RecipeError(f"no bundled recipe {name!r}; bundled: {', '.join(bundled_recipes())}")
    return entry.read_text("utf-8")


def load_recipe(spec: str | Path) -> Recipe:
    """A bundled recipe by name (`gopher`) or a YAML file path."""
    p = Path(spec)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise RecipeError(f"recipe file {str(p)!r} not found (bundled: {', '.join(bundled_recipes())})")
        try:
            text = p.read_text("utf-8")
        except UnicodeDecodeError as exc:
            raise RecipeError(f"recipe file {p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            return Recipe.from_yaml(text, name=p.stem, base=p.resolve().parent, origin=str(p))
        except RecipeError as exc:  # which file, for a user with several
            raise RecipeError(f"recipe file {p}: {exc}", exc.problems) from None
    return Recipe.from_yaml(bundled_text(str(spec)), name=str(spec))
