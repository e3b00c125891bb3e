"""CLI subcommands. A stage's command comes from its descriptor (`commands.stage_commands`);
the modules named here hold the commands that are not stages (reports, model training, imports,
`dedup show`). Each defines `register(tree)`, adding its parser(s) to the `commands.tree`
and setting `func`; `textsieve.cli` only wires them together."""

from __future__ import annotations

COMMAND_MODULES = ("dedup", "dsir", "learn", "recipes", "eval", "train", "models", "export", "import_cmd", "signals",
                   "resources", "sample", "run", "report")
