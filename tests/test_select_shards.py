"""`select --shards` (issue 14 item 5, "mix (and select) write training-ready shards"): a selection
written as globally shuffled, fixed-size shards by the mix machinery. The shard set is exactly the
selection's documents (ids, DSIR multiplicity), `bin` decodes to each document's tokens + EOS,
bytes are identical across runs and worker counts, a re-run is a no-op, and option combinations
that make no sense are one-line errors. On real web pages (web_sample) and Wikipedia (DSIR target).
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
import zstandard
from _files import read_jsonl, web_docs

from textsieve.cli import main
from textsieve.mixing.shards import read_bin
from textsieve.mixing.spec import MixError
from textsieve.stages.select.select import SelectConfig, SelectError, run_select

RECIPE = {"name": "words20", "rules": {"words": "rps_doc_word_count >= 20"}}


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory):
    """180 web pages in three shards annotated with the word count, a DSIR fit toward 80 Wikipedia
    articles, and a byte-level BPE (vocab 500) trained on the pydoc help topics."""
    from pydoc_data.topics import topics

    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.select.dsir_fit import DsirFitConfig, run_fit
    from textsieve.tokenization.tokenizer import train_bpe

    tmp = tmp_path_factory.mktemp("selshards")
    docs = web_docs(dev_dir, 180)
    (tmp / "web").mkdir()
    for k in range(3):
        with gzip.open(tmp / "web" / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[k * 60:(k + 1) * 60])
    with gzip.open(dev_dir / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        wiki = [json.loads(line) for line in itertools.islice(fh, 80)]
    (tmp / "wiki.jsonl").write_text("".join(json.dumps(d) + "\n" for d in wiki), encoding="utf-8")
    (tmp / "words20.yaml").write_text(yaml.safe_dump(RECIPE))
    run_annotate(AnnotateConfig([str(tmp / "web")], str(tmp / "attrs"), signals=["rps_doc_word_count"], workers=1,
                                progress=False))
    run_fit(DsirFitConfig(targets=[str(tmp / "wiki.jsonl")], raw=str(tmp / "attrs"), name="wiki", progress=False))
    train_bpe([topics[k] for k in sorted(topics)], 500, str(tmp / "tok.json"))
    return {"root": tmp, "attrs": str(tmp / "attrs"), "recipe": str(tmp / "words20.yaml"), "tok": str(tmp / "tok.json")}


def _selection(corpus, out: Path, **kw) -> list[dict]:
    """The records plain `select` (one file per input shard) writes for these settings."""
    run_select(SelectConfig(directory=corpus["attrs"], output=str(out), workers=1, progress=False, **kw))
    return [r for p in sorted(out.glob("*.jsonl.gz")) for r in read_jsonl(p)]


def _zst_records(out: Path) -> list[dict]:
    recs = []
    for p in sorted(out.glob("shard-*.jsonl.zst")):
        with open(p, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh).read()
        recs += [json.loads(line) for line in data.decode("utf-8").splitlines()]
    return recs


def _hashes(out: Path) -> dict[str, str]:
    return {r: f["sha256"] for r, f in json.loads((out / ".textsieve" / "manifest.json").read_text())["files"].items()}


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_bin_shards_are_the_selection_each_document_once_decoding_to_its_tokens(corpus, tmp_path, capsys):
    """The CLI of the issue (`select attrs/ --recipe R --shards bin --tokenizer tok.json -o train/`):
    every document plain select writes is in the shards exactly once, with its id, and its
    sequence is its text's token ids + EOS; shards of at least 20K tokens; marked as training shards."""
    from textsieve.tokenization.tokenizer import load_tokenizer

    want = _selection(corpus, tmp_path / "plain", recipe=corpus["recipe"])
    out = tmp_path / "train"
    rc, _, err = _cli(capsys, "select", corpus["attrs"], "--recipe", corpus["recipe"], "--shards", "bin",
                      "--tokenizer", corpus["tok"], "--shard-size", "20K tokens", "-o", str(out), "--workers", "1",
                      "-q")
    assert rc == 0, err
    tok = load_tokenizer(corpus["tok"])
    text_of = {(r["shard"], r["row"]): r["text"] for r in want}
    manifest = json.loads((out / ".textsieve" / "manifest.json").read_text())
    shards = manifest["info"]["mix"]["shards"]
    got = []
    for shard in shards:
        prefix = str(out / shard["files"][0][: -len(".bin")])
        docs = [json.loads(line) for line in (out / shard["files"][2]).read_text().splitlines()]
        seqs = read_bin(prefix)
        assert len(seqs) == len(docs) == shard["documents"]
        ids = tok.encode_batch([text_of[(d["shard"], d["row"])] for d in docs])
        for seq, d, expect in zip(seqs, docs, ids):
            assert seq.tolist() == [*expect, tok.eos_id] and d["tokens"] == len(expect) and d["source"] == "select"
        got += docs
    assert Counter((d["shard"], d["row"], d["id"]) for d in got) == Counter((r["shard"], r["row"], r["id"])
                                                                            for r in want)
    assert len(want) < 180 and len(shards) > 3 and all(s["tokens"] >= 20_000 for s in shards[:-1])
    assert [(d["shard"], d["row"]) for d in got] != sorted((d["shard"], d["row"]) for d in got)  # shuffled
    summary = json.loads((out / ".textsieve" / "selection.json").read_text())
    assert summary["training_shards"]["format"] == "bin" and summary["counts"]["selected"] == len(want)
    assert manifest["stage"] == "mix" and manifest["info"]["select"]["training_shards"] is True
    assert ".textsieve/selection.json" in manifest["files"] and not list(out.glob("part-*"))
    from textsieve.stages.training.mix import MixConfig, plan_mix

    mix = {"tokens": 1000, "tokenizer": "words", "sources": [{"name": "t", "selection": str(out), "share": 1.0}]}
    with pytest.raises(MixError, match="holds training shards"):  # not read as if it were selection files
        plan_mix(MixConfig(mix))


def test_dsir_draw_keeps_its_multiplicity(corpus, tmp_path):
    """A DSIR draw with replacement over the recipe's survivors: each drawn document is in the
    shards as often as plain select writes it (some more than once)."""
    kw = {"recipe": corpus["recipe"], "dsir": "wiki", "k": 150, "replace": True, "seed": 3}
    want = Counter((r["shard"], r["row"], r["id"]) for r in _selection(corpus, tmp_path / "plain", **kw))
    res = run_select(SelectConfig(directory=corpus["attrs"], output=str(tmp_path / "train"), shards="jsonl.zst",
                                  workers=1, progress=False, **kw))
    recs = _zst_records(tmp_path / "train")
    assert Counter((r["shard"], r["row"], r["id"]) for r in recs) == want
    assert sum(want.values()) == 150 == res.documents and max(want.values()) > 1
    assert all(r["tokens"] == len(re.findall(r"\w+|[^\w\s]", r["text"])) for r in recs)  # words: the estimate
    manifest = json.loads((tmp_path / "train" / ".textsieve" / "manifest.json").read_text())
    assert manifest["info"]["mix"]["sources"][0]["token_count"] == "words"  # the estimate, labelled
    assert res.dsir is not None and manifest["info"]["mix"]["sources"][0]["details"]["dsir"]["k"] == 150



def _stamps(folder: Path) -> dict[str, int]:
    """Every file's modification time (bookkeeping included; folders' times change with a lock)."""
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}

def test_identical_across_runs_and_workers_rerun_is_a_noop(corpus, tmp_path):
    """Parquet shards of a byte size: 1 or 2 workers and a tiny --memory give the same bytes; the
    same command again writes nothing; another seed another shuffle."""
    def run(out: str, **kw) -> object:
        base = {"recipe": corpus["recipe"], "shards": "parquet", "shard_size": "100KB", "tokenizer": corpus["tok"],
                "progress": False}
        return run_select(SelectConfig(directory=corpus["attrs"], output=str(tmp_path / out), **(base | kw)))

    a = run("a", workers=1)
    b = run("b", workers=2)
    c = run("c", workers=1, memory="64KB")
    assert _hashes(tmp_path / "a") == _hashes(tmp_path / "b") == _hashes(tmp_path / "c")
    assert len(a.shards_written) > 2 and a.training is not None and not a.training["skipped"]
    assert all(s["bytes"] >= 100_000 for s in a.training["shards"][:-1])
    stamp = _stamps(tmp_path / "a")
    again = run("a", workers=1)
    assert again.training is not None and again.training["skipped"] and again.shards_written == []
    assert again.documents == a.documents and len(again.shards_skipped) == len(a.shards_written)
    assert _stamps(tmp_path / "a") == stamp
    run("d", workers=1, seed=5)
    assert _hashes(tmp_path / "d") != _hashes(tmp_path / "a")
    with pytest.raises(MixError, match="other settings"):
        run("a", workers=1, seed=5)  # into the published folder: refused, not mixed
    assert b.documents == c.documents == a.documents


@pytest.mark.parametrize(("extra", "message"), [
    (["--shards", "bin"], "--shards bin writes token ids, so it needs --tokenizer PATH"),
    (["--shards", "bin", "--tokenizer", "words"], "--shards bin writes token ids"),
    (["--tokenizer", "words"], "--tokenizer only applies with --shards FORMAT"),
    (["--shard-size", "5M tokens"], "--shard-size only applies with --shards FORMAT"),
    (["--shards", "jsonl.zst", "--format", "parquet"], "--format parquet is the format of per-input selection files"),
    (["--shards", "jsonl.zst", "--shard-size", "lots"], "--shard-size: cannot read 'lots'"),
    (["--shards", "jsonl.zst", "--memory", "lots"], "--memory: cannot read 'lots'"),
    (["--shards", "bin", "--tokenizer", "missing.json"], "--tokenizer missing.json: no such file"),
    (["--shards", "jsonl.zst", "--redact", "pii"], "--shards does not redact"),
])
def test_option_combinations_that_make_no_sense_are_one_line_errors(corpus, tmp_path, capsys, extra, message):
    rc, out, err = _cli(capsys, "select", corpus["attrs"], "--recipe", corpus["recipe"], "-o", str(tmp_path / "o"),
                        *extra)
    assert rc != 0 and message in err and err.startswith("textsieve: error: ") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_dry_run_with_shards_prints_the_funnel_and_the_api_checks_too(corpus, capsys):
    rc, out, err = _cli(capsys, "select", corpus["attrs"], "--recipe", corpus["recipe"], "--shards", "jsonl.zst",
                        "--dry-run")
    assert rc == 0 and "words" in out
    rc, _, err = _cli(capsys, "select", corpus["attrs"], "--recipe", corpus["recipe"], "--shards", "bin", "--dry-run")
    assert rc != 0 and "needs --tokenizer PATH" in err
    with pytest.raises(SelectError, match="needs --tokenizer PATH"):
        run_select(SelectConfig(directory=corpus["attrs"], output="never", recipe=corpus["recipe"], shards="bin"))
    with pytest.raises(ValueError, match="expected one of jsonl.zst, parquet, bin"):
        run_select(SelectConfig(directory=corpus["attrs"], output="never", recipe=corpus["recipe"], shards="zip"))
