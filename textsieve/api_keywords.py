"""Keyword arguments -> a stage's config dataclass: what every `textsieve.api` function does first.

Why keywords come from `dataclasses.fields` and not from written-out signatures: a field someone
adds to a config is an API keyword at once, and a default has one source (the dataclass). An
unknown keyword is a `TypeError` naming the nearest valid one; `signature_of` gives a function
the real signature so `help()` and notebooks show every option with its default.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from textsieve.recipes.language import Recipe

C = TypeVar("C")


def recipe_of(spec: str | os.PathLike | Mapping[str, Any] | Recipe) -> Recipe:
    """A `Recipe` from a bundled name (`"gopher"`), a YAML file, a mapping shaped like a recipe
    file (`{"name": ..., "rules": {...}}`; relative model paths against the working directory),
    or a `Recipe` (returned as is)."""
    from textsieve.recipes.language import load_recipe

    if isinstance(spec, Recipe):
        return spec
    if isinstance(spec, Mapping):
        return Recipe.from_dict(dict(spec), name=str(spec.get("name", "recipe")), base=Path.cwd())
    return load_recipe(os.fspath(spec))


def _plain(value: Any) -> Any:
    """`os.PathLike` -> str, also inside lists and tuples (configs hold plain strings)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _is_list_field(f: dataclasses.Field) -> bool:
    """A field typed exactly `list[...]` (not `str | list[str]`, where a string means itself)."""
    tp = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return str(tp).replace(" ", "").startswith("list[")


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _default(f: dataclasses.Field) -> Any:
    """A field's default (a fresh value for factories), or `inspect.Parameter.empty`."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


def unknown_keywords(api_name: str, given: Sequence[str], valid: Sequence[str]) -> TypeError | None:
    """The TypeError for the keywords of `given` that are not in `valid`, each with the nearest
    valid one (difflib: `dryrun` -> `dry_run`, `threshold` -> `thresholds`), then every valid
    keyword; None when all are known. `valid` includes the function's own keywords (`dry_run`),
    not only the config's fields, so a typo of one is suggested and the list is the whole truth."""
    unknown = [k for k in given if k not in valid]
    if not unknown:
        return None
    said = []
    for name in unknown:
        near = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
        said.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    what = "an unexpected keyword argument" if len(unknown) == 1 else "unexpected keyword arguments"
    return TypeError(f"{api_name}() got {what} {', '.join(said)}; valid keyword arguments: {', '.join(valid)}")


def build_config(cls: type[C], api_name: str, values: Mapping[str, Any], extra: Sequence[str] = ()) -> C:
    """Config dataclass `cls` from keyword `values`: what every stage function does first.

    Unknown names raise TypeError naming the nearest valid one (among the fields and the
    function's own `extra` keywords, which the caller has taken out of `values`); a lone value
    for a `list[...]` field (one input path, one threshold) is wrapped in a list; path objects
    become strings."""
    fields = dataclasses.fields(cast(Any, cls))  # `cls` is a config dataclass; type[C] cannot say so
    names = [f.name for f in fields]
    error = unknown_keywords(api_name, list(values), [*names, *extra])
    if error is not None:
        raise error
    missing = [f.name for f in fields if _required(f) and f.name not in values]
    if missing:
        raise TypeError(f"{api_name}() missing required keyword argument(s): {', '.join(missing)}")
    kw: dict[str, Any] = {}
    for f in fields:
        if f.name in values:
            v = _plain(values[f.name])
            if _is_list_field(f) and isinstance(v, (str, int, float)) and not isinstance(v, bool):
                v = [v]
            kw[f.name] = v
    return cls(**kw)


def signature_of(fn: Callable, cls: type, first: str | None, extra: Sequence[inspect.Parameter] = ()) -> None:
    """Give `fn` the signature `(first, *, <every field of cls>, *extra)` and list the fields in
    its docstring, so `help()` and notebooks show the real options (with their defaults)."""
    params, lines = [], []
    own = inspect.signature(fn)
    if first is not None:
        params.append(own.parameters[first])
    for f in dataclasses.fields(cls):
        if f.name == first:
            continue
        default = _default(f)
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=f.type))
        opt = f.metadata.get("textsieve.option")
        about = getattr(opt, "help", "") or ""
        shown = "required" if default is inspect.Parameter.empty else f"default {default!r}"
        lines.append(f"    {f.name} ({shown}){': ' + about if about else ''}")
    params += list(extra)
    fn.__dict__["__signature__"] = own.replace(parameters=params)  # what inspect.signature() reads
    fn.__doc__ = (inspect.cleandoc(fn.__doc__ or "") + f"\n\nKeyword arguments (the fields of {cls.__name__}):\n"
                  + "\n".join(lines))


def config_of(cls: type[C], api_name: str, first: str | None, first_value: Any, options: dict[str, Any],
              extra: Sequence[str] = ()) -> C:
    """Config `cls` from a function's first argument (field `first`) and its keywords (`extra`:
    the function's own keywords, already taken out of `options`, named when one is misspelt)."""
    values = dict(options)
    if isinstance(values.get("recipe"), Mapping):  # a recipe written inline, as in a pipeline file
        values["recipe"] = recipe_of(values["recipe"])
    if first is not None:
        if first in values:
            raise TypeError(f"{api_name}() got multiple values for argument {first!r}")
        values[first] = first_value
    return build_config(cls, api_name, values, extra)


__all__ = ["build_config", "config_of", "recipe_of", "signature_of", "unknown_keywords"]
