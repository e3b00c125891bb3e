"""The rule language's parser: tokens, the AST, and `parse_rule` (the grammar is in
`recipes.language`'s module doc).

Why a module of its own: the parser is pure syntax (no recipe, no schema), so the recipe model
(`recipes.language`), the SQL compiler (`recipes.sql`) and the report's threshold reader all
use it without pulling in each other; and `RecipeError` lives here, at the bottom of the
imports, so every layer raises the same class.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

OPERATORS = ("<", "<=", ">", ">=", "==", "=", "!=", "between", "in", "not in", "is null", "is not null",
             "and", "or", "not", "+", "-", "*", "/")
REDUCTIONS = ("sum", "mean", "min", "max", "count", "frac")
SCALAR_FUNCS = ("abs", "ln", "log1p", "coalesce", "max", "min")  # max/min with 2+ args
KEYWORDS = ("and", "or", "not", "between", "in", "is", "null", "true", "false")
LINE_PREFIX = "line:"


class RecipeError(ValueError):
    """A recipe or rule that cannot be parsed or does not fit the attribute columns. `problems`:
    (rule, message) of every bad rule when the error lists several (`language.rule_errors`)."""

    def __init__(self, message: str, problems: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [])


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
