"""Wrong or stale results and paths (the audit of issue 16): outputs are published as a unit (a manifest that
the staging folder switches to), a finished shard is one whose recorded fingerprint covers its
inputs, outputs never land in their inputs, and no output or source path leaves its folder.

Each test reproduces the audit's case first (the comment says what the old code did)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest
from _files import read_jsonl, web_docs
from hooks.slow_progress import kill_when

from textsieve.cli import main

N_SHARDS = 6


def _write_shards(folder: Path, docs: list[dict], n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        with gzip.open(folder / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[k::n])


@pytest.fixture(scope="module")
def web(dev_dir, tmp_path_factory) -> dict[str, Path]:
    """1,500 real web documents plus 300 near-duplicates of them (each a copy with its last
    tenth of words cut, so `first` and `longest` keep different members), in six shards,
    annotated with MinHash."""
    tmp = tmp_path_factory.mktemp("pub16")
    docs = web_docs(dev_dir, 1500)
    for d in [d for d in docs if len(d["text"].split()) >= 200][:300]:
        words = d["text"].split(" ")
        docs.append(dict(d, id=f"{d['id']}-near", text=" ".join(words[: len(words) * 9 // 10])))
    _write_shards(tmp / "docs", docs, N_SHARDS)
    attrs = tmp / "attrs"
    assert main(["annotate", str(tmp / "docs"), "-o", str(attrs), "--signals", "rps_doc_word_count,minhash",
                 "--workers", "1", "-q"]) == 0
    return {"root": tmp, "docs": tmp / "docs", "attrs": attrs}


def _copy_attrs(web: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the annotated folder; its recorded inputs still point at the documents."""
    attrs = tmp_path / "attrs"
    shutil.copytree(web["attrs"], attrs)
    return attrs


def _fuzzy_cmd(attrs: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "textsieve.cli", "dedup", "fuzzy", str(attrs), "--thresholds", "0.8",
            "--thresholds", "0.7", "--workers", "1", "-q", *extra]


def _set_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _keeps_one_per_cluster(folder: Path, stem: str) -> tuple[int, int]:
    """(clusters without a kept document, clusters with more than one) over the whole set."""
    kept: dict[int, int] = {}
    for p in sorted(folder.glob("*.parquet")):
        t = pq.read_table(p, columns=[f"{stem}_cluster", f"{stem}_keep"]).to_pydict()
        for cid, keep in zip(t[f"{stem}_cluster"], t[f"{stem}_keep"]):
            if cid is not None:
                kept[cid] = kept.get(cid, 0) + bool(keep)
    return sum(1 for v in kept.values() if v == 0), sum(1 for v in kept.values() if v > 1)


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_fuzzy_killed_with_other_settings_never_publishes_a_mix(web, tmp_path):
    """Item 1. Before: `--keep longest` killed after some shards were rewritten in place, and the
    first command re-run was skipped (its state file still matched), leaving clusters with no
    kept document and clusters with two. After: the killed run only ever wrote into its staging
    folder, the published `first` result is untouched and current, and the re-run is skipped
    correctly; its leftovers are removed."""
    attrs = _copy_attrs(web, tmp_path)
    assert main(_fuzzy_cmd(attrs)[3:]) == 0
    fuzzy = attrs / "sets" / "dedup_fuzzy"
    reference = _set_bytes(fuzzy)
    assert _keeps_one_per_cluster(fuzzy, "dup_fuzzy_t70") == (0, 0)
    assert json.loads(reference[".textsieve/summary.json"])["thresholds"]["0.8"]["n_clusters"] >= 250

    def three_staged() -> bool:
        return len(list(attrs.glob("sets/dedup_fuzzy/.textsieve/staging-*/*.parquet"))) >= 3

    kill_when(_fuzzy_cmd(attrs, "--keep", "longest"), three_staged, 0.4, "3 shards of --keep longest were written")
    # what the killed run leaves is its staging folder and its lock file (the kernel released the
    # lock itself; the next writer takes and removes the file), never a published file
    leftovers = {k: v for k, v in _set_bytes(fuzzy).items() if ".textsieve/staging-" in k or k == ".textsieve/lock"}
    assert _set_bytes(fuzzy) == {**reference, **leftovers}
    assert main(_fuzzy_cmd(attrs)[3:]) == 0  # the first settings again: up to date, skipped
    assert _set_bytes(fuzzy) == reference  # no staged leftovers of the killed run, nothing of `longest`
    assert _keeps_one_per_cluster(fuzzy, "dup_fuzzy_t70") == (0, 0)
    assert _keeps_one_per_cluster(fuzzy, "dup_fuzzy_t80") == (0, 0)


def test_fuzzy_killed_while_switching_is_finished_by_the_next_reader(web, tmp_path):
    """The switch itself: a run killed after writing its journal but before moving every file
    is completed (not rolled back, not mixed) by whoever reads the folder next."""
    from textsieve.io import publish

    attrs = _copy_attrs(web, tmp_path)
    assert main(_fuzzy_cmd(attrs)[3:]) == 0
    reference = _set_bytes(attrs / "sets" / "dedup_fuzzy")
    real = publish._apply
    calls = {"n": 0}

    def dies_after_two_moves(fs, root, journal):
        calls["n"] += 1
        cut = dict(journal, moves=journal["moves"][:2], remove=[])
        for staged, rel in cut["moves"]:
            fs.mv(f"{root}/{staged}", f"{root}/{rel}")
        raise KeyboardInterrupt  # the process dies here

    publish._apply = dies_after_two_moves
    try:
        with pytest.raises(KeyboardInterrupt):
            from textsieve.stages.dedup.fuzzy import FuzzyConfig, run_fuzzy

            run_fuzzy(FuzzyConfig(str(attrs), thresholds=[0.8, 0.7], keep="longest", workers=1, progress=False))
    finally:
        publish._apply = real
    assert (attrs / "sets" / "dedup_fuzzy" / publish.JOURNAL).exists()
    # a reader finishes the switch: the whole `longest` generation, never two `first` + rest
    assert main(["dedup", "show", str(attrs), "--threshold", "0.7", "--top", "1"]) == 0
    after = _set_bytes(attrs / "sets" / "dedup_fuzzy")
    assert publish.JOURNAL not in after and after != reference
    manifest = json.loads(after[publish.MANIFEST])
    assert json.loads(after[publish.SUMMARY])["keep"] == "longest"
    for rel, entry in manifest["files"].items():
        assert len(after[rel]) == entry["size"]
    assert _keeps_one_per_cluster(attrs / "sets" / "dedup_fuzzy", "dup_fuzzy_t70") == (0, 0)


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_select_recomputes_when_an_attribute_set_changes(web, tmp_path):
    """Item 2. Before: after `dedup fuzzy --keep none`, the same `select` printed "0 shard(s)
    written, N already done" and returned the old selection. After: the selection's key covers
    the published contents of every attribute set, so it is recomputed and equals the dry run."""
    attrs = _copy_attrs(web, tmp_path)
    out = tmp_path / "sel"
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rules:\n  near: dup_fuzzy_t80_keep\n  words: rps_doc_word_count >= 50\n")
    assert main(["dedup", "fuzzy", str(attrs), "-q"]) == 0
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    first = sum(len(read_jsonl(p)) for p in out.glob("*.jsonl.gz"))
    assert main(["dedup", "fuzzy", str(attrs), "--keep", "none", "-q"]) == 0
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    second = sum(len(read_jsonl(p)) for p in out.glob("*.jsonl.gz"))
    selection = json.loads((out / ".textsieve" / "selection.json").read_text())
    assert second < first and selection["counts"]["selected"] == second
    import textsieve as ts

    assert ts.select(str(attrs), recipe=str(recipe), dry_run=True).kept == second  # what the funnel says


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_select_after_a_changed_annotate_shard_is_redone(web, tmp_path):
    """Item 2, the attribute shards themselves: a re-annotated shard changes the selection key."""
    docs = tmp_path / "docs"
    shutil.copytree(web["docs"], docs)
    attrs, out = tmp_path / "attrs", tmp_path / "sel"
    args = ["--signals", "rps_doc_word_count", "--workers", "1", "-q"]
    assert main(["annotate", str(docs), "-o", str(attrs), *args]) == 0
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rules:\n  words: rps_doc_word_count >= 50\n")
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    chosen = {r["id"] for p in out.glob("*.jsonl.gz") for r in read_jsonl(p)}
    rows = read_jsonl(docs / "s0.jsonl.gz")
    copies = [dict(r, id=f"{r['id']}-copy") for r in rows[:40]]
    with gzip.open(docs / "s0.jsonl.gz", "wt", encoding="utf-8") as fh:  # the shard grows by 40 copies
        fh.writelines(json.dumps(r) + "\n" for r in rows + copies)
    assert main(["annotate", str(docs), "-o", str(attrs), *args]) == 0
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    after = {r["id"] for p in out.glob("*.jsonl.gz") for r in read_jsonl(p)}
    grown = {f"{r['id']}-copy" for r in rows[:40] if r["id"] in chosen}
    assert grown and after == chosen | grown


def test_annotate_reruns_a_shard_whose_input_grew(tmp_path, dev_dir):
    """Item 4. Before: a file that grew from 20 to 50 documents was "already done" and 30 were
    never annotated. After: the shard's fingerprint includes the input's size and mtime."""
    docs = [json.dumps(d) + "\n" for d in web_docs(dev_dir, 50)]
    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_text("".join(docs[:20]), encoding="utf-8")
    out = tmp_path / "out"
    args = ["annotate", str(src.parent), "-o", str(out), "--signals", "rps_doc_word_count", "--workers", "1", "-q"]
    assert main(args) == 0
    assert pq.read_metadata(out / "docs" / "a.parquet").num_rows == 20
    src.write_text("".join(docs), encoding="utf-8")
    assert main(args) == 0
    assert pq.read_metadata(out / "docs" / "a.parquet").num_rows == 50


def test_verify_inputs_sees_a_same_size_edit_that_kept_its_mtime(tmp_path, dev_dir):
    """Item 4, `--verify-inputs`: content hashes catch what size + mtime cannot (a copy that kept
    the old time and size)."""
    rows = web_docs(dev_dir, 10)
    src = tmp_path / "in" / "a.jsonl"
    src.parent.mkdir()
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ["annotate", str(src.parent), "-o", str(out), "--signals", "rps_doc_word_count", "--workers", "1", "-q"]
    assert main([*args, "--verify-inputs"]) == 0
    stat = src.stat()
    text = src.read_text(encoding="utf-8")
    edited = text.replace(rows[0]["text"][:5], rows[0]["text"][:5][::-1], 1)
    assert edited != text and len(edited.encode()) == len(text.encode())
    src.write_text(edited, encoding="utf-8")
    os.utime(src, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    written = (out / "docs" / "a.parquet").stat().st_mtime_ns
    assert main(args) == 0  # by size + mtime: unchanged (the documented limit of the cheap identity)
    assert main([*args, "--verify-inputs"]) == 0
    assert (out / "docs" / "a.parquet").stat().st_mtime_ns != written  # the content hash changed: re-annotated


@pytest.mark.parametrize("case", ["select_into_docs", "select_into_attrs", "annotate_into_parquet_input",
                                  "annotate_overwrite_into_input", "annotate_output_contains_input",
                                  "symlinked_output", "dedup_exact_into_docs"])
def test_outputs_never_overlap_their_inputs(web, tmp_path, case, capsys):
    """Item 3. Before: `select -o <docs>` "selected" documents but left the folder unfiltered, and
    with --overwrite replaced the inputs; `annotate -o <parquet input> --overwrite` replaced the
    input Parquet. After: every such output is refused before anything is written."""
    docs = tmp_path / "docs"
    shutil.copytree(web["docs"], docs)
    attrs = tmp_path / "attrs"
    assert main(["annotate", str(docs), "-o", str(attrs), "--signals", "rps_doc_word_count", "--workers", "1",
                 "-q"]) == 0
    pq_in = tmp_path / "pq"
    pq_in.mkdir()
    pq.write_table(pq.read_table(attrs / "docs" / "s0.parquet").select(["id"]).append_column(
        "text", pq.read_table(attrs / "docs" / "s0.parquet").column("id")), pq_in / "p.parquet")
    link = tmp_path / "link"
    link.symlink_to(docs)
    before = {p: p.read_bytes() for p in [*docs.iterdir(), *pq_in.iterdir()]}
    words = tmp_path / "words.yaml"
    words.write_text("rules:\n  words: rps_doc_word_count >= 50\n")
    capsys.readouterr()
    cmd = {
        "select_into_docs": ["select", str(attrs), "-r", str(words), "-o", str(docs), "--overwrite"],
        "select_into_attrs": ["select", str(attrs), "-r", str(words), "-o", str(attrs / "sel")],
        "annotate_into_parquet_input": ["annotate", str(pq_in), "-o", str(pq_in), "--overwrite"],
        "annotate_overwrite_into_input": ["annotate", str(docs), "-o", str(docs / "out"), "--overwrite"],
        "annotate_output_contains_input": ["annotate", str(docs / "s0.jsonl.gz"), "-o", str(tmp_path)],
        "symlinked_output": ["select", str(attrs), "-r", str(words), "-o", str(link)],
        "dedup_exact_into_docs": ["dedup", "exact", str(docs), "-o", str(docs)],
    }[case]
    assert main([*cmd, "-q"]) == 2
    err = capsys.readouterr().err
    assert "the output folder" in err and "the input" in err and "Traceback" not in err
    assert {p: p.read_bytes() for p in [*docs.iterdir(), *pq_in.iterdir()]} == before


def test_output_inside_a_memory_input_is_refused(capsys):
    """Item 3 for fsspec URLs: compared by protocol and path."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/ov16/in/a.jsonl", b'{"id": "a", "text": "The quick brown fox jumps over the lazy dog."}\n')
    try:
        assert main(["annotate", "memory:///ov16/in", "-o", "memory:///ov16/in/out", "--workers", "1", "-q"]) == 2
        assert "lies inside the input" in capsys.readouterr().err
        assert fs.find("/ov16") == ["/ov16/in/a.jsonl"]
    finally:
        fs.rm("/ov16", recursive=True)


def test_txt_folders_and_underscore_inputs_are_shards_downstream(tmp_path, dev_dir):
    """Item 6. Before: a folder of .txt files became `_txt.parquet`, which dedup and select skipped
    ("13 documents" instead of 14; a .txt-only folder: "no attribute shards"). After: shards are
    the files annotate's manifest lists, so names never decide; and no output name starts with
    `_` (issue 26: pyarrow and Spark skip such files), so they are `x_txt`, `x_2024`."""
    rows = web_docs(dev_dir, 14)
    docs = tmp_path / "docs"
    (docs / "_2024").mkdir(parents=True)
    for k, r in enumerate(rows[:13]):
        (docs / f"d{k:02d}.txt").write_text(r["text"], encoding="utf-8")
    (docs / "_2024" / "x.jsonl").write_text(json.dumps(rows[13]) + "\n", encoding="utf-8")
    attrs, out = tmp_path / "attrs", tmp_path / "sel"
    assert main(["annotate", str(docs), "-o", str(attrs), "--signals", "rps_doc_word_count,minhash", "--workers",
                 "1", "-q"]) == 0
    assert (attrs / "docs" / "x_txt.parquet").exists() and (attrs / "docs" / "x_2024" / "x.parquet").exists()
    assert main(["dedup", "exact", str(attrs), "-q"]) == 0
    summary = json.loads((attrs / "sets" / "dedup_exact" / ".textsieve" / "summary.json").read_text())
    assert summary["n_docs"] == 14
    recipe = tmp_path / "r.yaml"
    recipe.write_text("rules:\n  all: rps_doc_word_count >= 0\n  unique: dup_exact_keep\n")
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    assert json.loads((out / ".textsieve" / "selection.json").read_text())["counts"]["pool"] == 14
    from textsieve.io.attributes import attribute_sets

    assert attribute_sets(str(attrs)) == ["dedup_exact"]  # `_2024` is an input folder, not a set


def test_listed_keys_with_dotdot_cannot_leave_the_output(tmp_path, capsys):
    """Item 16. Before: `memory:///data/sub/../../../escape.jsonl` got the rel `../escape.jsonl` and
    annotate wrote `OUT/../escape.parquet`. After: such a listed name is a located error, and every
    output path is joined with a containment check (file and memory protocols)."""
    from textsieve.io.safe_paths import UnsafePathError, join_inside

    fs = fsspec.filesystem("memory")
    fs.pipe("/tr16/data/sub/../../../escape.jsonl", b'{"id": "e", "text": "An escaped document."}\n')
    fs.pipe("/tr16/data/a.jsonl", b'{"id": "a", "text": "A document that stays."}\n')
    try:
        assert main(["annotate", "memory:///tr16/data", "-o", "memory:///tr16/out", "--workers", "1", "-q"]) == 2
        err = capsys.readouterr().err
        assert "escape.jsonl" in err and "outside" in err and "Traceback" not in err
        assert not [p for p in fs.find("/") if p.endswith("escape.parquet")]
    finally:
        fs.rm("/tr16", recursive=True)
    for root in (str(tmp_path / "out"), "/tr16/out"):
        with pytest.raises(UnsafePathError):
            join_inside(root, "../escape.parquet")
        with pytest.raises(UnsafePathError):
            join_inside(root, "/etc/passwd")
        assert join_inside(root, "a/./b.parquet") == f"{root}/a/b.parquet"


def test_a_footer_pointing_outside_the_inputs_is_refused(web, tmp_path, capsys):
    """Item 17. Before: editing `source_shard` in a shard's footer made `select` copy an arbitrary
    file into the selection. After: sources resolve only inside the recorded input roots or a
    `--source-root` the user gives."""
    attrs = _copy_attrs(web, tmp_path)
    secret = tmp_path / "secret" / "s0.jsonl.gz"
    secret.parent.mkdir()
    with gzip.open(secret, "wt", encoding="utf-8") as fh:
        for r in read_jsonl(web["docs"] / "s0.jsonl.gz"):
            fh.write(json.dumps(dict(r, text="SECRET " + r["text"][7:])) + "\n")  # same length
    shard = attrs / "docs" / "s0.parquet"
    table = pq.read_table(shard)
    meta = dict(pq.read_metadata(shard).metadata)
    doc = json.loads(meta[b"textsieve"])
    doc["source_shard"]["path"] = doc["source"] = str(secret)
    meta[b"textsieve"] = json.dumps(doc).encode()
    pq.write_table(table.replace_schema_metadata(meta), shard)
    _republish(attrs)  # as an attacker could: the manifest is just a file too
    out = tmp_path / "sel"
    recipe = tmp_path / "words.yaml"
    recipe.write_text("rules:\n  words: rps_doc_word_count >= 50\n")
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "outside the inputs recorded" in err and str(secret) in err
    assert not out.exists() or not list(out.glob("*.jsonl.gz"))
    # the user vouches for the folder: then it is read
    assert main(["select", str(attrs), "-r", str(recipe), "-o", str(out), "--source-roots", str(secret.parent),
                 "-q"]) == 0
    assert any(r["text"].startswith("SECRET ") for r in read_jsonl(out / "s0.jsonl.gz"))


def _republish(attrs: Path) -> None:
    """Rewrite annotate's manifest for the files as they are now (what a tamperer would do)."""
    from textsieve.io.publish import MANIFEST, file_sha256

    fs = fsspec.filesystem("file")
    manifest = json.loads((attrs / MANIFEST).read_text())
    for rel, entry in manifest["files"].items():
        entry["size"], entry["sha256"] = file_sha256(fs, str(attrs / rel))
    (attrs / MANIFEST).write_text(json.dumps(manifest))


def _published_shards(folder: Path) -> dict[str, bytes]:
    """The shard files a reader sees in `folder` (not staging, not other stages' sets),
    checked against the manifest."""
    files = {}
    for p in folder.rglob("*"):
        parts = p.relative_to(folder).parts
        if (p.is_file() and p.name.endswith((".parquet", ".jsonl.gz", ".tsm"))
                and not any(x.startswith(".") for x in parts) and parts[0] != "sets"):
            files["/".join(parts)] = p.read_bytes()
    manifest = json.loads((folder / ".textsieve" / "manifest.json").read_text())
    assert {r for r in manifest["files"] if r.endswith((".parquet", ".jsonl.gz", ".tsm"))} == set(files)
    for rel, data in files.items():
        assert manifest["files"][rel]["size"] == len(data)
    return files


@pytest.mark.slow  # > 2 s: outside the quick suite
@pytest.mark.parametrize("stage", ["annotate", "dedup_exact", "dsir_fit", "select"])
def test_a_killed_run_of_other_settings_leaves_the_published_result_current(web, tmp_path, stage):
    """Item 1's scenario for every stage: publish settings A, kill a run of settings B after it
    finished some shards, re-run A. The published result stays A's, whole, and the re-run is
    correct (skipped where the stage skips, byte-identical where it recomputes)."""
    attrs = _copy_attrs(web, tmp_path) if stage != "annotate" else tmp_path / "attrs"
    target = tmp_path / "target.jsonl"
    target.write_text("".join(json.dumps(r) + "\n" for r in read_jsonl(web["docs"] / "s0.jsonl.gz")[:60]))
    recipe_a, recipe_b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    recipe_a.write_text("rules:\n  words: rps_doc_word_count >= 50\n")
    recipe_b.write_text("rules:\n  words: rps_doc_word_count >= 10\n")
    py = [sys.executable, "-m", "textsieve.cli"]
    a, b, folder = {
        "annotate": (["annotate", str(web["docs"]), "-o", str(attrs), "--signals", "rps_doc_word_count,minhash",
                      "--workers", "1", "--batch-size", "50"],
                     ["--signals", "rps_doc_word_count", "--overwrite"], attrs),
        "dedup_exact": (["dedup", "exact", str(attrs), "--bloom-fp", "1e-6", "--workers", "1"],
                        ["--bloom-fp", "1e-3", "--overwrite"], attrs / "sets" / "dedup_exact_bloom"),
        "dsir_fit": (["dsir", "fit", "--raw", str(attrs), "--targets", str(target), "--name", "t", "--buckets", "2000"],
                     ["--buckets", "3000", "--overwrite"], attrs / "sets" / "dsir_t"),
        "select": (["select", str(attrs), "-r", str(recipe_a), "-o", str(tmp_path / "sel"), "--workers", "1"],
                   ["-r", str(recipe_b), "--overwrite"], tmp_path / "sel"),
    }[stage]
    assert main([*a, "-q"]) == 0
    reference = _published_shards(folder)
    staged = ".textsieve/staging-*/**/*" if stage != "annotate" else ".textsieve/staging-*/docs/s*.parquet"

    def some_staged() -> bool:
        return len([p for p in folder.glob(staged) if p.name.endswith((".parquet", ".jsonl.gz"))
                    and ".tmp-" not in p.name]) >= 2

    kill_when([*py, *a, *b, "-q"], some_staged, 0.5, f"{stage} with other settings had staged 2 shards")
    assert _published_shards(folder) == reference  # nothing of B is visible
    assert main([*a, "-q"]) == 0
    assert _published_shards(folder) == reference


def test_a_recipe_that_keeps_nothing_is_an_empty_selection(web, tmp_path):
    """Item 13: an empty selection is a valid result (the audit saw an IndexError in the old
    materialize step; the restructured select already handled it; this keeps it so)."""
    recipe = tmp_path / "none.yaml"
    recipe.write_text("rules:\n  none: rps_doc_word_count < 0\n")
    out = tmp_path / "sel"
    assert main(["select", str(web["attrs"]), "-r", str(recipe), "-o", str(out), "-q"]) == 0
    counts = json.loads((out / ".textsieve" / "selection.json").read_text())["counts"]
    assert counts["selected"] == 0 and counts["pool"] == 1800
    assert sorted(p.name for p in out.glob("*.jsonl.gz")) == [f"s{k}.jsonl.gz" for k in range(N_SHARDS)]
    assert all(read_jsonl(p) == [] for p in out.glob("*.jsonl.gz"))


# ---------------------------------------------------------------- review findings (each failed first)

def _small_docs(dev_dir: Path, folder: Path, name: str, start: int, n: int = 12) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(d) + "\n" for d in web_docs(dev_dir, start + n)[start:]), encoding="utf-8")
    return path


def test_a_folder_annotated_in_two_runs_keeps_both_source_roots(dev_dir, tmp_path):
    """Shards kept from an earlier run stay readable: annotate.json records that run's roots too
    (before: select refused the first run's shards as 'outside the inputs recorded')."""
    a = _small_docs(dev_dir, tmp_path / "A", "a.jsonl", 0)
    b = _small_docs(dev_dir, tmp_path / "B", "b.jsonl", 12)
    out = tmp_path / "out"
    for src in (a.parent, b.parent):
        assert main(["annotate", str(src), "-o", str(out), "--signals", "rps_doc_word_count", "--workers", "1",
                     "-q"]) == 0
    recipe = tmp_path / "all.yaml"
    recipe.write_text("rules:\n  all: rps_doc_word_count >= 0\n")
    assert main(["select", str(out), "-r", str(recipe), "-o", str(tmp_path / "sel"), "-q"]) == 0
    assert json.loads((tmp_path / "sel" / ".textsieve" / "selection.json").read_text())["counts"]["selected"] == 24


def test_a_symlinked_input_file_is_read_back_by_select(dev_dir, tmp_path):
    """Item 7 and 17 together: annotate follows a link to a file outside the input folder, and
    select may read it through the link (before: refused after resolving the link)."""
    real = _small_docs(dev_dir, tmp_path / "elsewhere", "x.jsonl", 0)
    data = tmp_path / "data"
    data.mkdir()
    (data / "link.jsonl").symlink_to(real)
    out = tmp_path / "out"
    assert main(["annotate", str(data), "-o", str(out), "--signals", "rps_doc_word_count", "--workers", "1",
                 "-q"]) == 0
    recipe = tmp_path / "all.yaml"
    recipe.write_text("rules:\n  all: rps_doc_word_count >= 0\n")
    assert main(["select", str(out), "-r", str(recipe), "-o", str(tmp_path / "sel"), "-q"]) == 0
    assert len(read_jsonl(tmp_path / "sel" / "link.jsonl.gz")) == 12


def test_a_set_made_before_the_documents_were_annotated_again_is_not_joined(dev_dir, tmp_path, capsys):
    """Before: after new documents were annotated, select joined the old `_dedup_exact` set and
    the new documents got NULL flags and were dropped silently. Now the set is left out with a
    warning (a rule using it fails naming the column) until dedup runs again."""
    src = _small_docs(dev_dir, tmp_path / "in", "a.jsonl", 0)
    out = tmp_path / "out"
    ann = ["annotate", str(src.parent), "-o", str(out), "--signals", "rps_doc_word_count", "--workers", "1", "-q"]
    assert main(ann) == 0
    assert main(["dedup", "exact", str(out), "-q"]) == 0
    src.write_text(src.read_text() + "".join(json.dumps(d) + "\n" for d in web_docs(dev_dir, 14)[12:]))
    assert main(ann) == 0
    recipe = tmp_path / "u.yaml"
    recipe.write_text("rules:\n  unique: dup_exact_keep\n")
    capsys.readouterr()
    assert main(["select", str(out), "-r", str(recipe), "-o", str(tmp_path / "sel")]) == 2
    err = capsys.readouterr().err
    assert "annotated again" in err and "dup_exact_keep" in err
    assert main(["dedup", "exact", str(out), "-q"]) == 0  # re-run: joined again, all 14 kept
    assert main(["select", str(out), "-r", str(recipe), "-o", str(tmp_path / "sel"), "-q"]) == 0
    assert json.loads((tmp_path / "sel" / ".textsieve" / "selection.json").read_text())["counts"]["selected"] == 14


def test_overwrite_adopts_its_own_staged_work(dev_dir, tmp_path, monkeypatch):
    """A run with --overwrite that died after finishing a shard: the same command adopts that
    shard instead of recomputing it (before: everything was recomputed, and without --overwrite
    the published other settings refused)."""
    import textsieve.stages.annotate.annotate as annotate_mod
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    _small_docs(dev_dir, tmp_path / "in", "a.jsonl", 0)
    _small_docs(dev_dir, tmp_path / "in", "b.jsonl", 12)
    out = tmp_path / "out"
    base = dict(inputs=[str(tmp_path / "in")], output=str(out), workers=1, batch_size=12, progress=False)
    run_annotate(AnnotateConfig(**base, signals="rps_doc_word_count"))
    real, calls = annotate_mod.annotate_batch, {"n": 0}

    def dies_on_b(task):
        calls["n"] += 1
        if task.shard == "b.jsonl" and task.ids:
            raise RuntimeError("killed")
        return real(task)

    monkeypatch.setattr(annotate_mod, "annotate_batch", dies_on_b)
    other = AnnotateConfig(**base, signals="rps_doc_word_count,rps_doc_mean_word_length", overwrite=True)
    with pytest.raises(RuntimeError, match="killed"):
        run_annotate(other)
    monkeypatch.setattr(annotate_mod, "annotate_batch", real)
    result = run_annotate(other)
    assert result.shards_skipped == ["a.jsonl"] and result.shards_written == ["b.jsonl"]


def test_globs_stand_for_their_folder_and_ctime_is_not_a_change(tmp_path, monkeypatch):
    """A glob without a fixed prefix is the working folder (before: `*.jsonl` and `./*.jsonl`
    were compared differently); chmod changes a file's ctime, not its content (before: every
    shard was annotated again)."""
    from textsieve.io.identity import file_identity
    from textsieve.io.overlap import OverlapError, check_apart, place_of

    monkeypatch.chdir(tmp_path)
    assert place_of("*.jsonl") == place_of("./*.jsonl") == place_of(".")
    with pytest.raises(OverlapError):
        check_apart("x", "out", ["**/*.jsonl"])
    f = tmp_path / "a.jsonl"
    f.write_text("{}\n")
    before = file_identity(str(f))
    os.chmod(f, 0o600)
    assert file_identity(str(f)) == before
