"""Extension points (issue 11): a signal, a model kind and a reader added from outside the
package, by a registry call made from this test module and by the entry points of an installed
distribution. Each annotates real text (Python's help topics), runs in worker processes,
and is selected on with a recipe rule; the built-in signals' output does not change."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.metadata
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import textsieve as ts
from textsieve import extensions
from textsieve.cli import main as cli_main
from textsieve.document import Document
from textsieve.io import ShardReader, register_reader, unregister_reader
from textsieve.models import register_model_kind, unregister_model_kind
from textsieve.signals import REGISTRY, DocScores, Signal, register_signal, unregister_signal
from textsieve.signals.selection import select_signals
from textsieve.text.views import BatchViews

DIGITS = "ts_digit_fraction"
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the extensions (module level:
# worker processes import them by reference, as they would a plugin's)

def digit_fraction(views: BatchViews) -> DocScores:
    """Decimal digits / characters of the raw text; 0.0 for an empty document."""
    return DocScores(np.array([_digits(t) for t in views.texts], dtype=np.float64))


def _digits(text: str) -> float:
    return sum(c.isdigit() for c in text) / len(text) if text else 0.0


def read_tsv(ctx: ShardReader) -> Iterator[Document]:
    """A `.tsv` shard: a header line naming the columns, then one document per line, with `\\t`,
    `\\n` and `\\\\` escaped inside fields. The id and text columns are the read options' fields."""
    import fsspec

    with fsspec.open(ctx.shard.path, "rt", encoding="utf-8") as fh:
        header = fh.readline()
        ctx.bytes_read += len(header.encode())
        names = header.rstrip("\n").split("\t")
        for row, line in enumerate(fh):
            ctx.bytes_read += len(line.encode())
            values = [_unescape(v) for v in line.rstrip("\n").split("\t")]
            if len(values) != len(names):
                ctx.bad(f"{ctx.shard.path}:{row + 2}", f"{len(values)} fields, the header has {len(names)}")
                continue
            rec = dict(zip(names, values))
            text, doc_id = rec.pop(ctx.options.text_field), rec.pop(ctx.options.id_field)
            yield Document(doc_id, text, row, url=rec.pop("url", None), meta=rec)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), value)


def _read_nothing(ctx: ShardReader) -> Iterator[Document]:
    return iter(())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def load_keywords(path: str) -> frozenset[str]:
    """A `.kw` model: one lower-case keyword per line."""
    with open(path, encoding="utf-8") as fh:
        return frozenset(line.strip() for line in fh if line.strip())


def keyword_signals(name: str, loaded: object) -> list[Signal]:
    assert isinstance(loaded, frozenset)

    def fn(v: BatchViews) -> DocScores:
        counts = [sum(w in loaded for w in re.findall(r"\w+", t.lower())) for t in v.texts]
        return DocScores(np.array(counts, dtype=np.float64))

    return [Signal(f"ts_keywords_{name}", "doc", "float", "keywords",
                   f"Words of the text found in the keyword list {name!r}.", (), fn)]


def _keywords(text: str, words: frozenset[str]) -> float:
    return float(sum(w in words for w in re.findall(r"\w+", text.lower())))


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 80 real documents at no cost: Python's interactive help topics (prose, code, numbers),
    which the bundled sample corpus also draws on."""
    from pydoc_data.topics import topics

    path = tmp_path_factory.mktemp("sample") / "sample.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for name in sorted(topics)[:80]:
            fh.write(json.dumps({"id": f"pydoc/{name}", "text": topics[name]}) + "\n")
    return path


@pytest.fixture(scope="module")
def docs(sample: Path) -> list[Document]:
    return list(ts.read_documents(sample))


@pytest.fixture
def digits() -> Iterator[Signal]:
    sig = register_signal(DIGITS, digit_fraction, level="doc", group="digits",
                          definition="Decimal digits / characters of the raw text.")
    yield sig
    unregister_signal(DIGITS)


@pytest.fixture
def tsv_reader() -> Iterator[None]:
    register_reader("tsv", read_tsv, suffixes=(".tsv",))
    yield
    unregister_reader("tsv")


@pytest.fixture
def keywords_kind() -> Iterator[None]:
    register_model_kind("keywords", load=load_keywords, signals=keyword_signals, extensions=(".kw",))
    yield
    unregister_model_kind("keywords")


def _footer(path: Path) -> dict:
    """The textsieve footer metadata of an attribute shard."""
    return json.loads(pq.ParquetFile(path).metadata.metadata[b"textsieve"])


def _selected(folder: Path) -> list[dict]:
    records = []
    for path in sorted(folder.rglob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh]
    return records


# ---------------------------------------------------------------- a signal

def test_registered_signal_is_annotated_by_workers_and_selected_on(digits, sample, docs, tmp_path):
    attrs, out = tmp_path / "attrs", tmp_path / "selected"
    ts.annotate(sample, output=attrs, signals=f"{DIGITS},rps_doc_word_count", workers=2)  # spawned workers
    table = pq.read_table(attrs / "docs" / "sample.parquet")
    assert table.column_names == ["id", "shard", "row", "ts_length", "rps_doc_word_count", DIGITS,
                                  "rps_doc_word_count__score", f"{DIGITS}__score"]
    expected = {d.id: _digits(d.text) for d in docs}
    assert dict(zip(table.column("id").to_pylist(), table.column(f"{DIGITS}__score").to_pylist())) == expected
    spans = table.column(DIGITS).to_pylist()
    assert all(s == [{"start": 0, "end": len(d.text), "score": expected[d.id]}] for s, d in zip(spans, docs))

    recipe = {"name": "few-digits", "rules": {"few_digits": f"{DIGITS} < 0.01"}}
    keep = {i for i, v in expected.items() if v < 0.01}
    assert 0 < len(keep) < len(docs)  # the rule separates the topics: prose from tables of numbers
    assert ts.select(attrs, recipe=recipe, dry_run=True).kept == len(keep)
    ts.select(attrs, recipe=recipe, output=out, workers=2)
    assert {r["id"] for r in _selected(out)} == keep


@pytest.mark.ray
@pytest.mark.slow  # starts a local Ray cluster
def test_registered_signal_reaches_ray_workers(digits, sample, docs, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'textsieve[ray]')")
    if ray.is_initialized():
        ray.shutdown()
    # Ray workers import `digit_fraction` from this module by name, as they would a plugin's
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                                                      os.environ.get("PYTHONPATH", "")])}})
    attrs = tmp_path / "attrs"
    try:
        ts.annotate(sample, output=attrs, signals=DIGITS, workers=2, executor="ray", progress=False)
    finally:
        ray.shutdown()
    scores = pq.read_table(attrs / "docs" / "sample.parquet").column(f"{DIGITS}__score").to_pylist()
    assert scores == [_digits(d.text) for d in docs]


def test_registered_signal_through_the_cli_in_process(digits, sample, docs, tmp_path, capsys):
    attrs = tmp_path / "attrs"
    assert cli_main(["annotate", str(sample), "-o", str(attrs), "--signals", "digits", "--workers", "1", "-q"]) == 0
    assert pq.read_schema(attrs / "docs" / "sample.parquet").names == ["id", "shard", "row", "ts_length", DIGITS,
                                                               f"{DIGITS}__score"]
    recipe = tmp_path / "digits.yaml"
    recipe.write_text(f"name: digits\nrules:\n  many_digits: \"{DIGITS} >= 0.01\"\n")
    capsys.readouterr()
    assert cli_main(["select", str(attrs), "--recipe", str(recipe), "--dry-run"]) == 0
    kept = sum(_digits(d.text) >= 0.01 for d in docs)
    assert f"recipe digits: {len(docs):,} documents" in capsys.readouterr().out
    assert ts.funnel(attrs, recipe=str(recipe)).kept == kept
    assert cli_main(["signals"]) == 0
    listing = capsys.readouterr().out
    assert re.search(rf"^{DIGITS}\s+doc\s+float\s+Decimal digits", listing, re.M)


def test_extension_signals_leave_the_default_run_unchanged(sample, tmp_path):
    """`--signals all` (the default) is the built-in set, so registering (or installing) an
    extension changes neither the columns nor the bytes nor the fingerprint of a default run."""
    before = tmp_path / "before"
    ts.annotate(sample, output=before, workers=1)
    register_signal(DIGITS, digit_fraction, level="doc", group="digits", definition="Digits / characters.")
    try:
        assert DIGITS in REGISTRY and DIGITS not in select_signals(None)[0]
        after = tmp_path / "after"
        ts.annotate(sample, output=after, workers=1)
    finally:
        unregister_signal(DIGITS)
    a, b = pq.ParquetFile(before / "docs" / "sample.parquet"), pq.ParquetFile(after / "docs" / "sample.parquet")
    assert a.read().equals(b.read())
    a, b = before / "docs" / "sample.parquet", after / "docs" / "sample.parquet"
    assert _footer(a)["fingerprint"] == _footer(b)["fingerprint"]
    assert (before / "docs" / "sample.parquet").read_bytes() == (after / "docs" / "sample.parquet").read_bytes()


def test_register_signal_rejects_what_would_break_a_shard_or_the_signals_syntax(digits):
    bad = [dict(name="ts_length"), dict(name="x__score"), dict(name="all"), dict(name="Digits"),
           dict(group="lines"),  # a built-in group: `--signals lines` must keep its meaning
           dict(definition="two\nlines"), dict(level="token"), dict(dtype="str", level="line"),
           dict(needs=("dictionary",))]
    for change in bad:
        args = {"name": "ts_x", "level": "doc", "group": "x", "definition": "d.", **change}
        with pytest.raises(ValueError):
            register_signal(args.pop("name"), digit_fraction, **args)
    with pytest.raises(ValueError, match="registered twice"):
        register_signal(DIGITS, _digits, level="doc", group="digits", definition="Other.")
    again = register_signal(DIGITS, digit_fraction, level="doc", group="digits",
                            definition="Decimal digits / characters of the raw text.")
    assert again is digits  # an identical registration (a worker repeating it) is a no-op
    with pytest.raises(ValueError, match="built in"):
        unregister_signal("rps_doc_word_count")


def test_a_signal_defined_in_main_says_why_workers_lack_it(sample, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np
        import textsieve as ts
        from textsieve.signals import DocScores, register_signal

        def digits(views):
            return DocScores(np.zeros(views.n_docs))

        register_signal("{DIGITS}", digits, level="doc", group="digits", definition="Digits.")
        ts.annotate({str(sample)!r}, output={str(tmp_path / "attrs")!r}, signals="{DIGITS}", workers=2)
    """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "digits is defined in __main__" in run.stderr and "or use one worker" in run.stderr


# ---------------------------------------------------------------- a reader

def _write_tsv(path: Path, docs: list[Document]) -> None:
    lines = ["id\ttext\turl"] + [f"{_escape(d.id)}\t{_escape(d.text)}\thttps://example.org/{d.row}" for d in docs]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_registered_reader_feeds_annotate_dedup_and_select(tsv_reader, docs, tmp_path):
    data, attrs, out = tmp_path / "data", tmp_path / "attrs", tmp_path / "selected"
    data.mkdir()
    # the last five are exact copies of the first five, under their own ids (a repeated id is an error)
    rows = docs[:30] + [dataclasses.replace(d, id=f"{d.id}-copy") for d in docs[:5]]
    _write_tsv(data / "web.tsv", rows)
    assert ts.read_documents(data / "web.tsv").__next__().text == rows[0].text
    ts.annotate(data, output=attrs, signals="rps_doc_word_count", workers=2)
    table = pq.read_table(attrs / "docs" / "web.parquet")  # the .tsv suffix is replaced like a built-in one
    assert table.column("ts_length").to_pylist() == [len(d.text) for d in rows]
    result = ts.dedup_exact(attrs, workers=2)  # re-reads the texts in worker processes
    assert result.removed == 5
    recipe = {"name": "unique", "rules": {"unique": "dup_exact_keep", "words": "rps_doc_word_count >= 5"}}
    ts.select(attrs, recipe=recipe, output=out, workers=2)
    selected = _selected(out)
    expected = docs[:30]  # each has well over 5 words: only the copies go
    assert [r["text"] for r in selected] == [d.text for d in expected]
    assert {r["url"] for r in selected} == {f"https://example.org/{d.row}" for d in expected}


def test_register_reader_refuses_taken_suffixes_and_formats(tsv_reader):
    with pytest.raises(ValueError, match="already read as another format"):
        register_reader("csvish", read_tsv, suffixes=(".jsonl",))
    with pytest.raises(ValueError, match="registered twice"):
        register_reader("tsv", _read_nothing, suffixes=(".tsv",))
    register_reader("tsv", read_tsv, suffixes=(".tsv",))  # identical: a no-op
    with pytest.raises(ValueError, match="built in"):
        unregister_reader("jsonl")


# ---------------------------------------------------------------- a model kind

def test_registered_model_kind_adds_its_signal_in_workers(keywords_kind, sample, docs, tmp_path):
    words = frozenset({"class", "object", "method", "attribute"})
    model, attrs = tmp_path / "oop.kw", tmp_path / "attrs"
    model.write_text("\n".join(sorted(words)) + "\n")
    ts.annotate(sample, output=attrs, signals="rps_doc_word_count", models={"oop": str(model)}, workers=2)
    table = pq.read_table(attrs / "docs" / "sample.parquet")
    expected = {d.id: _keywords(d.text, words) for d in docs}
    assert dict(zip(table.column("id").to_pylist(), table.column("ts_keywords_oop__score").to_pylist())) == expected
    assert _footer(attrs / "docs" / "sample.parquet")["models"]["oop"]["kind"] == "keywords"
    oop = {i for i, n in expected.items() if n >= 3}
    assert 0 < len(oop) < len(docs)
    assert ts.select(attrs, recipe={"name": "oop", "rules": {"oop": "ts_keywords_oop >= 3"}},
                     dry_run=True).kept == len(oop)


# ---------------------------------------------------------------- entry points

PLUGIN = {
    "tsx_plugin/__init__.py": "",
    "tsx_plugin/signals.py": """
        import numpy as np
        from textsieve.signals import DocScores, register_signal

        def line_count(views):
            return DocScores(np.array([t.count("\\n") + 1 if t else 0 for t in views.texts], dtype=np.float64))

        register_signal("ts_plugin_lines", line_count, level="doc", group="plugin",
                        definition="Newlines + 1 (0 for an empty text).")
    """,
    "tsx_plugin/readers.py": """
        import json
        import fsspec
        from textsieve.document import Document
        from textsieve.io import register_reader

        def read_lines(ctx):
            with fsspec.open(ctx.shard.path, "rt", encoding="utf-8") as fh:
                for row, line in enumerate(fh):
                    ctx.bytes_read += len(line.encode())
                    yield Document(f"doc{row}", json.loads(line), row)

        register_reader("jsonstr", read_lines, suffixes=(".jsonstr",))
    """,
    "tsx_plugin/kinds.py": """
        from textsieve.models import register_model_kind
        from textsieve.signals import DocScores, Signal
        import numpy as np

        def load(path):
            return open(path, encoding="utf-8").read().split()

        def signals(name, loaded):
            def fn(v):
                return DocScores(np.array([sum(t.count(w) for w in loaded) for t in v.texts], dtype=np.float64))
            return [Signal(f"ts_count_{name}", "doc", "float", "count", "Occurrences of the listed words.", (), fn)]

        register_model_kind("wordcount", load=load, signals=signals, extensions=(".wc",))
    """,
    "tsx_plugin-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tsx-plugin\nVersion: 0.1\n",
    "tsx_plugin-0.1.dist-info/entry_points.txt": """
        [textsieve.signals]
        lines = tsx_plugin.signals

        [textsieve.readers]
        jsonstr = tsx_plugin.readers

        [textsieve.model_kinds]
        wordcount = tsx_plugin.kinds
    """,
}


@pytest.mark.slow  # three CLI subprocesses, one with a worker pool
def test_installed_entry_points_reach_the_cli_and_its_workers(docs, tmp_path):
    site = tmp_path / "site"
    for rel, text in PLUGIN.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(textwrap.dedent(text).lstrip())
    data = tmp_path / "data"
    data.mkdir()
    rows = docs[:40]
    (data / "a.jsonstr").write_text("".join(json.dumps(d.text) + "\n" for d in rows))
    (tmp_path / "the.wc").write_text("the\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def textsieve(*args: str) -> str:
        run = subprocess.run([sys.executable, "-m", "textsieve.cli", *args], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=300)
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert re.search(r"^ts_plugin_lines\s+doc\s+float", textsieve("signals"), re.M)
    textsieve("annotate", str(data), "-o", "attrs", "--signals", "plugin", "--models", "the=the.wc",
              "--workers", "2", "-q")
    table = pq.read_table(tmp_path / "attrs" / "docs" / "a.parquet")
    assert table.column("ts_plugin_lines__score").to_pylist() == [d.text.count("\n") + 1.0 for d in rows]
    assert table.column("ts_count_the__score").to_pylist() == [float(d.text.count("the")) for d in rows]
    (tmp_path / "r.yaml").write_text("name: short\nrules:\n  short: \"ts_plugin_lines < 20\"\n")
    funnel = json.loads(textsieve("select", "attrs", "--recipe", "r.yaml", "--dry-run", "--json"))
    assert funnel["kept"] == sum(d.text.count("\n") + 1 < 20 for d in rows)


def test_entry_points_load_lazily_once_and_a_broken_one_is_left_out(monkeypatch, caplog):
    calls: list[str] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        calls.append(group)
        return [importlib.metadata.EntryPoint("broken", "tsx_no_such_module", group)]

    monkeypatch.setattr(extensions, "_loaded", set())
    monkeypatch.setattr(extensions.importlib.metadata, "entry_points", entry_points)
    with caplog.at_level(logging.WARNING, logger="textsieve.extensions"):
        assert "rps_doc_word_count" in REGISTRY
        assert len(REGISTRY) == len(list(REGISTRY))
    assert calls == ["textsieve.signals"]
    assert "extension 'broken'" in caplog.text and "tsx_no_such_module" in caplog.text
