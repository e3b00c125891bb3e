"""Language id: the batch py3langid kernels agree with the package's own `classify`; `--lang auto`
picks stop words per detected language; a fastText language-id model works through --model."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import textsieve.models.langid as langid
from textsieve.io.attributes import without_conveniences
from textsieve.models.langid import Py3LangId, prepare
from textsieve.models.langid_tables import cache_dir
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

pytest.importorskip("py3langid")


def _dev_docs(shared_dir: Path, prefix: str | None = None, limit: int | None = None) -> list[dict]:
    out = []
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            if prefix is None or rec["id"].startswith(prefix):
                out.append(rec)
                if limit and len(out) >= limit:
                    break
    return out


@pytest.fixture(scope="module")
def py3() -> Py3LangId:
    return Py3LangId()


def test_fast_path_equals_py3langid(shared_dir, py3):
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    reference = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    texts = [d["text"] for d in _dev_docs(shared_dir, limit=400)] + ["", "\n\n", "ÉCRIT EN MAJUSCULES", "a"]
    assert py3.fast
    langs, probs = py3.predict(texts)
    for text, lang, p in zip(texts, langs, probs):
        prepared = prepare(text)
        if not prepared.strip():
            continue
        ref_lang, ref_p = reference.classify(prepared)
        if lang is None:  # no byte n-gram feature: py3langid's answer is a uniform guess
            assert ref_p < 0.05, text[:80]
            continue
        assert lang == ref_lang and p == pytest.approx(ref_p, abs=1e-3), text[:80]
    assert langs[-4] is None and np.isnan(probs[-4])  # empty text: unknown, not a uniform guess
    assert sum(lang is not None for lang in langs) >= 400


def test_c_and_numba_kernels_give_the_same_doubles(shared_dir, py3, monkeypatch):
    """The C pass (`native/langid_kernels.c`) and the numba walk + scores it replaces, bit for bit,
    on real text and odd input (empty, all caps, CJK, lone surrogates)."""
    if langid.langid_scores() is None:
        pytest.skip("the C library _langid is not built")
    texts = [d["text"] for d in _dev_docs(shared_dir, limit=600)]
    texts += ["", "\n\n", "ÉCRIT EN MAJUSCULES", "日本語のテキストです", "x\ud800y", "a"]
    c_langs, c_probs, c_best = py3.predict_full(texts)
    monkeypatch.setattr(langid, "langid_scores", lambda: None)
    n_langs, n_probs, n_best = py3.predict_full(texts)
    assert c_langs == n_langs
    assert np.array_equal(c_probs, n_probs, equal_nan=True)
    pick = frozenset({"en", "de", "fr"})
    assert c_best(pick)[0] == n_best(pick)[0]
    assert np.array_equal(c_best(pick)[1], n_best(pick)[1], equal_nan=True)


def test_model_tables_are_cached_once_and_a_damaged_cache_is_rebuilt(shared_dir, tmp_path, monkeypatch):
    """The first load writes py3langid's arrays to $XDG_CACHE_HOME/textsieve/py3langid-VERSION-SHA/;
    later loads map them and predict the same; a damaged cache is read from the package again and
    replaced; a cache folder that cannot be written only means no cache."""
    texts = [d["text"] for d in _dev_docs(shared_dir, limit=50)]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = cache_dir()
    assert folder is not None and folder.parent == tmp_path / "cache" / "textsieve"
    first = Py3LangId()
    assert first.ident is not None and folder.is_dir()  # read from the package, then cached
    expect = first.predict(texts)
    again = Py3LangId()
    assert again.ident is None and isinstance(again.tables.ptc, np.memmap)  # mapped from the cache
    assert again.predict(texts)[0] == expect[0] and np.array_equal(again.predict(texts)[1], expect[1])

    (folder / "ptc.npy").write_bytes((folder / "ptc.npy").read_bytes()[:1000])  # a truncated table
    damaged = Py3LangId()
    assert damaged.ident is not None and damaged.predict(texts)[0] == expect[0]
    assert Py3LangId().ident is None  # the damaged cache was replaced
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # nothing left beside it

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file-not-folder"))
    (tmp_path / "file-not-folder").write_text("x")
    assert Py3LangId().predict(texts)[0] == expect[0]


def _write(path: Path, docs: list[dict]) -> str:
    with open(path, "w") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    return str(path)


def _scores(table, column):
    return [row[0]["score"] if row else None for row in table.column(column).to_pylist()]


def test_lang_auto_picks_word_lists(shared_dir, resources_dir, tmp_path):
    docs = _dev_docs(shared_dir, prefix="debian-reference/")  # parallel en/de/fr/es/it prose
    src = _write(tmp_path / "deb.jsonl", docs)
    auto = run_annotate(AnnotateConfig(inputs=[src], output=str(tmp_path / "auto"), lang="auto", workers=1,
                                       resources=str(resources_dir), progress=False,
                                       signals="rps_doc_stop_word_fraction,rps_doc_ldnoobw_words"))
    assert auto.documents == len(docs)
    by_field = run_annotate(AnnotateConfig(inputs=[src], output=str(tmp_path / "field"), lang=None,
                                           lang_field="meta.lang", workers=1, resources=str(resources_dir),
                                           progress=False, signals="rps_doc_stop_word_fraction"))
    assert by_field.documents == len(docs)
    t_auto = pq.read_table(tmp_path / "auto" / "docs" / "deb.parquet")
    t_field = pq.read_table(tmp_path / "field" / "docs" / "deb.parquet")
    assert without_conveniences(t_auto.column_names)[-2:] == ["ts_lang", "ts_lang_score"]
    detected = t_auto.column("ts_lang").to_pylist()
    truth = [d["id"].split("/")[1] for d in docs]  # the Debian Reference translation's language
    agree = [i for i, (a, b) in enumerate(zip(detected, truth)) if a == b]
    assert len(agree) >= 0.9 * len(docs), sorted(set(zip(detected, truth)) - {(g, g) for g in truth})
    sw_auto, sw_field = _scores(t_auto, "rps_doc_stop_word_fraction"), _scores(t_field, "rps_doc_stop_word_fraction")
    field_lang = [d["meta"].get("lang") for d in docs]
    same = [i for i in agree if field_lang[i] == detected[i]]
    assert len(same) > 400 and all(sw_auto[i] == sw_field[i] for i in same)
    german = [i for i in agree if truth[i] == "de"]
    assert np.mean([sw_auto[i] for i in german]) > 0.2  # German stop words, not English ones
    p = _scores(t_auto, "ts_lang_score")
    assert all(0 < x <= 1 for x in p)
    meta = json.loads(pq.read_metadata(tmp_path / "auto" / "docs" / "deb.parquet").metadata[b"textsieve"])
    assert meta["models"]["lang"]["header"]["package"] == "py3langid"


def test_fasttext_language_id_model(shared_dir, tmp_path):
    pytest.importorskip("fasttext")
    docs = _dev_docs(shared_dir, prefix="debian-reference/")
    train = tmp_path / "lid.txt"
    with open(train, "w") as fh:  # a tiny fastText-format language-id model, trained here on 30-word lines
        for d in docs[::2]:
            words = prepare(d["text"]).split()
            for i in range(0, len(words), 30):
                fh.write(f"__label__{d['id'].split('/')[1]} {' '.join(words[i:i + 30])}\n")
    # In a fresh process: the fastText 0.9.2 wheels sometimes fail with "Encountered NaN" when
    # trained in a process whose heap is already busy (seen after loading the dev corpus).
    code = ("import fasttext, sys; fasttext.train_supervised(sys.argv[1], epoch=5, thread=1, seed=1, verbose=0)"
            ".save_model(sys.argv[2])")
    subprocess.run([sys.executable, "-c", code, str(train), str(tmp_path / "tiny_lid.bin")], check=True)
    test = docs[1::2]
    src = _write(tmp_path / "test.jsonl", test)
    run_annotate(AnnotateConfig(inputs=[src], output=str(tmp_path / "out"), lang="auto", workers=1, progress=False,
                                signals="rps_doc_word_count", models={"lid": str(tmp_path / "tiny_lid.bin")}))
    table = pq.read_table(tmp_path / "out" / "docs" / "test.parquet")
    assert without_conveniences(table.column_names) == [
        "id", "shard", "row", "rps_doc_word_count", "ts_lang", "ts_lang_score"]
    detected = table.column("ts_lang").to_pylist()
    truth = [d["id"].split("/")[1] for d in test]
    assert np.mean([a == b for a, b in zip(detected, truth)]) > 0.6  # 5 labels: chance is 0.2
    meta = json.loads(pq.read_metadata(tmp_path / "out" / "docs" / "test.parquet").metadata[b"textsieve"])
    assert meta["models"]["lid"]["kind"] == "langid" and meta["models"]["lid"]["header"]["foreign"]
