"""Model files (.tsm), the model-kind registry, `textsieve models show`, and `annotate --model`
plumbing (metadata, fingerprints, signal selection), using the UT1 test list as a small model."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import fsspec
import numpy as np
import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.io.attributes import read_shard_meta, without_conveniences
from textsieve.models.format import ModelFormatError, file_fingerprint, load_model_file, read_header, save_model
from textsieve.models.registry import discover_kinds, model_kind_of, resolve_model
from textsieve.stages.annotate.annotate import AnnotateConfig, AnnotateError, run_annotate

UT1_DIR = Path(__file__).parent / "data" / "ut1"


def test_save_and_load_roundtrip(tmp_path):
    path = str(tmp_path / "m.tsm")
    arrays = {"w": np.arange(5, dtype=np.float32), "ids": np.array([3, 1], dtype=np.int16)}
    fp = save_model(path, "demo", {"a": 1}, arrays, {"fingerprint": "abc", "documents": 7}, {"acc": 0.5},
                    {"vocab.txt": b"x\ny"})
    assert fp == file_fingerprint(path) and len(fp) == 16
    mf = load_model_file(path)
    assert mf.fingerprint == fp and mf.kind == "demo" and mf.params == {"a": 1}
    assert mf.header["training_data"] == {"fingerprint": "abc", "documents": 7}
    assert mf.header["metrics"] == {"acc": 0.5} and mf.header["version"] == 1
    assert {"textsieve_version", "created"} <= set(mf.header)
    np.testing.assert_array_equal(mf.arrays["w"], arrays["w"])
    assert mf.arrays["ids"].dtype == np.int16 and mf.extra == {"vocab.txt": b"x\ny"}
    assert read_header(path)["kind"] == "demo"
    with zipfile.ZipFile(path) as zf:  # an ordinary ZIP: the header is readable by any tool
        assert json.loads(zf.read("header.json"))["kind"] == "demo"
    assert [p.name for p in tmp_path.iterdir()] == ["m.tsm"]  # atomic: no temporary left


def test_bad_model_files(tmp_path):
    not_zip = tmp_path / "x.tsm"
    not_zip.write_bytes(b"hello")
    with pytest.raises(ModelFormatError, match="x.tsm"):
        load_model_file(str(not_zip))
    with pytest.raises(ModelFormatError, match="no model kind reads"):
        model_kind_of(str(not_zip))
    with pytest.raises(FileNotFoundError, match="nope.tsm"):
        model_kind_of(str(tmp_path / "nope.tsm"))
    odd = str(tmp_path / "odd.tsm")
    save_model(odd, "no-such-kind", {}, {}, {"fingerprint": "", "documents": 0})
    with pytest.raises(ModelFormatError, match="no-such-kind"):
        model_kind_of(odd)
    with pytest.raises(ModelFormatError, match="unknown built-in"):
        model_kind_of("builtin:nothing")
    with pytest.raises(ValueError, match="model name"):
        resolve_model("bad-name", str(UT1_DIR))
    with pytest.raises(ModelFormatError, match="pickled"):
        save_model(odd, "x", {}, {"o": np.array([object()])}, {})


def test_kinds_registered():
    kinds = discover_kinds()
    assert {"langid", "classifier", "ut1"} <= set(kinds)
    assert model_kind_of(str(UT1_DIR)) == "ut1"
    assert model_kind_of("builtin:py3langid") == "langid"


def _docs(tmp_path: Path) -> Path:
    urls = ["https://adult.example/page", "http://both.example", None, "http://casino.test/"]
    path = tmp_path / "docs.jsonl"
    with open(path, "w") as fh:
        for i, url in enumerate(urls):
            rec = {"id": f"d{i}", "text": f"Document {i}. The cat sat on the mat and looked around."}
            if url:
                rec["url"] = url
            fh.write(json.dumps(rec) + "\n")
    return path


def test_annotate_model_metadata_and_fingerprint(tmp_path, capsys):
    docs = _docs(tmp_path)
    model = str(tmp_path / "ut1.tsm")
    assert main(["train", "ut1", "--blacklists", str(UT1_DIR), "-o", model, "-q"]) == 0
    assert main(["models", "show", model, "--compact"]) == 0
    shown = json.loads(capsys.readouterr().out.strip())
    assert shown["kind"] == "ut1" and shown["fingerprint"] == file_fingerprint(model)
    assert shown["training_data"]["categories_found"] == ["adult", "chat", "gambling", "phishing"]

    out = str(tmp_path / "out")
    cfg = AnnotateConfig(inputs=[str(docs)], output=out, signals="rps_doc_word_count", workers=1, progress=False,
                         models={"ut1": model})
    run_annotate(cfg)
    shard = f"{out}/docs/docs.parquet"
    table = pq.read_table(shard)
    assert without_conveniences(table.column_names) == [
        "id", "shard", "row", "rps_doc_word_count", "rps_doc_ut1_blacklist"]
    meta = read_shard_meta(fsspec.filesystem("file"), shard)
    assert meta["models"]["ut1"]["fingerprint"] == file_fingerprint(model)
    assert meta["models"]["ut1"]["header"]["kind"] == "ut1"
    assert meta["model_signals"] == ["rps_doc_ut1_blacklist"]

    # re-run with the same model: skipped; with another model file: refused without --overwrite
    assert run_annotate(cfg).shards_skipped == ["docs.jsonl"]
    save_model(model, "ut1", {}, {"category_id": np.array([], np.int16)}, {"fingerprint": "", "documents": 0})
    with pytest.raises(AnnotateError, match="other settings"):
        run_annotate(cfg)


def test_model_signal_selection(tmp_path):
    docs = _docs(tmp_path)
    out = str(tmp_path / "only")
    run_annotate(AnnotateConfig(inputs=[str(docs)], output=out, signals="rps_doc_ut1_blacklist", workers=1,
                                progress=False, models={"ut1": str(UT1_DIR)}))
    table = pq.read_table(f"{out}/docs/docs.parquet")
    assert without_conveniences(table.column_names) == ["id", "shard", "row", "rps_doc_ut1_blacklist"]
    values = [row[0]["score"] if row else None for row in table.column("rps_doc_ut1_blacklist").to_pylist()]
    assert values == [0, 148, None, 8]  # {adult}; {adult, gambling, phishing}; no URL; {gambling}


def test_cli_bad_model_option(tmp_path, capsys):
    docs = _docs(tmp_path)
    assert main(["annotate", str(docs), "-o", str(tmp_path / "x"), "--models", "nopath", "-q"]) == 2
    assert "expected NAME=PATH" in capsys.readouterr().err
    assert main(["annotate", str(docs), "-o", str(tmp_path / "x"), "--models", f"m={tmp_path}/none.tsm", "-q"]) == 2
    assert "none.tsm" in capsys.readouterr().err


def test_model_files_are_reproducible_with_source_date_epoch(tmp_path, monkeypatch):
    """With SOURCE_DATE_EPOCH set, the same training data gives the same model file bytes
    (header time and zip entry times fixed), and the arrays read back unchanged."""
    from textsieve.models.format import load_model_file, save_model

    arrays = {"counts": np.arange(10, dtype=np.int64), "probs": np.linspace(0, 1, 7)}
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = save_model(str(tmp_path / "a.tsm"), "lm", {"order": 3}, arrays, {"fingerprint": "x", "documents": 1})
    b = save_model(str(tmp_path / "b.tsm"), "lm", {"order": 3}, arrays, {"fingerprint": "x", "documents": 1})
    assert a == b and (tmp_path / "a.tsm").read_bytes() == (tmp_path / "b.tsm").read_bytes()
    model = load_model_file(str(tmp_path / "a.tsm"))
    assert model.header["created"].startswith("2023-11-14")
    assert np.array_equal(model.arrays["counts"], arrays["counts"])
    assert np.array_equal(model.arrays["probs"], arrays["probs"])
