"""Every stage's outputs, byte for byte, on the dev corpus: a refactor must not change them.

Two `textsieve run` pipelines cover every registered stage: one extracts a real WARC and
annotates it; the other takes 600 dev-corpus documents through annotate (all RPv2 signals),
embed, the four dedup stages, decontaminate, pii, tokens, a learned model over embeddings, a
DSIR fit on a recipe's survivors, select (recipe + DSIR + redaction) and mix. Each output file
is digested (Parquet by schema and rows, JSON with timings masked, model zips by member; floats
to 9 significant digits, as BLAS sums differ in their last bits between CPUs) and
compared with `tests/data/stage_digests.json`, recorded from the tree before the stage
descriptor refactor (issue 24). Record anew only for a change that is meant to alter outputs:

    TEXTSIEVE_RECORD_DIGESTS=1 python -m pytest tests/test_stage_digests.py
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml

from textsieve.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.shared]

RECORD = Path(__file__).parent / "data" / "stage_digests.json"
TIMING = re.compile(r'"(kernels_compiled|[a-z_]*seconds?|elapsed|started|finished|wall_s|time\w*|created)": '
                    r'("[^"]*"|[0-9.e+-]+)')
#: files that hold timings or absolute paths of this run by design, not outputs
VOLATILE = {"pipeline.run.json", "pipeline.resolved.yaml"}


#: a decimal number written with more digits than `SIGNIFICANT` keeps
_LONG_FLOAT = re.compile(r"-?\d+\.\d{6,}(?:[eE][+-]?\d+)?")
#: Floats are compared to 9 significant digits (float32 in model arrays): sums and products that
#: go through BLAS (k-means' cosine means, a learned model's predictions) differ in their last bits
#: between CPUs (OpenBLAS picks AVX-512 or AVX2 kernels, which sum in other orders), and a digest
#: of the bits made the test fail on every machine but the one that recorded it.
SIGNIFICANT = 9


def _round_text(text: str) -> str:
    return _LONG_FLOAT.sub(lambda m: f"{float(m.group()):.{SIGNIFICANT}g}", text)


def _rounded(value: object) -> object:
    """`value` (from `to_pylist`) with every float rounded to `SIGNIFICANT` digits."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _zip_digest(z: zipfile.ZipFile) -> bytes:
    import numpy as np

    out = b""
    for name in sorted(z.namelist()):
        data = z.read(name)
        if name.endswith(".json"):
            doc = json.loads(data)
            doc.pop("created", None)
            data = _round_text(json.dumps(doc, sort_keys=True)).encode()
        elif name.endswith(".npz") or data[:2] == b"PK":
            arrays = np.load(io.BytesIO(data))
            data = b"".join(k.encode() + (arrays[k].astype(np.float32) if arrays[k].dtype == np.float64
                                          else arrays[k]).tobytes() for k in sorted(arrays.files))
        out += name.encode() + hashlib.sha256(data).digest()
    return out


def digest(p: Path, root: Path, shared: Path) -> str:
    """A file's digest, blind to what legitimately differs between runs: Parquet footers'
    writer metadata, timings in JSON, this run's temporary folder and the shared data's folder
    in paths (CI keeps the shared data elsewhere than a workstation does)."""
    import pyarrow.parquet as pq

    if zipfile.is_zipfile(p):
        return hashlib.sha256(_zip_digest(zipfile.ZipFile(p))).hexdigest()[:16]
    if p.suffix == ".parquet":
        t = pq.read_table(p)
        h = hashlib.sha256(str(t.schema.remove_metadata()).encode())
        for col in t.columns:
            h.update(str(_rounded(col.to_pylist())).encode())
        return h.hexdigest()[:16]
    data = p.read_bytes()
    if p.suffix == ".gz":
        data = gzip.decompress(data)
    if p.name == "manifest.json":  # its keys fold in the inputs' mtimes; the files are digested one by one
        doc = json.loads(data)
        return hashlib.sha256(json.dumps([doc.get("stage"), sorted(doc.get("files", {}))]).encode()).hexdigest()[:16]
    data = data.replace(str(root).encode(), b"ROOT")
    for where in sorted({str(shared.resolve()), str(shared.absolute()), str(shared)}, key=len, reverse=True):
        data = data.replace(where.encode(), b"SHARED")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return hashlib.sha256(data).hexdigest()[:16]
    return hashlib.sha256(_round_text(TIMING.sub("T", text)).encode()).hexdigest()[:16]


def _head(src: Path, dst: Path, start: int, stop: int) -> None:
    with gzip.open(src, "rt", encoding="utf-8") as fh, gzip.open(dst, "wt", encoding="utf-8") as out:
        for i, line in enumerate(fh):
            if i >= stop:
                break
            if i >= start:
                out.write(line)


def _run(root: Path, doc: dict, name: str) -> None:
    (root / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), "utf-8")
    assert main(["run", str(root / f"{name}.yaml"), "-q"]) == 0


def run_everything(root: Path, shared: Path) -> dict[str, str]:
    """Both pipelines in `root`; {relative path: digest} of every file they wrote."""
    from textsieve.sample import build_sample
    from textsieve.tokenization.tokenizer import train_bpe

    os.environ["SOURCE_DATE_EPOCH"] = "1700000000"
    dev = shared / "corpora" / "dev"
    res = shared / "golden" / "rpv2_resources"
    _head(dev / "web_sample.jsonl.gz", root / "pool.jsonl.gz", 0, 600)
    _head(dev / "web_sample.jsonl.gz", root / "ccnet.jsonl.gz", 2000, 2300)
    _head(dev / "target_wiki.jsonl.gz", root / "wiki.jsonl.gz", 0, 300)
    with gzip.open(root / "pool.jsonl.gz", "rt", encoding="utf-8") as fh:
        pool = [json.loads(line) for line in fh]
    with open(root / "bench.jsonl", "w", encoding="utf-8") as fh:  # three pool documents as a "benchmark"
        fh.writelines(json.dumps({"question": r["text"][:1500]}) + "\n" for r in pool[20:23])
    build_sample(root / "sample.jsonl.gz")
    train_bpe((r["text"] for r in pool[:300]), 800, str(root / "tok.json"))
    # a learned model over embeddings, trained on wiki (good) against other web text (bad)
    for side in ("wiki", "ccnet"):
        assert main(["annotate", str(root / f"{side}.jsonl.gz"), "-o", str(root / f"{side}-attrs"),
                     "--resources", str(res), "--workers", "2", "--signals", "rps_doc_word_count", "-q"]) == 0
        assert main(["embed", str(root / f"{side}-attrs"), "--workers", "1", "-q"]) == 0
    assert main(["learn", "--positive", str(root / "wiki-attrs"), "--negative", str(root / "ccnet-attrs"),
                 "--features-from", "embed", "--name", "wikiish", "-o", str(root / "wikiish.json"), "-q"]) == 0

    for p in root.iterdir():  # identities that hold mtimes see the same ones on every run
        if p.is_file():
            os.utime(p, (1700000000, 1700000000))
    _run(root, {"inputs": [str(dev / "raw" / "dolma_sample-0000.warc.gz")], "output": "web", "workers": 2,
                "fingerprint": "content", "extract": {}, "annotate": {"resources": str(res)}}, "extract")
    _run(root, {
        "inputs": ["pool.jsonl.gz"], "output": "full", "workers": 2, "fingerprint": "content",
        "annotate": {"resources": str(res)},
        "embed": {},
        "dedup": {"exact": {"normalize": "rpv2"}, "fuzzy": {"thresholds": [0.8, 0.7]}, "lines": {},
                  "semantic": {}},
        "decontaminate": {"against": ["bench=bench.jsonl"], "fields": ["question"]},
        "pii": {},
        "tokens": {"tokenizer": "tok.json"},
        "learn": [{"model": "wikiish.json"}],
        "dsir": [{"name": "wiki", "targets": ["wiki.jsonl.gz"],
                  "recipe": {"name": "long", "rules": {"long": "rps_doc_word_count >= 30"}}}],
        "select": {"recipe": {"name": "clean", "models": {"wikiish": "wikiish.json"}, "rules": {
                       "unique": "dup_exact_rpv2_keep", "near_unique": "dup_fuzzy_t80_keep",
                       "clean": "ts_contam_count == 0", "words": "rps_doc_word_count between 30 and 100000",
                       "wikiish": "wikiish.predict >= 0.01"}},
                   "dsir": "wiki", "k": 200, "redact": ["pii"]},
        "mix": {"mix": {"tokenizer": "tok.json", "tokens": 30000, "seed": 1, "format": "bin",
                        "shard_size": "10000 tokens",
                        "sources": [{"name": "clean", "selection": "full/selected", "share": 1.0}]}},
    }, "full")
    out = {}
    for top in ("web", "full"):
        for p in sorted((root / top).rglob("*")):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and p.name not in VOLATILE and "/.state/" not in f"/{rel}":
                out[rel] = digest(p, root, shared)
    return out


def test_every_stage_writes_what_it_wrote_before_the_refactor(shared_dir: Path) -> None:
    if not (shared_dir / "corpora" / "dev" / "raw").is_dir():
        pytest.skip(f"dev corpus not found under {shared_dir}")
    # one fixed folder: paths are recorded inside outputs (and fingerprints of recipes naming them)
    root = Path(tempfile.gettempdir()) / "textsieve-stage-digests"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    got = run_everything(root, shared_dir)
    if os.environ.get("TEXTSIEVE_RECORD_DIGESTS"):
        RECORD.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", "utf-8")
    want = json.loads(RECORD.read_text("utf-8"))
    assert sorted(got) == sorted(want), "the set of output files changed"
    changed = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not changed, f"{len(changed)} output file(s) changed: {sorted(changed)[:10]}"
