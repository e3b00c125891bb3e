"""Issue 16 item 14: a full disk is one line (`textsieve: error: no space left on device in
FOLDER ...`, rc 2) naming the folder that filled up and the bytes written so far, never an
`OSError: [Errno 28]` traceback, and the partial file is removed, in every stage.

The disk is filled for real, without root: `hooks.disk_full` (loaded by `hooks/sitecustomize.py`
in the CLI subprocess and its workers) makes every write under one folder fail with ENOSPC
once a byte budget is used, as the kernel does when a filesystem is full. The corpus is a
slice of the real dev corpus, with near-copies so that `dedup fuzzy` has pairs to verify."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _shared import SHARED
from hooks.disk_full import full_env

RESOURCES = SHARED / "golden" / "rpv2_resources"


@pytest.fixture(scope="module")
def corpus(dev_dir: Path, tmp_path_factory) -> dict[str, Path]:
    """raw/: 3 shards of real web documents (the third: near-copies of the first's), attrs/:
    their annotate folder, target.jsonl: real Wikipedia text for `dsir fit`."""
    import textsieve as ts

    d = tmp_path_factory.mktemp("diskfull")
    with gzip.open(dev_dir / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = [x.rstrip("\n") for x in itertools.islice(fh, 200)]
    raw = d / "raw"
    raw.mkdir()
    for k in range(2):
        (raw / f"s{k}.jsonl").write_text("\n".join(lines[k::2]) + "\n", encoding="utf-8")
    copies = []
    for line in lines[0:60:2]:
        rec = json.loads(line)
        words = rec["text"].split(" ")
        words[len(words) // 2] = "changed"
        copies.append(json.dumps({**rec, "id": rec["id"] + "-copy", "text": " ".join(words)}))
    (raw / "s2.jsonl").write_text("\n".join(copies) + "\n", encoding="utf-8")
    ts.annotate([str(raw)], output=str(d / "attrs"), workers=1, progress=False, resources=str(RESOURCES))
    with gzip.open(dev_dir / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        (d / "target.jsonl").write_text("".join(itertools.islice(fh, 100)), encoding="utf-8")
    return {"raw": raw, "attrs": d / "attrs", "target": d / "target.jsonl"}


# (case, CLI arguments, the folder that is full, the start of the folder the message must name,
# bytes the folder takes before it is full); {attrs}, {raw}, {target} and {out} are filled in per
# test (attrs is a fresh copy: stages write into it)
CASES = [
    ("annotate", "annotate {raw} -o {out} --workers 1", "{out}", "{out}", 20_000),
    ("dedup exact: output", "dedup exact {attrs} -o {out} --tmp-dir {work}", "{out}", "{out}/sets/dedup_exact", 2_000),
    # the spills (the id table's first, then the keys') go to OUT/.textsieve-work without --tmp-dir
    ("dedup exact: spill", "dedup exact {attrs} -o {out}", "{out}", "{out}/.textsieve-work/textsieve-dedup-", 2_000),
    ("dedup fuzzy: output", "dedup fuzzy {attrs} --verify none --tmp-dir {work}", "{attrs}/sets/dedup_fuzzy",
     "{attrs}/sets/dedup_fuzzy", 2_000),
    ("dedup fuzzy: spill", "dedup fuzzy {attrs} --verify none --tmp-dir {out}/spill", "{out}/spill",
     "{out}/spill/textsieve-dedup-", 2_000),
    # the key spill (~50 KB) fits, the shingle files of the candidates do not
    ("dedup fuzzy: shingle files", "dedup fuzzy {attrs} --verify exact --tmp-dir {out}/spill", "{out}/spill",
     "{out}/spill/textsieve-dedup-verify-", 150_000),
    ("dsir fit", "dsir fit --raw {attrs} --name wiki --targets {target} --buckets 500", "{attrs}/sets/dsir_wiki",
     "{attrs}/sets/dsir_wiki", 2_000),
    ("select", "select {attrs} -r gopher -o {out}", "{out}", "{out}", 200),
]


def _leftovers(root: Path) -> list[Path]:
    """Partial files and work folders: what a failed write must not leave behind."""
    return [p for p in root.rglob("*") if ".tmp-" in p.name or (p.is_dir() and p.name.startswith("textsieve-"))]


@pytest.mark.parametrize("case,args,full,named,after", CASES, ids=[c[0] for c in CASES])
def test_disk_full_is_one_line_and_leaves_no_partial_file(corpus, tmp_path, case, args, full, named, after):
    """Before: every case ended in a raw `OSError: [Errno 28] No space left on device` traceback."""
    attrs = tmp_path / "attrs"
    shutil.copytree(corpus["attrs"], attrs)
    names = {"raw": corpus["raw"], "attrs": attrs, "target": corpus["target"], "out": tmp_path / "out",
             "work": tmp_path / "work"}
    argv = [a.format(**names) for a in args.split()]
    (tmp_path / "work").mkdir()
    (tmp_path / "out" / "spill").mkdir(parents=True)
    folder = full.format(**names)
    env = full_env(folder, after)
    env["TEXTSIEVE_RESOURCES"] = str(RESOURCES)
    proc = subprocess.run([sys.executable, "-m", "textsieve.cli", *argv, "-q"], env=env, capture_output=True,
                          text=True, timeout=300)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and len(err) == 1, proc.stderr[-3000:]
    assert err[0].startswith(f"textsieve: error: no space left on device in {named.format(**names)}"), err[0]
    assert "written so far" in err[0] and "free" in err[0], err[0]
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("after", [2_000, 60_000])
def test_mix_on_a_full_disk_names_its_folder_and_removes_its_staging_at_once(corpus, tmp_path, after):
    """Issue 25: `mix` on a full disk printed `no space left on device` without the folder, and
    its `.staging-*` folder stayed until the next run. Now the one line names the output folder
    (its staging folder inside it) and nothing of the failed run is left."""
    mix = tmp_path / "mix.yaml"
    mix.write_text(f"tokens: 20K\ntokenizer: words\nseed: 0\nshard_size: 4K tokens\nformat: jsonl.zst\n"
                   f"sources:\n  - name: web\n    attributes: {corpus['attrs']}\n    recipe: gopher\n"
                   "    share: 1.0\n    max_epochs: 20\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    env = full_env(out, after)
    env["TEXTSIEVE_RESOURCES"] = str(RESOURCES)
    proc = subprocess.run([sys.executable, "-m", "textsieve.cli", "mix", str(mix), "-o", str(out), "--workers", "1",
                           "-q"], env=env, capture_output=True, text=True, timeout=300)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and len(err) == 1, proc.stderr[-3000:]
    assert err[0].startswith(f"textsieve: error: no space left on device in {out}"), err[0]
    assert sorted(p.name for p in out.iterdir()) == [], sorted(p.name for p in out.rglob("*"))
