"""The Python API (`import textsieve as ts`): keywords come from the stage config dataclasses,
results are the stages' result dataclasses, `ts.attributes` joins every attribute set, plain
scripts without a main guard can use worker processes, and docs/python-api.md runs as written."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _shared import SHARED, missing_reason

import textsieve as ts
from textsieve.stages.registry import stages

STAGES = stages()

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "python-api.md"
WEB = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
WIKI = SHARED / "corpora" / "dev" / "target_wiki.jsonl.gz"


def _head(src: Path, dst: Path, n: int) -> Path:
    """The first `n` records of a real corpus, as a new .jsonl.gz."""
    with gzip.open(src, "rt", encoding="utf-8") as fin, gzip.open(dst, "wt", encoding="utf-8") as fout:
        for i, line in enumerate(fin):
            if i == n:
                break
            fout.write(line)
    return dst


STAGE_IDS = [s.api_name for s in STAGES if s.call is not None] + ["train_tokenizer"]


def _stages():
    """(API function, its stage (None: train_tokenizer, not a stage), config class, first argument)."""
    from textsieve.tokenization.train import TrainTokenizerConfig

    out = [(getattr(ts, s.api_name), s, s.config, s.first) for s in STAGES if s.call is not None]
    return out + [(ts.train_tokenizer, None, TrainTokenizerConfig, "corpus")]


def _patch_run(monkeypatch, stage, fake) -> None:
    """Replace what the API function calls: the stage's `call`, or train_tokenizer's function."""
    if stage is None:
        monkeypatch.setattr(sys.modules["textsieve.tokenization.train"], "train_tokenizer", fake)
    else:  # a frozen descriptor: its instance dict still holds the field
        monkeypatch.setitem(stage.__dict__, "call", fake)


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return inspect.Parameter.empty


def _required_kwargs(cls, first: str) -> dict:
    """A placeholder for each required field other than the first argument."""
    return {f.name: (["t.jsonl"] if f.name == "targets" else "x") for f in dataclasses.fields(cls)
            if f.name != first and _default(f) is inspect.Parameter.empty}


# ---------------------------------------------------------------- keywords -> configs

@pytest.mark.parametrize("i", range(len(STAGE_IDS)), ids=STAGE_IDS)
def test_keywords_build_the_stage_config_with_its_defaults(i, monkeypatch, tmp_path):
    fn, stage, cls, first = _stages()[i]
    seen = []
    _patch_run(monkeypatch, stage, lambda cfg: seen.append(cfg) or "result")
    extra = {"recipe": "gopher"} if cls.__name__ == "SelectConfig" else {}
    assert fn(tmp_path / "in", **_required_kwargs(cls, first), **extra) == "result"
    cfg = seen[0]
    assert type(cfg) is cls
    value = getattr(cfg, first)
    assert value in (str(tmp_path / "in"), [str(tmp_path / "in")])  # a path object became a string (list)
    for f in dataclasses.fields(cls):  # every other field: the dataclass default, nothing hard-coded here
        if f.name != first and f.name not in extra and _default(f) is not inspect.Parameter.empty:
            assert getattr(cfg, f.name) == _default(f), f.name
    assert cfg.progress is True  # as in the dataclasses


@pytest.mark.parametrize("i", range(len(STAGE_IDS)), ids=STAGE_IDS)
def test_signature_lists_every_config_field(i):
    fn, _, cls, first = _stages()[i]
    params = inspect.signature(fn).parameters
    names = [f.name for f in dataclasses.fields(cls)]
    assert [p for p in params if p != "dry_run"] == [first] + [n for n in names if n != first]
    for f in dataclasses.fields(cls):
        if f.name != first:
            assert params[f.name].default == _default(f), f.name
    assert f"fields of {cls.__name__}" in fn.__doc__


@pytest.mark.parametrize("i", range(len(STAGE_IDS)), ids=STAGE_IDS)
def test_unknown_keyword_names_the_valid_ones(i):
    fn, _, cls, first = _stages()[i]
    with pytest.raises(TypeError) as err:
        fn("attrs", **_required_kwargs(cls, first), progres=False)
    msg = str(err.value)
    assert "unexpected keyword argument 'progres'" in msg and "did you mean 'progress'?" in msg
    assert all(f.name in msg for f in dataclasses.fields(cls))


def test_missing_required_keyword_and_duplicate_input():
    with pytest.raises(TypeError, match=r"dsir_fit\(\) missing required keyword argument\(s\): targets, name"):
        ts.dsir_fit("attrs")
    with pytest.raises(TypeError, match="multiple values for argument 'inputs'"):
        ts.annotate("a.jsonl", inputs=["b.jsonl"], output="o")


def test_build_config_follows_fields_added_later():
    """Keywords are read from `dataclasses.fields`, so a new field needs no API change."""
    from textsieve.api import build_config
    from textsieve.stages.dedup.fuzzy import FuzzyConfig

    @dataclasses.dataclass
    class Grown(FuzzyConfig):
        brand_new: int = 7  # a field another change adds at the end

    cfg = build_config(Grown, "dedup_fuzzy", {"directory": "d", "brand_new": 3, "thresholds": 0.7})
    assert (cfg.brand_new, cfg.thresholds) == (3, [0.7])  # a lone value for a list field is wrapped


def test_import_is_cheap_and_select_is_both_function_and_package():
    code = ("import sys, textsieve as ts; heavy = [m for m in ('textsieve.api', 'numpy', 'pyarrow', 'duckdb') "
            "if m in sys.modules]; print(heavy); import textsieve.recipes.language as r; "
            "print(callable(ts.select), r.load_recipe.__name__, 'dry_run' in __import__('inspect').signature("
            "ts.select).parameters)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True load_recipe True"]
    assert "annotate" in dir(ts) and "attributes" in ts.__all__
    with pytest.raises(AttributeError):
        ts.no_such_thing  # noqa: B018


def test_the_typed_stub_of_the_stage_functions_is_current():
    """`api_stages.pyi` (what type checkers see of the generated stage functions) is what
    `python -m textsieve.api_stub` writes for the registry as it is."""
    from textsieve.api_stub import STUB, stub_text

    text = stub_text()
    assert STUB.read_text(encoding="utf-8") == text, "run `python -m textsieve.api_stub`"
    for stage in STAGES:
        if stage.call is not None:
            assert f"def {stage.api_name}(" in text
    assert "dry_run: Literal[True], **options: Any) -> Funnel | Resample" in text


def test_py_typed_is_shipped():
    assert (REPO / "textsieve" / "py.typed").is_file()
    assert '"textsieve" = ["py.typed", "*.pyi"]' in (REPO / "pyproject.toml").read_text()


def test_load_recipe_forms(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nrules:\n  words: \"rps_doc_word_count >= 50\"\n")
    by_name, by_path, by_dict = ts.load_recipe("gopher"), ts.load_recipe(path), ts.load_recipe(
        {"name": "inline", "rules": {"words": "rps_doc_word_count >= 50"}})
    assert by_name.name == "gopher" and by_path.name == "mine" and by_dict.name == "inline"
    assert ts.load_recipe(by_dict) is by_dict
    assert [r.name for r in by_path.rules] == [r.name for r in by_dict.rules] == ["words"]


def test_read_documents_reads_real_corpora(tmp_path):
    if not WEB.is_file():
        pytest.skip(missing_reason(WEB, "dev corpus"))
    src = _head(WEB, tmp_path / "web.jsonl.gz", 50)
    docs = list(ts.read_documents(src))
    assert len(docs) == 50 and [d.row for d in docs] == list(range(50))
    with gzip.open(src, "rt") as fh:
        assert [d.text for d in docs] == [json.loads(line)["text"] for line in fh]
    both = list(ts.read_documents([src, _head(WIKI, tmp_path / "wiki.jsonl.gz", 5)]))
    assert len(both) == 55
    with pytest.raises(TypeError, match="did you mean 'text_field'"):
        ts.read_documents(src, txt_field="body").__next__()


# ---------------------------------------------------------------- real stages on real text

@pytest.fixture(scope="module")
def annotated(tmp_path_factory) -> Path:
    """200 real web documents annotated, deduplicated (exact + fuzzy) and DSIR-fit toward
    Wikipedia, all through the API."""
    if not WEB.is_file():
        pytest.skip(missing_reason(WEB, "dev corpus"))
    root = tmp_path_factory.mktemp("api")
    src = _head(WEB, root / "web.jsonl.gz", 200)
    target = _head(WIKI, root / "wiki.jsonl.gz", 100)
    attrs = root / "attrs"
    res = ts.annotate(src, output=attrs, workers=1, progress=False,
                      resources=SHARED / "golden" / "rpv2_resources")
    from textsieve.stages.annotate.annotate import AnnotateResult

    assert isinstance(res, AnnotateResult) and res.documents == 200
    from textsieve.stages.dedup.exact import ExactResult
    from textsieve.stages.dedup.fuzzy import FuzzyResult
    from textsieve.stages.select.dsir_fit import DsirFitResult

    assert isinstance(ts.dedup_exact(attrs, workers=1, progress=False), ExactResult)
    assert isinstance(ts.dedup_fuzzy(attrs, thresholds=[0.8, 0.7], progress=False), FuzzyResult)
    fit = ts.dsir_fit(attrs, targets=target, name="wiki", progress=False)
    assert isinstance(fit, DsirFitResult) and fit.documents == 200 and fit.target_docs == 100
    return attrs


def test_select_results_funnel_and_draw(annotated, tmp_path):
    from textsieve.dsir.resample import Resample
    from textsieve.recipes.funnel import Funnel
    from textsieve.stages.select.select import SelectResult

    recipe = {"name": "api", "rules": {"words": "rps_doc_word_count >= 50", "unique": "dup_fuzzy_t80_keep"}}
    funnel = ts.select(annotated, recipe=recipe, dry_run=True)
    assert isinstance(funnel, Funnel) and funnel.total == 200 and 0 < funnel.kept < 200
    assert ts.funnel(annotated, recipe).kept == funnel.kept
    sel = ts.select(annotated, recipe=recipe, output=tmp_path / "sel", workers=1, progress=False)
    assert isinstance(sel, SelectResult) and sel.documents == funnel.kept and sel.pool == 200
    draw = ts.select(annotated, dsir="wiki", k=20, dry_run=True)
    assert isinstance(draw, Resample) and draw.documents == 20
    picked = ts.select(annotated, dsir="wiki", k=20, output=tmp_path / "wiki-like", workers=1, progress=False)
    assert picked.documents == 20 and picked.dsir["k"] == 20
    with pytest.raises(ValueError, match=r"give a recipe, DSIR targets, or both \(--recipe R / recipe=\.\.\."):
        ts.select(annotated, output=tmp_path / "none")


def _expected_join(attrs: Path) -> dict:
    """(shard, row) -> a few columns, read set by set straight from the Parquet files."""
    main = pq.read_table(next(attrs.glob("*.parquet")), columns=["shard", "row", "ts_length"]).to_pylist()
    out = {(r["shard"], r["row"]): {"ts_length": r["ts_length"]} for r in main}
    for set_dir, col in (("_dedup_exact", "dup_exact_keep"), ("_dedup_fuzzy", "dup_fuzzy_t70_cluster"),
                         ("_dsir_wiki", "ts_dsir_wiki_norm")):
        for r in pq.read_table(next((attrs / set_dir).glob("*.parquet")), columns=["shard", "row", col]).to_pylist():
            out[(r["shard"], r["row"])][col] = r[col]
    return out


COLS = ["shard", "row", "ts_length", "dup_exact_keep", "dup_fuzzy_t70_cluster", "ts_dsir_wiki_norm"]


def test_attributes_in_three_forms_join_every_set(annotated):
    expected = _expected_join(annotated)
    rel = ts.attributes(annotated)
    assert {"rps_doc_word_count", "signature_sim0.8", "dup_exact_keep", "dup_fuzzy_t80_keep",
            "ts_dsir_wiki_norm"} <= set(rel.columns)
    assert rel.columns[:3] == ["id", "shard", "row"] and len(set(rel.columns)) == len(rel.columns)
    rows = rel.query("v", "SELECT " + ", ".join(f'"{c}"' for c in COLS) + " FROM v").fetchall()
    table = ts.attributes(annotated, "arrow")
    assert table.num_rows == 200 and table.schema.names == rel.columns
    pl = pytest.importorskip("polars")
    frame = ts.attributes(annotated, "polars")
    assert isinstance(frame, pl.LazyFrame) and frame.collect_schema().names() == rel.columns
    for got in (rows, [tuple(r.values()) for r in table.select(COLS).to_pylist()],
                frame.select(COLS).collect().rows()):
        assert len(got) == 200
        assert {(r[0], r[1]): dict(zip(COLS[2:], r[2:], strict=True)) for r in got} == expected
    assert ts.attributes(annotated, "arrow", columns=["id", "ts_dsir_wiki"]).schema.names == ["id", "ts_dsir_wiki"]


def test_attributes_names_clashes_and_reports_mistakes(annotated, monkeypatch, tmp_path):
    import shutil

    attrs = tmp_path / "attrs"
    shutil.copytree(annotated, attrs)
    (attrs / "_mine").mkdir()
    base = pq.read_table(next(attrs.glob("*.parquet")), columns=["id", "shard", "row", "ts_length"])
    pq.write_table(base.slice(0, 10), attrs / "_mine" / "web.parquet")  # 10 rows, a clashing name
    rel = ts.attributes(attrs)
    assert "mine.ts_length" in rel.columns
    got = rel.query("v", 'SELECT count("mine.ts_length"), count(*) FROM v').fetchall()[0]
    assert got == (10, 200)  # a LEFT JOIN: documents missing from a set are null there
    with pytest.raises(ValueError, match="did you mean 'dup_exact_keep'"):
        ts.attributes(attrs, columns=["dup_exakt_keep"])
    with pytest.raises(ValueError, match="expected one of duckdb, arrow, polars"):
        ts.attributes(attrs, "pandas")
    monkeypatch.setitem(sys.modules, "polars", None)  # polars not installed
    with pytest.raises(ValueError, match="needs polars, which is not installed: pip install polars"):
        ts.attributes(attrs, "polars")


def test_attributes_at_an_fsspec_url(annotated):
    """Attributes stored at a URL (here `memory://`) are read through fsspec in every form."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.put(str(annotated), "/api-attrs", recursive=True)
    try:
        local = ts.attributes(annotated, "arrow", columns=["id", "dup_exact_keep", "ts_dsir_wiki_norm"])
        remote = ts.attributes("memory://api-attrs", "arrow", columns=["id", "dup_exact_keep", "ts_dsir_wiki_norm"])
        assert remote.equals(local)
        rel = ts.attributes("memory://api-attrs")
        assert rel.query("v", "SELECT count(*) FROM v").fetchall() == [(200,)]
        if importlib.util.find_spec("polars"):
            frame = ts.attributes("memory://api-attrs", "polars", columns=["id", "dup_exact_keep"])
            assert frame.collect().to_arrow().column("id").to_pylist() == local.column("id").to_pylist()
    finally:
        fs.rm("/api-attrs", recursive=True)


def test_run_takes_a_pipeline_mapping(tmp_path, monkeypatch):
    if not WEB.is_file():
        pytest.skip(missing_reason(WEB, "dev corpus"))
    from textsieve.pipeline.run import PipelineResult

    _head(WEB, tmp_path / "web.jsonl.gz", 60)
    monkeypatch.chdir(tmp_path)
    res = ts.run({"inputs": "web.jsonl.gz", "output": "out", "workers": 1,
                  "dedup": {"exact": {}}, "select": {"recipe": "gopher"}}, quiet=True)
    assert isinstance(res, PipelineResult) and [s.name for s in res.stages][-1] == "select"
    assert (tmp_path / "out" / "selected").is_dir()
    with pytest.raises(ValueError, match="treshold"):
        ts.run({"inputs": "web.jsonl.gz", "output": "out", "dedup": {"fuzzy": {"treshold": 0.8}}})


# ---------------------------------------------------------------- worker processes from plain scripts

def test_plain_script_without_main_guard_uses_workers(tmp_path):
    """Before: each spawned worker re-ran the script, crashed in its bootstrap, and the pool
    respawned it forever (the script hung). Now it finishes, runs its top level once, and
    writes what an in-process run writes."""
    if not WEB.is_file():
        pytest.skip(missing_reason(WEB, "dev corpus"))
    _head(WEB, tmp_path / "web.jsonl.gz", 200)
    (tmp_path / "script.py").write_text(textwrap.dedent("""\
        import textsieve as ts
        print("top level ran", flush=True)
        res = ts.annotate("web.jsonl.gz", output="attrs", workers=2, batch_size=40, progress=False)
        print("documents", res.documents)
    """))
    try:
        out = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a plain script using workers=2 did not finish in 60 s: {(exc.stderr or b'')[-2000:]!r}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["top level ran", "documents 200"]
    assert "bootstrapping" not in out.stderr
    ts.annotate(tmp_path / "web.jsonl.gz", output=tmp_path / "alone", workers=1, progress=False)
    two, one = pq.read_table(tmp_path / "attrs" / "web.parquet"), pq.read_table(tmp_path / "alone" / "web.parquet")
    assert two.replace_schema_metadata(None).equals(one.replace_schema_metadata(None))


def test_crashing_worker_fails_fast_with_one_clear_error(tmp_path):
    """multiprocessing.Pool respawned a worker that died (here: in its initializer, or by
    exiting) forever, so the caller hung; the local pool now stops with a TextsieveError. Run
    in a subprocess with a timeout, so a regression fails instead of hanging the suite."""
    (tmp_path / "crash.py").write_text(textwrap.dedent("""\
        import operator, os
        from textsieve.errors import TextsieveError
        from textsieve.exec.local import ordered_map

        for fn, tasks, init in ((abs, [1, 2, 3], operator.truediv), (os._exit, [3, 3], None)):
            try:
                list(ordered_map(fn, tasks, workers=2, initializer=init, initargs=(1, 0) if init else ()))
            except TextsieveError as exc:
                print(type(exc).__name__, exc)
        print([r for _, r in ordered_map(abs, [-1, 2, -3], workers=2)])
    """))
    try:
        out = subprocess.run([sys.executable, "crash.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("a pool whose workers die did not stop within 60 s")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 3, out.stderr[-3000:]
    assert all(line.startswith("WorkerCrashError a worker process exited unexpectedly") for line in lines[:2])
    assert "re-run with workers=1" in lines[1]
    assert lines[2] == "[1, 2, 3]"


# ---------------------------------------------------------------- the walk-through runs as written

def _doc_script(text: str, have_polars: bool) -> tuple[str, int]:
    """The page's ```python blocks, in order, as one script; a block after `<!-- needs: polars -->`
    is left out when polars is missing. Returns (script, blocks kept)."""
    blocks = re.findall(r"(<!-- needs: (\w+) -->\s*)?```python\n(.*?)```", text, re.S)
    kept = [code for _, need, code in blocks if not need or (need == "polars" and have_polars)]
    return "\n".join(kept), len(kept)


def test_python_api_doc_runs(tmp_path):
    have_polars = importlib.util.find_spec("polars") is not None
    script, n = _doc_script(DOC.read_text("utf-8"), have_polars)
    assert n >= 9 + have_polars
    for call in ("ts.annotate(", "ts.dedup_exact(", "ts.dedup_fuzzy(", "dry_run=True", "ts.select(",
                 "ts.dsir_fit(", "ts.attributes(", "ts.run("):
        assert call in script, call
    (tmp_path / "walkthrough.py").write_text(script)  # a plain script: no main guard, workers=2
    out = subprocess.run([sys.executable, "walkthrough.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert re.search(r"recipe api-demo: [\d,]+ documents", out.stdout), out.stdout[-2000:]
    for made in ("attrs/_dedup_exact", "attrs/_dedup_fuzzy", "attrs/_dsir_docs", "selected", "docs-like",
                 "sample-run/selected"):
        assert (tmp_path / made).is_dir(), made
