"""A stage is one module: every registered stage descriptor (`STAGE` in its module, found by
`stages.registry`) shows up in the CLI, the YAML schema, the API, the dry-run plan and the run
loop without any other file naming it, and a malformed descriptor is refused."""

from __future__ import annotations

import ast
import contextlib
import io
from dataclasses import fields
from pathlib import Path

import pytest

import textsieve
from textsieve.cli import main
from textsieve.pipeline.config import STAGES, schema, section_value
from textsieve.stages.descriptor import Outcome, Stage
from textsieve.stages.registry import stages


def test_the_registry_finds_every_stage_module_in_run_order():
    assert stages() == STAGES
    assert [s.name for s in STAGES] == ["source", "extract", "annotate", "embed", "dedup_exact", "dedup_fuzzy",
                                        "dedup_simhash", "dedup_lines", "dedup_paragraphs", "dedup_substring",
                                        "dedup_semantic", "decontaminate", "pii",
                                        "tokens", "learn", "dsir", "select", "mix"]
    # source, extract and annotate resume shard by shard by themselves (each shard's fingerprint
    # covers its input's identity); every other stage is tracked by a state file
    assert [s.name for s in STAGES if s.complete is None] == ["source", "extract", "annotate"]


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_every_stage_is_in_the_cli_schema_api_and_plan(stage: Stage):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*stage.cli.split(), "--help"])
    assert done.value.code == 0 and "usage: textsieve " + stage.cli in out.getvalue()
    sch = schema()
    section = section_value(sch, stage)
    assert section, f"{stage.name}: no YAML section {stage.section}"
    assert callable(getattr(textsieve, stage.api_name)), f"textsieve.{stage.api_name}"
    assert stage.estimate is not None, f"{stage.name}: no dry-run estimate"


def test_a_descriptor_is_either_state_tracked_or_self_resuming():
    def run(c: object) -> Outcome:
        return Outcome({})

    for kw in ({}, {"complete": lambda layout, n, c: True, "output_key": lambda layout: "k"}):
        with pytest.raises(ValueError, match="exactly one of"):
            Stage("extra", object, "extra", run, order=1, placed=lambda layout: {}, derived={}, **kw)
    with pytest.raises(ValueError, match="needs a label"):
        Stage("extra", object, "extra[]", run, order=1, placed=lambda layout: {}, derived={},
              complete=lambda layout, n, c: True)


def test_the_pipeline_names_no_stage():
    """`pipeline/` (schema, build, plan, dry-run columns, run) keeps no per-stage table: none of
    its string constants is a stage's name or YAML section, so a new stage needs no edit there."""
    names = {s.name for s in STAGES} | {s.section.removesuffix("[]") for s in STAGES}
    names |= {n.replace("_", " ") for n in names}
    folder = Path(textsieve.__file__).parent / "pipeline"
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        named = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names
                        and id(n) not in docstrings})
        assert not named, f"{path.name} names stages {named}"


def test_the_commands_and_the_api_name_no_stage():
    """`commands/` and `api.py` build every stage's command and function from its descriptor:
    none names a stage's command or API function, nor calls its run function; what is left there
    is commands that are not stages (`dedup show`, `recipes`, `train ...`) and groups. (A
    non-stage command may still import a stage's config to share its options: `dsir resample`
    takes select's.) `commands/index.py` is exempt: its table of which modules make each
    top-level command is derived from the registry and checked against it (tests/test_cli_index.py),
    and a command it does not know still gets the full build."""
    root = Path(textsieve.__file__).parent
    commands = {s.cli for s in STAGES} | {s.api_name for s in STAGES if s.call is not None}
    runs = {s.call.__name__ for s in STAGES if s.call is not None}
    for path in [root / "api.py", *sorted((root / "commands").glob("*.py"))]:
        if path.name == "index.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        made = [n.args[0] for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
                and isinstance(n.func, ast.Attribute) and n.func.attr in ("parser", "add_parser", "group")]
        named = sorted({n.value for n in made if isinstance(n, ast.Constant) and n.value in commands})
        named += sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                         and n.value.startswith("textsieve.stages.") and n.value.count(".") > 2})
        called = sorted({n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(tree)
                         if isinstance(n, (ast.Name, ast.Attribute)) and (n.id if isinstance(n, ast.Name)
                                                                          else n.attr) in runs})
        imported = sorted({a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
                           if a.name in runs})
        assert not named and not called and not imported, f"{path.name}: {named} {called} {imported}"


def test_every_stage_has_a_command_an_api_function_and_help_text():
    for s in STAGES:
        assert s.cli_spec is not None and s.call is not None, s.name
        assert s.cli_spec.help and s.cli_spec.description, s.name
        assert s.first in {f.name for f in fields(s.config)}, s.name


def test_the_cli_module_loads_no_pyarrow_before_main_chooses_its_memory_pool():
    """`cli.main` sets ARROW_DEFAULT_MEMORY_POOL=system before pyarrow first loads (its default
    allocator keeps freed arenas: a 30 MB document peaked 140 MB higher). Building the commands
    from the stage registry imports pyarrow, so it must happen inside `main`, not at import."""
    import subprocess
    import sys

    code = ("import sys, textsieve.cli; print('pyarrow' in sys.modules); "
            "textsieve.cli.build_parser(); print('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]
    env_code = ("import textsieve.cli as c; c.main(['recipes']); "
                "import pyarrow as pa; print(pa.default_memory_pool().backend_name)")
    done = subprocess.run([sys.executable, "-c", env_code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "system"
