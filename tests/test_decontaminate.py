"""`textsieve decontaminate` on real text: wiki passages planted into web documents must all be
found (recall 1.0, spans covering the planted text), web documents without plants must not match
the wiki benchmark, Bloom mode must find a superset of exact mode, a re-run is a no-op, a changed
benchmark re-runs, and a bad benchmark file is one error line naming the file and line."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.decontam.ngram_kernels import doc_words
from textsieve.decontam.ngrams import fold_table, words_reference
from textsieve.stages.annotate import AnnotateConfig, run_annotate
from textsieve.stages.decontaminate import DecontamConfig, output_schema, run_decontaminate
from textsieve.stages.doc_set import DocSetError
from textsieve.text.batch_encoding import codepoints_batch

N_DOCS = 200
PLANT_EVERY = 10  # every 10th web document gets one wiki paragraph


def _wiki(dev_dir: Path) -> list[dict]:
    return read_jsonl(dev_dir / "target_wiki.jsonl.gz")


def _qa(rec: dict) -> dict:
    """A wiki record as a question/answer-like benchmark example: title line, then the body."""
    head, _, body = rec["text"].partition("\n\n")
    return {"id": rec["id"], "question": head, "answer": body}


def _paragraph(rec: dict) -> str:
    """The record's longest paragraph (whole words)."""
    return max(rec["text"].split("\n\n"), key=lambda p: len(words_reference(p)))


def _write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory) -> dict:
    """web_docs(200) in two shards with 20 wiki paragraphs planted at whitespace, annotated; the
    benchmark is the first 100 wiki records as {question, answer}."""
    tmp = tmp_path_factory.mktemp("decontam")
    wiki = _wiki(dev_dir)
    bench = [_qa(r) for r in wiki[:100]]
    _write_jsonl(tmp / "wiki_qa.jsonl", bench)
    docs = web_docs(dev_dir, N_DOCS)
    rng = random.Random(14)
    planted: dict[int, tuple[int, int, str, int]] = {}
    sources = iter(k for k in range(0, 100, 4) if len(words_reference(_paragraph(wiki[k]))) >= 40)
    for i in range(0, N_DOCS, PLANT_EVERY):
        src = next(sources)  # a benchmark record with a paragraph of >= 40 words
        passage = _paragraph(wiki[src])
        text = docs[i]["text"]
        spaces = [j for j, c in enumerate(text) if c.isspace()] or [len(text)]
        pos = rng.choice(spaces)
        docs[i]["text"] = f"{text[:pos]}\n{passage}\n{text[pos:]}"
        planted[i] = (pos + 1, pos + 1 + len(passage), passage, src)
    (tmp / "docs").mkdir()
    for s in range(2):
        with gzip.open(tmp / "docs" / f"part-{s}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[s * 100:(s + 1) * 100])
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_doc_word_count"],
                                workers=1, progress=False))
    return {"tmp": tmp, "attrs": tmp / "attrs", "bench": tmp / "wiki_qa.jsonl", "planted": planted, "docs": docs,
            "wiki": wiki}


def _copy(corpus: dict, tmp_path: Path) -> Path:
    d = tmp_path / "attrs"
    shutil.copytree(corpus["attrs"], d)
    return d


def _rows(attrs: Path) -> list[dict]:
    return [r for s in range(2) for r in pq.read_table(attrs / "_decontam" / f"part-{s}.parquet").to_pylist()]


def _cfg(attrs: Path, bench: Path | str, **kw) -> DecontamConfig:
    return DecontamConfig(str(attrs), against=[f"wiki={bench}"], fields=["question", "answer"], workers=1,
                          progress=False, **kw)


def test_words_agree_with_the_reference_on_real_text(dev_dir):
    texts = [d["text"] for d in web_docs(dev_dir, 30)] + [r["text"] for r in _wiki(dev_dir)[:10]]
    texts.append("Élan e\u0301lan CAFÉ cafe\u0301 don't 中文字 カタカナ 한국어 x_y ½ İstanbul")
    fold = fold_table()
    for text in texts:
        cps, off = codepoints_batch([text])
        n = len(text) + 1
        ws, we, wh = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.uint64)
        k = doc_words(cps, 0, len(text), fold, ws, we, wh)
        ref = words_reference(text)
        assert list(zip(ws[:k].tolist(), we[:k].tolist())) == [(a, b) for a, b, _ in ref]
        by_word: dict[str, int] = {}
        for (_, _, w), h in zip(ref, wh[:k].tolist()):
            assert by_word.setdefault(w, h) == h  # one folded word, one hash
    assert [w for _, _, w in words_reference(texts[-1])][:6] == ["elan", "elan", "cafe", "cafe", "don", "t"]


def test_planted_passages_are_all_found_and_nothing_else(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    res = run_decontaminate(_cfg(attrs, corpus["bench"]))
    planted = corpus["planted"]
    assert (res.documents, res.contaminated, res.mode) == (N_DOCS, len(planted), "exact")
    rows = _rows(attrs)
    for i, row in enumerate(rows):
        if i not in planted:
            assert (row["ts_contam_count"], row["ts_contam_spans"], row["ts_contam_bench"]) == (0, [], [])
            continue
        start, end, passage, _ = planted[i]
        words = words_reference(passage)
        first, last = start + words[0][0], start + words[-1][1]
        assert row["ts_contam_bench"] == ["wiki"]
        assert row["ts_contam_count"] == len(words) - 13 + 1  # every n-gram of the paragraph
        (span,) = row["ts_contam_spans"]  # one merged span: exactly the planted words
        assert (span["start"], span["end"], span["score"]) == (first, last, row["ts_contam_count"])
        assert corpus["docs"][i]["text"][span["start"]:span["end"]] == passage[words[0][0]:words[-1][1]]
    summary = json.loads((attrs / "_decontam" / "summary.json").read_text())
    assert summary["ts_contam_count"] == res.matched_ngrams > 0
    assert summary["ngram"] == 13 and summary["benchmarks"]["wiki"]["examples"] == 100
    assert pq.read_schema(attrs / "_decontam" / "part-0.parquet").remove_metadata().equals(output_schema())


def test_web_documents_share_no_13_gram_with_the_whole_wiki_corpus(corpus, tmp_path):
    """The disjoint pair: the 180 unplanted web documents against all 607 wiki records."""
    attrs = _copy(corpus, tmp_path)
    _write_jsonl(tmp_path / "wiki.jsonl", [{"text": r["text"]} for r in corpus["wiki"]])
    res = run_decontaminate(DecontamConfig(str(attrs), against=[str(tmp_path / "wiki.jsonl")], workers=1,
                                           progress=False))
    flagged = {i for i, r in enumerate(_rows(attrs)) if r["ts_contam_count"]}
    assert flagged == set(corpus["planted"])  # only the planted ones (all of them)
    assert res.benchmarks["wiki"]["examples"] == len(corpus["wiki"])


def test_bloom_mode_is_a_superset_of_exact(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    run_decontaminate(_cfg(attrs, corpus["bench"]))
    exact = _rows(attrs)
    with pytest.raises(DocSetError, match=r"mode='exact' \(now 'bloom'\)"):
        run_decontaminate(_cfg(attrs, corpus["bench"], bloom_fp=1e-3))
    res = run_decontaminate(_cfg(attrs, corpus["bench"], bloom_fp=1e-3, overwrite=True))
    bloom = _rows(attrs)
    assert res.mode == "bloom" and json.loads((attrs / "_decontam" / "summary.json").read_text())["bloom_fp"] == 1e-3
    for e, b in zip(exact, bloom):
        assert b["ts_contam_count"] >= e["ts_contam_count"]
        assert set(b["ts_contam_bench"]) >= set(e["ts_contam_bench"])
    # at 1e-3 per look-up a few false n-grams are expected, but every exact match is among them
    assert sum(b["ts_contam_count"] > 0 for b in bloom) >= sum(e["ts_contam_count"] > 0 for e in exact)


def test_exact_set_over_memory_becomes_a_bloom_filter(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    res = run_decontaminate(_cfg(attrs, corpus["bench"], memory="300KB"))
    assert res.mode == "bloom" and "exceeds --memory" in res.mode_reason
    assert {i for i, r in enumerate(_rows(attrs)) if r["ts_contam_count"]} >= set(corpus["planted"])
    with pytest.raises(ValueError, match="needs .* MB, more than --memory"):
        run_decontaminate(_cfg(attrs, corpus["bench"], memory="10KB", overwrite=True))


def test_rerun_is_a_noop_and_a_changed_benchmark_reruns(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    bench = tmp_path / "b.jsonl"
    shutil.copy(corpus["bench"], bench)
    first = run_decontaminate(_cfg(attrs, bench))
    assert first.computed == 2 and not first.skipped
    assert run_decontaminate(_cfg(attrs, bench)).skipped
    with open(bench, "a", encoding="utf-8") as fh:  # one more example
        fh.write(json.dumps(_qa(corpus["wiki"][300])) + "\n")
    again = run_decontaminate(_cfg(attrs, bench))
    assert (again.skipped, again.computed) == (False, 2)
    assert again.benchmarks["wiki"]["examples"] == 101
    with pytest.raises(DocSetError, match=r"ngram=13 \(now 9\)"):
        run_decontaminate(_cfg(attrs, bench, ngram=9))


def test_short_examples_formats_and_several_benchmarks(corpus, tmp_path):
    """A 10-word example is matched whole (>= --min-words); a text file and a Parquet folder are
    benchmarks too; ts_contam_bench names each one that matched."""
    attrs = _copy(corpus, tmp_path)
    docs = corpus["docs"]
    text = docs[5]["text"]  # an unplanted web document: 10 of its words, as they stand
    words = words_reference(text)
    short = " ".join(text[words[20][0]:words[29][1]].split())  # one line
    (tmp_path / "short.txt").write_text("a line of five words\n" + short + "\n", encoding="utf-8")
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.table({"question": [r["question"] for r in map(_qa, corpus["wiki"][:50])],
                             "answer": [r["answer"] for r in map(_qa, corpus["wiki"][:50])]}),
                   tmp_path / "pq" / "test.parquet")
    res = run_decontaminate(DecontamConfig(str(attrs), against=[str(tmp_path / "short.txt"), f"pq={tmp_path / 'pq'}"],
                                           fields=["question", "answer"], workers=1, progress=False))
    assert res.benchmarks["short"]["short_examples_left_out"] == 1  # 5 words < --min-words 8
    assert res.summary["lengths"] == [13, 10]
    rows = _rows(attrs)
    assert rows[5]["ts_contam_bench"] == ["short"] and rows[5]["ts_contam_count"] >= 1
    planted_pq = [i for i, p in corpus["planted"].items() if p[3] < 50]
    assert planted_pq
    assert all(rows[i]["ts_contam_bench"] == ["pq"] for i in planted_pq)
    res = run_decontaminate(DecontamConfig(str(attrs), against=[str(tmp_path / "short.txt")], min_words=13,
                                           workers=1, progress=False, overwrite=True))
    assert res.contaminated == 0 and res.benchmarks["short"]["short_examples_left_out"] == 2


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["decontaminate", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_bad_benchmark_is_one_error_line(corpus, tmp_path, capsys):
    attrs = corpus["attrs"]  # every case fails before anything is written
    good = json.dumps({"question": "q", "answer": "a"})
    (tmp_path / "bad.jsonl").write_text(f"{good}\n{good}\n{{\"question\": \"x\"\n", encoding="utf-8")
    (tmp_path / "nofield.jsonl").write_text(json.dumps({"query": "q"}) + "\n", encoding="utf-8")
    (tmp_path / "obj.jsonl").write_text(json.dumps({"question": {"a": 1}}) + "\n", encoding="utf-8")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "trunc.jsonl.gz").write_bytes(gzip.compress((good + "\n").encode() * 50)[:-12])
    (tmp_path / "empty").mkdir()
    cases = {"bad.jsonl": "bad.jsonl:3: not a JSON record",
             "nofield.jsonl": "nofield.jsonl:1: none of the field(s) question, answer (its fields: query)",
             "obj.jsonl": "obj.jsonl:1: field 'question' holds a dict",
             "broken.parquet": "broken.parquet: not a readable Parquet file",
             "trunc.jsonl.gz": "trunc.jsonl.gz: ",
             "empty": "holds no benchmark files",
             "missing.jsonl": "missing.jsonl does not exist"}
    for name, msg in cases.items():
        rc, out, err = _cli(capsys, str(attrs), "--against", str(tmp_path / name), "--field", "question",
                            "--field", "answer", "-q")
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("textsieve: error: "), (name, err)
        assert msg in lines[0], (name, lines[0])
    rc, _, err = _cli(capsys, str(attrs), "--against", str(corpus["bench"]), "--ngram", "0", "-q")
    assert rc == 2 and err.strip() == "textsieve: error: --ngram 0: must be a whole number >= 1 (13: GPT-3's rule)"
    rc, _, err = _cli(capsys, str(tmp_path / "no-attrs"), "--against", str(corpus["bench"]), "-q")
    assert rc == 2 and "is not an annotate output folder" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no-attrs").exists()
    assert not (attrs / "_decontam").exists() and not (attrs / ".textsieve-work").exists()


def test_cli_end_to_end_with_a_recipe(corpus, tmp_path, capsys):
    attrs = _copy(corpus, tmp_path)
    rc, out, err = _cli(capsys, str(attrs), "--against", f"wiki={corpus['bench']}", "--field", "question",
                        "--field", "answer", "--workers", "2", "-q", "--json")
    assert rc == 0, err
    summary = json.loads(out)
    assert (summary["documents"], summary["contaminated"], summary["mode"]) == (N_DOCS, 20, "exact")
    assert not (attrs / ".textsieve-work").exists()  # the index's work folder is removed
    recipe = tmp_path / "clean.yaml"
    recipe.write_text('name: clean\nrules:\n  no_contam: "ts_contam_count == 0"\n', encoding="utf-8")
    assert main(["select", str(attrs), "--recipe", str(recipe), "-o", str(tmp_path / "out"), "-q",
                 "--workers", "1"]) == 0
    kept = [r for p in sorted((tmp_path / "out").rglob("*.jsonl.gz")) for r in read_jsonl(p)]
    assert len(kept) == N_DOCS - 20
    assert not {r["id"] for r in kept} & {corpus["docs"][i]["id"] for i in corpus["planted"]}
