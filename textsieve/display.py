"""How results look at the prompt and in Jupyter: one screen, every field, no raw bytes.

Why: a stage's result is a dataclass, and the generated repr dumps every field on one line:
lists of shard names, nested summaries, the NumPy arrays of a DSIR draw. Jupyter shows that
line as it is. `@result_display` (put above `@dataclass`) gives a result class

* a `__repr__` that still names every field, as a dataclass repr does, but summarises big
  values: `[12 items]`, `{7 keys}`, `<array of 100>`, `<128 bytes>`;
* a `_repr_html_` that Jupyter renders as a small field/value table (fields that are None or
  empty left out) under a headline: the class's `_headline()` when it has one ("selected 68 of
  500 documents (13.6%)").

A class with a `table()` method (the mix plan) already has a text form its CLI prints: that
text is its repr, and its HTML is the same text in a `<pre>`. The funnel draws its own HTML
table (`textsieve.recipes.funnel`) with `html_table`.

DuckDB relations (`ts.attributes(d)`) are DuckDB's type, so they get an IPython display
formatter instead (`hide_bytes_in_previews`, registered by `ts.attributes`): the MinHash
signatures as `<9 x 32 bytes>` and long span lists as `<312 spans>`. Only the display changes;
queries and fetches see the data as it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import io
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

MAX_TEXT = 60  # characters of a value before it is summarised
MAX_ITEMS = 3  # items of a list or dict shown before it is summarised
MAX_ROWS = 20  # rows of a relation a notebook shows


def short(value: Any) -> str:
    """`value` in at most about `MAX_TEXT` characters, as Python would write it when it fits."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, memoryview):
        return f"<{value.nbytes} bytes>"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_TEXT else repr(value[:MAX_TEXT - 1] + "…")
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a NumPy array: its size, not its values
        return f"<array of {' x '.join(str(n) for n in value.shape) or 'one value'}>"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a pipeline's StageRecord: its name
        name = getattr(value, "name", None)
        return f"<{type(value).__name__} {name}>" if isinstance(name, str) else f"<{type(value).__name__}>"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [short(v) for v in value]
        text = ", ".join(items)
        if len(items) <= MAX_ITEMS and len(text) <= MAX_TEXT:
            return f"({text}{',' if len(items) == 1 else ''})" if isinstance(value, tuple) else f"[{text}]"
        return f"[{len(items)} items]"
    if isinstance(value, dict):
        text = ", ".join(f"{short(k)}: {short(v)}" for k, v in value.items())
        if len(value) <= MAX_ITEMS and len(text) <= MAX_TEXT:
            return "{" + text + "}"
        return f"{{{len(value)} keys}}"
    text = repr(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _cell(value: Any) -> str:
    """`short(value)` for an HTML cell: numbers with thousands separators, text without quotes."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str) and len(value) <= MAX_TEXT:
        return value
    return short(value)


def html_table(head: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "",
               left: Iterable[int] = (0,)) -> str:
    """An HTML table (escaped); columns in `left` align left, the others (numbers) right."""
    lefts = set(left)

    def style(i: int) -> str:
        return f' style="text-align:{"left" if i in lefts else "right"}"'

    out = ['<table class="textsieve">']
    if caption:
        out.append(f'<caption style="text-align:left">{html.escape(caption)}</caption>')
    out.append("<thead><tr>" + "".join(f"<th{style(i)}>{html.escape(h)}</th>" for i, h in enumerate(head))
               + "</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td{style(i)}>{html.escape(_cell(v) if not isinstance(v, str) else v)}</td>"
                                    for i, v in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _fields(obj: Any) -> list[tuple[str, Any]]:
    return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr]


def result_repr(obj: Any) -> str:
    """`Name(field=value, ...)` with every field, big values summarised (see `short`)."""
    table = getattr(obj, "table", None)
    if callable(table):
        return str(table())
    return f"{type(obj).__name__}(" + ", ".join(f"{k}={short(v)}" for k, v in _fields(obj)) + ")"


def result_html(obj: Any) -> str:
    """The headline, then a field/value table (or the text table in a `<pre>`)."""
    name = type(obj).__name__
    table = getattr(obj, "table", None)
    if callable(table):
        return f"<pre>{html.escape(str(table()))}</pre>"
    headline: Callable[[], str] | None = getattr(obj, "_headline", None)
    caption = f"{name}: {headline()}" if headline is not None else name
    rows = [[k, _cell(v)] for k, v in _fields(obj) if not _empty(v)]  # every field is in the repr
    return html_table(["field", "value"], rows, caption, left=(0, 1))


def _empty(value: Any) -> bool:
    """None or an empty list/dict: a row of the HTML table that says nothing."""
    return value is None or (isinstance(value, (list, tuple, dict, set)) and not value)


def result_display(cls: type[T]) -> type[T]:
    """Class decorator (above `@dataclass`): the compact `__repr__` and Jupyter's `_repr_html_`."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"@result_display needs a dataclass, not {cls.__name__}")
    cls.__repr__ = result_repr  # type: ignore[method-assign]
    cls._repr_html_ = result_html  # type: ignore[attr-defined]
    return cls


# ---------------------------------------------------------------- DuckDB previews without the bytes

_BYTES = re.compile(r"^BLOB$")
_BYTE_LIST = re.compile(r"^BLOB\[\d*\]$")  # a list or array of BLOBs (MinHash bands)
_LIST = re.compile(r"^(?P<item>.+)\[\d*\]$")
_SPAN = re.compile(r'^STRUCT\("start" \w+, "end" \w+, score \w+\)$')  # a signal's span list element


def _shown_column(name: str, kind: str) -> str | None:
    """The preview expression of one column, or None to show it as it is."""
    col = '"' + name.replace('"', '""') + '"'
    if _BYTES.match(kind):
        return f"'<' || octet_length({col}) || ' bytes>' AS {col}"
    if _BYTE_LIST.match(kind):  # all bands of a signature have one size: `<9 x 32 bytes>`
        sizes = f"list_transform({col}, lambda b: octet_length(b))"
        return (f"CASE WHEN len({col}) = 0 THEN '[]' WHEN list_min({sizes}) = list_max({sizes}) "
                f"THEN '<' || len({col}) || ' x ' || list_min({sizes}) || ' bytes>' "
                f"ELSE '<' || len({col}) || ' blobs, ' || list_sum({sizes}) || ' bytes>' END AS {col}")
    match = _LIST.match(kind)
    if match:  # a line signal's span list has one item per line: count them past a few
        what = "spans" if _SPAN.match(match.group("item")) else "items"
        return (f"CASE WHEN len({col}) > {MAX_ITEMS} THEN '<' || len({col}) || ' {what}>' "
                f"ELSE CAST({col} AS VARCHAR) END AS {col}")
    return None


def preview(rel: Any) -> Any:
    """`rel` as a notebook should show it: each BLOB as `<128 bytes>`, each list of BLOBs as
    `<9 x 32 bytes>`, each list longer than `MAX_ITEMS` as `<312 spans>` (a lazy projection:
    nothing is read until it is shown). Printed as they are, the four MinHash signature columns
    and the line signals' span lists made `ts.attributes(d).limit(3)` a table hundreds of
    thousands of characters wide."""
    exprs = [_shown_column(name, str(kind)) for name, kind in zip(rel.columns, rel.types)]
    if all(e is None for e in exprs):
        return rel
    cols = ['"' + name.replace('"', '""') + '"' for name in rel.columns]
    return rel.project(", ".join(e if e is not None else c for e, c in zip(exprs, cols)))


def preview_html(rel: Any, rows: int = MAX_ROWS) -> str:
    """The first `rows` rows of `preview(rel)` as an HTML table, each column headed by its name
    and its type in `rel` (DuckDB's own HTML would call every summarised column VARCHAR)."""
    got = preview(rel).limit(rows + 1).fetchall()

    def kind(k: Any) -> str:
        item = _LIST.match(str(k))
        return "span list" if item and _SPAN.match(item.group("item")) else str(k)

    def cell(v: Any) -> str:
        return "NULL" if v is None else html.escape(str(v))

    head = "".join(f"<th>{html.escape(n)}<br><small>{html.escape(kind(k))}</small></th>"
                   for n, k in zip(rel.columns, rel.types))
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in got[:rows])
    more = f"<p>first {rows} rows</p>" if len(got) > rows else ""
    return f'<table class="textsieve"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'


def preview_text(rel: Any) -> str:
    """DuckDB's text box of `preview(rel)`, as wide as the terminal (120 columns where there is
    none, as in a kernel, where DuckDB's own repr draws every column)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # `show` prints; `repr` has no width to give
        preview(rel).show(max_width=shutil.get_terminal_size((120, 24)).columns)
    return out.getvalue().rstrip("\n")


def _preview(rel: Any) -> dict[str, str]:
    """IPython's mime bundle of a DuckDB relation: `preview_text` and `preview_html`."""
    return {"text/plain": preview_text(rel), "text/html": preview_html(rel)}


def hide_bytes_in_previews() -> bool:
    """In IPython (a notebook or the terminal shell), show every DuckDB relation through
    `preview`. A display formatter, not a change to the data: `.fetchall()`, `.arrow()` and
    queries still see the bytes. Returns whether a shell was there to register with."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    import duckdb

    formatter = shell.display_formatter.mimebundle_formatter
    formatter.for_type(duckdb.DuckDBPyRelation, _preview)
    return True


__all__ = ["result_display", "short", "html_table", "result_repr", "result_html", "preview", "preview_html",
           "preview_text", "hide_bytes_in_previews"]
