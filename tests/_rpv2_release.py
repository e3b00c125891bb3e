"""Build a RedPajama-V2 release folder at test time from the golden signal records.

The golden file (`shared/golden/rpv2_signals_dev.jsonl.gz`) holds real RPv2 signal values and
MinHash bands with their texts; it must never be committed in another form, so tests lay it out
in the released layout here, in tmp_path:

  documents/{key}.json.gz                CCNet-style records: raw_content + the CCNet fields
  quality_signals/{key}.signals.json.gz  id, id_int, metadata, ccnet_* + the golden signals
  minhash/{key}.minhash.parquet          the golden bands, RPv2's worker schema
  duplicates/{key}.duplicates.parquet    the copies below (shard_id, doc_id, digest)

Keys: `2023-06/0000/{lang}_head` (every language), `2023-06/0000/en_middle`, and
`2022-49/0000/en_head`, which also holds copies of `COPIES` documents of 2023-06 (same text and
signals: exact duplicates, listed in its duplicates file since RPv2 keeps the newest snapshot's
copy, and LSH clusters). `2023-06/0000/en_tail` has documents only, as in the release.
The CCNet numeric fields are made up (plausible, deterministic); the texts, signals and bands
are RPv2's.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COPIES = 12  # 2023-06 en_head documents copied into 2022-49 en_head
TAIL = 40  # English documents put in the tail bucket (documents only)
SIGNATURES = ("signature_sim1.0", "signature_sim0.9", "signature_sim0.8", "signature_sim0.7")
PERPLEXITY = {"head": 150.0, "middle": 420.0, "tail": 700.0}


def _id_int(doc_id: str) -> int:
    return int.from_bytes(hashlib.sha1(doc_id.encode("utf-8")).digest()[:8], "little")


def _worker_parquet(table: pa.Table, path: Path) -> None:
    """A Parquet file as RPv2's worker writes its minhash files (utilities/io/writer.py
    ParquetBatchWriter): a default `pq.ParquetWriter`, one record batch per 1,000 documents
    (its flush_interval). The duplicates files' writer is not in the public code; they are
    written the same way here."""
    with pq.ParquetWriter(path, table.schema) as writer:
        for start in range(0, table.num_rows, 1000):
            writer.write_batch(table.slice(start, 1000).combine_chunks().to_batches()[0])


def _compact(obj: object) -> bytes:
    """A signals line as RPv2's workers wrote it: msgspec's JSON (its float spelling, e.g.
    `0.00001234`, is not Python json's `1.234e-05`)."""
    import msgspec

    return msgspec.json.encode(obj) + b"\n"


def _ccnet(rec: dict, i: int, bucket: str, snapshot: str) -> dict:
    text = rec["text"]
    host = (rec.get("source") or {}).get("source", "web/x").split("/")[-1] or "example"
    nlines = text.count("\n") + 1
    digest = "sha1:" + base64.b32encode(hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()).decode()
    return {"url": f"https://{host}.example.org/{rec['id']}", "date_download": f"{snapshot}-01T10:00:{i % 60:02d}Z",
            "digest": digest, "length": len(text), "nlines": nlines, "source_domain": f"{host}.example.org",
            "title": text.split("\n", 1)[0][:80], "raw_content": text,
            "cc_segment": f"crawl-data/CC-MAIN-{snapshot}/segments/1674764.{i % 7}/wet/part-{i:05d}.warc.wet.gz",
            "original_nlines": nlines + 3, "original_length": len(text.encode("utf-8", "surrogatepass")) + 120,
            "line_ids": list(range(nlines)), "language": rec["language"],
            "language_score": round(0.5 + (i % 50) / 100, 2), "perplexity": round(PERPLEXITY[bucket] + i % 97 / 10, 1),
            "bucket": bucket}


def _signals_record(key: str, idx: int, doc: dict, rec: dict) -> dict:
    doc_id = f"{key}.json.gz/{idx}"
    n = len(doc["raw_content"])
    ccnet = {"ccnet_length": [[0, n, float(doc["length"])]],
             "ccnet_original_length": [[0, n, float(doc["original_length"])]],
             "ccnet_nlines": [[0, n, float(doc["nlines"])]],
             "ccnet_original_nlines": [[0, n, float(doc["original_nlines"])]],
             "ccnet_language_score": [[0, n, float(doc["language_score"])]],
             "ccnet_perplexity": [[0, n, float(doc["perplexity"])]],
             "ccnet_bucket": [[0, n, {"head": 0.0, "middle": 1.0, "tail": 2.0}[doc["bucket"]]]]}
    return {"id": doc_id, "id_int": _id_int(doc_id),
            "metadata": {"cc_segment": doc["cc_segment"], "cc_net_source": f"{key}.json.gz", "url": doc["url"],
                         "source_domain": doc["source_domain"], "language": doc["language"],
                         "snapshot_id": key.split("/", 1)[0]},
            "quality_signals": {**ccnet, **rec["quality_signals"]}}


def golden_records(shared_dir: Path, n: int | None = None) -> list[dict]:
    out = []
    with gzip.open(shared_dir / "golden" / "rpv2_signals_dev.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if n and len(out) >= n:
                break
    return out


def assign(records: list[dict]) -> dict[str, list[dict]]:
    """Shard key -> golden records, in file order (see the module doc)."""
    keys: dict[str, list[dict]] = {}
    en = [r for r in records if r["language"] == "en"]
    tail, rest = en[-TAIL:], en[:-TAIL]
    third = len(rest) // 3
    keys["2023-06/0000/en_head"] = rest[:third]
    keys["2023-06/0000/en_middle"] = rest[third: 2 * third]
    keys["2022-49/0000/en_head"] = rest[2 * third:] + rest[:COPIES]  # the copies come last
    keys["2023-06/0000/en_tail"] = tail
    for lang in sorted({r["language"] for r in records} - {"en"}):
        keys[f"2023-06/0000/{lang}_head"] = [r for r in records if r["language"] == lang]
    return keys


def build_release(shared_dir: Path, root: Path, n: int | None = None) -> dict[str, list[dict]]:
    """Write the release layout under `root`; returns key -> the golden records of its documents."""
    keys = assign(golden_records(shared_dir, n))
    for key, recs in keys.items():
        snapshot, bucket = key.split("/", 1)[0], key.rsplit("_", 1)[1]
        docs = [_ccnet(r, i, bucket, snapshot) for i, r in enumerate(recs)]
        _write_gz(root / "documents" / f"{key}.json.gz", [json.dumps(d).encode() + b"\n" for d in docs])
        if bucket == "tail":
            continue
        sigs = [_signals_record(key, i, d, r) for i, (d, r) in enumerate(zip(docs, recs))]
        _write_gz(root / "quality_signals" / f"{key}.signals.json.gz", [_compact(s) for s in sigs])
        schema = pa.schema([("shard_id", pa.string()), ("id", pa.string()), ("id_int", pa.uint64()),
                            *[(s, pa.list_(pa.binary())) for s in SIGNATURES]])
        bands = {s: [None if r["minhash"] is None or r["minhash"][s] is None else
                     [bytes.fromhex(b) for b in r["minhash"][s]] for r in recs] for s in SIGNATURES}
        table = pa.table([pa.array([f"{key}.json.gz"] * len(recs)), pa.array([s["id"] for s in sigs]),
                          pa.array([s["id_int"] for s in sigs], pa.uint64()),
                          *[pa.array(bands[s], pa.list_(pa.binary())) for s in SIGNATURES]], schema=schema)
        (root / "minhash" / key).parent.mkdir(parents=True, exist_ok=True)
        _worker_parquet(table, root / "minhash" / f"{key}.minhash.parquet")
        if key.startswith("2022-49"):  # the copies of newer documents are the listed duplicates
            first = len(recs) - COPIES
            dup = pa.table({"shard_id": [f"{key}.json.gz"] * COPIES,
                            "doc_id": [sigs[i]["id"] for i in range(first, len(recs))],
                            "digest": [docs[i]["digest"][5:] for i in range(first, len(recs))]})
            (root / "duplicates" / key).parent.mkdir(parents=True, exist_ok=True)
            _worker_parquet(dup, root / "duplicates" / f"{key}.duplicates.parquet")
    return keys


def _write_gz(path: Path, lines: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        for line in lines:
            gz.write(line)


def decompressed(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())
