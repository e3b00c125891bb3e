"""CLI subcommands. Each module defines `register(sub, common)` that adds its parser(s) and sets
`func`; `textsieve.cli` only wires them together, so stages can add commands independently."""

from __future__ import annotations

COMMAND_MODULES = ("extract", "annotate", "dedup", "select", "dsir", "learn", "eval", "train", "models", "export",
                   "import_cmd", "decontaminate", "pii", "tokens", "embed", "mix", "signals", "resources", "sample",
                   "run", "report")
