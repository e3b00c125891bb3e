"""Argparse options generated from a stage config dataclass (see `textsieve.options`).

Every stage command builds its options with `add_config_options(parser, XConfig)` and its
config with `config_from_args(XConfig, args)`; nothing here holds a default, a choice or a help
text of its own. `tests/test_options.py` checks that for every stage the CLI default, the
dataclass default and the pipeline file's default are the same value, and that every flag is
the field's own name (`textsieve.options`: one name per setting).

A field's old flag spellings (`Option.renamed_from`) are extra option strings of the same
argparse action, so they fill the same field, count for `required`, and cannot be mixed up with
the new spelling; they are left out of `--help` and print a warning when used.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
import typing
from dataclasses import MISSING, fields
from typing import Any

from textsieve.io.overlap import check_apart
from textsieve.options import default_of, flag_of, option_of, renamed_message, type_hints

_SCALARS = (int, float, str)


def _strip_optional(tp: Any) -> list[Any]:
    """The non-None members of a (possibly union) type."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(tp) if a is not type(None)]
    return [tp]


def cli_shape(tp: Any) -> tuple[str, Any]:
    """(shape, element parser) for a field type: shape is scalar, bool, list or dict."""
    members = _strip_optional(tp)
    if str in members and len(members) > 1:  # `str | list[str]`: the CLI gives the string form
        return "scalar", str
    for m in members:
        if typing.get_origin(m) in (list, tuple):
            args = typing.get_args(m)
            return "list", args[0] if args and args[0] in _SCALARS else str
        if typing.get_origin(m) is dict or m is dict:
            return "dict", str
    if members == [bool]:
        return "bool", bool
    for m in (float, int, str):  # `int | str` (a size): the string form covers both
        if m in members and len(members) == 1:
            return "scalar", m
    return "scalar", str


def _help_text(help_: str, default: Any) -> str:
    if default is None or default is MISSING or isinstance(default, bool) or default in ([], {}) \
            or "default" in help_:
        return help_
    shown = ", ".join(map(str, default)) if isinstance(default, (list, tuple)) else default
    return f"{help_} (default: {shown})"


_WARNED = "_renamed_flags_warned"


class _Renamed(argparse.Action):
    """Warns when the action is reached through an old spelling: one of the parser's option
    strings for it that `add_config_options` took out of `option_strings` (so out of `--help`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string is not None and option_string not in self.option_strings:
            warned = namespace.__dict__.setdefault(_WARNED, set())
            if option_string not in warned:  # once per spelling, however often it is repeated
                warned.add(option_string)
                print(f"{parser.prog}: warning: {renamed_message(option_string, self.option_strings[-1], self.dest)}",
                      file=sys.stderr)
        super().__call__(parser, namespace, values, option_string)


class _Store(_Renamed, argparse._StoreAction):
    pass


class _Append(_Renamed, argparse._AppendAction):
    pass


class _Extend(_Renamed, argparse._ExtendAction):
    pass


class _StoreTrue(_Renamed, argparse._StoreTrueAction):
    pass


def _add(target: Any, names: list[str], renamed: tuple[str, ...], action: type[argparse.Action],
         **kw: Any) -> None:
    """add_argument(*names, *renamed), then hide the renamed spellings from help and usage."""
    made = target.add_argument(*names, *renamed, action=action, **kw)
    made.option_strings = [n for n in made.option_strings if n not in renamed]


def add_config_options(parser: argparse.ArgumentParser, cls: type, *, only: tuple[str, ...] | None = None,
                       exclude: tuple[str, ...] = ()) -> None:
    """Add one argparse option per CLI-visible field of `cls` (all, or those in `only`), in field
    order, under their `group` titles."""
    hints = type_hints(cls)
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in fields(cls):
        opt = option_of(f)
        if opt is None or not opt.cli or f.name in exclude or (only is not None and f.name not in only):
            continue
        target: Any = parser
        if opt.group:
            target = groups.get(opt.group) or groups.setdefault(opt.group, parser.add_argument_group(opt.group))
        default = default_of(f)
        shape, elem = cli_shape(hints[f.name])
        kw: dict[str, Any] = {"help": _help_text(opt.help, default)}
        if opt.metavar:
            kw["metavar"] = opt.metavar
        if opt.choices:
            kw["choices"] = opt.choices
        if opt.positional:
            if shape == "list":
                kw["nargs"] = "+"
            target.add_argument(f.name, type=opt.parse or elem, **kw)
            continue
        names = [n for n in (opt.short, flag_of(f.name)) if n]
        kw["dest"] = f.name
        if shape == "bool":
            if default is True:
                raise TypeError(f"{cls.__name__}.{f.name}: a CLI flag cannot turn a default of True off")
            _add(target, names, opt.renamed_from, _StoreTrue, **kw)
            continue
        if default is MISSING:
            kw["required"] = True
        # a list flag is repeatable: argparse would add to a default list, so its default is
        # filled in by config_kwargs when the flag is absent
        if shape in ("list", "dict") and (opt.repeat or shape == "dict"):  # one value per flag
            _add(target, names, opt.renamed_from, _Append, type=opt.parse or elem, default=None, **kw)
        elif shape == "list":  # one or more values per flag
            _add(target, names, opt.renamed_from, _Extend, nargs="+", type=opt.parse or elem, default=None, **kw)
        else:
            _add(target, names, opt.renamed_from, _Store, type=opt.parse or elem,
                 default=None if default is MISSING else default, **kw)


def _key_values(flag: str, values: list[str], form: str = "NAME=VALUE") -> dict[str, str]:
    """`--models NAME=PATH` options as an ordered {name: path}; errors name the bad option."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        name = name.strip()
        if not sep or not name or not path:
            raise ValueError(f"{flag} {value!r}: expected {form}, e.g. {flag} wikiref=wikiref.tsm")
        if name in out:
            raise ValueError(f"{flag} {name}: given twice")
        out[name] = path
    return out


def config_kwargs(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The config fields an argparse namespace holds, with defaults of absent repeated flags."""
    hints = type_hints(cls)
    out: dict[str, Any] = {}
    for f in fields(cls):
        opt = option_of(f)
        if opt is None or not opt.cli or not hasattr(args, f.name):
            continue
        value = getattr(args, f.name)
        shape, _ = cli_shape(hints[f.name])
        if value is None and shape in ("list", "dict"):
            value = default_of(f)
            value = None if value is MISSING else value
        elif shape == "dict" and value is not None:
            value = _key_values(flag_of(f.name), value, opt.metavar or "NAME=VALUE")
        out[f.name] = value
    return out


def config_from_args(cls: type, args: argparse.Namespace, **overrides: Any) -> Any:
    """Build config `cls` from parsed options (progress follows --quiet where the config has it)."""
    kw = config_kwargs(cls, args)
    if "progress" in {f.name for f in fields(cls)} and "progress" not in overrides:
        kw["progress"] = not getattr(args, "quiet", False)
    kw.update(overrides)
    return cls(**kw)


class ExamplesFormatter(argparse.HelpFormatter):
    """Wraps prose paragraphs as usual but keeps indented paragraphs (examples) line by line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.split("\n\n")
        out = []
        for para in paragraphs:
            lines = para.splitlines()
            if lines and all(line.startswith("  ") or line.endswith(":") for line in lines) and len(lines) > 1:
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(super()._fill_text(para, width, indent))
        return "\n\n".join(out)


def examples(*commands: str) -> str:
    """An `--help` epilog listing example commands; `tests/test_docs_commands.py` runs each one
    on the bundled sample corpus, so they must stay runnable there."""
    return "examples:\n" + "\n".join(f"  {c}" for c in commands)


#: the argparse dests that name what a command writes; a parser with one must declare it with
#: `writes` (tests/test_output_checks.py walks every registered command)
OUTPUT_DESTS = ("output", "model_path")
_WRITES = "_writes"


def writes(parser: argparse.ArgumentParser, command: str, output: str, *inputs: str) -> None:
    """Declare that `parser`'s command writes to option `output` and reads options `inputs`:
    `check_writes` then refuses, before the command runs, an output that is, contains or lies
    inside one of those inputs (`io.overlap.check_apart`: symlinks resolved, URLs by protocol and
    path). Why at the command line and not in each command: the check is then the same for every
    command, including those that write one file (`learn -o`, `train tokenizer -o`)."""
    known = {a.dest: a for a in parser._actions}
    missing = [d for d in (output, *inputs) if d not in known]
    if missing:
        raise ValueError(f"{command}: writes() names options the parser lacks: {', '.join(missing)}")
    action = known[output]
    flag = action.option_strings[-1] if action.option_strings else str(action.metavar or action.dest)
    shown = str(action.metavar or "")
    folder = any(w in shown.upper() for w in ("DIR", "FOLDER", "ROOT", "ATTRS"))
    file = "FILE" in shown.upper() or "." in shown or shown == "PATH"
    what = "output folder" if folder and not file else "output file" if file and not folder else "output"
    parser.set_defaults(**{_WRITES: (command, output, str(flag), inputs, what)})


def _locations(value: Any) -> list[str]:
    """The paths an option's value names: a list's items; `NAME=PATH` pairs (`--models`) by their
    path. Only places that exist (or URLs and globs) can be overwritten or mixed into."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if not isinstance(item, str) or not item:
            continue
        if "=" in item and "://" not in item.split("=", 1)[0]:
            item = item.split("=", 1)[1]
        if "://" in item or any(c in item for c in "*?[") or os.path.exists(item):
            out.append(item)
    return out


def check_writes(args: argparse.Namespace) -> None:
    """The one output check of every command that writes (see `writes`); OverlapError if it fails."""
    declared = getattr(args, _WRITES, None)
    if declared is None:
        return
    command, output, flag, inputs, what = declared
    target = getattr(args, output, None)
    if target:
        check_apart(command, str(target), [loc for dest in inputs for loc in _locations(getattr(args, dest, None))],
                    flag, what)
