"""One writer per output (issue 25 item 7): two runs into one output folder used to collide (a raw
`[Errno 2] ... .tmp-...` traceback, or two `dedup fuzzy` runs with different settings both
exiting 0, the last writer winning). A run holds `OUT/.lock` while it publishes; a second one
fails with one line naming the holder, and the lock of a killed run is taken by the next."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from textsieve.cli import main
from textsieve.io import write_lock

HOLD = """
import sys, time, fsspec
from textsieve.io import write_lock
write_lock.take(fsspec.filesystem("file"), sys.argv[1], sys.argv[2])
print("locked", flush=True)
time.sleep(60)
"""


@pytest.fixture(scope="module")
def attrs(tmp_path_factory) -> Path:
    from textsieve.sample import build_sample

    tmp = tmp_path_factory.mktemp("lock")
    build_sample(tmp / "c.jsonl.gz", max_docs=60)
    assert main(["annotate", str(tmp / "c.jsonl.gz"), "-o", str(tmp / "attrs"), "--signals", "minhash", "-q",
                 "--workers", "1"]) == 0
    return tmp / "attrs"


def _holder(root: Path, stage: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root), stage], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_fails_naming_the_holder_and_a_killed_holders_lock_is_taken(attrs, capsys):
    root = attrs / "_dedup_fuzzy"
    holder = _holder(root, "dedup_fuzzy")
    try:
        rc = main(["dedup", "fuzzy", str(attrs), "--threshold", "0.8", "-q", "--workers", "1"])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{root}: another run is writing here (dedup_fuzzy, pid@host {holder.pid}@" in err, err
        assert not (root / "manifest.json").exists()  # nothing published past the holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert main(["dedup", "fuzzy", str(attrs), "--threshold", "0.8", "-q", "--workers", "1"]) == 0
    assert (root / "manifest.json").is_file() and not (root / ".lock").exists()


def test_the_lock_is_reentrant_in_one_process_and_released_on_commit(tmp_path):
    import fsspec

    from textsieve.io.publish import Publication

    fs = fsspec.filesystem("file")
    first = Publication(fs, str(tmp_path / "out"), "stage", "k1")  # left open, as by a run that raised
    second = Publication(fs, str(tmp_path / "out"), "stage", "k1")  # the same process opens it again
    with open(second.staged("a.txt"), "w") as fh:
        fh.write("a")
    second.add("a.txt")
    second.commit()
    assert not (tmp_path / "out" / ".lock").exists() and first.root == second.root
    lock = write_lock.take(fs, str(tmp_path / "out"), "other")  # free for the next writer
    assert lock is not None and (tmp_path / "out" / ".lock").read_text().startswith("other, pid@host ")
    write_lock.release(lock)


@pytest.mark.parametrize("family", ["annotate", "dedup exact", "select", "pii"])
def test_a_second_writer_is_refused_in_every_stage_family(family, attrs, tmp_path, capsys):
    """One stage per family (annotate; dedup; select; the training end's per-document sets): with
    another process holding the output's lock, the run fails in one line naming the holder and
    publishes nothing."""
    corpus = attrs.parent / "c.jsonl.gz"
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: words\nrules:\n  words: rps_doc_word_count >= 5\n")
    runs = {"annotate": (tmp_path / "out", ["annotate", str(corpus), "-o", str(tmp_path / "out"), "--signals",
                                            "rps_doc_word_count"]),
            "dedup exact": (attrs / "_dedup_exact", ["dedup", "exact", str(attrs)]),
            "select": (tmp_path / "sel", ["select", str(attrs), "-o", str(tmp_path / "sel"), "--recipe", str(recipe)]),
            "pii": (attrs / "_pii", ["pii", str(attrs)])}
    root, argv = runs[family]
    holder = _holder(root, "another run")
    try:
        rc = main([*argv, "-q", "--workers", "1"])
        err = capsys.readouterr().err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "another run is writing here" in err, err
    assert not (root / "manifest.json").exists()
