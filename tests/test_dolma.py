"""Dolma attributes out and in (issue 13, item 4), on real web documents.

`textsieve export dolma` writes attributes in Dolma's layout; AI2's own `dolma` mixer then
filters on them, and keeps exactly the documents `textsieve select` keeps on the same rule.
`import dolma` reads attributes Dolma's own taggers wrote. The `dolma` package cannot share
textsieve's virtualenv (it pins numpy<2 and fsspec 2023.6), so it lives in the benchmark venv
`benchmarks/.venvs/dolma` (`python benchmarks/_dolma_env.py`); the tests that run it skip, saying
so, when that venv is absent. The others need only textsieve.
"""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

import textsieve as ts
from textsieve.cli import main
from textsieve.interop.dolma import DolmaError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _dolma_env  # noqa: E402

N = 200
SIGNALS = "rps_doc_word_count,rps_doc_frac_no_alph_words"
RECIPE = {"name": "dolma-check", "rules": {"words": "rps_doc_word_count >= 80",
                                           "alpha": "rps_doc_frac_no_alph_words <= 0.2",
                                           "dedup": "dup_exact_keep"}}
needs_dolma = pytest.mark.skipif(not _dolma_env.dolma_cli().exists(),
                                 reason=f"dolma's venv not found at {_dolma_env.ENV} "
                                        "(run: python benchmarks/_dolma_env.py)")


def _web_docs(shared_dir: Path) -> list[dict]:
    """The first N real web documents as Dolma records, plus exact copies of two of them (so
    dedup exact has something to remove)."""
    with gzip.open(shared_dir / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in itertools.islice(fh, N)]
    docs = [{"id": r["id"], "text": r["text"], "source": "web_sample", "added": "2024-01-01"} for r in rows]
    docs += [dict(docs[k], id=docs[k]["id"] + "-copy") for k in (3, 150)]
    return docs


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


def _annotated(shared_dir: Path, tmp_path: Path, docs_at: Path) -> Path:
    docs = _web_docs(shared_dir)
    _write(docs_at / "web-0000.json.gz", docs[: N // 2])
    _write(docs_at / "sub" / "web-0001.json.gz", docs[N // 2:])
    attrs = tmp_path / "attrs"
    ts.annotate(docs_at, output=attrs, signals=SIGNALS, progress=False, workers=1)
    ts.dedup_exact(attrs, progress=False)
    return attrs


def _selected_ids(attrs: Path, tmp_path: Path) -> set[str]:
    ts.select(attrs, recipe=RECIPE, output=tmp_path / "selected", workers=1)
    return {json.loads(line)["id"] for p in (tmp_path / "selected").rglob("*.jsonl.gz")
            for line in gzip.open(p, "rt", encoding="utf-8")}  # noqa: SIM115


def _mix(root: Path, tmp_path: Path, syntax: str, name: str = "textsieve") -> set[str]:
    """Run Dolma's mixer on ROOT with RECIPE's rule written in Dolma's filter language."""
    if syntax == "jsonpath":
        include = [f"$.attributes[?(@.{name}__rps_doc_word_count[0][2] >= 80)]"]
        exclude = [f"$.attributes[?(@.{name}__rps_doc_frac_no_alph_words[0][2] > 0.2)]",
                   f"$.attributes[?(@.{name}__dup_exact_keep[0][2] == false)]"]
    else:
        include = [f".attributes.{name}__rps_doc_word_count[0][2] >= 80"]
        exclude = [f".attributes.{name}__rps_doc_frac_no_alph_words[0][2] > 0.2",
                   f".attributes.{name}__dup_exact_keep[0][2] == false"]
    out = tmp_path / f"mixed-{syntax}"
    config = {"streams": [{"name": "kept", "documents": [str(root / "documents" / "**" / "*.json.gz")],
                           "attributes": [name], "output": {"path": str(out), "max_size_in_bytes": 1 << 30},
                           "filter": {"syntax": syntax, "include": include, "exclude": exclude}}],
              "processes": 1, "work_dir": {"input": str(tmp_path / "wi"), "output": str(tmp_path / "wo")}}
    cfg = tmp_path / f"mix-{syntax}.json"
    cfg.write_text(json.dumps(config))
    run = subprocess.run([str(_dolma_env.dolma_cli()), "-c", str(cfg), "mix"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return {json.loads(line)["id"] for p in out.rglob("*.json.gz") for line in gzip.open(p, "rt")}  # noqa: SIM115


@needs_dolma
def test_dolma_mixer_on_exported_attributes_keeps_what_select_keeps(shared_dir: Path, tmp_path: Path):
    """Documents already in a Dolma root: only attributes are written, beside them."""
    root = tmp_path / "dolma"
    attrs = _annotated(shared_dir, tmp_path, root / "documents")
    assert main(["export", "dolma", str(attrs), "-o", str(root)]) == 0
    assert sorted(p.relative_to(root).as_posix() for p in (root / "attributes").rglob("*.gz")) == [
        "attributes/textsieve/sub/web-0001.json.gz", "attributes/textsieve/web-0000.json.gz"]
    want = _selected_ids(attrs, tmp_path)
    assert 20 < len(want) < N
    assert not any(i.endswith("-copy") and i[: -len("-copy")] in want for i in want)  # one of each pair
    assert _mix(root, tmp_path, "jsonpath") == want
    assert _mix(root, tmp_path, "jq") == want


@needs_dolma
def test_export_writes_documents_when_they_are_elsewhere(shared_dir: Path, tmp_path: Path):
    attrs = _annotated(shared_dir, tmp_path, tmp_path / "corpus")
    res = ts.export_dolma(attrs, output=tmp_path / "dolma", name="ts")
    assert len(res.document_files) == 2 and res.documents == N + 2
    first = json.loads(gzip.open(res.document_files[0], "rt").readline())  # noqa: SIM115
    assert set(first) >= {"id", "text", "source", "metadata"} and first["metadata"]["added"] == "2024-01-01"
    assert _mix(tmp_path / "dolma", tmp_path, "jsonpath", name="ts") == _selected_ids(attrs, tmp_path)


@needs_dolma
def test_import_attributes_written_by_dolma_taggers(shared_dir: Path, tmp_path: Path):
    root = tmp_path / "dolma"
    _write(root / "documents" / "web.json.gz", _web_docs(shared_dir)[:60])
    run = subprocess.run([str(_dolma_env.dolma_cli()), "tag", "--documents", str(root / "documents" / "*.json.gz"),
                          "--taggers", "char_length_v1", "whitespace_tokenizer_with_paragraphs_v1",
                          "--experiment", "len", "--processes", "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    res = ts.import_dolma(root, output=tmp_path / "imported", progress=False)
    assert res.documents == 60
    key = "len__char_length_v1__length"
    assert key in res.columns
    table = ts.attributes(tmp_path / "imported", "arrow", columns=["id", "ts_length", key + "__score"])
    assert table.column(key + "__score").to_pylist() == [float(n) for n in table.column("ts_length").to_pylist()]
    para = "len__whitespace_tokenizer_with_paragraphs_v1__paragraph"
    assert para in res.columns and para + "__score" not in ts.attributes(tmp_path / "imported").columns
    funnel = ts.funnel(tmp_path / "imported", {"name": "long", "rules": {"long": f"{key} >= 2000"}})
    assert 0 < funnel.kept < 60
    sel = ts.select(tmp_path / "imported", recipe={"name": "long", "rules": {"long": f"{key} >= 2000"}},
                    output=tmp_path / "sel", workers=1)
    assert sel.documents == funnel.kept


def test_export_import_round_trip(shared_dir: Path, tmp_path: Path):
    """No dolma needed: textsieve reads back what it wrote, value for value."""
    root = tmp_path / "dolma"
    attrs = _annotated(shared_dir, tmp_path, root / "documents")
    ts.export_dolma(attrs, output=root)
    res = ts.import_dolma(root, output=tmp_path / "back", progress=False)
    assert res.documents == N + 2
    cols = ["id", "rps_doc_word_count__score", "rps_doc_frac_no_alph_words__score"]
    orig = ts.attributes(attrs, "arrow", columns=cols).to_pylist()
    back = ts.attributes(tmp_path / "back", "arrow", columns=[
        "id", "textsieve__rps_doc_word_count__score", "textsieve__rps_doc_frac_no_alph_words__score",
        "textsieve__dup_exact_keep__score"]).to_pylist()
    assert [(r["id"], float(r["rps_doc_word_count__score"]), r["rps_doc_frac_no_alph_words__score"]) for r in orig] \
        == [(r["id"], r["textsieve__rps_doc_word_count__score"], r["textsieve__rps_doc_frac_no_alph_words__score"])
            for r in back]
    assert sum(r["textsieve__dup_exact_keep__score"] == 0.0 for r in back) == 2  # the two copies


def test_misaligned_attribute_file_is_one_line_error(shared_dir: Path, tmp_path: Path):
    root = tmp_path / "dolma"
    docs = _web_docs(shared_dir)[:5]
    _write(root / "documents" / "a.json.gz", docs)
    _write(root / "attributes" / "x" / "a.json.gz",
           [{"id": d["id"], "attributes": {"x__t__v": [[0, 1, 0.5]]}} for d in reversed(docs)])
    with pytest.raises(DolmaError, match=r"a.json.gz:1: id .* but line 1 of the documents file is"):
        ts.import_dolma(root, output=tmp_path / "out", progress=False)
    with pytest.raises(DolmaError, match="no attribute folder 'nope'"):
        ts.import_dolma(root, output=tmp_path / "out", attributes=["nope"], progress=False)
