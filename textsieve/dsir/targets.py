"""The one parser of DSIR target lists (`--dsir wiki:0.7,books:0.3`, YAML and the Python API).

`select --dsir`, `dsir resample` and the pipeline's `select.dsir` all go through
`parse_dsir_targets`, so they agree on what a target list may hold: names of fitted targets,
each with a positive mixing weight (1 when omitted). A weight of 0 is refused rather than read
as "leave it out": a target that should not count is simply not named.
"""

from __future__ import annotations

from typing import Any

Targets = list[tuple[str, float]]


class DsirTargetsError(ValueError):
    """A target list that cannot be parsed; the message names the bad part."""


def _parse_string(spec: str, what: str) -> list[tuple[Any, Any]]:
    items: list[tuple[Any, Any]] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, sep, w = part.partition(":")
        if sep and not w.strip():
            raise DsirTargetsError(f"{what} {spec!r}: empty weight after {name!r}:; expected NAME[:WEIGHT]")
        try:
            weight = float(w) if sep else 1.0
        except ValueError:
            raise DsirTargetsError(f"{what} {spec!r}: weight {w!r} of {name.strip()!r} is not a number") from None
        items.append((name.strip(), weight))
    return items


def parse_dsir_targets(value: Any, what: str = "--dsir") -> Targets:
    """`"wiki"`, `"wiki:0.7,books:0.3"`, `["wiki", ...]`, `[[name, w], ...]`, `[(name, w)]` or
    `{name: w}` -> [(name, weight)]. `what` names the option in error messages."""
    if isinstance(value, str):
        items = _parse_string(value, what)
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = []
        for i, v in enumerate(value):
            if isinstance(v, str):
                items.extend(_parse_string(v, what))
            elif isinstance(v, (list, tuple)) and len(v) == 2:
                items.append((v[0], v[1]))
            else:
                raise DsirTargetsError(f"{what}[{i}]: expected NAME or [NAME, WEIGHT], got {v!r}")
    else:
        raise DsirTargetsError(f"{what}: expected NAME[:WEIGHT][,NAME2:W2] or a list of names, got {value!r}")
    out: Targets = []
    for name, w in items:
        if not isinstance(name, str) or not name:
            raise DsirTargetsError(f"{what}: empty target name; expected NAME[:WEIGHT][,NAME2:W2]")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0:
            raise DsirTargetsError(f"{what}: weight of {name!r} must be a number > 0, got {w!r}")
        if any(name == n for n, _ in out):
            raise DsirTargetsError(f"{what}: target {name!r} is named twice")
        out.append((name, float(w)))
    if not out:
        raise DsirTargetsError(f"{what}: no DSIR target")
    return out
