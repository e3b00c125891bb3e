"""Selection: recipes over stored attributes (`recipe`, `compile`, `funnel`, `materialize`),
DSIR importance resampling (`dsir`) and learned filters (`learned`).

Python API (the same as `textsieve select`):

    from textsieve.select.recipe import Recipe, load_recipe
    from textsieve.select.funnel import compute_funnel
    from textsieve.select.materialize import SelectConfig, run_select

    recipe = load_recipe("gopher")          # or a YAML path, or Recipe.from_rules({...})
    print(compute_funnel("annotated/", recipe).table())
    run_select(SelectConfig(directory="annotated/", output="selected/", recipe=recipe))
"""

import sys as _sys
import types as _types


class _CallableSelect(_types.ModuleType):
    """This package doubles as the API function `ts.select` (`textsieve.api.select`).

    Why: `import textsieve as ts; ts.select(...)` is the API, but `textsieve.select` is also
    this subpackage, and importing any `textsieve.select.*` module binds the name `select` on
    `textsieve` to it. A module whose class has `__call__` is both, so neither can shadow the
    other (`import textsieve.select.recipe as r` and `ts.select("attrs", recipe="c4")` both work)."""

    def __call__(self, *args, **kwargs):
        from textsieve.api import select

        return select(*args, **kwargs)

    @property
    def __signature__(self):  # what `inspect.signature(ts.select)` and notebooks show
        import inspect

        from textsieve.api import select

        return inspect.signature(select)

    @property
    def __doc__(self):  # noqa: PLE0307 - `help(ts.select)` and notebooks: the function's doc first
        from textsieve.api import select

        return f"{select.__doc__}\n\nThe package textsieve.select:\n\n{self.__dict__.get('__doc__') or ''}"


_sys.modules[__name__].__class__ = _CallableSelect
