"""The fast signature mode end to end: annotate --signals minhash_fast, then dedup fuzzy --bands fast."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from textsieve.cli import main


def test_fast_bands_find_the_same_near_duplicates(tmp_path):
    from pydoc_data.topics import topics

    texts = [v for _, v in sorted(topics.items()) if len(v.split()) > 1500][:20]
    records = [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)]
    # near-duplicates: the same topic with one word replaced in the middle
    for i in (3, 7, 11):
        words = texts[i].split(" ")
        words[len(words) // 2] = "EDITED"
        records.append({"id": f"t{i}-copy", "text": " ".join(words)})
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "attrs"
    assert main(["annotate", str(src), "-o", str(out), "--signals", "minhash,minhash_fast", "--workers", "1",
                 "-q"]) == 0
    cols = pq.read_schema(out / "docs" / "docs.parquet").names
    assert "signature_sim0.8" in cols and "ts_fastsig_sim0.8" in cols
    clusters = {}
    for bands in ("rpv2", "fast"):
        assert main(["dedup", "fuzzy", str(out), "--thresholds", "0.8", "--bands", bands, "--overwrite",
                     "-q"]) == 0
        table = pq.read_table(out / "sets" / "dedup_fuzzy" / "docs.parquet")
        ids = table.column("id").to_pylist()
        cl = table.column("dup_fuzzy_t80_cluster").to_pylist()
        groups: dict = {}
        for doc_id, c in zip(ids, cl):
            if c is not None:
                groups.setdefault(c, set()).add(doc_id)
        clusters[bands] = sorted(sorted(g) for g in groups.values())
    expected = sorted(sorted({f"t{i}", f"t{i}-copy"}) for i in (3, 7, 11))
    assert clusters["rpv2"] == expected
    assert clusters["fast"] == expected
