"""Interrupted stand-alone commands resume: the same command, re-run, finishes the work without
`--overwrite`, keeps what was finished, and leaves output byte-identical to an uninterrupted
run and no temporary files behind (issue 10, items 1 and 9).

Kills use the test hook `hooks.slow_progress` (a sleep per progress update, injected into the
subprocess by `tests/hooks/sitecustomize.py`), so SIGKILL lands where some work is finished and
some is not. Inputs are
real web documents from the shared dev corpus."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _shared import SHARED, missing_reason
from hooks.slow_progress import kill_when, slowed_env

from textsieve.io.leftovers import TMP_MARK, remove_stale_temps, remove_stale_work_dirs, writer_tag

N_SHARDS = 3


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "textsieve.cli", *args]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=slowed_env(0))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc




def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if TMP_MARK in p.name]


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _web_docs(shared_dir: Path, n: int) -> list[str]:
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, n)]


# --------------------------------------------------------------------------- temporary files


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temps_removed_only_when_their_writer_is_gone(tmp_path):
    import fsspec

    host = writer_tag().split("@", 1)[1]
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    final = out / "a.parquet"
    final.write_bytes(b"finished")
    dead = out / "sub" / f".b.parquet{TMP_MARK}{_dead_pid()}@{host}-0123abcd"
    old_form = out / f".c.parquet{TMP_MARK}{_dead_pid()}-0123abcd"  # textsieve before pid@host names
    live = out / f".d.parquet{TMP_MARK}{os.getppid()}@{host}-0123abcd"  # a live process, older than the file
    mine = out / f".e.parquet{TMP_MARK}{writer_tag()}-0123abcd"
    remote_new = out / f".f.parquet{TMP_MARK}1@another-host-0123abcd"
    remote_old = out / f".g.parquet{TMP_MARK}1@another-host-0123abcd"
    newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    reused = out / f".h.parquet{TMP_MARK}{newer.pid}@{host}-0123abcd"  # its pid now names a newer process
    for p in (dead, old_form, live, mine, remote_new, remote_old, reused):
        p.write_bytes(b"partial")
    two_days, an_hour = time.time() - 2 * 86400, time.time() - 3600
    os.utime(remote_old, (two_days, two_days))
    os.utime(reused, (an_hour, an_hour))
    try:
        removed = remove_stale_temps(fsspec.filesystem("file"), str(out))
    finally:
        newer.kill()
        newer.wait()
    expected = [dead, old_form, remote_old] + ([reused] if Path("/proc/self/stat").exists() else [])
    assert sorted(Path(p).name for p in removed) == sorted(p.name for p in expected)
    assert all(p.exists() for p in (final, live, mine, remote_new))

    work = tmp_path / "tmp"
    work.mkdir()
    (work / f"textsieve-dedup-exact-{_dead_pid()}@{host}.abcd_123").mkdir()
    (work / f"textsieve-dedup-fuzzy-{writer_tag()}.abcd_123").mkdir()
    (work / "textsieve-dedup-x1y2z3w4").mkdir()  # untagged (older textsieve): cannot tell, kept
    assert [Path(p).name.split("-")[2] for p in remove_stale_work_dirs(str(work))] == ["exact"]
    assert sorted(p.name for p in work.iterdir()) == sorted(
        [f"textsieve-dedup-fuzzy-{writer_tag()}.abcd_123", "textsieve-dedup-x1y2z3w4"])


# --------------------------------------------------------------------------- annotate, one large file


def test_killed_annotate_resumes_from_its_last_finished_part(shared_dir, tmp_path):
    docs = tmp_path / "big.jsonl.gz"
    with gzip.open(docs, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(_web_docs(shared_dir, 430)) + "\n")
    resources = str(shared_dir / "golden" / "rpv2_resources")

    def cmd(out: Path, *extra: str) -> list[str]:
        return _cli("annotate", str(docs), "-o", str(out), "--workers", "1", "--batch-size", "20",
                    "--part-size", "100", "--resources", resources, "-q", *extra)

    clean = tmp_path / "clean"
    _run(cmd(clean))
    reference = (clean / "docs" / "big.parquet").read_bytes()

    out = tmp_path / "out"

    def part_files() -> list[Path]:  # in the run's staging folder: nothing is published before the end
        return list(out.glob(".textsieve/staging-annotate-*/docs/.big.parquet.parts/part-*.parquet"))

    def two_parts_and_a_third_open() -> bool:  # killed mid-shard, with a part half written
        return len(part_files()) >= 2 and bool(list(out.glob(
            f".textsieve/staging-annotate-*/docs/.big.parquet{TMP_MARK}*")))

    kill_when(cmd(out), two_parts_and_a_third_open, 0.1, "annotate had finished two parts")
    parts = part_files()[0].parent
    finished = sorted(p.name for p in parts.glob("part-*.parquet"))
    assert not (out / "big.parquet").exists() and 2 <= len(finished) < 5
    assert _temps(out), "the kill should have left the open part's temporary file"

    # other settings: the finished parts are work of those settings, so refuse (one line, no traceback)
    other = subprocess.run(cmd(out, "--signals", "repetition"), capture_output=True, text=True, timeout=120)
    assert other.returncode != 0 and "--overwrite" in other.stderr and "Traceback" not in other.stderr
    assert sorted(p.name for p in parts.glob("part-*.parquet")) == finished

    # the same command: resumes from the last finished part, no --overwrite needed
    _run(cmd(out))
    assert (out / "docs" / "big.parquet").read_bytes() == reference, "resumed output differs from an uninterrupted run"
    result = json.loads((out / ".textsieve" / "annotate.json").read_text())["result"]
    assert result["parts_resumed"] == len(finished), "finished parts were recomputed"
    assert result["documents_resumed"] == 100 * len(finished) and result["documents"] == 430
    assert not parts.exists() and not _temps(out), "parts or temporary files were left behind"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        ".textsieve/annotate.json", ".textsieve/manifest.json", "README.md", "docs/big.parquet"]


# --------------------------------------------------------------------------- later stages


@pytest.fixture(scope="module")
def annotated(tmp_path_factory) -> Path:
    """N_SHARDS shards of real web text (with some documents repeated across shards, so dedup
    finds groups), annotated once; each test works on a copy. Also a DSIR target file."""
    if not (SHARED / "golden").is_dir():
        pytest.skip(missing_reason(SHARED))
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate

    d = tmp_path_factory.mktemp("annotated")
    lines = _web_docs(SHARED, 180)
    (d / "docs").mkdir()
    for k in range(N_SHARDS):
        mine = lines[k::N_SHARDS]
        repeats = [json.dumps(dict(json.loads(x), id=f"copy-{k}-{j}")) for j, x in enumerate(lines[:8])]
        with gzip.open(d / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.write("\n".join(mine + repeats) + "\n")
    with gzip.open(d / "target.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines[:40]) + "\n")
    run_annotate(AnnotateConfig(inputs=[str(d / "docs")], output=str(d / "attrs"), workers=1,
                                resources=str(SHARED / "golden" / "rpv2_resources"), progress=False))
    return d


def _copy(annotated: Path, dest: Path) -> Path:
    shutil.copytree(annotated / "attrs", dest)
    return dest


def _count(folder: Path, pattern: str = "s[0-9]*.parquet") -> int:
    """Finished files of a run in progress: in its staging folder (published only at the end)."""
    return len(list(folder.glob(f".textsieve/staging-*/{pattern}"))) if folder.is_dir() else 0


def _staged(folder: Path, pattern: str) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob(f".textsieve/staging-*/{pattern}")}


def test_killed_dedup_exact_and_fuzzy_rerun_without_overwrite(annotated, tmp_path):
    clean = _copy(annotated, tmp_path / "clean")
    attrs = _copy(annotated, tmp_path / "attrs")
    spill = tmp_path / "spill"
    spill.mkdir()

    def exact(a: Path) -> list[str]:
        return _cli("dedup", "exact", str(a), "--workers", "1", "--tmp-dir", str(spill), "-q")

    def fuzzy(a: Path) -> list[str]:
        return _cli("dedup", "fuzzy", str(a), "--thresholds", "0.8", "--tmp-dir", str(spill), "-q")

    _run(exact(clean))
    _run(fuzzy(clean))
    # exact: killed while writing its shards; fuzzy: killed while spilling band partitions
    exact_set = attrs / "sets" / "dedup_exact"
    for cmd, folder, ready in ((exact, "sets/dedup_exact", lambda: 1 <= _count(exact_set) < N_SHARDS),
                               (fuzzy, "sets/dedup_fuzzy", lambda: bool(list(spill.iterdir())))):
        out = attrs / folder
        kill_when(cmd(attrs), ready, 0.5, f"{folder} was half done")
        assert list(spill.iterdir()), "the killed run should have left its partition spill"
        _run(cmd(attrs))  # the same command: no --overwrite needed
        assert _files(out) == _files(clean / folder), f"{folder} differs from an uninterrupted run"
        assert not _temps(attrs) and not list(spill.iterdir()), "leftovers of the killed run remain"


def test_killed_dsir_fit_resumes(annotated, tmp_path):
    clean = _copy(annotated, tmp_path / "clean")
    attrs = _copy(annotated, tmp_path / "attrs")

    def fit(a: Path) -> list[str]:
        return _cli("dsir", "fit", "--raw", str(a), "--targets", str(annotated / "target.jsonl.gz"), "--name", "web",
                    "--buckets", "2000", "-q", "--json")

    _run(fit(clean))
    out = attrs / "sets" / "dsir_web"
    kill_when(fit(attrs), lambda: 1 <= _count(out) < N_SHARDS, 0.5, "dsir fit had weighed some shards")
    done = _staged(out, "s*.parquet")  # renamed into place unchanged when the fit is published
    res = json.loads(_run(fit(attrs)).stdout)
    assert res["model_reused"] and res["shards_skipped"] == len(done) >= 1, "finished work was redone"
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("s*.parquet") if p.name in done} == done
    assert _files(out) == _files(clean / "sets" / "dsir_web") and not _temps(attrs)


def _selection(out: Path) -> dict[str, bytes]:
    files = _files(out)
    manifest = json.loads(files.pop(".textsieve/manifest.json"))
    manifest["files"].pop(".textsieve/selection.json")  # its hash covers the counts below
    files[".textsieve/manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    doc = json.loads(files.pop(".textsieve/selection.json"))
    for k in ("characters_written_this_run", "shards_skipped"):  # what this invocation did
        doc["counts"].pop(k)
    return files | {".textsieve/selection.json": json.dumps(doc, sort_keys=True).encode()}


def test_select_resumes_an_interrupted_run_and_never_needs_overwrite_for_it(annotated, tmp_path):
    attrs = _copy(annotated, tmp_path / "attrs")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text('name: words\nrules:\n  words: "rps_doc_word_count >= 60"\n')
    other = tmp_path / "other.yaml"
    other.write_text('name: words\nrules:\n  words: "rps_doc_word_count >= 10"\n')

    def select(out: Path, r: Path = recipe, *extra: str) -> list[str]:
        return _cli("select", str(attrs), "-r", str(r), "-o", str(out), "--workers", "1", "-q", *extra)

    _run(select(tmp_path / "clean"))
    reference = _selection(tmp_path / "clean")

    # killed while writing shards: the same command resumes, keeping the finished shards
    out = tmp_path / "out"
    kill_when(select(out), lambda: 1 <= _count(out, "s[0-9]*.jsonl.gz") < N_SHARDS, 0.6, "select had written a shard")
    # nothing published
    assert not (out / ".textsieve" / "selection.json").exists() and not list(out.glob("s*.jsonl.gz"))
    done = _staged(out, "s*.jsonl.gz")
    _run(select(out))
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("s*.jsonl.gz") if p.name in done} == done
    assert _selection(out) == reference and not _temps(out)

    # other settings over a finished selection, or over a killed run's finished shards: refuse
    # (one line); the killed run's work would be lost, and re-running its settings resumes it
    proc = subprocess.run(select(out, other), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "--overwrite" in proc.stderr and "Traceback" not in proc.stderr
    killed = tmp_path / "killed"
    kill_when(select(killed), lambda: 1 <= _count(killed, "s[0-9]*.jsonl.gz") < N_SHARDS, 0.6,
              "select had written a shard")
    proc = subprocess.run(select(killed, other), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "--overwrite" in proc.stderr and "Traceback" not in proc.stderr
    assert _count(killed, "s[0-9]*.jsonl.gz") >= 1

    # ... but a run that crashed before writing any shard (e.g. on a bad default) left nothing
    # to protect: any re-run starts afresh, without --overwrite
    from textsieve.io.leftovers import writer_tag

    crashed = tmp_path / "crashed"
    staging = crashed / ".textsieve/staging-select-0123456789abcdef"
    staging.mkdir(parents=True)
    (staging / f".writer-{_dead_pid()}@{writer_tag().split('@', 1)[1]}").write_bytes(b"")
    (staging / ".info.json").write_text(json.dumps({"settings": "other settings"}))
    _run(select(crashed))
    assert _selection(crashed) == reference


# --------------------------------------------------------------------------- per-document sets

def _doc_set_command(stage: str, a: Path, extra: Path) -> tuple[list[str], str]:
    """(command, set folder) of a per-document-set stage over the annotate folder `a`; `extra`
    holds what the stage reads besides it (a tokenizer, a benchmark)."""
    if stage == "pii":
        return _cli("pii", str(a), "--workers", "1", "-q"), "sets/pii"
    if stage == "tokens":
        return _cli("tokens", str(a), "--tokenizer", str(extra / "tok.json"), "--name", "tok", "--workers", "1",
                    "-q"), "sets/tokens_tok"
    if stage == "decontaminate":
        return _cli("decontaminate", str(a), "--against", f"bench={extra / 'bench.jsonl'}", "--workers", "1",
                    "-q"), "sets/decontam"
    if stage == "embed":
        return _cli("embed", str(a), "--workers", "1", "-q"), "sets/embed_wordllama"
    if stage == "learn apply":
        return _cli("learn", "apply", str(extra / "long.json"), str(a), "--workers", "1", "-q"), "sets/learned_long"
    raise AssertionError(stage)


@pytest.fixture(scope="module")
def doc_set_inputs(annotated, tmp_path_factory) -> Path:
    """A tokenizer trained on the documents, and a benchmark of three of them."""
    extra = tmp_path_factory.mktemp("doc-set-inputs")
    _run(_cli("train", "tokenizer", str(annotated / "docs"), "--vocab", "400", "-o", str(extra / "tok.json"), "-q"))
    # a boosted model (not SQL: `learn apply` stores its predictions) of even vs odd rows
    attrs = str(annotated / "attrs")
    _run(_cli("learn", "--positive", attrs, "--positive-where", "row % 2 = 0", "--negative", attrs,
              "--negative-where", "row % 2 = 1", "--model", "boosted", "--name", "long", "-o",
              str(extra / "long.json"), "-q"))
    lines = _web_docs(SHARED, 6)
    with open(extra / "bench.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"text": json.loads(x)["text"][:3000]}) + "\n" for x in lines[3:6])
    return extra


@pytest.mark.parametrize("stage", ["pii", "tokens", "decontaminate", "embed", "learn apply"])
def test_killed_per_document_set_stages_resume_to_identical_sets(stage, annotated, doc_set_inputs, tmp_path):
    """Issue 25 item 9: pii, tokens, decontaminate, embed and learn apply (the `doc_set` scaffold) killed with
    some shards finished: nothing is published, and the same command finishes without
    --overwrite, to the files of an uninterrupted run, adopting the finished shards."""
    clean = _copy(annotated, tmp_path / "clean")
    attrs = _copy(annotated, tmp_path / "attrs")
    cmd, folder = _doc_set_command(stage, clean, doc_set_inputs)
    _run(cmd)
    reference = _files(clean / folder)
    cmd, folder = _doc_set_command(stage, attrs, doc_set_inputs)
    out = attrs / folder
    kill_when(cmd, lambda: _count(out) >= 1, 0.4, f"{stage} had finished a shard")
    finished = _staged(out, "s[0-9]*.parquet")
    assert finished and not (out / ".textsieve" / "manifest.json").exists(), "a killed run published something"
    _run(cmd)
    assert _files(out) == reference, f"{stage}: the resumed set differs from an uninterrupted run's"
    assert not _temps(attrs) and not list(out.glob(".textsieve/staging-*"))
    assert not (out / ".textsieve" / "lock").exists()


def test_killed_dedup_semantic_reruns_to_the_same_set(annotated, doc_set_inputs, tmp_path):
    """Issue 25 item 9: dedup semantic killed while its work files (sample, partitions) exist:
    nothing is published, and the same command finishes without --overwrite to the files of an
    uninterrupted run, its work folder removed."""
    clean = _copy(annotated, tmp_path / "clean")
    attrs = _copy(annotated, tmp_path / "attrs")
    spill = tmp_path / "spill"
    spill.mkdir()
    for a in (clean, attrs):
        _run(_doc_set_command("embed", a, doc_set_inputs)[0])

    def semantic(a: Path) -> list[str]:
        return _cli("dedup", "semantic", str(a), "--eps", "0.1", "--clusters", "4", "--tmp-dir", str(spill), "-q")

    _run(semantic(clean))
    out = attrs / "sets" / "dedup_semantic"
    kill_when(semantic(attrs), lambda: any(p.is_file() for p in spill.rglob("*")), 0.5,
              "dedup semantic had written work files")
    assert not (out / ".textsieve" / "manifest.json").exists(), "a killed run published something"
    _run(semantic(attrs))
    assert _files(out) == _files(clean / "sets" / "dedup_semantic"), "the re-run differs from an uninterrupted run"
    assert not _temps(attrs) and not any(spill.iterdir()) and not (out / ".textsieve" / "lock").exists()


def test_killed_import_rpv2_resumes_to_the_same_shards(annotated, tmp_path):
    """Issue 25 item 9: `import rpv2` of a release (RPv2's layout around the golden records,
    `_rpv2_release`) killed with some shards staged: nothing is published, and the same command
    finishes to the files of an uninterrupted import, keeping the finished shards."""
    from _rpv2_release import build_release

    release = tmp_path / "release"
    build_release(SHARED, release, 200)

    def imported(out: Path) -> list[str]:
        return _cli("import", "rpv2", str(release), "-o", str(out), "--workers", "1", "-q")

    clean, out = tmp_path / "clean", tmp_path / "out"
    _run(imported(clean))
    shards = len([p for p in clean.rglob("*.parquet") if ".textsieve" not in p.parts])  # docs/ and sets/dedup_exact/
    assert shards >= 2, "the release should have one documents file per annotate shard"
    kill_when(imported(out), lambda: 1 <= len(list(out.glob(".textsieve/staging-*/**/*.parquet"))) < shards, 0.5,
              "import rpv2 had written a shard")
    assert not (out / ".textsieve" / "manifest.json").exists(), "a killed run published something"
    _run(imported(out))
    shards_of = lambda folder: {k: v for k, v in _files(folder).items() if k.endswith(".parquet")}  # noqa: E731
    assert shards_of(out) == shards_of(clean) and len(shards_of(out)) == shards, "the resumed shards differ"
    summary = json.loads((out / ".textsieve" / "annotate.json").read_text())["result"]  # its paths and seconds aside
    clean_summary = json.loads((clean / ".textsieve" / "annotate.json").read_text())["result"]
    assert summary["documents"] == clean_summary["documents"]
    assert not _temps(out) and not list(out.glob(".textsieve/staging-*")) and not (out / ".textsieve" / "lock").exists()
