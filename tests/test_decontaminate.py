"""`textsieve decontaminate` on real text: wiki passages planted into web documents must all be
found (recall 1.0, spans covering the planted text), web documents without plants must not match
the wiki benchmark, Bloom mode must find a superset of exact mode, a re-run is a no-op, a changed
benchmark re-runs, and a bad benchmark file is one error line naming the file and line."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.decontam.bench import BenchmarkError
from textsieve.decontam.ngram_kernels import doc_words
from textsieve.decontam.ngrams import fold_table, words_reference
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.doc_set import DocSetError
from textsieve.stages.training.decontaminate import DecontamConfig, output_schema, run_decontaminate
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
    return [r for s in range(2) for r in pq.read_table(attrs / "sets" / "decontam" / f"part-{s}.parquet").to_pylist()]


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
    summary = json.loads((attrs / "sets" / "decontam" / ".textsieve" / "summary.json").read_text())
    assert summary["ts_contam_count"] == res.matched_ngrams > 0
    assert summary["ngram"] == 13 and summary["index"]["benchmarks"]["wiki"]["examples"] == 100
    assert summary["unidata_version"] == unicodedata.unidata_version  # the fold table follows it
    assert pq.read_schema(attrs / "sets" / "decontam" / "part-0.parquet").remove_metadata().equals(output_schema())


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
    with pytest.raises(DocSetError, match=r"bloom_fp=None \(now 0.001\)"):
        run_decontaminate(_cfg(attrs, corpus["bench"], bloom_fp=1e-3))
    res = run_decontaminate(_cfg(attrs, corpus["bench"], bloom_fp=1e-3, overwrite=True))
    bloom = _rows(attrs)
    summary = json.loads((attrs / "sets" / "decontam" / ".textsieve" / "summary.json").read_text())
    assert res.mode == "bloom" and summary["bloom_fp"] == 1e-3
    for e, b in zip(exact, bloom):
        assert b["ts_contam_count"] >= e["ts_contam_count"]
        assert set(b["ts_contam_bench"]) >= set(e["ts_contam_bench"])
    # at 1e-3 per look-up a few false n-grams are expected, but every exact match is among them
    assert sum(b["ts_contam_count"] > 0 for b in bloom) >= sum(e["ts_contam_count"] > 0 for e in exact)


def test_exact_set_over_memory_becomes_a_bloom_filter(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    run_decontaminate(_cfg(attrs, corpus["bench"]))
    with pytest.raises(DocSetError, match=r"mode='exact' \(now 'bloom'\)"):  # the mode the memory chose
        run_decontaminate(_cfg(attrs, corpus["bench"], memory="300KB"))
    res = run_decontaminate(_cfg(attrs, corpus["bench"], memory="300KB", overwrite=True))
    assert res.mode == "bloom" and "more than --memory (0.3 MB)" in res.mode_reason
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
    with pytest.raises(BenchmarkError, match=r"benchmark short .*: all 2 example\(s\) are shorter than --min-words "
                                             r"\(13 words\), so it has nothing to match"):  # it matched nothing
        run_decontaminate(DecontamConfig(str(attrs), against=[str(tmp_path / "short.txt")], min_words=13,
                                         workers=1, progress=False, overwrite=True))


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
        rc, out, err = _cli(capsys, str(attrs), "--against", str(tmp_path / name), "--fields", "question",
                            "--fields", "answer", "-q")
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("textsieve: error: "), (name, err)
        assert msg in lines[0], (name, lines[0])
    rc, _, err = _cli(capsys, str(attrs), "--against", str(corpus["bench"]), "--ngram", "0", "-q")
    assert rc == 2 and err.strip() == "textsieve: error: --ngram 0: must be a whole number >= 1 (13: GPT-3's rule)"
    rc, _, err = _cli(capsys, str(tmp_path / "no-attrs"), "--against", str(corpus["bench"]), "-q")
    assert rc == 2 and "is not an annotate output folder" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no-attrs").exists()
    assert not (attrs / "sets" / "decontam").exists() and not (attrs / ".textsieve-work").exists()


def test_cli_end_to_end_with_a_recipe(corpus, tmp_path, capsys):
    attrs = _copy(corpus, tmp_path)
    rc, out, err = _cli(capsys, str(attrs), "--against", f"wiki={corpus['bench']}", "--fields", "question",
                        "--fields", "answer", "--workers", "2", "-q", "--json")
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
    # the same set with one worker, byte for byte
    one = tmp_path / "one"
    shutil.copytree(corpus["attrs"], one)
    run_decontaminate(_cfg(one, corpus["bench"]))
    for s in range(2):
        rel = f"sets/decontam/part-{s}.parquet"
        assert (one / rel).read_bytes() == (attrs / rel).read_bytes(), rel
    # select --redact ts_contam_spans removes exactly the matched spans
    everything = tmp_path / "all.yaml"
    everything.write_text('name: all\nrules:\n  any: "rps_doc_word_count >= 0"\n', encoding="utf-8")
    assert main(["select", str(attrs), "--recipe", str(everything), "--redact", "ts_contam_spans", "-o",
                 str(tmp_path / "cut"), "-q", "--workers", "1"]) == 0
    out = {r["id"]: r for p in sorted((tmp_path / "cut").rglob("*.jsonl.gz")) for r in read_jsonl(p)}
    assert len(out) == N_DOCS
    for doc, row in zip(corpus["docs"], _rows(attrs)):
        spans = [(sp["start"], sp["end"]) for sp in row["ts_contam_spans"]]
        bounds = [0, *(x for sp in spans for x in sp), len(doc["text"])]
        expected = "".join(doc["text"][bounds[j]:bounds[j + 1]] for j in range(0, len(bounds), 2))
        assert out[doc["id"]]["text"] == expected
        assert out[doc["id"]]["ts_redacted"] == {"ts_contam_spans": len(spans)}
    for i, (start, _end, passage, _) in corpus["planted"].items():  # the planted words are gone
        words = words_reference(passage)
        cut = corpus["docs"][i]["text"][start + words[0][0]:start + words[-1][1]]
        assert cut not in out[corpus["docs"][i]["id"]]["text"]


# -- review findings (issue 14 item 1) ---------------------------------------------------------------


def _peak(fn) -> int:
    """Peak bytes traced by tracemalloc while `fn` runs (numpy and Python allocations)."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_index_build_and_benchmark_reading_stay_within_their_stated_memory(dev_dir, tmp_path):
    """Finding 1: 1,000 web documents as one benchmark (~450k 13-grams, a 3.3 MB file). The exact
    build peaks at EXACT_PEAK_BYTES_PER_NGRAM per n-gram plus the fixed batch working set (it was
    ~120 bytes per key: parts, concatenate, np.unique copies, argsort, gathers); examples and the
    fingerprint stream the file instead of holding it whole."""
    from textsieve.decontam import bench as bench_mod
    from textsieve.decontam import index as index_mod
    from textsieve.decontam.bench import examples, fingerprint, parse_benchmarks
    from textsieve.decontam.index import build_index

    docs = web_docs(dev_dir, 1000)
    path = tmp_path / "web.jsonl"
    _write_jsonl(path, [{"text": d["text"]} for d in docs])
    size = path.stat().st_size
    (tmp_path / "tiny.txt").write_text(" ".join(["word"] * 20) + "\n", encoding="utf-8")
    build_index(parse_benchmarks([str(tmp_path / "tiny.txt")]), ["text"], 13, 8, None, 10**9, str(tmp_path))  # warm
    benches = parse_benchmarks([str(path)])
    work = tmp_path / "index"
    work.mkdir()
    stats: list = []
    peak = _peak(lambda: stats.append(build_index(benches, ["text"], 13, 8, None, 10**9, str(work))))
    (st,) = stats
    ngrams = st.benchmarks["web"]["ngrams"]
    assert st.mode == "exact" and ngrams > 400_000
    longest = max(len(d["text"]) for d in docs)
    batch = index_mod.BATCH_WORK_BYTES_PER_CHAR * (index_mod.BATCH_CHARS + longest)
    assert peak <= index_mod.EXACT_PEAK_BYTES_PER_NGRAM * ngrams + batch + 3 * bench_mod.READ_SIZE, (peak, ngrams)
    # reading: a few 1 MB reads at a time, not the file (and its decoded copy) at once
    assert _peak(lambda: sum(1 for _ in examples(benches[0], ["text"]))) < 3 * bench_mod.READ_SIZE < size
    assert _peak(lambda: fingerprint(benches, ["text"])) < 2 * bench_mod.READ_SIZE < size
    # over the allowance: Bloom, and the reason states the peak the choice budgets
    small = build_index(benches, ["text"], 13, 8, None, 24 * ngrams - 1, str(work))
    assert small.mode == "bloom" and f"takes up to {24 * ngrams / 1e6:,.1f} MB" in small.reason


def test_a_benchmark_with_no_usable_example_is_an_error_and_left_out_examples_are_printed(corpus, tmp_path, capsys):
    """Finding 2: a benchmark whose examples are all shorter than --min-words matched nothing and
    the run said "0 of 200 documents share n-grams with short (2 examples)"; now it is one error
    line naming it, and a benchmark that lost some examples says so in the closing line."""
    attrs = _copy(corpus, tmp_path)
    text = corpus["docs"][5]["text"]
    words = words_reference(text)
    (tmp_path / "short.txt").write_text("a line of five words\n" + " ".join(text[words[20][0]:words[29][1]].split())
                                        + "\n", encoding="utf-8")
    rc, _, err = _cli(capsys, str(attrs), "--against", str(tmp_path / "short.txt"), "--min-words", "11")
    assert rc == 2 and err.strip().splitlines() == [
        f"textsieve: error: benchmark short ({tmp_path / 'short.txt'}): all 2 example(s) are shorter than "
        "--min-words (11 words), so it has nothing to match; lower --min-words or check --fields"]
    assert not (attrs / "sets" / "decontam").exists()
    rc, _, err = _cli(capsys, str(attrs), "--against", str(tmp_path / "short.txt"), "--workers", "1")
    assert rc == 0
    assert "with short (2 examples, 1 left out as shorter than --min-words)" in err.strip().splitlines()[-1]
    assert f"{N_DOCS} documents" in err


def test_a_rerun_reads_no_benchmark_example_and_builds_no_index(corpus, tmp_path, monkeypatch):
    """Finding 3: the no-op re-run rebuilt the whole index before the scaffold said "unchanged"
    (data-derived fields were in the identity). Now the published identity is checked first; a
    changed --fields re-runs (and is not refused); a damaged shard rebuilds the index for it."""
    from textsieve.decontam import bench as bench_mod
    from textsieve.decontam import index as index_mod

    attrs = _copy(corpus, tmp_path)
    calls = {"build": 0, "files": 0}
    build, file_examples = index_mod.build_index, bench_mod.file_examples

    def counting_build(*a, **kw):
        calls["build"] += 1
        return build(*a, **kw)

    def counting_files(*a, **kw):
        calls["files"] += 1
        return file_examples(*a, **kw)

    monkeypatch.setattr(index_mod, "build_index", counting_build)
    monkeypatch.setattr(bench_mod, "file_examples", counting_files)
    first = run_decontaminate(_cfg(attrs, corpus["bench"]))
    assert (first.computed, calls) == (2, {"build": 1, "files": 2})  # two passes over one file
    again = run_decontaminate(_cfg(attrs, corpus["bench"]))
    assert (again.skipped, again.computed, calls) == (True, 0, {"build": 1, "files": 2})
    assert (again.contaminated, again.mode, again.benchmarks) == (first.contaminated, "exact", first.benchmarks)
    (attrs / "sets" / "decontam" / "part-1.parquet").write_bytes(b"damaged")
    fixed = run_decontaminate(_cfg(attrs, corpus["bench"]))
    assert (fixed.skipped, fixed.computed, calls["build"]) == (False, 1, 2)
    assert fixed.contaminated == first.contaminated
    answers = run_decontaminate(DecontamConfig(str(attrs), against=[f"wiki={corpus['bench']}"], fields=["answer"],
                                               workers=1, progress=False))
    assert (answers.skipped, answers.computed, calls["build"]) == (False, 2, 3)
    assert json.loads((attrs / "sets" / "decontam" / ".textsieve" / "summary.json").read_text())["fields"] == ["answer"]


def test_bloom_reason_states_the_per_document_rate(corpus, tmp_path):
    """Finding 4: a window is looked up once per n-gram length and per benchmark, so the rate per
    document is ~ words x lengths x benchmarks x rate; the reason says so (it said "per n-gram")."""
    from textsieve.decontam.index import doc_false_positive

    attrs = _copy(corpus, tmp_path)
    text = corpus["docs"][5]["text"]
    words = words_reference(text)
    (tmp_path / "short.txt").write_text(" ".join(text[words[20][0]:words[29][1]].split()) + "\n", encoding="utf-8")
    res = run_decontaminate(DecontamConfig(str(attrs), against=[f"wiki={corpus['bench']}", str(tmp_path / "short.txt")],
                                           fields=["question", "answer"], bloom_fp=1e-6, workers=1, progress=False))
    assert res.summary["lengths"] == [13, 10]
    rate = doc_false_positive(1e-6, [13, 10], 2)
    assert abs(rate - 4000e-6) < 1e-5  # 1,000 words x 2 lengths x 2 benchmarks
    assert "per look-up" in res.mode_reason and "2 n-gram length(s) x 2 benchmark(s)" in res.mode_reason
    assert f"1,000-word document is falsely flagged with probability ~{rate:.2g}" in res.mode_reason


def test_overlapping_matches_of_several_lengths_merge_into_one_span(corpus, tmp_path):
    """A 21-word benchmark line (nine 13-grams) and a 10-word line (matched whole) that overlaps
    its last 5 words and goes on 5 more: one span, from the first word to the last, score 10."""
    attrs = _copy(corpus, tmp_path)
    i = 7  # an unplanted web document
    text = corpus["docs"][i]["text"]
    words = words_reference(text)
    long_line = " ".join(text[words[20][0]:words[40][1]].split())
    short_line = " ".join(text[words[36][0]:words[45][1]].split())
    (tmp_path / "lines.txt").write_text(f"{long_line}\n{short_line}\n", encoding="utf-8")
    res = run_decontaminate(DecontamConfig(str(attrs), against=[str(tmp_path / "lines.txt")], workers=1,
                                           progress=False))
    assert res.summary["lengths"] == [13, 10]
    row = _rows(attrs)[i]
    assert row["ts_contam_count"] == 9 + 1
    assert row["ts_contam_spans"] == [{"start": words[20][0], "end": words[45][1], "score": 10}]


def test_exact_index_of_overlapping_benchmarks_matches_a_numpy_reference(corpus, tmp_path):
    """The in-place build (sort, de-duplicate, k-way merge of masks, bucket table) against
    np.unique over five benchmarks that share records (wiki slices overlapping by half)."""
    from textsieve.decontam.bench import parse_benchmarks
    from textsieve.decontam.index import _keys, build_index, load_index

    wiki = corpus["wiki"]
    specs, texts = [], []
    for b in range(5):
        part = [r["text"] for r in wiki[b * 40:b * 40 + 80]]
        _write_jsonl(tmp_path / f"b{b}.jsonl", [{"text": t} for t in part])
        specs.append(f"b{b}={tmp_path / f'b{b}.jsonl'}")
        texts.append(part)
    (tmp_path / "ix").mkdir()
    st = build_index(parse_benchmarks(specs), ["text"], 13, 8, None, 10**9, str(tmp_path / "ix"))
    ix = load_index(str(tmp_path / "ix"))
    per = [np.unique(_keys(t, 13, 8)[0]) for t in texts]
    ref = np.unique(np.concatenate(per))
    ref_masks = np.zeros(ref.shape[0], np.uint64)
    for b, k in enumerate(per):
        ref_masks[np.searchsorted(ref, k)] |= np.uint64(1 << b)
    assert np.array_equal(ix.keys, ref) and np.array_equal(ix.masks, ref_masks)
    assert st.keys == ref.shape[0] and [st.benchmarks[f"b{b}"]["distinct_ngrams"] for b in range(5)] == [
        k.shape[0] for k in per]
    assert (ref_masks == 0b11 << 1).any()  # keys shared by neighbouring benchmarks
    top = (ref >> np.uint64(int(64 - np.log2(ix.buckets.shape[0] - 1)))).astype(np.int64)
    assert np.array_equal(ix.buckets, np.searchsorted(top, np.arange(ix.buckets.shape[0])))


# ---------------------------------------------------------------- issue 26 item 6: alphabet index lines

#: real pages of the dev web sample whose only text in common with the benchmark page below is an
#: alphabet index (`A | B | C ...`, one letter per line, `Themensuche A B C ... Z #`)
INDEX_PAGES = ("trafilatura-tests_eval/hpd.de-Homosexuellenhass.html", "dolma-cc2019/vqilwnr7xh67qhpvd7zmwk7d573gpxub",
               "trafilatura-tests_eval/haufe.de-ordnungsgeld.html",
               "trafilatura-tests_eval/energiehoch3.de.lexikon.energieversorgung.html",
               "trafilatura-tests_eval/nalas-loewenseiten.info.m.html")
#: a library catalogue page with "Jump to: 0-9 A B C D ... Z": the held-out benchmark
INDEX_BENCH = "dolma-cc2019/ngjmal7ez25ugowyblmszafgzce52tad"


def _by_id(dev_dir: Path, ids: tuple[str, ...]) -> dict[str, dict]:
    """The web sample's records with these ids (lines picked by their id before parsing)."""
    keys = {f'{{"id": {json.dumps(i)},' for i in ids}
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        found = [json.loads(line) for line in fh if line[:line.find(",") + 1] in keys]
    return {r["id"]: r for r in found}


def _ngrams(text: str, n: int = 13) -> list[tuple[str, ...]]:
    words = [w for _, _, w in words_reference(text)]
    return [tuple(words[p:p + n]) for p in range(len(words) - n + 1)]


def _letters_only(gram: tuple[str, ...]) -> bool:
    return all(len(w) == 1 for w in gram)


def test_alphabet_index_lines_are_not_contamination(dev_dir, tmp_path):
    """Five real pages share only their A-Z index with a real catalogue page used as the
    benchmark: before, every one was a "hit"; now none is, while the catalogue page itself is
    still matched on every n-gram that has a word longer than one character."""
    recs = _by_id(dev_dir, (*INDEX_PAGES, INDEX_BENCH))
    bench_text = recs[INDEX_BENCH]["text"]
    bench_grams = set(_ngrams(bench_text))
    for page in INDEX_PAGES:  # the test bites: each page shares 13-grams, all of them letters only
        shared = set(_ngrams(recs[page]["text"])) & bench_grams
        assert shared and all(_letters_only(g) for g in shared), page
    (tmp_path / "docs").mkdir()
    _write_jsonl(tmp_path / "docs" / "pages.jsonl", [recs[i] for i in (*INDEX_PAGES, INDEX_BENCH)])
    _write_jsonl(tmp_path / "catalogue.jsonl", [{"text": bench_text}])
    attrs = tmp_path / "attrs"
    run_annotate(AnnotateConfig([str(tmp_path / "docs")], str(attrs), signals=["rps_doc_word_count"], workers=1,
                                progress=False))
    res = run_decontaminate(DecontamConfig(str(attrs), against=[f"catalogue={tmp_path / 'catalogue.jsonl'}"],
                                           workers=1, progress=False))
    from textsieve.io.attributes import attribute_shards

    fs, paths = attribute_shards(str(attrs), "decontam")
    rows = {}
    for p in paths:
        with fs.open(p, "rb") as fh:
            rows.update((r["id"], r) for r in pq.read_table(fh).to_pylist())
    for page in INDEX_PAGES:
        assert (rows[page]["ts_contam_count"], rows[page]["ts_contam_bench"]) == (0, []), page
    grams = _ngrams(bench_text)
    plain = [g for g in grams if not _letters_only(g)]
    assert rows[INDEX_BENCH]["ts_contam_count"] == len(plain) > 0 and res.contaminated == 1
    left_out = res.benchmarks["catalogue"]["letter_ngrams_left_out"]
    assert left_out == len(grams) - len(plain) > 0  # counted in the summary
