"""Training-ready shards of `textsieve mix` (issue 14 item 5): the Megatron `.bin`/`.idx` layout
decodes back to the documents' tokens, Parquet and byte-sized shards, a global shuffle that is
byte-identical across runs, worker counts and `--memory`, and resume after a kill."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _mix_corpus import corpus as build_corpus
from _mix_corpus import mix_file

from textsieve.mixing.shards import IDX_MAGIC, read_bin, read_idx
from textsieve.stages.training.mix import MixConfig, run_mix

HOOKS = Path(__file__).resolve().parent / "hooks"


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory):
    return build_corpus(dev_dir, tmp_path_factory)


def _texts(corpus) -> dict[tuple[str, str, int], str]:
    """(source, shard, row) -> text of every document the mix can draw."""
    from textsieve.io.attributes import attribute_shards, read_shard_meta, source_documents

    out = {}
    fs, paths = attribute_shards(str(corpus["web"]))
    for p in paths:
        meta = read_shard_meta(fs, p)
        for doc in source_documents(meta):
            out[("web", meta["shard"], doc.row)] = doc.text
    for p in sorted(Path(corpus["wiki"]).glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                out[("wiki", p.name, i)] = json.loads(line)["text"]
    return out


def _hashes(res) -> dict[str, str]:
    return {rel: f["sha256"] for rel, f in res.manifest["files"].items()}


def test_bin_shards_decode_to_exactly_the_documents_tokens(corpus, tmp_path):
    from textsieve.tokenization.tokenizer import load_tokenizer

    f = mix_file(tmp_path / "mix.yaml", corpus, format="bin", shard_size="20K tokens")
    res = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    tok = load_tokenizer(str(corpus["tok"]))
    texts = _texts(corpus)
    out = tmp_path / "out"
    seen = 0
    for shard in res.shards:
        prefix = str(out / shard["files"][0][: -len(".bin")])
        with open(prefix + ".idx", "rb") as fh:
            assert fh.read(9) == IDX_MAGIC
        idx = read_idx(prefix + ".idx")
        assert idx["version"] == 1 and idx["dtype"] == np.uint16  # vocab 500 < 65,536
        assert idx["document_indices"].tolist() == list(range(len(idx["lengths"]) + 1))
        docs = [json.loads(line) for line in (out / shard["files"][2]).read_text().splitlines()]
        seqs = read_bin(prefix)
        assert len(seqs) == len(docs) == shard["documents"]
        want = tok.encode_batch([texts[(d["source"], d["shard"], d["row"])] for d in docs])
        for seq, ids in zip(seqs, want):
            assert seq.tolist() == [*ids, tok.eos_id]
        assert sum(len(s) - 1 for s in seqs) == shard["tokens"]
        seen += len(seqs)
    assert seen == res.documents
    assert all(s["tokens"] >= 20_000 for s in res.shards[:-1])
    assert res.manifest["info"]["mix"]["settings"]["token_dtype"] == "uint16"


def test_shuffle_is_global_and_identical_across_runs_workers_and_memory(corpus, tmp_path):
    """Two runs, 1 or 2 workers, 1GB or a tiny --memory (buckets split on disk, none loaded
    larger than half of it): the same bytes. Sources are interleaved from the first shard on."""
    f = mix_file(tmp_path / "mix.yaml", corpus, tokens=200_000)
    a = run_mix(MixConfig(str(f), output=str(tmp_path / "a"), workers=1, progress=False))
    b = run_mix(MixConfig(str(f), output=str(tmp_path / "b"), workers=2, progress=False))
    c = run_mix(MixConfig(str(f), output=str(tmp_path / "c"), workers=1, memory="64KB", progress=False))
    assert _hashes(a) == _hashes(b) == _hashes(c) and len(a.shards) > 5
    assert 0 < c.max_bucket_bytes <= 32_000
    assert a.max_bucket_bytes > 32_000  # the default memory loads larger buckets: the tiny one did bound it
    assert all(set(s["sources"]) == {"web", "wiki"} for s in a.shards[:3])
    d = run_mix(MixConfig(str(f), output=str(tmp_path / "d"), seed=2, workers=1, progress=False))
    assert _hashes(d) != _hashes(a)


def test_oversized_bucket_is_split_on_disk_not_loaded(corpus, tmp_path):
    """One bucket file far over the limit: read back in key order holding at most the limit."""
    from textsieve.mixing.shuffle import KEY_SPACE, Scatter, SortedBuckets, record_key

    texts = list(_texts(corpus).values())[:150]
    sc = Scatter(str(tmp_path / "b"), 1, 10_000)
    want = []
    for i, text in enumerate(texts):
        key = record_key(3, i % 2, 7, i, 0)
        sc.add(key, i % 2, text.encode("utf-8"))
        want.append((key, text.encode("utf-8")))
    sc.flush()
    gather = SortedBuckets(20_000)
    got = [(k, p) for k, _, p in gather.records([sc.path(0)], 0, KEY_SPACE, str(tmp_path / "spill"))]
    assert got == sorted(want) and gather.splits > 0 and gather.max_loaded <= 20_000 < sum(map(len, texts))


def test_parquet_shards_of_a_byte_size(corpus, tmp_path):
    f = mix_file(tmp_path / "mix.yaml", corpus, format="parquet", shard_size="100KB")
    res = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    rows = 0
    for shard in res.shards:
        t = pq.read_table(tmp_path / "out" / shard["files"][0])
        assert t.column_names == ["id", "source", "shard", "row", "lang", "tokens", "text"]
        assert t.num_rows == shard["documents"] and sum(t.column("tokens").to_pylist()) == shard["tokens"]
        rows += t.num_rows
    assert all(s["bytes"] >= 100_000 for s in res.shards[:-1]) and rows == res.documents
    files = res.manifest["files"]
    assert all(files[s["files"][0]]["documents"] == s["documents"] for s in res.shards)


def test_killed_run_publishes_nothing_and_resumes(corpus, tmp_path):
    sys.path.insert(0, str(HOOKS))
    from slow_progress import kill_when

    f = mix_file(tmp_path / "mix.yaml", corpus)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "textsieve.cli", "mix", str(f), "-o", str(out), "--workers", "1"]

    def some_tasks_done() -> bool:
        return any(out.glob(".textsieve/staging-mix-*/.work/t*.done"))

    kill_when(cmd, some_tasks_done, 1.0, "a scatter task finished")
    assert not (out / ".textsieve" / "manifest.json").exists() and not list(out.glob("shard-*"))
    done = subprocess.run([*cmd, "--json", "-q"], capture_output=True, text=True, check=True)
    res = json.loads(done.stdout)
    assert res["tasks_resumed"] >= 1 and res["tasks_resumed"] < res["tasks"]
    clean = run_mix(MixConfig(str(f), output=str(tmp_path / "clean"), workers=1, progress=False))
    manifest = json.loads((out / ".textsieve" / "manifest.json").read_text())
    assert {r: x["sha256"] for r, x in manifest["files"].items()} == _hashes(clean)
    assert not list(out.glob(".textsieve/staging-*"))
