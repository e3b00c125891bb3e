"""Issue 16, item 5: documents sharing an id are never merged by dedup.

Before: dedup keyed everything by SHA-1 of the id, so a unique document that shared its id with
a near-duplicate became one node with it and was flagged `keep=false` (dropped by `select`).
Now annotate checks ids per shard (fail naming both records, or `--dedupe-ids suffix` /
`--on-error skip` rename repeats to `ID#2`, ... and count them), and dedup fails on ids repeated
across shards (or sharing an id_int), naming both documents and the fix. Fixtures are real web
documents from the dev corpus.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import textsieve as ts
from textsieve.cli import main
from textsieve.document import Document
from textsieve.io.ids import DuplicateIdError, UniqueIds
from textsieve.io.paths import Shard

N_DOCS = 60


def _docs(shared_dir: Path, n: int = N_DOCS) -> list[dict]:
    with gzip.open(shared_dir / "corpora/dev/web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def _id_int(s: str) -> int:
    return int.from_bytes(hashlib.sha1(s.encode()).digest()[:8], "little")


def _write(path: Path, recs: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def _shared_id_corpus(shared_dir: Path, folder: Path) -> tuple[Path, str, str]:
    """One shard: A (row 0), A's near-duplicate A2 (row 1) and an unrelated document B (row 2)
    that carries A2's id, then more real documents. The shared id's id_int is larger than A's, so
    `keep first` keeps A and flags A2, which used to flag B too. Returns (shard, A's id, shared id)."""
    recs = _docs(shared_dir)
    a = max((r for r in recs if len(r["text"]) < 5000), key=lambda r: len(r["text"]))
    b = next(r for r in recs if r is not a and len(r["text"]) > 500)
    a_id, x_id = sorted(["dup-test/a", "dup-test/x"], key=_id_int)
    a2 = dict(a, id=x_id, text=a["text"] + "\nEdited.")
    others = [r for r in recs if r is not a and r is not b]
    return _write(folder / "s.jsonl", [dict(a, id=a_id), a2, dict(b, id=x_id), *others]), a_id, x_id


def _annotate(inputs: Path, out: Path, *extra: str) -> int:
    return main(["annotate", str(inputs), "-o", str(out), "--signals", "minhash", "-q", "--workers", "1", *extra])


def _fuzzy_rows(out: Path) -> list[dict]:
    return [r for p in sorted((out / "sets" / "dedup_fuzzy").rglob("*.parquet")) for r in pq.read_table(p).to_pylist()]


def test_repeated_id_in_a_shard_fails_at_annotate_with_both_lines(shared_dir, tmp_path, capsys):
    shard, _, x_id = _shared_id_corpus(shared_dir, tmp_path / "in")
    assert _annotate(shard.parent, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"{shard}:3: duplicate id {x_id!r}" in err and f"{shard}:2" in err
    assert "--dedupe-ids suffix" in err
    assert not list((tmp_path / "out").glob("*.parquet"))


def test_suffix_keeps_the_unique_document_and_records_the_rename(shared_dir, tmp_path):
    shard, a_id, x_id = _shared_id_corpus(shared_dir, tmp_path / "in")
    out = tmp_path / "out"
    assert _annotate(shard.parent, out, "--dedupe-ids", "suffix") == 0
    ids = pq.read_table(out / "docs" / "s.parquet", columns=["id"]).column("id").to_pylist()
    assert ids[:3] == [a_id, x_id, f"{x_id}#2"] and len(set(ids)) == len(ids)
    meta = json.loads(pq.read_metadata(out / "docs" / "s.parquet").metadata[b"textsieve"])
    assert meta["renamed_ids"] == 1
    assert meta["renamed_ids_examples"] == [{"location": f"{shard}:3", "id": x_id, "new_id": f"{x_id}#2"}]
    assert json.loads((out / ".textsieve" / "annotate.json").read_text())["result"]["renamed_ids"] == 1

    assert main(["dedup", "fuzzy", str(out), "-q"]) == 0
    rows = _fuzzy_rows(out)
    assert [r["dup_fuzzy_t80_keep"] for r in rows[:3]] == [True, False, True]  # before: B (row 2) was False
    assert rows[2]["dup_fuzzy_t80_cluster"] is None and rows[1]["dup_fuzzy_t80_size"] == 2

    # select re-reads the source with the same renaming, so the ids match the attributes
    sel = ts.select(out, recipe={"name": "t", "rules": {"unique": "dup_fuzzy_t80_keep"}}, output=tmp_path / "sel",
                    workers=1, progress=False)
    assert sel.documents == N_DOCS + 1 - 1
    with gzip.open(next((tmp_path / "sel").rglob("*.jsonl.gz")), "rt") as fh:
        picked = [json.loads(line)["id"] for line in fh]
    assert f"{x_id}#2" in picked and x_id not in picked


def test_on_error_skip_renames_by_default_and_fail_stays_explicit(shared_dir, tmp_path):
    shard, _, x_id = _shared_id_corpus(shared_dir, tmp_path / "in")
    res = ts.annotate(shard.parent, output=tmp_path / "skip", signals="minhash", on_error="skip", workers=1,
                      progress=False)
    assert res.renamed_ids == 1
    with pytest.raises(DuplicateIdError, match="duplicate id"):
        ts.annotate(shard.parent, output=tmp_path / "fail", signals="minhash", on_error="skip", dedupe_ids="fail",
                    workers=1, progress=False)
    with pytest.raises(ValueError, match="dedupe_ids"):
        ts.annotate(shard.parent, output=tmp_path / "bad", dedupe_ids="drop", workers=1, progress=False)


def test_same_id_in_two_shards_fails_at_dedup_naming_both(shared_dir, tmp_path, capsys):
    recs = _docs(shared_dir, 40)
    recs[25]["id"] = recs[3]["id"]
    _write(tmp_path / "in/a.jsonl", recs[:20])
    _write(tmp_path / "in/b.jsonl", recs[20:])
    out = tmp_path / "out"
    assert _annotate(tmp_path / "in", out) == 0  # unique within each shard
    for args in (["dedup", "fuzzy", str(out), "-q"], ["dedup", "exact", str(out), "-q"]):
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err
        assert "1 document(s) repeat the id of an earlier one" in err and repr(recs[3]["id"]) in err
        assert f"a.parquet row 3 (source {tmp_path / 'in/a.jsonl'}:4)" in err
        assert f"b.parquet row 5 (source {tmp_path / 'in/b.jsonl'}:6)" in err
        assert "unique across" in err
    # raw inputs: exact dedup reads them itself
    assert main(["dedup", "exact", str(tmp_path / "in"), "-o", str(tmp_path / "raw"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'in/a.jsonl'}:4" in err and f"{tmp_path / 'in/b.jsonl'}:6" in err


def test_raw_exact_fails_on_a_repeat_within_a_shard(shared_dir, tmp_path, capsys):
    recs = _docs(shared_dir, 20)
    recs[9]["id"] = recs[2]["id"]
    _write(tmp_path / "in/a.jsonl", recs)
    assert main(["dedup", "exact", str(tmp_path / "in"), "-o", str(tmp_path / "raw"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'in/a.jsonl'}:3 and at {tmp_path / 'in/a.jsonl'}:10" in err and "--dedupe-ids suffix" in err


def test_id_int_collision_of_different_ids_is_reported(shared_dir, tmp_path, monkeypatch, capsys):
    """Two different ids with one 64-bit SHA-1 prefix merge in dedup just like one id; real
    collisions cannot be built, so the check's hash is cut to 4 bits here."""
    _write(tmp_path / "in/a.jsonl", _docs(shared_dir, 30))
    out = tmp_path / "out"
    assert _annotate(tmp_path / "in", out) == 0
    import textsieve.dedup.id_table as id_table

    real = id_table.id_ints
    monkeypatch.setattr(id_table, "id_ints", lambda ids: real(ids) & np.uint64(15))
    assert main(["dedup", "fuzzy", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "have the same id_int" in err and "rename one" in err


def test_derived_ids_are_unique(shared_dir, tmp_path):
    """Records without an id get `<shard>/<row>`: unique, so annotate and dedup pass."""
    recs = [{"text": r["text"]} for r in _docs(shared_dir, 30)]
    _write(tmp_path / "in/a.jsonl", recs)
    _write(tmp_path / "in/b.jsonl", recs)  # the same texts (exact duplicates), other ids
    out = tmp_path / "out"
    assert _annotate(tmp_path / "in", out) == 0
    assert ts.dedup_exact(out, progress=False).removed == 30


def test_suffix_is_deterministic_and_never_reuses_a_name():
    shard = Shard("x.jsonl", "x.jsonl", "jsonl", 0)
    ids = UniqueIds(shard, "suffix")
    docs = [Document(i, "t", row) for row, i in enumerate(["a", "a", "a#2", "b", "a", "a#2"])]
    first = [d.id for d in ids.documents([Document(d.id, d.text, d.row) for d in docs])]
    assert first == ["a", "a#2", "a#2#2", "b", "a#3", "a#2#3"]
    assert [d.id for d in ids.documents([Document(d.id, d.text, d.row) for d in docs])] == first
    assert ids.renamed == 4


def test_resume_after_an_interruption_renames_the_same_way(shared_dir, tmp_path, monkeypatch):
    """The finished parts of an interrupted run end with a renamed id; the re-run renames the
    re-read documents identically, so it resumes (no "source changed") and equals a clean run."""
    from textsieve.stages.annotate.parts import ShardOutput

    recs = _docs(shared_dir, 12)
    recs[1]["id"] = recs[0]["id"]  # row 1, the last of part 0, becomes ID#2
    _write(tmp_path / "in/s.jsonl", recs)
    opts = {"signals": "minhash", "dedupe_ids": "suffix", "part_size": 2, "batch_size": 2, "workers": 1,
            "progress": False}
    clean = ts.annotate(tmp_path / "in", output=tmp_path / "clean", **opts)
    assert clean.renamed_ids == 1

    write, calls = ShardOutput.write, []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # like a kill after two finished parts
        return write(self, *args, **kwargs)

    monkeypatch.setattr(ShardOutput, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ts.annotate(tmp_path / "in", output=tmp_path / "out", **opts)
    monkeypatch.setattr(ShardOutput, "write", write)
    resumed = ts.annotate(tmp_path / "in", output=tmp_path / "out", **opts)
    assert resumed.parts_resumed == 2 and resumed.renamed_ids == 1
    assert (pq.read_table(tmp_path / "out/docs/s.parquet").to_pylist()
            == pq.read_table(tmp_path / "clean/docs/s.parquet").to_pylist())


def test_a_shards_id_table_is_dropped_when_the_shard_is_done(shared_dir, tmp_path, monkeypatch):
    """The id tables are per shard, so annotate's memory must not grow with the corpus: the 10M
    scale study (issue 29 item 4) found every shard's table held to the end of the run (~110 B
    per document in the main process). Here, when a shard's output starts, the readers of all
    but the last two shards are gone."""
    import gc
    import weakref

    from textsieve.io import ids
    from textsieve.stages.annotate import annotate, parts

    recs = _docs(shared_dir, 80)
    for k in range(8):
        _write(tmp_path / "in" / f"s{k}.jsonl", recs[k * 10:(k + 1) * 10])
    made: list[weakref.ref] = []
    live_at_start: list[int] = []

    class Tracked(ids.UniqueIdReader):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(weakref.ref(self))

    real_init = parts.ShardOutput.__init__

    def counting_init(self, *a, **k):
        gc.collect()
        live_at_start.append(sum(r() is not None for r in made[:-2]))
        real_init(self, *a, **k)

    monkeypatch.setattr(annotate, "UniqueIdReader", Tracked)
    monkeypatch.setattr(parts.ShardOutput, "__init__", counting_init)
    assert _annotate(tmp_path / "in", tmp_path / "out") == 0
    assert len(made) == 8 and len(live_at_start) == 8
    assert max(live_at_start) <= 1, live_at_start
