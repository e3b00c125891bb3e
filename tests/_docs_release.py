"""`rpv2-release/` for the docs' working folder: the bundled sample corpus in RedPajama-V2's
released layout, so `docs/rpv2.md`'s walk-through runs as a reader would run it on the release.

Why not the golden RPv2 records: golden text must not be copied anywhere but tmp fixtures of
tests that need real RPv2 values; the docs only show commands running. So the sample's texts
are laid out as CCNet `mine` records, annotated, and written back with textsieve's own
`export rpv2` (quality_signals/, minhash/, duplicates/), as a stand-in release:

  documents/2023-06/0000/en_{head,middle,tail}.json.gz   the sample, a quarter each
  documents/2023-06/0001/en_head.json.gz                 the last quarter + copies of COPIES
                                                         documents of 0000/en_head (listed in
                                                         duplicates/, and LSH clusters)

The tail bucket keeps its documents only, as in the release. The export writes the signals
annotate computes; the CCNet part of each record (the `ccnet_*` signals first, `metadata` from
the documents record, the duplicates' `digest`) is filled in here from the documents, since
annotate does not compute CCNet's fields. The CCNet numbers are made up (deterministic).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COPIES = 10
KEYS = ("2023-06/0000/en_head", "2023-06/0000/en_middle", "2023-06/0000/en_tail", "2023-06/0001/en_head")
PERPLEXITY = {"head": 150.0, "middle": 420.0, "tail": 700.0}


def _document(rec: dict, i: int, key: str) -> dict:
    """A CCNet `mine` record for one sample document (the fields of issue 13 item 1)."""
    text, bucket, snapshot = rec["text"], key.rsplit("_", 1)[1], key.split("/", 1)[0]
    host = rec["source"].replace("-", "")
    nlines = text.count("\n") + 1
    digest = "sha1:" + base64.b32encode(hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()).decode()
    return {"url": f"https://{host}.example.org/{rec['id']}", "date_download": f"{snapshot}-01T10:00:{i % 60:02d}Z",
            "digest": digest, "length": len(text), "nlines": nlines, "source_domain": f"{host}.example.org",
            "title": text.split("\n", 1)[0][:80], "raw_content": text,
            "cc_segment": f"crawl-data/CC-MAIN-{snapshot}/segments/1674764.{i % 7}/wet/part-{i:05d}.warc.wet.gz",
            "original_nlines": nlines + 3, "original_length": len(text) + 120, "line_ids": list(range(nlines)),
            "language": "en", "language_score": round(0.5 + (i % 50) / 100, 2),
            "perplexity": round(PERPLEXITY[bucket] + i % 97 / 10, 1), "bucket": bucket}


def _ccnet_signals(doc: dict) -> dict:
    n = len(doc["raw_content"])
    return {"ccnet_length": [[0, n, float(doc["length"])]],
            "ccnet_original_length": [[0, n, float(doc["original_length"])]],
            "ccnet_nlines": [[0, n, float(doc["nlines"])]],
            "ccnet_original_nlines": [[0, n, float(doc["original_nlines"])]],
            "ccnet_language_score": [[0, n, float(doc["language_score"])]],
            "ccnet_perplexity": [[0, n, float(doc["perplexity"])]],
            "ccnet_bucket": [[0, n, {"head": 0.0, "middle": 1.0, "tail": 2.0}[doc["bucket"]]]]}


def _write_gz(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.writelines(lines)


def build_docs_release(records: list[dict], root: Path, scratch: Path, resources: Path) -> None:
    """Write the stand-in release under `root` (see the module doc); `scratch` holds the
    annotate output it is exported from and is removed afterwards; `resources` are the word lists."""
    from textsieve.export.rpv2_layout import write_release
    from textsieve.interop import rpv2_release as rel_
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.dedup.exact import ExactConfig, run_exact

    parts = {key: records[k::4] for k, key in enumerate(KEYS)}
    parts[KEYS[3]] = parts[KEYS[3]] + parts[KEYS[0]][:COPIES]
    docs = {key: [_document(r, i, key) for i, r in enumerate(recs)] for key, recs in parts.items()}
    for key, rows in docs.items():
        _write_gz(root / "documents" / f"{key}.json.gz", [json.dumps(d, ensure_ascii=False).encode() + b"\n"
                                                          for d in rows])
    attrs = scratch / "attrs"
    run_annotate(AnnotateConfig([str(root / "documents")], str(attrs), text_field="raw_content",
                                lang_field="language", resources=str(resources), workers=1,
                                progress=False))
    run_exact(ExactConfig([str(attrs)], workers=1, progress=False))
    write_release(str(attrs), str(scratch / "export"))  # not into root: export refuses to write beside its inputs
    for comp in ("quality_signals", "minhash", "duplicates"):
        shutil.move(scratch / "export" / comp, root / comp)
    shutil.rmtree(scratch)
    for key, rows in docs.items():  # the CCNet part of each record, which annotate does not compute
        sig_path = root / "quality_signals" / f"{key}.signals.json.gz"
        if key.endswith("_tail"):  # the release's tail bucket has documents only
            sig_path.unlink()
            (root / "minhash" / f"{key}.minhash.parquet").unlink()
            continue
        lines = []
        for line in gzip.decompress(sig_path.read_bytes()).splitlines():
            rec = json.loads(line)
            doc = rows[int(rec["id"].rsplit("/", 1)[1])]
            rec["metadata"] = {"cc_segment": doc["cc_segment"], "cc_net_source": f"{key}.json.gz", "url": doc["url"],
                               "source_domain": doc["source_domain"], "language": "en",
                               "snapshot_id": key.split("/", 1)[0]}
            rec["quality_signals"] = {**_ccnet_signals(doc), **rec["quality_signals"]}
            lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        _write_gz(sig_path, lines)
        dup_path = root / "duplicates" / f"{key}.duplicates.parquet"
        if not dup_path.exists():  # the release lists duplicates for every head/middle shard, often none
            dup_path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(rel_.duplicates_table(key, [], []), dup_path)
        else:
            dup = pq.read_table(dup_path)
            digests = [rows[int(d.rsplit("/", 1)[1])]["digest"][5:] for d in dup.column("doc_id").to_pylist()]
            pq.write_table(dup.set_column(2, "digest", pa.array(digests, pa.string())), dup_path)
