"""Field access shared by the record-based readers (JSON Lines, Parquet).

Field names may be dotted paths into nested objects (``meta.lang``). A key that literally contains
the dots wins over the nested path, so records with flat keys such as ``"meta.lang"`` still work.
The checks return a reason string instead of raising, so each reader decides (fail or skip) and
adds the location it knows.
"""

from __future__ import annotations

from typing import Any

MISSING: Any = object()  # sentinel: the field is absent (distinct from a JSON null)


class FieldPath:
    """A (possibly dotted) field name, split once so per-record access stays cheap."""

    __slots__ = ("name", "parts", "dotted")

    def __init__(self, name: str):
        self.name = name
        self.parts = tuple(name.split("."))
        self.dotted = len(self.parts) > 1

    def get(self, record: dict) -> Any:
        """The value, or `MISSING`."""
        value = record.get(self.name, MISSING)
        if value is MISSING and self.dotted:
            value = record
            for part in self.parts:
                if type(value) is not dict:
                    return MISSING
                value = value.get(part, MISSING)
        return value

    def take(self, record: dict) -> Any:
        """Remove the field from the record and return it (or `MISSING`).

        Used for the text, so `Document.meta` can be the rest of the record without a copy and
        without holding the text twice.
        """
        value = record.pop(self.name, MISSING)
        if value is MISSING and self.dotted:
            parent: dict | None = record
            for part in self.parts[:-1]:
                parent = parent.get(part) if type(parent) is dict else None
            if type(parent) is dict:
                value = parent.pop(self.parts[-1], MISSING)
        return value


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages ("number", not "int")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def missing_text_reason(field: FieldPath, record: dict) -> str:
    keys = ", ".join(repr(k) for k in record) or "none"
    return f"no text field {field.name!r} (keys present: {keys}); set the text field option if the text is elsewhere"


def bad_text_reason(field: FieldPath, value: Any) -> str:
    return f"text field {field.name!r} is {json_type(value)}, expected a string"


def surrogate_reason(field: FieldPath, text: str) -> str | None:
    """A reason if the text has unpaired UTF-16 surrogates (from escapes like ``\\ud83d``).

    JSON allows such escapes, but the string cannot be encoded as UTF-8, so every writer
    downstream would fail on it much later and far from the cause.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"text field {field.name!r} contains an unpaired surrogate {text[exc.start]!r} at character {exc.start}"
    return None


def surrogate_field_reason(record: dict) -> str | None:
    """A reason naming the first field (dotted path; ``[i]`` for list items; keys too) whose string
    has a lone surrogate, or None. Such a value passes annotate and fails later in any writer
    (the id in the attribute shard, ``url`` or other fields when `select` writes the record)."""
    stack: list[tuple[str, Any]] = [("", record)]
    while stack:
        path, value = stack.pop()
        if type(value) is dict:
            items = list(value.items())
            for key, inner in reversed(items):
                name = f"{path}.{key}" if path else str(key)
                if _lone_surrogate(key) is not None:
                    return f"a field name {_shown(key)} (in {path or 'the record'}) has a lone surrogate"
                stack.append((name, inner))
        elif type(value) is list:
            stack.extend((f"{path}[{i}]", inner) for i, inner in reversed(list(enumerate(value))))
        elif type(value) is str:
            at = _lone_surrogate(value)
            if at is not None:
                return (f"field {_shown(path)} has a lone surrogate {value[at]!r} at character {at} "
                        "(an unpaired \\u escape), which cannot be written as UTF-8")
    return None


def _lone_surrogate(value: str) -> int | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _shown(name: str) -> str:
    """A field name for a message; one holding a lone surrogate is shown with it escaped."""
    return repr(name.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace"))


def resolve_id(value: Any, rel: str, row: int) -> str | None:
    """The document id, or None when `value` cannot be one (`bad_id_reason` says why).

    Missing, null or empty ids become ``f"{rel}/{row}"``.
    """
    if value is MISSING or value is None or value == "":
        return f"{rel}/{row}"
    if type(value) is str:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def bad_id_reason(field: FieldPath, value: Any) -> str:
    return f"id field {field.name!r} is {json_type(value)}, expected a string or an integer"


def optional_str(value: Any, field: FieldPath) -> tuple[str | None, str | None]:
    """``(value or None, None)`` or ``(None, reason)`` for lang/url: absent or null is fine."""
    if value is MISSING or value is None:
        return None, None
    if type(value) is str:
        return value, None
    return None, f"field {field.name!r} is {json_type(value)}, expected a string"
