"""The Python API (`import textsieve as ts`): keywords come from the stage config dataclasses,
results are the stages' result dataclasses, `ts.attributes` joins every attribute set, plain
scripts without a main guard can use worker processes, and docs/python-api.md runs as written."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import inspect
import json
import os
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
    main = pq.read_table(next((attrs / "docs").glob("*.parquet")), columns=["shard", "row", "ts_length"]).to_pylist()
    out = {(r["shard"], r["row"]): {"ts_length": r["ts_length"]} for r in main}
    for set_dir, col in (("sets/dedup_exact", "dup_exact_keep"), ("sets/dedup_fuzzy", "dup_fuzzy_t70_cluster"),
                         ("sets/dsir_wiki", "ts_dsir_wiki_norm")):
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
    (attrs / "sets" / "mine").mkdir(parents=True)
    base = pq.read_table(next((attrs / "docs").glob("*.parquet")), columns=["id", "shard", "row", "ts_length"])
    pq.write_table(base.slice(0, 10), attrs / "sets" / "mine" / "web.parquet")  # 10 rows, a clashing name
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
    two = pq.read_table(tmp_path / "attrs" / "docs" / "web.parquet")
    one = pq.read_table(tmp_path / "alone" / "docs" / "web.parquet")
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


@pytest.mark.slow  # spawns a pool: outside the quick suite
def test_ordered_map_runs_marked_tasks_here_in_order(tmp_path: Path):
    """A task marked `inline` (annotate: a document over a batch's budget) is computed in the
    calling process, after every earlier task and before any later one, with the initializer run
    there once; the others go to the workers; results keep task order."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "helpers.py").write_text(textwrap.dedent("""\
        import os
        STATE = []
        def setup(tag):
            STATE.append(tag)
        def where(x):
            return x, os.getpid(), list(STATE)
    """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""\
        import os
        from helpers import setup, where
        from textsieve.exec.local import ordered_map
        out = list(ordered_map(where, list(range(12)), workers=2, initializer=setup, initargs=("init",),
                               inline=lambda x: x in (0, 5, 6, 11)))
        print([t for t, _ in out] == list(range(12)), [r[0] for _, r in out] == list(range(12)))
        print(sorted(t for t, r in out if r[1] == os.getpid()), {tuple(r[2]) for _, r in out})
    """))
    out = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["True True", "[0, 5, 6, 11] {('init',)}"]


# ---------------------------------------------------------------- the walk-through runs as written

def _doc_script(text: str, have_polars: bool) -> tuple[str, int]:
    """The page's ```python blocks, in order, as one script; a block after `<!-- needs: polars -->`
    (or `datasets`, or both: `needs: polars datasets`) is left out when that package is missing,
    and the notebook's cells (`<!-- notebook cell -->`, run by `test_python_api_notebook_runs`)
    always. Returns (script, blocks kept)."""
    blocks = re.findall(r"(<!-- (needs: ([\w ]+?)|notebook cell) -->\s*)?```python\n(.*?)```", text, re.S)
    have = {"polars": have_polars, "datasets": importlib.util.find_spec("datasets") is not None}
    kept = [code for _, marker, need, code in blocks
            if not marker or (need and all(have.get(n, False) for n in need.split()))]
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
    for made in ("attrs/sets/dedup_exact", "attrs/sets/dedup_fuzzy", "attrs/sets/dsir_docs", "selected", "docs-like",
                 "sample-run/selected"):
        assert (tmp_path / made).is_dir(), made


# ---------------------------------------------------------------- the notebook session runs in a kernel

def _notebook_cells(text: str) -> list[tuple[str, list[str]]]:
    """(source, the kinds of output the page shows after it) of each `<!-- notebook cell -->`
    block: `stdout`/`stderr` (a stream), `html` or `text` (a result)."""
    parts = re.split(r"<!-- notebook cell -->\s*```python\n", text)[1:]
    cells = []
    for part in parts:
        source, _, rest = part.partition("```")
        rest = re.split(r"\n#+ ", rest)[0]  # up to the next heading
        cells.append((source.rstrip("\n"), re.findall(r"<!-- output: (\w+) -->", rest)))
    return cells


def _kind(output: dict) -> str:
    if output["output_type"] == "stream":
        return output["name"]
    return "html" if "text/html" in output.get("data", {}) else "text"


def test_python_api_notebook_runs(tmp_path, monkeypatch):
    """The page's notebook session, executed cell by cell in a real Jupyter kernel (nbclient):
    each cell gives the outputs the page shows, of the kinds it shows; results render as HTML
    tables (the funnel one row per rule), progress is one line per shard instead of a stream
    of `\\r` redraws, the attribute preview holds no raw bytes, `dir(ts)` lists only the API."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = _notebook_cells(DOC.read_text("utf-8"))
    assert len(cells) >= 5 and all(kinds for _, kinds in cells)
    script = "\n".join(source for source, _ in cells)
    for call in ("textsieve sample", "ts.annotate(", "dry_run=True", "ts.select(", "ts.attributes(", ").limit(3)"):
        assert call in script, call
    # a kernel of this interpreter under a name of our own, so no user-wide `python3` spec is picked
    spec = tmp_path / "jupyter" / "kernels" / "textsieve-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "textsieve test", "language": "python"}))
    # the page shows the plain progress lines of a kernel without ipywidgets; where ipywidgets is
    # installed, the kernel gets a stand-in that fails to import, so its outputs match the page
    hidden = tmp_path / "no-widgets" / "ipywidgets"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('hidden from this kernel by the test')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hidden.parent), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # the kernel's history stays out of ~
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # `!textsieve`
    work = tmp_path / "work"
    work.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source, _ in cells])
    nbclient.NotebookClient(nb, timeout=240, kernel_name="textsieve-test",
                            resources={"metadata": {"path": str(work)}}).execute()

    # the page shows what the kernel gave, output for output (a stream the kernel flushed in
    # several messages is one output in Jupyter, and on the page)
    shown = [(cell.source, [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1] or k in ("html", "text")])
             for cell in nb.cells for kinds in [[_kind(o) for o in cell.outputs]]]
    assert shown == cells
    outputs = [o for cell in nb.cells for o in cell.outputs]
    streams = [o["text"] for o in outputs if o["output_type"] == "stream"]
    assert all(text.strip() for text in streams), streams  # no empty stream output
    assert not any(re.search(r"\r(?!\n)", text) for text in streams), streams  # no \r redraws
    wrote = re.search(r"wrote ([\d,]+) documents", streams[0])  # `!textsieve sample`: 500 on most machines
    assert wrote, streams
    n = int(wrote.group(1).replace(",", ""))
    progress = [line for text in streams for line in text.splitlines() if " done; " in line]
    assert any(re.fullmatch(rf"annotate: sample\.jsonl\.gz done; {n:,} docs so far, [\d,]+ docs/s, 100%, ETA \S+", line)
               for line in progress), streams
    assert any(line.startswith("select: sample.jsonl.gz done; ") for line in progress), streams

    html = {source: o["data"]["text/html"] for source, cell in zip((s for s, _ in cells), nb.cells)
            for o in cell.outputs if _kind(o) == "html"}
    annotated = next(h for s, h in html.items() if "ts.annotate(" in s)
    assert f"AnnotateResult: {n:,} documents annotated into notebook/attrs" in annotated
    funnel = next(h for s, h in html.items() if "dry_run=True" in s)
    assert funnel.startswith('<table class="textsieve">') and f"recipe gopher: {n:,} documents" in funnel
    for rule in ts.load_recipe("gopher").rules:  # one row per rule of the recipe
        assert f"<td style=\"text-align:left\">{rule.name}</td>" in funnel, rule.name
    kept = re.search(r"kept: ([\d,]+) \(", funnel)
    assert kept
    selection = next(h for s, h in html.items() if "output=" in s and "ts.select(" in s)
    assert f"selected {kept.group(1)} of {n:,} documents" in selection  # the selection keeps what the funnel said
    preview = next(h for s, h in html.items() if "ts.attributes(" in s)
    assert preview.count("<tr>") == 4  # a header and the three rows
    assert re.search(r"<td>&lt;9 x \d+ bytes&gt;</td>", preview) and re.search(r"<td>&lt;\d+ spans&gt;</td>", preview)
    assert "\\x" not in preview and len(preview) < 5000  # the signature bytes are not printed
    listing = next(cell for cell in nb.cells if "dir(ts)" in cell.source)
    names = next(o for o in listing.outputs if _kind(o) == "text")["data"]["text/plain"]
    assert "'annotate'" in names and not re.search(r"'(Any|Path|TYPE_CHECKING|importlib|api|annotations)'", names)
