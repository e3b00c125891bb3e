"""Adding a stage is one module: a new stage module, and no other file, gives a `textsieve`
command with its help and options, a pipeline section, an API function with its signature, a
dry-run row whose columns recipes are checked against, and a pipeline run whose column `select`
reads. The module is written outside the package here and put on `textsieve.stages`' path, so
nothing in the repository names it (run in a fresh process; one worker each, so no pool child
needs the path). Real text: the bundled sample corpus."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

#: a complete stage: the share of upper-case letters of each document, as the set `sets/shout`
SHOUT = '''
"""`textsieve shout`: the share of upper-case letters per document (the set `sets/shout`)."""

from dataclasses import dataclass

import pyarrow as pa

from textsieve.options import option, progress_option
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, set_named
from textsieve.stages.doc_set import DocSetJob, DocSetResult, output_schema, run_doc_set
from textsieve.stages.planning import PlannedSet, doc_set_plan


@dataclass
class ShoutConfig:
    directory: str = option(help="output folder of `textsieve annotate`", positional=True, metavar="ANNOTATED_DIR")
    min_letters: int = option(1, help="documents with fewer letters get 0")
    workers: int | None = option(None, help="processes (default: all cores)")
    overwrite: bool = option(False, help="replace a sets/shout set made with other settings")
    progress: bool = progress_option()


def _setup(min_letters):
    return min_letters


def _compute(min_letters, texts):
    out = []
    for text in texts:
        letters = [c for c in text if c.isalpha()]
        out.append(sum(c.isupper() for c in letters) / len(letters) if len(letters) >= min_letters else 0.0)
    return {"ts_shout_frac": pa.array(out, pa.float64())}


def job(cfg: ShoutConfig) -> DocSetJob:
    return DocSetJob(stage="shout", set_name="shout", setup=_setup, compute=_compute, params=cfg.min_letters,
                     info={"min_letters": cfg.min_letters}, result_keys=("min_letters",),
                     schema=pa.schema([pa.field("ts_shout_frac", pa.float64())]))


def run_shout(cfg: ShoutConfig) -> DocSetResult:
    return run_doc_set(cfg.directory, job(cfg), workers=cfg.workers, progress=cfg.progress, overwrite=cfg.overwrite)


STAGE = Stage("shout", ShoutConfig, "shout", lambda c: Outcome({"documents": run_shout(c).documents}), order=95,
              placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named("shout"), call=run_shout,
              output_sets=lambda c, layout, where: [PlannedSet("shout", output_schema(job(c)))],
              estimate=lambda c, e: doc_set_plan("shout", "upper-case share -> sets/shout", e.docs),
              cli_spec=CliSpec(help="share of upper-case letters per document",
                               description="Write the attribute set ANNOTATED_DIR/sets/shout (ts_shout_frac).",
                               examples=("textsieve shout attrs/",),
                               report=lambda r: f"shout: {r.documents:,} documents -> {r.output}"))
'''

DRIVER = '''
import contextlib, inspect, io, json, sys
import textsieve.stages
textsieve.stages.__path__.append(sys.argv[1])
import textsieve as ts
from textsieve.cli import main
from textsieve.pipeline.config import schema, section_value
from textsieve.stages.registry import stage


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as done:
            code = done.code
    return {"code": code, "out": out.getvalue(), "err": err.getvalue()}


shout = stage("shout")
top = cli("--help")
print(json.dumps({
    "top_help": top["out"], "help": cli("shout", "--help"),
    "section": bool(section_value(schema(), shout)),
    "signature": list(inspect.signature(ts.shout).parameters), "doc": ts.shout.__doc__,
    "dry_run": cli("run", sys.argv[2], "--dry-run"),
    "typo": cli("run", sys.argv[3], "--dry-run"),
    "run": cli("run", sys.argv[2], "-q"),
    "command": cli("shout", sys.argv[4], "--min-letters", "5", "--workers", "1"),
    "refused": cli("shout", sys.argv[4], "--workers", "1"),
    "api": [getattr(ts.shout(sys.argv[4], min_letters=5, workers=1, progress=False), k)
            for k in ("documents", "skipped")],
}))
'''


def _pipeline(path: Path, docs: Path, out: Path, rule: str) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({
        "inputs": [str(docs)], "output": str(out), "workers": 1, "annotate": {"signals": ["rps_doc_word_count"]},
        "shout": {"min_letters": 5}, "select": {"recipe": {"name": "calm", "rules": {"calm": rule}}}}))
    return path


def test_a_stage_module_alone_gives_command_section_api_plan_and_run(tmp_path):
    from textsieve.sample import build_sample

    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "shout.py").write_text(textwrap.dedent(SHOUT))
    docs = tmp_path / "docs.jsonl.gz"
    build_sample(str(docs), max_docs=60)
    out = tmp_path / "run"
    good = _pipeline(tmp_path / "good.yaml", docs, out, "ts_shout_frac < 0.2")
    typo = _pipeline(tmp_path / "typo.yaml", docs, tmp_path / "never", "ts_shout_fraction < 0.2")
    (tmp_path / "driver.py").write_text(DRIVER)
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(plugin), str(good), str(typo),
                           str(out / "attrs")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])

    assert "shout" in r["top_help"] and "share of upper-case letters per document" in r["top_help"]
    assert r["help"]["code"] == 0 and "usage: textsieve shout" in r["help"]["out"]
    assert "--min-letters" in r["help"]["out"] and "textsieve shout attrs/" in r["help"]["out"]
    assert r["section"]
    assert r["signature"] == ["directory", "min_letters", "workers", "overwrite", "progress"]
    assert "fields of ShoutConfig" in r["doc"] and "min_letters (default 1)" in r["doc"]

    assert r["dry_run"]["code"] == 0 and "upper-case share -> sets/shout" in r["dry_run"]["out"]
    assert r["typo"]["code"] == 2 and "did you mean 'ts_shout_frac'?" in r["typo"]["err"]
    assert not (tmp_path / "never").exists()

    assert r["run"]["code"] == 0, r["run"]["err"]
    import pyarrow.dataset as ds

    fracs = ds.dataset(str(out / "attrs" / "sets" / "shout")) \
        .to_table().column("ts_shout_frac").to_pylist()
    assert len(fracs) == 60 and 0 < min(fracs) < max(fracs) < 1  # real prose: some capitals, never all
    selected = [json.loads(line) for f in sorted((out / "selected").rglob("*.jsonl.gz"))
                for line in __import__("gzip").open(f, "rt", encoding="utf-8")]
    assert 0 < len(selected) == sum(f < 0.2 for f in fracs)  # select read the new stage's column

    # the command and the API on the pipeline's set: the same settings are up to date, nothing redone
    assert r["command"]["code"] == 0
    assert f"shout: 60 documents -> {out / 'attrs' / 'sets' / 'shout'}" in r["command"]["err"]
    assert r["api"] == [60, True]
    # another setting (the default min_letters 1, not the pipeline's 5): refused without --overwrite, named
    assert r["refused"]["code"] == 2 and "min_letters" in r["refused"]["err"], r["refused"]
