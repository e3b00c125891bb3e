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
  ts_dsir_wiki > -3.5                          DSIR log weight column (attribute set _dsir_wiki)
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

`redact: [pii]` (beside `rules:`) makes `select` replace spans when it writes the documents, as
`select --redact pii` does: `pii` puts placeholders over the `_pii` set's spans (`textsieve
pii`), a span column's name (e.g. `ts_contam_spans`) removes its spans.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

OPERATORS = ("<", "<=", ">", ">=", "==", "=", "!=", "between", "in", "not in", "is null", "is not null",
             "and", "or", "not", "+", "-", "*", "/")
REDUCTIONS = ("sum", "mean", "min", "max", "count", "frac")
SCALAR_FUNCS = ("abs", "ln", "log1p", "coalesce", "max", "min")  # max/min with 2+ args
KEYWORDS = ("and", "or", "not", "between", "in", "is", "null", "true", "false")
LINE_PREFIX = "line:"


class RecipeError(ValueError):
    """A recipe or rule that cannot be parsed or does not fit the attribute columns."""


# ---------------------------------------------------------------- AST

@dataclass(frozen=True)
class Lit:
    value: Any  # float, int, str, bool or None


@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Call:
    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "not"
    arg: Node


@dataclass(frozen=True)
class Binary:
    op: str  # comparison, arithmetic, "and", "or"
    left: Node
    right: Node


@dataclass(frozen=True)
class Between:
    arg: Node
    low: Node
    high: Node
    negated: bool = False


@dataclass(frozen=True)
class In:
    arg: Node
    values: tuple[Lit, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    arg: Node
    negated: bool = False


Node = Lit | Col | Call | Unary | Binary | Between | In | IsNull

# ---------------------------------------------------------------- tokenizer and parser

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)
  | (?P<op><=|>=|==|!=|<>|[<>=()\[\],+\-*/])
""", re.VERBOSE)


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)


def _tokenize(text: str, rule: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise RecipeError(f"rule {rule!r}: unexpected {text[pos]!r} at position {pos} in {text!r}; "
                              f"valid operators: {', '.join(OPERATORS)}")
        kind = m.lastgroup or ""  # every alternative of _TOKEN is a named group
        tok = m.group()
        if kind == "name" and tok.lower() in KEYWORDS:
            kind, tok = "kw", tok.lower()
        if kind != "ws":
            out.append((kind, tok, pos))
        pos = m.end()
    out.append(("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent: or > and > not > comparison > additive > multiplicative > unary > atom."""

    def __init__(self, text: str, rule: str):
        self.text, self.rule = text, rule
        self.toks = _tokenize(text, rule)
        self.i = 0

    def fail(self, what: str) -> RecipeError:
        kind, tok, pos = self.toks[self.i]
        at = f"{tok!r} at position {pos}" if kind != "end" else "the end"
        return RecipeError(f"rule {self.rule!r}: {what}, found {at} in {self.text!r}; "
                           f"valid operators: {', '.join(OPERATORS)}; functions: "
                           f"{', '.join(REDUCTIONS)} (over line columns), abs, ln, log1p, coalesce")

    def unescape(self, body: str) -> str:
        """A string literal's value: backslash escapes decoded, every other character kept as
        written (`'café'` stays café; the old `unicode_escape` round trip turned it into mojibake
        and failed on `'\\x'` without naming the rule)."""

        def one(m: re.Match[str]) -> str:
            esc = m.group(1)
            if esc[0] in "xuU" and len(esc) > 1:
                code = int(esc[1:], 16)
                if code <= 0x10FFFF:
                    return chr(code)
            elif esc in _ESCAPES:
                return _ESCAPES[esc]
            raise RecipeError(f"rule {self.rule!r}: unknown escape \\{esc} in a string literal in {self.text!r}; "
                              f"valid: {', '.join(chr(92) + e for e in _ESCAPES)}, \\xHH, \\uHHHH, \\UHHHHHHHH")

        return _ESCAPE.sub(one, body)

    def peek(self, *vals: str) -> bool:
        return self.toks[self.i][1] in vals and self.toks[self.i][0] in ("kw", "op")

    def take(self, *vals: str) -> str:
        if not self.peek(*vals):
            raise self.fail(f"expected {' or '.join(repr(v) for v in vals)}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self) -> Node:
        node = self.or_()
        if self.toks[self.i][0] != "end":
            raise self.fail("expected an operator or the end of the rule")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek("or"):
            self.i += 1
            node = Binary("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek("and"):
            self.i += 1
            node = Binary("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.peek("not"):
            self.i += 1
            return Unary("not", self.not_())
        return self.cmp()

    def cmp(self) -> Node:
        left = self.add()
        if self.peek("<", "<=", ">", ">=", "==", "=", "!=", "<>"):
            op = self.take("<", "<=", ">", ">=", "==", "=", "!=", "<>")
            op = {"=": "==", "<>": "!="}.get(op, op)
            return Binary(op, left, self.add())
        negated = False
        if self.peek("not"):
            self.i += 1
            negated = True
            if not self.peek("between", "in"):
                raise self.fail("expected 'between' or 'in' after 'not'")
        if self.peek("between"):
            self.i += 1
            low = self.add()
            self.take("and")
            return Between(left, low, self.add(), negated)
        if self.peek("in"):
            self.i += 1
            self.take("[")
            values = []
            while True:
                atom = self.unary()
                if not isinstance(atom, Lit):
                    raise self.fail("'in [...]' takes literal values only")
                values.append(atom)
                if self.peek("]"):
                    break
                self.take(",")
            self.take("]")
            return In(left, tuple(values), negated)
        if self.peek("is"):
            self.i += 1
            neg = bool(self.peek("not")) and bool(self.take("not"))
            self.take("null")
            return IsNull(left, neg)
        return left

    def add(self) -> Node:
        node = self.mul()
        while self.peek("+", "-"):
            op = self.take("+", "-")
            node = Binary(op, node, self.mul())
        return node

    def mul(self) -> Node:
        node = self.unary()
        while self.peek("*", "/"):
            op = self.take("*", "/")
            node = Binary(op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek("-"):
            self.i += 1
            arg = self.unary()
            if isinstance(arg, Lit) and isinstance(arg.value, (int, float)) and not isinstance(arg.value, bool):
                return Lit(-arg.value)
            return Unary("-", arg)
        return self.atom()

    def atom(self) -> Node:
        kind, tok, _ = self.toks[self.i]
        if kind == "num":
            self.i += 1
            value: int | float = float(tok) if any(c in tok for c in ".eE") else int(tok)
            if isinstance(value, float) and not math.isfinite(value):
                raise RecipeError(f"rule {self.rule!r}: the number {tok} is out of range (a double holds up to "
                                  f"about 1.8e308) in {self.text!r}")
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                raise RecipeError(f"rule {self.rule!r}: the integer {tok} does not fit in 64 bits; write it as a "
                                  f"decimal number (e.g. {float(value):.6g}) in {self.text!r}")
            return Lit(value)
        if kind == "str":
            self.i += 1
            return Lit(self.unescape(tok[1:-1]))
        if kind == "kw" and tok in ("true", "false", "null"):
            self.i += 1
            return Lit({"true": True, "false": False, "null": None}[tok])
        if kind == "op" and tok == "(":
            self.i += 1
            node = self.or_()
            self.take(")")
            return node
        if kind == "name":
            self.i += 1
            if self.peek("("):
                func = tok.lower()
                if func not in REDUCTIONS + SCALAR_FUNCS:
                    self.i -= 1
                    raise self.fail(f"unknown function {tok!r}")
                self.take("(")
                args = [self.or_()]
                while self.peek(","):
                    self.i += 1
                    args.append(self.or_())
                self.take(")")
                return Call(func, tuple(args))
            return Col(tok)
        raise self.fail("expected a column, number, string or '('")


def parse_rule(text: str, rule: str = "<rule>") -> Node:
    """Parse one rule's condition (without any `line:` prefix) into an AST."""
    if not isinstance(text, str) or not text.strip():
        raise RecipeError(f"rule {rule!r}: empty or non-string condition {text!r}")
    return _Parser(text, rule).parse()


def columns_of(node: Node) -> list[str]:
    """Column names a rule mentions, in first-use order."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if isinstance(n, Col):
            if n.name not in out:
                out.append(n.name)
        elif isinstance(n, Call):
            for a in n.args:
                walk(a)
        elif isinstance(n, Unary):
            walk(n.arg)
        elif isinstance(n, Binary):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, Between):
            walk(n.arg)
            walk(n.low)
            walk(n.high)
        elif isinstance(n, (In, IsNull)):
            walk(n.arg)

    walk(node)
    return out


# ---------------------------------------------------------------- recipes

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

    def __post_init__(self) -> None:
        if not self.rules:
            raise RecipeError(f"recipe {self.name!r} has no rules")
        if not isinstance(self.redact, (list, tuple)) or not all(isinstance(r, str) and r.strip() for r in self.redact):
            raise RecipeError(f"recipe {self.name!r}: 'redact' must be a list of names, e.g. [pii] or "
                              f"[pii, ts_contam_spans], not {self.redact!r}")
        seen: set[str] = set()
        for r in self.rules:
            if r.name in seen:
                raise RecipeError(f"recipe {self.name!r}: rule name {r.name!r} used twice")
            seen.add(r.name)
            _ = r.node  # parse now (kept): syntax errors surface when the recipe is built

    @classmethod
    def from_rules(cls, rules: dict[str, str] | list[tuple[str, str]], **kw: Any) -> Recipe:
        """Python API: `Recipe.from_rules({"words": "rps_doc_word_count >= 50", "c4": "line: ..."})`."""
        items = rules.items() if isinstance(rules, dict) else rules
        return cls(rules=[_rule(n, t) for n, t in items], **kw)

    @classmethod
    def from_dict(cls, doc: dict[str, Any], name: str = "recipe", base: Path | None = None) -> Recipe:
        if not isinstance(doc, dict):
            raise RecipeError(f"recipe {name!r}: expected a mapping with a 'rules' key")
        unknown = set(doc) - {"name", "description", "rules", "models", "redact"}
        if unknown:
            raise RecipeError(f"recipe {name!r}: unknown keys {sorted(unknown)}; "
                              "valid: name, description, rules, models, redact")
        if "rules" not in doc:
            raise RecipeError(f"recipe {name!r}: expected a mapping with a 'rules' key")
        raw = doc["rules"]
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
        models, search = {}, {}
        for alias, path in (doc.get("models") or {}).items():
            models[str(alias)], tried = resolve_model_path(str(path), base)
            if tried:
                search[str(alias)] = [str(path), *tried]
        redact = doc.get("redact") or []
        return cls(rules=[_rule(str(n), t) for n, t in items], name=str(doc.get("name", name)),
                   description=str(doc.get("description", "")), models=models, model_search=search,
                   redact=[redact] if isinstance(redact, str) else redact)

    @classmethod
    def from_yaml(cls, text: str, name: str = "recipe", base: Path | None = None) -> Recipe:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise RecipeError(f"recipe {name!r} is not valid YAML: {exc}") from None
        return cls.from_dict(doc, name=name, base=base)

    @property
    def line_rules(self) -> list[Rule]:
        return [r for r in self.rules if r.line]

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description,
               "rules": {r.name: r.source() for r in self.rules}, "models": dict(self.models)}
        return out | ({"redact": list(self.redact)} if self.redact else {})

    def fingerprint(self) -> str:
        """Hash of the rules and model files (contents), so changed thresholds redo a selection."""
        h = hashlib.sha256(json.dumps(self.to_dict()["rules"], sort_keys=False).encode())
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
            return Recipe.from_yaml(text, name=p.stem, base=p.resolve().parent)
        except RecipeError as exc:  # which file, for a user with several
            raise RecipeError(f"recipe file {p}: {exc}") from None
    return Recipe.from_yaml(bundled_text(str(spec)), name=str(spec))
