"""`dedup lines` (issue 12 item 3): CCNet's line dedup over groups of shards, as line spans.

Real text: the first 240 documents of the dev web pool in four shards, with boilerplate lines
planted across shards (each planted line is made of words the pool does not use). The flags are
checked against an independent pure-Python twin of CCNet's rule (`cc_net/dedup.py`: a line whose
normalised text is in two or more documents of the group is dropped everywhere, first
occurrence included; a repeat inside one document after its first occurrence)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs

from textsieve.dedup.lines import LINE_ROW, doc_rows, flagged_lines, normalize_line, split_lines
from textsieve.dedup.lines_group import ExactGroup, GroupFlags
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.dedup.lines import DedupLinesError, LinesConfig, run_lines

N_SHARDS = 4
PER_SHARD = 60
#: (shard, document index in that shard, line appended)
PLANTED = [
    (0, 3, "Copyright 2019 Zqxvork Ltd！"), (1, 5, "copyright 2020 zqxvork ltd"),  # group {0, 1}: equal (ccnet)
    (0, 7, "Subscribe to the Blorptex letter"), (2, 4, "subscribe to the blorptex letter"),  # groups {0,1} / {2,3}
    (3, 1, "All rights reserved 1999 Quenmor!"), (3, 9, "all rights reserved 2001 quenmor"),  # equal only with punct
    (2, 11, "Fnordle widget line"), (2, 11, "FNORDLE widget line"),  # a repeat inside one document
]


def _texts(docs_dir: Path) -> dict[str, list[str]]:
    return {f"s{k}.parquet": [d["text"] for d in read_jsonl(docs_dir / f"s{k}.jsonl.gz")] for k in range(N_SHARDS)}


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("dlines")
    docs = web_docs(dev_dir, N_SHARDS * PER_SHARD)
    (tmp / "docs").mkdir()
    for k in range(N_SHARDS):
        shard = docs[k * PER_SHARD:(k + 1) * PER_SHARD]
        for s, i, line in PLANTED:
            if s == k:
                text = shard[i]["text"]
                shard[i] = dict(shard[i], text=text + ("" if text.endswith("\n") else "\n") + line + "\n")
        with gzip.open(tmp / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in shard)
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_lines_num_words"],
                                workers=1, progress=False))
    return {"root": tmp, "docs": tmp / "docs", "attrs": tmp / "attrs"}


def _copy(corpus: dict[str, Path], tmp_path: Path) -> Path:
    attrs = tmp_path / "attrs"
    shutil.copytree(corpus["attrs"], attrs)
    return attrs


def _flags(attrs: Path) -> dict[str, list[list[int]]]:
    out = {}
    for k in range(N_SHARDS):
        col = pq.read_table(attrs / "sets" / "dedup_lines" / f"s{k}.parquet", columns=["dup_lines_seen"]).column(0)
        out[f"s{k}.parquet"] = [[s["score"] for s in doc] for doc in col.to_pylist()]
    return out


def _twin(texts: dict[str, list[str]], group_shards: int | None, mode: str = "ccnet") -> dict[str, list[list[int]]]:
    """CCNet's rule written out plainly, shard group by shard group."""
    rels = sorted(texts)
    size = group_shards or len(rels)
    out: dict[str, list[list[int]]] = {}
    for g in range(0, len(rels), size):
        group = rels[g:g + size]
        norm = {r: [[normalize_line(x, mode) for x in split_lines(t)] for t in texts[r]] for r in group}
        in_docs = Counter(n for r in group for doc in norm[r] for n in set(doc) if n)
        for r in group:
            out[r] = []
            for doc in norm[r]:
                seen: set[str] = set()
                flags = []
                for n in doc:
                    flags.append(int(bool(n) and (in_docs[n] >= 2 or n in seen)))
                    seen.add(n)
                out[r].append(flags)
    return out


def _line_flag(texts, flags, rel: str, doc: int, line: str) -> int:
    lines = split_lines(texts[rel][doc])
    return flags[rel][doc][next(i for i, x in enumerate(lines) if x.rstrip("\n") == line)]


# ---------------------------------------------------------------- normalisation

def test_normalisation_is_ccnets():
    """cc_net/text_normalizer.py normalize_for_dedup: strip, lower, \\d -> 0, its Unicode punctuation
    table and control characters removed; ASCII punctuation kept. `punct` removes all punctuation."""
    assert normalize_line("  Copyright 2019 Foo！\n") == normalize_line("copyright 2020 foo") == "copyright 0000 foo"
    assert normalize_line("Copyright 2019 Foo!") != normalize_line("copyright 2020 foo")  # CCNet keeps ASCII '!'
    assert normalize_line("Copyright 2019 Foo!", "punct") == normalize_line("copyright 2020  foo", "punct")
    assert normalize_line("Preis: ٣٤ €\x07") == "preis: 00 €"  # Arabic-Indic digits are \d; BEL is removed
    assert normalize_line("«Zitat» – „so“") == "zitat  so"
    assert normalize_line(" \t\n") == "" and split_lines("a\n\nb") == ["a\n", "\n", "b"] and split_lines("") == []


# ---------------------------------------------------------------- the rule, groups, spans

def test_flags_follow_ccnets_rule_per_group_and_spans_are_annotates(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    texts = _texts(corpus["docs"])
    res = run_lines(LinesConfig(str(attrs), group_shards=2, workers=2, progress=False))
    flags = _flags(attrs)
    assert flags == _twin(texts, 2)
    assert res.groups == 2 and res.documents == N_SHARDS * PER_SHARD and 0 < res.duplicate_lines < res.lines
    # planted lines: equal after normalisation within a group -> both occurrences marked ...
    assert _line_flag(texts, flags, "s0.parquet", 3, PLANTED[0][2]) == 1
    assert _line_flag(texts, flags, "s1.parquet", 5, PLANTED[1][2]) == 1
    # ... but not across groups, nor with ASCII punctuation under CCNet's normalisation
    assert _line_flag(texts, flags, "s0.parquet", 7, PLANTED[2][2]) == 0
    assert _line_flag(texts, flags, "s2.parquet", 4, PLANTED[3][2]) == 0
    assert _line_flag(texts, flags, "s3.parquet", 1, PLANTED[4][2]) == 0
    lines = split_lines(texts["s2.parquet"][11])  # a repeat in one document: the later occurrence only
    assert [flags["s2.parquet"][11][i] for i, x in enumerate(lines) if "widget line" in x] == [0, 1]
    for k in range(N_SHARDS):  # rows and spans are annotate's
        base = pq.read_table(attrs / "docs" / f"s{k}.parquet", columns=["id", "row", "rps_lines_num_words"]).to_pylist()
        mine = pq.read_table(attrs / "sets" / "dedup_lines" / f"s{k}.parquet").to_pylist()
        assert [(b["id"], b["row"]) for b in base] == [(m["id"], m["row"]) for m in mine]
        assert [[(s["start"], s["end"]) for s in b["rps_lines_num_words"]] for b in base] == \
               [[(s["start"], s["end"]) for s in m["dup_lines_seen"]] for m in mine]
        assert [m["dup_lines_count"] for m in mine] == [sum(f) for f in flags[f"s{k}.parquet"]]
    summary = json.loads((attrs / "sets" / "dedup_lines" / ".textsieve" / "summary.json").read_text())
    assert summary["n_dup_lines"] == res.duplicate_lines and [g["n_shards"] for g in summary["groups"]] == [2, 2]


def test_one_group_and_punct_mode(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    texts = _texts(corpus["docs"])
    run_lines(LinesConfig(str(attrs), normalize="punct", workers=1, progress=False))
    flags = _flags(attrs)
    assert flags == _twin(texts, None, "punct")
    assert _line_flag(texts, flags, "s0.parquet", 7, PLANTED[2][2]) == 1  # one group: across shards 0 and 2
    assert _line_flag(texts, flags, "s3.parquet", 1, PLANTED[4][2]) == 1  # `Quenmor!` equals `quenmor`
    assert _line_flag(texts, flags, "s3.parquet", 9, PLANTED[5][2]) == 1


def test_select_line_rule_cuts_exactly_the_flagged_lines(corpus, tmp_path):
    from textsieve.recipes.language import Recipe
    from textsieve.stages.select.select import SelectConfig, run_select

    attrs = _copy(corpus, tmp_path)
    run_lines(LinesConfig(str(attrs), group_shards=2, workers=1, progress=False))
    flags = _flags(attrs)
    texts = _texts(corpus["docs"])
    recipe = Recipe.from_rules({"ccnet_lines": "line: dup_lines_seen == 0"})
    run_select(SelectConfig(str(attrs), recipe=recipe, output=str(tmp_path / "sel"), progress=False))
    changed = 0
    for k in range(N_SHARDS):
        rel = f"s{k}.parquet"
        src = read_jsonl(corpus["docs"] / f"s{k}.jsonl.gz")
        got = {d["id"]: d for d in read_jsonl(tmp_path / "sel" / f"s{k}.jsonl.gz")}
        for d, text, f in zip(src, texts[rel], flags[rel]):
            want = "".join(x for x, bad in zip(split_lines(text), f) if not bad)
            if not want:
                assert d["id"] not in got or got[d["id"]]["text"] == ""
                continue
            assert got[d["id"]]["text"] == want
            assert all(got[d["id"]][k2] == v for k2, v in d.items() if k2 != "text")  # every other field kept
            changed += want != text
    assert changed > 10


# ---------------------------------------------------------------- memory-bounded, Bloom

def test_spilled_partitions_equal_one_sort(corpus):
    """Tiny passes (1,024 rows) force several partitions, re-scattering and, for a line repeated
    in 3,000 documents, the chunk-by-chunk summary: the flags equal one in-memory sort's."""
    texts = _texts(corpus["docs"])
    parts, line_at, doc = [], 0, 0
    for rel in sorted(texts):
        for t in texts[rel]:
            lines = split_lines(t)
            parts.append(doc_rows(lines, "ccnet", line_at, doc))
            line_at, doc = line_at + len(lines), doc + 1
    for _ in range(3000):  # one boilerplate line in 3,000 more one-line documents
        parts.append(doc_rows(["Share this page on Zqxbook\n"], "ccnet", line_at, doc))
        line_at, doc = line_at + 1, doc + 1
    rows = np.concatenate(parts)
    assert rows.dtype == LINE_ROW
    want = np.zeros(line_at, dtype=np.uint8)
    want[flagged_lines(rows).astype(np.int64)] = 1

    import tempfile

    with tempfile.TemporaryDirectory() as work:
        flags = GroupFlags(f"{work}/f.u8", line_at)
        group = ExactGroup(work, rows.shape[0], 1024, flags)
        for start in range(0, rows.shape[0], 700):
            group.add(rows[start:start + 700])
        group.finish()
        got = flags.slice(0, line_at).copy()
        flags.close()
    assert group.passes > 10
    assert np.array_equal(got, want) and want.sum() > 3000


def test_small_memory_and_bloom(corpus, tmp_path):
    attrs = _copy(corpus, tmp_path)
    run_lines(LinesConfig(str(attrs), memory="40MB", workers=1, progress=False))
    exact = _flags(attrs)
    assert exact == _twin(_texts(corpus["docs"]), None)
    with pytest.raises(DedupLinesError, match="other settings: .*bloom"):
        run_lines(LinesConfig(str(attrs), bloom_fp=0.01, workers=1, progress=False))
    res = run_lines(LinesConfig(str(attrs), bloom_fp=0.01, workers=1, progress=False, overwrite=True))
    bloom = _flags(attrs)
    flat_e = [f for r in sorted(exact) for d in exact[r] for f in d]
    flat_b = [f for r in sorted(bloom) for d in bloom[r] for f in d]
    assert all(b >= e for e, b in zip(flat_e, flat_b))  # every true duplicate is flagged
    extra = sum(b - e for e, b in zip(flat_e, flat_b))
    assert extra <= 0.02 * (len(flat_e) - sum(flat_e)) + 5, extra  # within the stated rate
    assert res.summary["mode"] == "bloom"


# ---------------------------------------------------------------- resume, no-op, errors

def test_rerun_is_a_noop_and_bad_input_is_one_line(corpus, tmp_path, capsys):
    from textsieve.cli import main

    attrs = _copy(corpus, tmp_path)
    first = run_lines(LinesConfig(str(attrs), workers=1, progress=False))
    again = run_lines(LinesConfig(str(attrs), workers=1, progress=False))
    assert again.skipped and not first.skipped and again.duplicate_lines == first.duplicate_lines
    assert main(["dedup", "lines", str(corpus["docs"]), "-q"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"textsieve: error: dedup lines: {corpus['docs']} is not an annotate output folder (no "
                   "annotate.json); run `textsieve annotate` first: the line spans are annotate's"]
    assert main(["dedup", "lines", str(attrs), "--group-shards", "0", "-q"]) != 0
    assert "--group-shards must be a whole number >= 1" in capsys.readouterr().err


def test_killed_run_publishes_nothing_and_resumes(corpus, tmp_path):
    from hooks.slow_progress import kill_when

    attrs = _copy(corpus, tmp_path)
    clean = _copy(corpus, tmp_path / "clean")
    run_lines(LinesConfig(str(clean), group_shards=1, workers=1, progress=False))
    set_dir = attrs / "sets" / "dedup_lines"
    cmd = [sys.executable, "-m", "textsieve.cli", "dedup", "lines", str(attrs), "--group-shards", "1",
           "--workers", "1", "-q"]

    def staged_two() -> bool:
        return len(list(set_dir.glob(".textsieve/staging-*/*.parquet"))) >= 2

    kill_when(cmd, staged_two, 0.5, "dedup lines had staged two shards")
    # nothing published
    assert not (set_dir / ".textsieve" / "manifest.json").exists() and not list(set_dir.glob("*.parquet"))
    subprocess.run(cmd, check=True, timeout=300)
    for k in range(N_SHARDS):
        assert pq.read_table(set_dir / f"s{k}.parquet").equals(
            pq.read_table(clean / "sets" / "dedup_lines" / f"s{k}.parquet"))
    assert not list(set_dir.glob(".textsieve/staging-*")) and not (attrs / ".textsieve-work").exists()
