"""The document record every stage passes around (the data contract of specs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Document:
    """One input document. `row` is its 0-based record index in its shard, so attribute rows
    can be joined back to the source without copying text."""

    id: str
    text: str
    row: int
    lang: str | None = None
    url: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
