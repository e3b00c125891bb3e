"""`textsieve run`: the pipeline file's schema (twin of the stage CLIs), validation errors,
the dry-run plan, the resolved config, and a run on the sample corpus."""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import logging
import re
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from _files import read_jsonl, read_text

from textsieve.cli import build_parser, main
from textsieve.options import option_of
from textsieve.pipeline.config import STAGES, PipelineConfigError, load, schema, validate
from textsieve.pipeline.twins import CLI_COMMANDS, cli_field, yaml_path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pipeline.yaml"


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(name)


def _stage_parser(stage: str) -> argparse.ArgumentParser:
    p = build_parser()
    for name in CLI_COMMANDS[stage]:
        p = _subparser(p, name)
    return p


def _set(doc: dict, dotted: str, value) -> None:
    """Set `a.b[0].c` in a nested mapping, creating sections (and one list item) on the way."""
    parts = dotted.replace("[0]", ".[0]").split(".")
    node = doc
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if part == "[0]":
            continue
        node = node.setdefault(part, [{}])[0] if nxt == "[0]" else node.setdefault(part, {})
    node[parts[-1]] = value


MINIMAL = {"inputs": ["docs.jsonl.gz"], "output": "out"}
REQUIRED_SECTIONS = {"dsir": {"name": "wiki", "targets": ["t.jsonl"]}, "select": {"recipe": "gopher"},
                     "extract": {"fix_text": False}, "decontaminate": {"against": ["b.jsonl"]},
                     "tokens": {"tokenizer": "tok.json"}, "mix": {"mix": "mix.yaml"}, "pii": {"types": "email"},
                     "embed": {"model": "wordllama"}, "learn": {"model": "m.json"},
                     "sources": {"family": "github", "inputs": ["export.jsonl.gz"]}}


#: a valid non-null value per field name, for fields whose default is null or empty
SAMPLES = {"inputs": ["docs.jsonl.gz"], "targets": ["t.jsonl"], "name": "wiki", "recipe": "gopher",
           "models": {"m": "builtin:py3langid"}, "signals": ["rps_doc_word_count", "minhash"], "lang_field": "lang",
           "workers": 2, "threads": 2, "resources": "res", "tmp_dir": "tmp", "bloom_fp": 0.01, "bloom_capacity": 10,
           "model_path": "m.dsir", "k": 5, "lang": "de", "thresholds": [0.9, 0.7], "dsir": "wiki", "tokens": 100,
           "address": "localhost:6379", "executor": "ray", "dedupe_ids": "suffix", "source_roots": ["docs"],
           "group_shards": 2, "against": ["bench=b.jsonl"], "fields": ["question", "answer"], "tokenizer": "tok.json",
           "redact": ["pii"],
           "token_column": "ts_tokens_tok", "mix": "mix.yaml", "seed": 3, "shard_size": "1MB",
           "format": "parquet", "types": ["email"], "phone_regions": ["US"], "tiktoken_pattern": "cl100k_base",
           "shards": "parquet", "memory": "1GB", "embed_model": "wordllama", "eps": [0.05, 0.1],
           "clusters": 4, "sample": 1000, "model": "m.json", "family": "github", "reference": "rp_v1"}


@pytest.mark.parametrize("spec", STAGES, ids=lambda s: s.name)
def test_every_config_field_is_a_yaml_key(spec):
    """Each stage-config field is accepted in YAML (its own section or a shared key) and its
    value reaches the stage config the pipeline builds, or is derived with a stated reason."""
    from dataclasses import MISSING

    from textsieve.pipeline.build import build

    for f in fields(spec.config):
        path = yaml_path(spec.name, f.name)
        if path is None:
            assert spec.derived[f.name].strip(), f"{spec.name}.{f.name}: derived without a reason"
            continue
        value = SAMPLES.get(f.name, f.default)
        assert value is not MISSING and value is not None, f"add a sample value for {f.name}"
        if f.name == "recipe" and spec.name != "select":
            continue
        doc = json.loads(json.dumps(MINIMAL))
        section = spec.section.replace("[]", "")
        if section in REQUIRED_SECTIONS:
            doc[section] = [dict(REQUIRED_SECTIONS[section])] if spec.section.endswith("[]") \
                else dict(REQUIRED_SECTIONS[section])
        elif section.startswith("dedup."):
            if section == "dedup.simhash":  # no keep/normalize choice: its width is the one to give
                _set(doc, section + ".width", 6)
            elif section == "dedup.substring":  # nor here: its repeat length
                _set(doc, section + ".min_len", 50)
            else:
                _set(doc, section + ".keep" if section.endswith(("fuzzy", "semantic")) else section + ".normalize",
                     {"dedup.fuzzy": "first", "dedup.lines": "ccnet", "dedup.semantic": "first"}.get(section, "none"))
            if section == "dedup.semantic":  # it reads the embed stage's set
                doc["embed"] = {}
        _set(doc, path, value)
        if f.name == "dsir" and spec.name == "select":
            doc["select"] = {"dsir": "wiki", "k": 5}
        if f.name == "address":
            doc["executor"] = "ray"
        cfg = validate(doc)  # accepted
        built = build(cfg, spec.name, index=0 if spec.section.endswith("[]") else None) \
            if f.name not in ("recipe", "models") else None
        if built is not None and f.name not in ("dsir",):
            got = getattr(built, f.name)
            want = cfg.data
            for part in path.replace("[0]", ".0").split("."):
                want = want[int(part)] if part.isdigit() else want[part]
            assert got == want or got == (want if not isinstance(want, list) else list(want)), (f.name, got, want)


@pytest.mark.parametrize("stage", list(CLI_COMMANDS))
def test_every_cli_option_is_a_config_field(stage):
    """Each option of the stage's command fills a config field (so it has a YAML twin), or is
    listed as CLI-only with a reason; each field with a YAML key has a CLI option unless it is
    declared `cli=False` with its reason (a pipeline-only key)."""
    spec = next(s for s in STAGES if s.name == stage)
    names = {f.name for f in fields(spec.config)}
    covered = set()
    for action in _stage_parser(stage)._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        target = cli_field(stage, action.dest)
        if target is None:
            continue
        assert target in names, f"`{' '.join(CLI_COMMANDS[stage])}` option {action.dest!r} maps to no field of " \
                                f"{spec.config.__name__}"
        covered.add(target)
    for name in names - covered:
        opt = option_of(next(f for f in fields(spec.config) if f.name == name))
        assert name in spec.derived or (opt is not None and not opt.cli and opt.cli_reason), \
            f"{spec.config.__name__}.{name} has a YAML key but no CLI option"


def test_unknown_keys_name_the_nearest_valid_key():
    doc = {**MINIMAL, "anotate": {}, "dedup": {"fuzzy": {"treshold": [0.8]}}, "select": {"recipe": "gopher",
                                                                                          "formt": "parquet"}}
    with pytest.raises(PipelineConfigError) as err:
        validate(doc)
    msg = str(err.value)
    assert "anotate: unknown key 'anotate'; did you mean 'annotate'?" in msg
    assert "dedup.fuzzy.treshold: unknown key 'treshold'; did you mean 'thresholds'?" in msg
    assert "select.formt: unknown key 'formt'; did you mean 'format'?" in msg


def test_wrong_types_and_missing_keys_name_the_yaml_path():
    doc = {"inputs": ["a.jsonl"], "dedup": {"fuzzy": {"thresholds": [0.8, "high"], "workers": "two"}},
           "annotate": {"batch_size": True, "models": {"m": 3}}, "dsir": [{"name": "w"}], "read": {"on_error": "x"}}
    with pytest.raises(PipelineConfigError) as err:
        validate(doc)
    msg = str(err.value)
    assert "output: required key missing" in msg
    assert "dedup.fuzzy.thresholds[1]: expected a number, got string 'high'" in msg
    assert "dedup.fuzzy.workers: expected an integer, got string 'two'" in msg
    assert "annotate.batch_size: expected an integer, got true/false True" in msg
    assert "annotate.models.m: expected a string, got integer 3" in msg
    assert "dsir[0].targets: required key missing" in msg
    assert "read.on_error: 'x' is not one of fail, skip" in msg


def test_cross_checks():
    with pytest.raises(PipelineConfigError, match=r"dedup.fuzzy.thresholds\[0\]: 1.5 must be in \(0, 1\]"):
        validate({**MINIMAL, "dedup": {"fuzzy": {"thresholds": [1.5]}}})
    with pytest.raises(PipelineConfigError, match=r"give 'recipe' \(filter\), 'dsir' \(resample\) or both"):
        validate({**MINIMAL, "select": {"format": "parquet"}})
    with pytest.raises(PipelineConfigError, match="exactly one of 'k'"):
        validate({**MINIMAL, "select": {"dsir": "wiki"}})


def test_bad_file_is_a_clear_cli_error(tmp_path, capsys):
    p = tmp_path / "p.yaml"
    p.write_text("inputs: [a.jsonl]\noutput: out\nexecuter: ray\n")
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert "executer: unknown key 'executer'; did you mean 'executor'?" in err and str(p) in err
    p.write_text("inputs: [a.jsonl\n")
    assert main(["run", str(p)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_relative_paths_resolve_against_the_pipeline_file(tmp_path):
    (tmp_path / "sub").mkdir()
    p = tmp_path / "sub" / "p.yaml"
    p.write_text(yaml.safe_dump({"inputs": "data/*.jsonl", "output": "../out", "select": {"recipe": "gopher"},
                                 "dedup": {"exact": {"tmp_dir": "tmp"}}}))
    cfg = load(p)
    assert cfg.data["inputs"] == [str(tmp_path / "sub" / "data" / "*.jsonl")]
    assert cfg.output == str(tmp_path / "out")
    assert cfg.data["dedup"]["exact"]["tmp_dir"] == str(tmp_path / "sub" / "tmp")
    assert cfg.data["select"]["recipe"] == "gopher"  # a bundled name stays a name
    assert cfg.stages() == ["annotate", "dedup_exact", "select"]


def test_schema_lists_every_stage_section():
    sch = schema()
    assert set(sch) >= {"inputs", "output", "executor", "address", "read", "extract", "annotate", "dedup", "dsir",
                        "select"}
    assert set(sch["dedup"]) == {"exact", "fuzzy", "lines", "paragraphs", "semantic", "simhash", "substring"}
    assert "thresholds" in sch["dedup"]["fuzzy"] and "recipe" in sch["select"] and "buckets" in sch["dsir"][0]


@pytest.fixture(scope="module")
def sample_corpus(tmp_path_factory) -> Path:
    """The bundled sample corpus (Python/Debian docs), 240 documents split into 3 shards."""
    from textsieve.sample import build_sample

    d = tmp_path_factory.mktemp("sample")
    build_sample(str(d / "all.jsonl.gz"), max_docs=240)
    lines = read_text(d / "all.jsonl.gz").splitlines()
    docs = d / "docs"
    docs.mkdir()
    for k in range(3):
        with gzip.open(docs / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines[k::3]) + "\n")
    (d / "all.jsonl.gz").unlink()
    return docs


def test_dry_run_prints_the_plan(sample_corpus, tmp_path, capsys):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["inputs"] = [str(sample_corpus)]
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc))
    assert main(["run", str(p), "-o", str(tmp_path / "out"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "3 shard(s)" in out
    est = int(re.search(r"~([0-9,]+) documents", out).group(1).replace(",", ""))
    assert 180 <= est <= 300  # 240 documents, estimated from the bytes per document of the first shard
    for stage in ("annotate", "dedup exact", "dedup fuzzy", "select"):
        assert f"  {stage} " in out
    assert "memory" in out and "disk" in out and "band rows" in out
    assert not (tmp_path / "out").exists()  # nothing ran


def test_example_pipeline_runs_on_the_sample_and_records_its_resolved_config(sample_corpus, tmp_path, capsys,
                                                                                caplog):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["inputs"] = [str(sample_corpus)]
    doc["workers"] = 1
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert main(["run", str(p), "-o", str(out), "-q"]) == 0
    assert capsys.readouterr().err == ""  # --quiet: no progress, no info
    assert sorted(x.name for x in (out / "attrs" / "docs").glob("*.parquet")) == [f"part-{k}.parquet" for k in range(3)]
    for s in ("sets/dedup_exact_rpv2", "sets/dedup_fuzzy"):  # the example normalizes: the set is named by it
        assert len(list((out / "attrs" / s).glob("*.parquet"))) == 3
    selected = [rec for k in range(3) for rec in read_jsonl(out / "selected" / f"part-{k}.jsonl.gz")]
    assert 0 < len(selected) < 240 and all(len(r["text"].split()) >= 50 for r in selected)
    resolved = yaml.safe_load((out / "pipeline.resolved.yaml").read_text())
    assert resolved["dedup"]["fuzzy"]["verify"] == "exact"  # defaults filled
    assert resolved["select"]["format"] == "jsonl.gz"
    prov = resolved["provenance"]
    assert prov["textsieve_version"] and len(prov["inputs"]) == 3
    assert {"path", "size", "mtime"} <= set(prov["inputs"][0])
    # the resolved file is itself a pipeline file: re-running it repeats the run (all skipped)
    caplog.set_level(logging.INFO, logger="textsieve")
    assert main(["run", str(out / "pipeline.resolved.yaml"), "-v"]) == 0
    assert "already done" in capsys.readouterr().err
    assert "annotate: skipped part-0.jsonl.gz (already annotated)" in caplog.text
    assert "dedup_fuzzy: skipped (done with this configuration and inputs)" in caplog.text
    run_log = json.loads((out / "pipeline.run.json").read_text())
    assert [s["status"] for s in run_log["stages"]] == ["skipped"] * 4
    # a changed input is refused, not silently mixed with the old outputs
    with gzip.open(sample_corpus / "part-0.jsonl.gz", "ab") as fh:
        fh.write(b'{"id": "new", "text": "one more document"}\n')
    try:
        assert main(["run", str(p), "-o", str(out)]) == 2
        assert "inputs differ from those recorded" in capsys.readouterr().err
    finally:
        lines = read_text(sample_corpus / "part-0.jsonl.gz").splitlines()[:-1]
        with gzip.open(sample_corpus / "part-0.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def test_ray_executor_without_ray_is_a_clear_error(tmp_path, capsys):
    if importlib.util.find_spec("ray") is not None and importlib.util.find_spec("textsieve.exec.ray_exec"):
        pytest.skip("Ray is installed here; the Ray executor is tested in the Ray tests")
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({"inputs": [str(tmp_path / "x.jsonl")], "output": str(tmp_path / "o"),
                                 "executor": "ray"}))
    (tmp_path / "x.jsonl").write_text('{"id": "a", "text": "hello world"}\n')
    assert main(["run", str(p), "-q"]) == 2
    assert "Ray" in capsys.readouterr().err and not (tmp_path / "o").exists()
