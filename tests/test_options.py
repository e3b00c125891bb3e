"""One source of truth for stage defaults: the config dataclasses' `option()` fields.

For every stage, the default a CLI user gets, the dataclass default (what `ts.annotate(...)`
gets) and the pipeline file's default are the same value, checked mechanically; a changed
default in one place only cannot pass. Also the regression behind this rule: `select --dsir`
crashed because its CLI flags defaulted to None while the library expected numbers.
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields

import pytest

from textsieve.cli import build_parser, main
from textsieve.commands.options import config_kwargs
from textsieve.options import default_of, option_of
from textsieve.pipeline.config import STAGES, schema
from textsieve.pipeline.twins import CLI_COMMANDS, yaml_path

#: the fewest arguments each stage command parses with (its required ones)
REQUIRED_ARGS = {"extract": ["crawl.warc.gz", "-o", "out"], "dedup_lines": ["attrs"], "dedup_paragraphs": ["attrs"],
                 "dedup_substring": ["attrs"],
                 "annotate": ["in.jsonl", "-o", "out"], "dedup_exact": ["attrs"], "dedup_fuzzy": ["attrs"],
                 "dedup_simhash": ["attrs"],
                 "dsir": ["--targets", "t.jsonl", "--raw", "attrs", "--name", "wiki"], "select": ["attrs"],
                 "decontaminate": ["attrs", "--against", "b.jsonl"], "pii": ["attrs"],
                 "tokens": ["attrs", "--tokenizer", "tok.json"], "mix": ["mix.yaml"], "embed": ["attrs"],
                 "dedup_semantic": ["attrs"], "learn": ["m.json", "attrs"],
                 "source": ["github", "export.jsonl.gz", "-o", "code"]}


def _yaml_default(path: str):
    node = schema()
    for part in path.replace("[0]", ".[0]").split("."):
        node = node[0] if part == "[0]" else node[part]
    return node.default


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_cli_default_equals_dataclass_default_equals_yaml_default(spec):
    args = build_parser().parse_args([*CLI_COMMANDS[spec.name], *REQUIRED_ARGS[spec.name]])
    from_cli = config_kwargs(spec.config, args)
    checked = 0
    for f in fields(spec.config):
        default = default_of(f)
        if default is MISSING:
            continue
        if f.name in from_cli:
            assert from_cli[f.name] == default, f"{spec.name}.{f.name}: CLI {from_cli[f.name]!r} != {default!r}"
            checked += 1
        path = yaml_path(spec.name, f.name)
        if path is not None and not path.startswith(("read.", "overwrite", "executor", "address", "inputs")):
            assert _yaml_default(path) == default, f"{spec.name}.{f.name}: YAML {_yaml_default(path)!r} != {default!r}"
    assert checked >= 3


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_every_stage_field_is_declared_with_option(spec):
    """A plain field would miss its CLI option, help text and choices: every field says how it
    is offered (or, with cli=False, why it is not)."""
    for f in fields(spec.config):
        opt = option_of(f)
        assert opt is not None, f"{spec.config.__name__}.{f.name}: declare it with textsieve.options.option(...)"
        assert opt.help.strip()
        assert opt.cli or opt.cli_reason, f"{spec.config.__name__}.{f.name}: cli=False needs a cli_reason"


def test_choices_come_from_the_dataclass():
    from textsieve.stages.dedup.fuzzy import FuzzyConfig

    keep = next(f for f in fields(FuzzyConfig) if f.name == "keep")
    args = build_parser().parse_args(["dedup", "fuzzy", "attrs"])
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["dedup"]
    fuzzy = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices["fuzzy"]
    action = next(a for a in fuzzy._actions if a.dest == "keep")
    assert tuple(action.choices) == option_of(keep).choices
    assert schema()["dedup"]["fuzzy"]["keep"].choices == option_of(keep).choices
    assert args.thresholds is None and config_kwargs(FuzzyConfig, args)["thresholds"] == [0.8]


def test_repeated_flags_do_not_append_to_the_default():
    from textsieve.stages.dedup.fuzzy import FuzzyConfig

    args = build_parser().parse_args(["dedup", "fuzzy", "attrs", "--thresholds", "0.9", "--thresholds", "0.7"])
    assert config_kwargs(FuzzyConfig, args)["thresholds"] == [0.9, 0.7]


def test_model_options_parse_to_a_mapping_and_bad_ones_name_the_option(capsys):
    from textsieve.stages.annotate.annotate import AnnotateConfig

    args = build_parser().parse_args(["annotate", "x.jsonl", "-o", "o", "--models", "a=1.tsm", "--models", "b=2.tsm"])
    assert config_kwargs(AnnotateConfig, args)["models"] == {"a": "1.tsm", "b": "2.tsm"}
    assert main(["annotate", "x.jsonl", "-o", "o", "--models", "nopath"]) == 2
    assert "--models 'nopath': expected NAME=PATH" in capsys.readouterr().err


def test_select_dsir_uses_the_library_defaults_regression():
    """The README's `select DIR --dsir wiki --k 1000` crashed with a TypeError because
    --temperature and --min-tokens defaulted to None on the CLI."""
    from textsieve.dsir.defaults import DEFAULT_MIN_TOKENS, DEFAULT_TEMPERATURE
    from textsieve.stages.select.select import SelectConfig

    args = build_parser().parse_args(["select", "attrs", "--dsir", "wiki", "--k", "1000", "-o", "out"])
    kw = config_kwargs(SelectConfig, args)
    assert kw["temperature"] == DEFAULT_TEMPERATURE and kw["min_tokens"] == DEFAULT_MIN_TOKENS
    args = build_parser().parse_args(["dsir", "resample", "attrs", "--dsir", "wiki", "--k", "10"])
    assert config_kwargs(SelectConfig, args)["temperature"] == DEFAULT_TEMPERATURE


def test_one_dsir_target_parser():
    from textsieve.dsir.targets import DsirTargetsError, parse_dsir_targets
    from textsieve.pipeline.config import PipelineConfigError
    from textsieve.pipeline.config import parse_dsir_targets as yaml_parse

    assert parse_dsir_targets("wiki:0.7, books:0.3") == [("wiki", 0.7), ("books", 0.3)]
    assert parse_dsir_targets("wiki") == [("wiki", 1.0)]
    assert yaml_parse({"wiki": 2}, "select.dsir") == [("wiki", 2.0)]
    assert yaml_parse([["wiki", 1], "books"], "select.dsir") == [("wiki", 1.0), ("books", 1.0)]
    for bad in ("wiki:0", "wiki:-1", "wiki:x", ":1", "wiki,wiki", "wiki:"):
        with pytest.raises(DsirTargetsError):
            parse_dsir_targets(bad)
    with pytest.raises(PipelineConfigError, match="select.dsir"):
        yaml_parse("wiki:0", "select.dsir")


def test_api_and_yaml_get_the_cli_choice_checks(tmp_path):
    from textsieve.stages.select.select import SelectConfig, resolve_select_config

    with pytest.raises(ValueError, match=r"format=.zip. \(--format\): expected one of jsonl.gz, parquet"):
        resolve_select_config(SelectConfig(directory=str(tmp_path), format="zip"))
