"""One name per option (issue 26, item 3): a setting is spelt the same as a flag, a YAML key and a
Python keyword, for every registered stage (read from the stage registry, so a new stage is
checked without an edit here), and docs/options.md is the page the generator writes.

Before: `--field` was `fields:`, `dsir fit --target` was `targets:`, `--threshold` was
`thresholds=`; extract's `on_error` was refused under `extract:`; `ts.select(dryrun=True)` listed
the valid keywords without `dry_run` and suggested nothing.
"""

from __future__ import annotations

import argparse
import inspect
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import yaml

import textsieve as ts
from textsieve.cli import build_parser, main
from textsieve.commands.options import cli_shape, config_kwargs
from textsieve.commands.options_page import GENERATOR, OTHERS, Command, commands, render
from textsieve.options import default_of, flag_of, option_of, type_hints
from textsieve.pipeline.build import build
from textsieve.pipeline.config import PipelineConfigError, load, read_overrides, schema, validate
from textsieve.pipeline.twins import CLI_ONLY, yaml_path
from textsieve.stages.registry import stages

ROOT = Path(__file__).resolve().parents[1]
#: list settings whose name is no plural noun but reads right with one value or several
NEEDS_NO_PLURAL = {"against", "redact", "corpus"}
STAGE_COMMANDS = [Command(s.cli, s.api_name, s.config, s.first, s) for s in stages()]


def _parser(path: str) -> argparse.ArgumentParser:
    p = build_parser()
    for name in path.split():
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        p = sub.choices[name]
    return p


def _schema_key(path: str):
    node = schema()
    for part in path.replace("[0]", ".[0]").split("."):
        node = node[0] if part == "[0]" else node[part]
    return node


def _check_cli(command: Command) -> None:
    """Every field's flag is `--` + its name (dashes for underscores), or its positional; a list
    or mapping field's flag can be repeated; an old spelling reaches the same action."""
    parser = _parser(command.cli)
    by_dest = {a.dest: a for a in parser._actions}
    hints = type_hints(command.config)
    for f in fields(command.config):
        opt = option_of(f)
        assert opt is not None, f"{command.config.__name__}.{f.name}: declare it with option()"
        if not opt.cli:
            assert f.name not in by_dest and opt.cli_reason, f"{command.cli}: {f.name} has cli=False but an option"
            continue
        action = by_dest[f.name]
        if opt.positional:
            assert action.option_strings == [], f.name
            continue
        long = [s for s in action.option_strings if s.startswith("--")]
        assert long == [flag_of(f.name)], f"`textsieve {command.cli}` spells {f.name} as {long}"
        shape, _ = cli_shape(hints[f.name])
        if shape in ("list", "dict"):
            assert isinstance(action, (argparse._AppendAction, argparse._ExtendAction)), \
                f"`textsieve {command.cli}` {long[0]}: a list flag must be repeatable"
            assert f.name.endswith("s") or f.name in NEEDS_NO_PLURAL, \
                f"{command.config.__name__}.{f.name} holds a list: give it a plural name"
        for old in opt.renamed_from:
            assert parser._option_string_actions[old] is action, old
            assert old not in action.option_strings  # not shown in --help
    fields_ = {f.name for f in fields(command.config)}
    for action in parser._actions:  # and nothing else: each option fills the field of its name
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.dest in fields_ or action.dest in CLI_ONLY or action.dest == "quiet", action.dest


def _check_api(command: Command) -> None:
    """The function takes every field, by its name, with the dataclass's default."""
    params = inspect.signature(getattr(ts, command.api)).parameters
    names = [f.name for f in fields(command.config)]
    assert [p for p in params if p != "dry_run"] == [command.first] + [n for n in names if n != command.first]
    for f in fields(command.config):
        if f.name != command.first:
            want = default_of(f)
            assert params[f.name].default == (inspect.Parameter.empty if want is MISSING else want), f.name


@pytest.mark.parametrize("command", STAGE_COMMANDS, ids=lambda c: c.cli)
def test_the_three_surfaces_spell_every_stage_setting_alike(command: Command):
    assert command.stage is not None
    _check_cli(command)
    _check_api(command)
    stage = command.stage
    for f in fields(stage.config):  # the YAML key is the field's name, where the pipeline has it
        path = yaml_path(stage.name, f.name)
        if path is None:
            assert stage.derived[f.name].strip(), f"{stage.name}.{f.name}: derived without a reason"
            continue
        assert path.rsplit(".", 1)[-1] == f.name, path
        key = _schema_key(path)
        assert key.default == default_of(f) or path.startswith("read."), path
        if f.name in read_overrides(stage):  # also the stage's own section, for itself
            assert _schema_key(f"{stage.section}.{f.name}").inherits == path


@pytest.mark.parametrize("command", OTHERS, ids=lambda c: c.cli)
def test_commands_outside_the_pipeline_spell_their_settings_alike(command: Command):
    _check_cli(command)
    _check_api(command)


def test_every_stage_is_on_the_page():
    """`commands()` (what the page lists) is the stage registry, not a list of its own."""
    listed = {c.cli for c in commands()}
    assert {s.cli for s in stages() if s.cli_spec is not None} <= listed


def test_the_options_page_is_the_generated_one():
    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert page == render(), f"docs/options.md is stale: run `{GENERATOR}`"
    # every setting of every stage is a row, with its three spellings and its default
    assert "| `--thresholds` `T` (repeatable); was `--threshold` | `dedup.fuzzy.thresholds` | `thresholds=` " \
           "| `[0.8]` |" in page
    assert "| `--fields` `F` (repeatable); was `--field` | `decontaminate.fields` | `fields=` | `['text']` |" in page
    assert "| `--targets` `T` (one or more; repeatable); was `--target` | `dsir[].targets` | `targets=` | required |" \
           in page
    assert "`read.on_error`, or `extract.on_error` for this stage only" in page


def test_the_check_mode_reports_a_stale_page(tmp_path, capsys):
    from textsieve.commands.options_page import main as page_main

    stale = tmp_path / "options.md"
    stale.write_text("old\n", encoding="utf-8")
    assert page_main([str(stale), "--check"]) == 1 and "is stale" in capsys.readouterr().err
    assert page_main([str(stale)]) == 0 and page_main([str(stale), "--check"]) == 0
    assert stale.read_text(encoding="utf-8") == render()


# ---------------------------------------------------------------- the examples, surface by surface

def test_plural_flags_are_repeatable_and_fill_the_same_field():
    from textsieve.stages.dedup.fuzzy import FuzzyConfig
    from textsieve.stages.select.dsir_fit import DsirFitConfig
    from textsieve.stages.training.decontaminate import DecontamConfig

    args = build_parser().parse_args(["dedup", "fuzzy", "attrs", "--thresholds", "0.9", "--thresholds", "0.7"])
    assert config_kwargs(FuzzyConfig, args)["thresholds"] == [0.9, 0.7]
    args = build_parser().parse_args(["decontaminate", "attrs", "--against", "b.jsonl", "--fields", "question",
                                      "--fields", "answer"])
    assert config_kwargs(DecontamConfig, args)["fields"] == ["question", "answer"]
    args = build_parser().parse_args(["dsir", "fit", "--raw", "attrs", "--name", "w", "--targets", "a.jsonl",
                                      "b.jsonl", "--targets", "c.jsonl"])
    assert config_kwargs(DsirFitConfig, args)["targets"] == ["a.jsonl", "b.jsonl", "c.jsonl"]


@pytest.mark.parametrize("old,new,argv,field,want", [
    ("--threshold", "--thresholds", ["dedup", "fuzzy", "attrs", "{flag}", "0.9", "{flag}", "0.7"], "thresholds",
     [0.9, 0.7]),
    ("--field", "--fields", ["decontaminate", "attrs", "--against", "b.jsonl", "{flag}", "question"], "fields",
     ["question"]),
    ("--target", "--targets", ["dsir", "fit", "--raw", "attrs", "--name", "w", "{flag}", "a.jsonl", "b.jsonl"],
     "targets", ["a.jsonl", "b.jsonl"]),
    ("--model", "--models", ["annotate", "x.jsonl", "-o", "out", "{flag}", "wiki=wiki.tsm"], "models",
     {"wiki": "wiki.tsm"}),
    ("--weight", "--dsir-weight", ["select", "attrs", "--dsir", "wiki", "--k", "5", "{flag}", "raw"], "dsir_weight",
     "raw"),
])
def test_old_flag_spellings_still_work_and_warn_once(capsys, old, new, argv, field, want):
    def parse(flag: str):
        return build_parser().parse_args([flag if a == "{flag}" else a for a in argv])

    args = parse(old)
    err = capsys.readouterr().err
    assert getattr(args, field) is not None
    assert err.count("warning:") == 1, err  # once, however often the old spelling is repeated
    assert f"warning: {old} is deprecated and will be removed; use {new} (the setting is `{field}`" in err
    new_args = parse(new)
    assert capsys.readouterr().err == ""
    assert getattr(args, field) == getattr(new_args, field)
    stage = next(s for s in stages() if " ".join(argv[:2]).startswith(s.cli))
    assert config_kwargs(stage.config, args)[field] == want


def test_a_required_setting_given_by_its_old_spelling_counts(capsys):
    """`dsir fit`'s targets are required: the old `--target` satisfies argparse's check."""
    assert build_parser().parse_args(["dsir", "fit", "--raw", "a", "--name", "w", "--target", "t.jsonl"]).targets \
        == ["t.jsonl"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dsir", "fit", "--raw", "a", "--name", "w"])
    assert "the following arguments are required: --targets" in capsys.readouterr().err


def test_help_shows_only_the_current_spelling(capsys):
    with pytest.raises(SystemExit):
        main(["dedup", "fuzzy", "--help"])
    out = capsys.readouterr().out
    assert "--thresholds T" in out and "--threshold " not in out


def test_unknown_python_keywords_suggest_the_nearest_and_list_dry_run():
    with pytest.raises(TypeError) as err:
        ts.select("attrs", dryrun=True)
    msg = str(err.value)
    assert "select() got an unexpected keyword argument 'dryrun' (did you mean 'dry_run'?)" in msg
    assert msg.endswith(", dry_run") and "valid keyword arguments: directory, output," in msg
    with pytest.raises(TypeError) as err:  # each unknown keyword gets its own suggestion
        ts.dedup_fuzzy("attrs", threshold=[0.8], progres=False)
    assert ("dedup_fuzzy() got unexpected keyword arguments 'threshold' (did you mean 'thresholds'?), "
            "'progres' (did you mean 'progress'?); valid keyword arguments: directory, thresholds,") in str(err.value)
    with pytest.raises(TypeError) as err:  # a stage without a preview has no dry_run to offer
        ts.dedup_exact("attrs", dry_run=True)
    assert "'dry_run'" in str(err.value) and not str(err.value).endswith("dry_run")


# ---------------------------------------------------------------- pipeline file: read settings

BASE = {"inputs": ["crawl.warc.gz"], "output": "out"}


def test_extract_on_error_is_accepted_under_extract_for_extract_only():
    cfg = validate({**BASE, "extract": {"on_error": "skip"}})
    assert build(cfg, "extract").on_error == "skip" and build(cfg, "annotate").on_error == "fail"
    assert cfg.data["extract"]["on_error"] == "skip" and cfg.data["read"]["on_error"] == "fail"
    assert "on_error" not in cfg.data["annotate"]  # an override is kept only where it is written
    cfg = validate({**BASE, "read": {"on_error": "skip"}, "extract": {}})  # read: is every reading stage
    assert build(cfg, "extract").on_error == "skip" and build(cfg, "annotate").on_error == "skip"
    cfg = validate({**BASE, "read": {"on_error": "skip"}, "extract": {}, "annotate": {"on_error": "fail"}})
    assert build(cfg, "extract").on_error == "skip" and build(cfg, "annotate").on_error == "fail"
    with pytest.raises(PipelineConfigError, match=r"extract.on_error: 'ignore' is not one of fail, skip"):
        validate({**BASE, "extract": {"on_error": "ignore"}})
    with pytest.raises(PipelineConfigError, match=r"extract.text_field: unknown key"):  # extract reads no field
        validate({**BASE, "extract": {"text_field": "body"}})


def test_a_read_override_reaches_the_stage_and_the_plan_reader(tmp_path):
    from textsieve.pipeline.config import STAGES, read_settings

    cfg = validate({**BASE, "read": {"text_field": "body"}, "dedup": {"exact": {"text_field": "content"}}})
    assert build(cfg, "annotate").text_field == "body" and build(cfg, "dedup_exact").text_field == "content"
    exact = next(s for s in STAGES if s.name == "dedup_exact")
    assert read_settings(cfg.data, exact)["text_field"] == "content"


# ---------------------------------------------------------------- pipeline file: the documented dsir: list

def test_the_documented_dsir_pipeline_is_valid_and_builds_its_fits():
    """The README shows `examples/dsir-pipeline.yaml`'s `dsir:` list; both are the same, and each
    item is a `dsir fit` whose keys are that command's settings."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = ROOT / "examples" / "dsir-pipeline.yaml"
    shown = readme.split("```yaml\n# examples/dsir-pipeline.yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(shown) == yaml.safe_load(example.read_text(encoding="utf-8"))
    cfg = load(example)
    assert cfg.stages()[-3:] == ["dsir:wiki", "dsir:wiki_clean", "select"]
    fits = [build(cfg, "dsir", index=i) for i in range(2)]
    assert [f.name for f in fits] == ["wiki", "wiki_clean"]
    assert fits[0].targets == [str((ROOT / "wiki.jsonl.gz").resolve())] and fits[0].ngrams == 2
    assert fits[1].recipe is not None and fits[1].recipe.rules
    assert build(cfg, "select").dsir == [("wiki", 1.0)]
