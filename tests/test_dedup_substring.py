"""`dedup substring` (issue 29 item 3): exact-substring dedup over a suffix array, as free spans.

Real text: 240 documents of the dev web pool in three shards, with passages planted across
shards (cut from other pool documents, so their words are real). The spans are checked against
an independent pure-Python twin of the rule (every window of `min_len` tokens that occurs twice
or more marks its tokens; a span is a run of marked tokens within a document), so the recall on
the planted repeats and the absence of spans on unrepeated text both follow from equality."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.dedup.substring import repeated
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.dedup.substring import DedupSubstringError, SubstringConfig, run_substring

N_SHARDS = 3
PER_SHARD = 50
MIN_LEN = 30
#: (source document, first token, tokens) cut from a pool document beyond the corpus, then planted at
#: (shard, document index) places; the 29-token one is one short of MIN_LEN
PLANTS = [((300, 40, 60), [(0, 5), (2, 17)]), ((301, 10, 35), [(1, 3), (1, 3), (2, 40)]),
          ((302, 20, MIN_LEN - 1), [(0, 9), (1, 30)])]
TOKEN = re.compile(r"\w+|[^\w\s]+")  # the rule's tokens, written out again for the twin


def _passage(doc: dict, first: int, n: int) -> str:
    """`n` tokens of `doc` from token `first` (the text between them kept as it is)."""
    toks = list(TOKEN.finditer(doc["text"]))[first:first + n]
    assert len(toks) == n
    return doc["text"][toks[0].start():toks[-1].end()]


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("dsubstr")
    pool = web_docs(dev_dir, 303)
    docs = pool[:N_SHARDS * PER_SHARD]
    passages = []
    for (src, first, n), places in PLANTS:
        passage = _passage(pool[src], first, n)
        passages.append(passage)
        for j, (shard, i) in enumerate(places):
            d = docs[shard * PER_SHARD + i]
            k = len(passages)  # words of their own on both sides: the repeat is the passage alone
            d["text"] = d["text"] + f"\n\nQwzx{k}{j} " + passage + f" vrkq{j}{k}\n"
    (tmp / "docs").mkdir()
    for k in range(N_SHARDS):
        with gzip.open(tmp / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[k * PER_SHARD:(k + 1) * PER_SHARD])
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_doc_word_count"], workers=1,
                                progress=False))
    texts = {f"s{k}.parquet": [d["text"] for d in read_jsonl(tmp / "docs" / f"s{k}.jsonl.gz")]
             for k in range(N_SHARDS)}
    return {"root": tmp, "attrs": tmp / "attrs", "texts": texts, "passages": passages}


def _copy(corpus: dict, tmp_path: Path) -> Path:
    d = tmp_path / "attrs"
    shutil.copytree(corpus["attrs"], d)
    return d


def _spans(attrs: Path) -> dict[str, list[list[tuple[int, int, int]]]]:
    out = {}
    for p in sorted((attrs / "sets" / "dedup_substring").glob("*.parquet")):
        col = pq.read_table(p).column("dup_substring_spans").to_pylist()
        out[p.name] = [[(s["start"], s["end"], s["score"]) for s in spans] for spans in col]
    return out


def _twin(texts: dict[str, list[str]], min_len: int) -> dict[str, list[list[tuple[int, int, int]]]]:
    docs = [(rel, [(m.group(), m.start(), m.end()) for m in TOKEN.finditer(t)]) for rel in sorted(texts)
            for t in texts[rel]]
    count = Counter(tuple(w for w, _, _ in toks[i:i + min_len]) for _, toks in docs
                    for i in range(len(toks) - min_len + 1))
    out: dict[str, list] = {rel: [] for rel in texts}
    for rel, toks in docs:
        marked = [False] * len(toks)
        for i in range(len(toks) - min_len + 1):
            if count[tuple(w for w, _, _ in toks[i:i + min_len])] >= 2:
                marked[i:i + min_len] = [True] * min_len
        spans, i = [], 0
        while i < len(toks):
            if marked[i]:
                j = i
                while j + 1 < len(toks) and marked[j + 1]:
                    j += 1
                spans.append((toks[i][1], toks[j][2], j - i + 1))
                i = j + 1
            else:
                i += 1
        out[rel].append(spans)
    return out


def test_suffix_array_marks_equal_every_repeated_window():
    """The kernel against brute force on small alphabets (many repeats, overlaps, document ends)."""
    rng = np.random.default_rng(7)
    for _ in range(100):
        min_len = int(rng.integers(1, 5))
        docs = [rng.integers(0, int(rng.integers(1, 4)), int(rng.integers(0, 14))).astype(np.uint32)
                for _ in range(int(rng.integers(1, 6)))]
        lens = np.array([len(d) for d in docs])
        got = repeated(np.concatenate(docs), lens, min_len)
        count = Counter(tuple(d[i:i + min_len]) for d in docs for i in range(len(d) - min_len + 1))
        want = []
        for d in docs:
            m = np.zeros(len(d), bool)
            for i in range(len(d) - min_len + 1):
                if count[tuple(d[i:i + min_len])] >= 2:
                    m[i:i + min_len] = True
            want.append(m)
        assert (got == np.concatenate(want)).all(), (docs, min_len)


def test_spans_equal_the_twin_and_find_every_planted_repeat(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    res = run_substring(SubstringConfig(str(attrs), min_len=MIN_LEN, workers=1, progress=False))
    got = _spans(attrs)
    assert got == _twin(corpus["texts"], MIN_LEN)
    assert res.partitions == 1 and res.duplicate_tokens > 0
    texts = corpus["texts"]
    for k, ((_, _, n), places) in enumerate(PLANTS):
        passage = corpus["passages"][k]
        for shard, i in places:
            text = texts[f"s{shard}.parquet"][i]
            at = text.rindex(passage)
            covered = any(s <= at and at + len(passage) <= e for s, e, _ in got[f"s{shard}.parquet"][i])
            assert covered == (n >= MIN_LEN), (k, shard, i)  # recall 1.0; one word short is not marked
    summary = json.loads((attrs / "sets" / "dedup_substring" / ".textsieve" / "summary.json").read_text())
    assert summary["unit"] == "words" and summary["min_len"] == MIN_LEN
    assert summary["n_dup_tokens"] == sum(sp[2] for docs in got.values() for d in docs for sp in d)


@pytest.mark.slow
def test_unrepeated_text_has_no_spans(tmp_path):
    words = [f"w{i}x" for i in range(5000)]
    docs = [{"id": str(k), "text": " ".join(words[k * 100:(k + 1) * 100])} for k in range(50)]
    (tmp_path / "docs").mkdir()
    with gzip.open(tmp_path / "docs" / "u.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    run_annotate(AnnotateConfig([str(tmp_path / "docs")], str(tmp_path / "attrs"), signals=["rps_doc_word_count"],
                                workers=1, progress=False))
    res = run_substring(SubstringConfig(str(tmp_path / "attrs"), min_len=5, progress=False))
    assert res.duplicate_tokens == 0 and res.spans == 0 and res.tokens == 5000


@pytest.mark.slow
def test_partitions_sorted_pairwise_equal_one_pass_and_workers_agree(corpus, tmp_path, monkeypatch):
    one = _copy(corpus, tmp_path / "one")
    run_substring(SubstringConfig(str(one), min_len=MIN_LEN, workers=1, progress=False))
    many = _copy(corpus, tmp_path / "many")
    import textsieve.stages.dedup.substring as stage

    monkeypatch.setattr(stage, "BYTES_PER_TOKEN", 700)  # a 32 MB share then holds ~34,000 tokens a pass
    res = run_substring(SubstringConfig(str(many), min_len=MIN_LEN, memory="96MB", workers=2, progress=False))
    assert res.partitions >= 4 and res.passes == res.partitions * (res.partitions - 1) // 2
    for rel in ("s0.parquet", "s1.parquet", "s2.parquet"):
        a = pq.read_table(one / "sets" / "dedup_substring" / rel)
        b = pq.read_table(many / "sets" / "dedup_substring" / rel)
        assert a.equals(b), rel


@pytest.mark.slow
def test_select_cuts_the_repeats_and_rules_read_the_fraction(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    assert main(["dedup", "substring", str(attrs), "--min-len", str(MIN_LEN), "-q"]) == 0
    out = tmp_path / "sel"
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rules:\n  mostly_new: dup_substring_frac < 0.5\nredact: [dup_substring_spans]\n")
    assert main(["select", str(attrs), "--recipe", str(recipe), "--output", str(out), "-q"]) == 0
    kept = [r for f in sorted(out.rglob("*.jsonl.gz")) for r in read_jsonl(f)]
    assert kept
    written = "\n".join(r["text"] for r in kept)
    for k, ((_, _, n), _) in enumerate(PLANTS):
        assert (corpus["passages"][k] in written) == (n < MIN_LEN)
    spans = _spans(attrs)
    fracs = {(rel, i) for rel, docs in spans.items() for i, d in enumerate(docs)
             if sum(e - s for s, e, _ in d) >= 0.5 * max(1, len(corpus["texts"][rel][i]))}
    assert len(kept) == N_SHARDS * PER_SHARD - len(fracs)


@pytest.mark.slow
def test_tokenizer_tokens_rerun_noop_and_refusals(corpus, tmp_path, capsys):
    attrs = _copy(corpus, tmp_path)
    tok = tmp_path / "tok.json"
    assert main(["train", "tokenizer", str(corpus["root"] / "docs"), "--vocab", "2000", "--max-docs", "200",
                 "--output", str(tok), "-q"]) == 0
    res = run_substring(SubstringConfig(str(attrs), min_len=40, tokenizer=str(tok), progress=False))
    assert res.duplicate_tokens > 0
    summary = json.loads((attrs / "sets" / "dedup_substring" / ".textsieve" / "summary.json").read_text())
    assert summary["unit"] == "tokens" and summary["tokenizer_fingerprint"]
    spans = _spans(attrs)
    texts = corpus["texts"]
    passage = corpus["passages"][0]  # 60 words: more than 40 BPE tokens, marked in full but its edges
    for shard, i in PLANTS[0][1]:
        text = texts[f"s{shard}.parquet"][i]
        at = text.rindex(passage)
        assert any(s <= at + 5 and e >= at + len(passage) - 5 for s, e, _ in spans[f"s{shard}.parquet"][i])
    again = run_substring(SubstringConfig(str(attrs), min_len=40, tokenizer=str(tok), progress=False))
    assert again.skipped
    with pytest.raises(DedupSubstringError, match="other settings: min_len"):
        run_substring(SubstringConfig(str(attrs), min_len=41, tokenizer=str(tok), progress=False))
    assert main(["dedup", "substring", str(attrs), "--min-len", "0"]) == 2
    assert "--min-len must be a whole number >= 1" in capsys.readouterr().err



@pytest.mark.slow
def test_killed_run_publishes_nothing_and_resumes(corpus, tmp_path):
    """SIGKILL once a shard is staged: nothing is published, work files are cleared by the
    re-run, which publishes the clean run's bytes."""
    import subprocess
    import sys

    from hooks.slow_progress import kill_when

    attrs = _copy(corpus, tmp_path)
    clean = _copy(corpus, tmp_path / "clean")
    run_substring(SubstringConfig(str(clean), min_len=MIN_LEN, workers=1, progress=False))
    set_dir = attrs / "sets" / "dedup_substring"
    cmd = [sys.executable, "-m", "textsieve.cli", "dedup", "substring", str(attrs), "--min-len", str(MIN_LEN),
           "--workers", "1", "-q"]
    kill_when(cmd, lambda: any(set_dir.glob(".textsieve/staging-*/*.parquet")), 0.5, "a shard was staged")
    assert not (set_dir / ".textsieve" / "manifest.json").exists() and not list(set_dir.glob("*.parquet"))
    subprocess.run(cmd, check=True, timeout=300)
    assert _spans(attrs) == _spans(clean)
    assert not list(set_dir.glob(".textsieve/staging-*")) and not (attrs / ".textsieve-work").exists()
