"""How the stage commands' CLI options map onto the stage config fields, hence onto the
pipeline file (`tests/test_pipeline.py` checks every option and every field mechanically)."""

from __future__ import annotations

from textsieve.pipeline.config import STAGES
from textsieve.stages.descriptor import shared_fields

#: The stage commands whose options the pipeline file mirrors: stage -> command path.
CLI_COMMANDS = {s.name: tuple(s.cli.split()) for s in STAGES}
#: CLI option (argparse dest) -> config field, where the names differ (the generated options of
#: `textsieve.commands.options` use the field name as dest, so only the shared -q is left).
CLI_RENAMES: dict[str, dict[str, str]] = {"*": {"quiet": "progress"}}
#: CLI options with no config field, and why.
CLI_ONLY = {"verbose": "log level of one invocation (`textsieve run -v`)",
            "command": "argparse: the subcommand name", "mode": "argparse: the dedup subcommand name",
            "dsir_command": "argparse: the dsir subcommand name", "func": "argparse: the handler",
            "learn_action": "argparse: the learn subcommand name",
            "dry_run": "`select --dry-run` prints a funnel; the pipeline has `textsieve run --dry-run`",
            "json": "how a single command prints its summary; the pipeline writes pipeline.run.json"}


def cli_field(stage: str, dest: str) -> str | None:
    """The config field a CLI option of `stage` fills (None: CLI-only, see CLI_ONLY)."""
    if dest in CLI_ONLY:
        return None
    return CLI_RENAMES.get(stage, {}).get(dest) or CLI_RENAMES["*"].get(dest) or dest


def yaml_path(stage: str, name: str) -> str | None:
    """Where field `name` of stage `stage` lives in the pipeline file (None: derived). A `read.`
    key may also be written in the stage's own section, for that stage only (`read_overrides`)."""
    spec = next(s for s in STAGES if s.name == stage)
    if name in spec.derived:
        return None
    if name in shared_fields(spec):
        return shared_fields(spec)[name]
    return f"{spec.section.replace('[]', '[0]')}.{name}"
