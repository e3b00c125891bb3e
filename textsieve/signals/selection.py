"""Resolve `--signals` (names and group names) into the signals to compute."""

from __future__ import annotations

import difflib

from textsieve.signals.registry import REGISTRY, builtin_signals

MINHASH = "minhash"  # RPv2-compatible signatures (SHA-1, spec §7)
MINHASH_FAST = "minhash_fast"  # textsieve's fast signatures, NOT comparable with RPv2 bands
MINHASH_MODES = {MINHASH: "rpv2", MINHASH_FAST: "fast"}
ALL = "all"


def groups() -> dict[str, list[str]]:
    """Group name -> signal names, in registry order. `rpv2` is every RPv2 rule signal."""
    out: dict[str, list[str]] = {}
    for sig in REGISTRY.values():
        out.setdefault(sig.group, []).append(sig.name)
    out["rpv2"] = [name for name in builtin_signals() if name.startswith("rps_")]
    return out


def did_you_mean(name: str, valid: list[str]) -> str:
    """` (did you mean 'X'?)` for the valid name nearest `name`, or "": the list after it names
    all 30-odd signals, and a typo (`rps_doc_word_cnt`) should not make the reader search it."""
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    if not close:  # `word_count` for `rps_doc_word_count`: the name without RPv2's prefix
        close = [v for v in valid if v.endswith(f"_{name}")][:1]
    return f" (did you mean {close[0]!r}?)" if close else ""


def select_signals(spec: str | list[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(signal names in registry order, MinHash modes ("rpv2", "fast") selected) for a comma
    list or list.

    None or "all" selects every built-in rule signal plus RPv2 MinHash; an extension signal
    (`register_signal`, entry points) is computed only when named, itself or by its group, so
    installing a plugin never changes what a default run writes. Unknown names fail with the
    list of valid names and groups.
    """
    items = [ALL] if spec is None else (spec.split(",") if isinstance(spec, str) else list(spec))
    items = [item.strip() for item in items if item.strip()]
    if not items:
        raise ValueError("--signals is empty")
    grp = groups()
    chosen: set[str] = set()
    modes: set[str] = set()
    for item in items:
        if item == ALL:
            chosen.update(builtin_signals())
            modes.add("rpv2")
        elif item in MINHASH_MODES:
            modes.add(MINHASH_MODES[item])
        elif item in grp:
            chosen.update(grp[item])
        elif item in REGISTRY:
            chosen.add(item)
        else:
            valid_groups = ", ".join(sorted([*grp, *MINHASH_MODES, ALL]))
            hint = did_you_mean(item, [*REGISTRY, *grp, *MINHASH_MODES, ALL])
            raise ValueError(f"unknown signal or group {item!r}{hint}. Groups: {valid_groups}. "
                             f"Signals: {', '.join(REGISTRY)} (see `textsieve signals`).")
    return tuple(name for name in REGISTRY if name in chosen), tuple(m for m in ("rpv2", "fast") if m in modes)
