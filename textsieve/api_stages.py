"""One `textsieve.api` function per registered stage, made from its descriptor.

`ts.<stage.api_name>(first, **keywords)` builds the stage's config from the keywords (every
field of its config dataclass, `api_keywords`), runs `stage.call` and returns the stage's
result; a stage with `preview` also takes `dry_run=True` and returns the preview instead
(select's funnel or draw, mix's plan), writing nothing. So a new stage module is a new API
function without any edit here. Static types come from `api_stages.pyi`, written by
`python -m textsieve.api_stub` (tests/test_python_api.py fails when it is stale).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from textsieve.api_keywords import config_of, signature_of
from textsieve.stages.descriptor import Stage
from textsieve.stages.registry import stages

_DRY_RUN = inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")


def _plain_first(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def stage_function(stage: Stage) -> Callable[..., Any]:
    """The API function of `stage`: its `first` field positionally (or by name), the other
    fields as keywords, `dry_run` where the stage can preview."""
    name = stage.api_name

    def function(*args: Any, **options: Any) -> Any:
        if len(args) > 1:
            raise TypeError(f"{name}() takes one positional argument ({stage.first}) but {len(args)} were given")
        if args:
            value = args[0]
        elif stage.first in options:
            value = options.pop(stage.first)
        else:
            raise TypeError(f"{name}() missing required argument: {stage.first!r}")
        dry_run = bool(options.pop("dry_run", False)) if stage.preview is not None else False
        if stage.prepare is not None:
            value = stage.prepare(value, options)
        own = [_DRY_RUN.name] if stage.preview is not None else []
        cfg = config_of(stage.config, name, stage.first, _plain_first(value), options, own)
        if dry_run:
            assert stage.preview is not None
            return stage.preview(cfg)
        assert stage.call is not None
        return stage.call(cfg)

    function.__name__ = function.__qualname__ = name
    function.__module__ = "textsieve.api"
    spec = stage.cli_spec
    about = [f"`textsieve {stage.cli}` as a function" + (f": {spec.help}." if spec else ".")]
    if spec is not None:
        about.append(spec.description)
    returns = getattr(stage.call, "__annotations__", {}).get("return", "its result")
    about.append(f"Returns {returns}" + (f"; with dry_run=True nothing is written and it returns "
                                         f"{stage.preview.__annotations__.get('return', 'a preview')}: "
                                         f"{inspect.getdoc(stage.preview)}" if stage.preview else "."))
    function.__doc__ = "\n\n".join(about)
    function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(stage.first, inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    signature_of(function, stage.config, stage.first, [_DRY_RUN] if stage.preview is not None else [])
    return function


def _make() -> list[str]:
    names = []
    for stage in stages():
        if stage.call is not None:
            globals()[stage.api_name] = stage_function(stage)
            names.append(stage.api_name)
    return names


__all__ = _make()
