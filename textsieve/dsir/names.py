"""Names a DSIR target gives to what it writes: the attribute set `sets/dsir_<name>` and its three
columns. `dsir fit` writes them, `select --dsir` and the pipeline's column planner read them."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


def set_name(name: str) -> str:
    """Attribute-set name of the DSIR target `name` (folder ``sets/dsir_<name>``)."""
    return f"dsir_{name}"


def column_names(name: str) -> tuple[str, str, str]:
    """(sum log weight, normalised log weight, token count) columns for target `name`."""
    return f"ts_dsir_{name}", f"ts_dsir_{name}_norm", f"ts_dsir_{name}_tokens"


def check_name(name: str) -> str:
    """`name`, when it can be part of a column name (letters, digits and '_')."""
    if not NAME_RE.match(name or ""):
        raise ValueError(f"DSIR name {name!r} must be letters, digits and '_' only (it becomes a column name)")
    return name
