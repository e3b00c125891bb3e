"""Sizes as people write them (`2GB`, `512MB`, `64KiB`, `1e6`): one parser for every flag
that takes bytes (`--memory`, `--max-doc-bytes`, `shard_size`). It sits at the bottom layer
beside `options.py`, so `io/` and `exec/` both read sizes without importing each other."""

from __future__ import annotations

import re

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgt]?)(i?)b?\s*")


def parse_size(text: str | int, flag: str = "--memory") -> int:
    """'2GB', '512MB', '64KiB', '1e6' or plain bytes -> bytes (decimal and binary units); `flag`
    names the setting in the error a bad value gets."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 1:
            raise ValueError(f"{flag}: {text!r} is not a positive size")
        return text
    m = _SIZE.fullmatch(str(text).lower())
    if not m:
        raise ValueError(f"{flag}: cannot read {text!r}; use e.g. 2GB, 512MB, 64KiB or bytes")
    base = 1024 if m.group(3) else 1000
    value = float(m.group(1)) * base ** " kmgt".index(m.group(2) or " ")
    if value < 1:
        raise ValueError(f"{flag}: {text!r} is not a positive size")
    return int(value)
