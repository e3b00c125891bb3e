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
    root = attrs / "sets" / "dedup_fuzzy"
    holder = _holder(root, "dedup_fuzzy")
    try:
        rc = main(["dedup", "fuzzy", str(attrs), "--thresholds", "0.8", "-q", "--workers", "1"])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{root}: another run is writing here (dedup_fuzzy, pid@host {holder.pid}@" in err, err
        assert not (root / ".textsieve" / "manifest.json").exists()  # nothing published past the holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert main(["dedup", "fuzzy", str(attrs), "--thresholds", "0.8", "-q", "--workers", "1"]) == 0
    assert (root / ".textsieve" / "manifest.json").is_file() and not (root / ".textsieve" / "lock").exists()


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
    assert not (tmp_path / "out" / ".textsieve" / "lock").exists() and first.root == second.root
    lock = write_lock.take(fs, str(tmp_path / "out"), "other")  # free for the next writer
    assert lock is not None and (tmp_path / "out" / ".textsieve" / "lock").read_text().startswith("other, pid@host ")
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
            "dedup exact": (attrs / "sets" / "dedup_exact", ["dedup", "exact", str(attrs)]),
            "select": (tmp_path / "sel", ["select", str(attrs), "-o", str(tmp_path / "sel"), "--recipe", str(recipe)]),
            "pii": (attrs / "sets" / "pii", ["pii", str(attrs)])}
    root, argv = runs[family]
    holder = _holder(root, "another run")
    try:
        rc = main([*argv, "-q", "--workers", "1"])
        err = capsys.readouterr().err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "another run is writing here" in err, err
    assert not (root / ".textsieve" / "manifest.json").exists()


# ---------------------------------------------------------------- object stores: a lease


def _lease(fs, root: str, owner: str, expires_in: float) -> None:
    import json
    import time

    fs.pipe_file(f"{root}/.textsieve/lock", json.dumps({"holder": f"dedup_fuzzy, pid@host {owner}", "owner": owner,
                                              "token": "theirs", "since": time.time() - 5,
                                              "expires": time.time() + expires_in}).encode())


def _publish(fs, root: str) -> None:
    from textsieve.io.publish import Publication

    pub = Publication(fs, root, "dedup_fuzzy", "k1")
    pub.add_file("a.txt", b"a\n", "fp")
    pub.commit()


def test_an_object_store_output_is_held_by_a_lease_that_names_its_holder():
    """Issue 25 item 7, object stores: a live lease of another machine's run refuses a second
    writer with the holder's name; an expired one, or one of a process of this machine that
    ended, is taken over; the lease is removed on commit."""
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "/lease-test/attrs/sets/dedup_fuzzy"
    _lease(fs, root, "4242@other-host", 300)
    with pytest.raises(write_lock.OutputLockedError, match=r"another run is writing here \(dedup_fuzzy, pid@host "
                                                           r"4242@other-host, since .*its lease runs to"):
        _publish(fs, root)
    assert not fs.exists(f"{root}/.textsieve/manifest.json")
    _lease(fs, root, "4242@other-host", -1)  # expired: its run died without giving it back
    _publish(fs, root)
    assert fs.exists(f"{root}/.textsieve/manifest.json") and not fs.exists(f"{root}/.textsieve/lock")
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    from textsieve.io.leftovers import writer_tag

    host = writer_tag().split("@", 1)[1]
    _lease(fs, root, f"{ended.stdout.strip()}@{host}", 300)  # this machine's process that has ended
    _publish(fs, root)
    assert not fs.exists(f"{root}/.textsieve/lock")
    fs.rm("/lease-test", recursive=True)


def test_a_held_lease_is_renewed_while_the_run_lasts(monkeypatch):
    import json
    import time

    import fsspec

    monkeypatch.setattr(write_lock, "RENEW_SECONDS", 0.05)
    monkeypatch.setattr(write_lock, "LEASE_SECONDS", 2.0)
    fs = fsspec.filesystem("memory")
    root = "/lease-renew/out"
    key = write_lock.take(fs, root, "mix")
    try:
        first = json.loads(fs.cat_file(f"{root}/.textsieve/lock"))["expires"]
        time.sleep(0.4)
        assert json.loads(fs.cat_file(f"{root}/.textsieve/lock"))["expires"] > first  # renewed by the holder's thread
        assert write_lock.take(fs, root, "mix") == key  # re-entrant within the process
    finally:
        write_lock.release(key)
    assert not fs.exists(f"{root}/.textsieve/lock")
