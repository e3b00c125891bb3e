"""`select` keeps every source field (issue 10 item 5): Parquet → Parquet keeps the schema with
nested structs, lists, floats and timestamps; JSONL → JSONL keeps every key; the cross-format
cases follow the documented rules (`textsieve.stages.select.output`). Built from real web documents."""

from __future__ import annotations

import datetime
import gzip
import itertools
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from textsieve.recipes.language import Recipe
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.select.select import SelectConfig, run_select

N = 100
# a doc rule and a line rule, so rows are dropped and texts are cut
RULES = {"words": "rps_doc_word_count >= 40", "lines": "line: rps_lines_num_words >= 4"}


def _records(shared_dir: Path, n: int = N) -> list[dict]:
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in itertools.islice(fh, n)]


def _annotate(src: Path, out: Path) -> Path:
    run_annotate(AnnotateConfig([str(src)], str(out), signals=["rps_doc_word_count", "rps_lines_num_words"],
                                workers=1, progress=False))
    return out


def _kept_texts(ann: Path, source_texts: list[str]) -> dict[int, str]:
    """Independent twin of the recipe: row -> text with the short lines cut."""
    attrs = pq.read_table(next((ann / "docs").glob("*.parquet")), columns=["row", "rps_doc_word_count",
                                                              "rps_lines_num_words"]).to_pylist()
    out = {}
    for a in attrs:
        if a["rps_doc_word_count"][0]["score"] < 40:
            continue
        text = source_texts[a["row"]]
        kept = "".join(text[s["start"]:s["end"]] for s in a["rps_lines_num_words"] if s["score"] >= 4)
        if kept:
            out[a["row"]] = kept
    return out


def _multi_column_table(records: list[dict]) -> pa.Table:
    """Real documents with the column kinds a Hugging Face dataset has."""
    meta_type = pa.struct([("origin", pa.string()), ("lang", pa.string()), ("lang_score", pa.float64())])
    base = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    return pa.table({
        "doc_id": pa.array([r["id"] for r in records], pa.string()),
        "source": pa.array([r["source"] for r in records], pa.string()),
        "text": pa.array([r["text"] for r in records], pa.large_string()),
        "meta": pa.array([{k: r["meta"].get(k) for k in ("origin", "lang", "lang_score")} for r in records],
                         meta_type),
        "tags": pa.array([r["source"].split("/") + ([] if i % 3 else ["x"]) for i, r in enumerate(records)],
                         pa.list_(pa.string())),
        "score": pa.array([len(r["text"]) / 1000.0 for r in records], pa.float32()),
        "fetched": pa.array([base + datetime.timedelta(minutes=i) for i in range(len(records))],
                            pa.timestamp("us", tz="UTC")),
        "spans": pa.array([[{"k": i, "v": [0.5, 1.5]}] for i in range(len(records))],
                          pa.list_(pa.struct([("k", pa.int32()), ("v", pa.list_(pa.float64()))]))),
        "row": pa.array(range(1000, 1000 + len(records)), pa.int16()),  # clashes with the key column
    })


def test_parquet_input_keeps_every_column_and_type(shared_dir, tmp_path):
    records = _records(shared_dir)
    src_table = _multi_column_table(records)
    (tmp_path / "src").mkdir()
    pq.write_table(src_table, tmp_path / "src" / "hf.parquet", row_group_size=32)  # rows span row groups
    ann = _annotate(tmp_path / "src" / "hf.parquet", tmp_path / "ann")
    want = _kept_texts(ann, [r["text"] for r in records])
    assert 0 < len(want) < N and any(want[r] != records[r]["text"] for r in want)

    run_select(SelectConfig(str(ann), str(tmp_path / "pq"), recipe=Recipe.from_rules(RULES), format="parquet",
                            progress=False, workers=1))
    out = pq.read_table(tmp_path / "pq" / "hf.parquet")
    renamed = [("source_row" if f.name == "row" else f.name, f.type) for f in src_table.schema]
    assert [(f.name, f.type) for f in out.schema] == [("id", pa.string()), ("shard", pa.string()),
                                                       ("row", pa.int64())] + renamed
    src_rows = src_table.to_pylist()
    got = out.to_pylist()
    assert [r["row"] for r in got] == sorted(want)
    for r in got:
        src = dict(src_rows[r["row"]])
        src["source_row"] = src.pop("row")
        assert r.pop("text") == want[r["row"]]
        assert (r.pop("id"), r.pop("shard"), r.pop("row")) == (f"hf.parquet/{src['source_row'] - 1000}",
                                                               "hf.parquet", src["source_row"] - 1000)
        src.pop("text")
        assert r == src  # every other column, value for value (structs, lists, float32, timestamp)

    # Parquet -> JSONL: every column, JSON-encoded (timestamps as ISO 8601)
    run_select(SelectConfig(str(ann), str(tmp_path / "js"), recipe=Recipe.from_rules(RULES), progress=False,
                            workers=1))
    with gzip.open(tmp_path / "js" / "hf.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    assert [r["row"] for r in lines] == sorted(want)
    for r in lines:
        src = src_rows[r["row"]]
        assert list(r) == ["id", "shard", "row", "doc_id", "source", "text", "meta", "tags", "score", "fetched",
                           "spans", "source_row"]
        assert r["text"] == want[r["row"]] and r["meta"] == src["meta"] and r["tags"] == src["tags"]
        assert r["spans"] == src["spans"] and r["score"] == pytest.approx(src["score"])
        assert datetime.datetime.fromisoformat(r["fetched"]) == src["fetched"]


def test_jsonl_input_keeps_every_key(shared_dir, tmp_path):
    records = _records(shared_dir)
    for i, r in enumerate(records):  # arbitrary extra keys of every JSON type, and key clashes
        r["quality"] = {"score": i / 7, "flags": [i % 2 == 0, None], "nested": {"deep": [{"x": "é", "i": i}]}}
        r["n"] = i
        r["maybe"] = None if i % 2 else "yes"
        r["shard"] = f"crawl-{i % 4}"
        r["mixed"] = i if i % 2 else str(i)  # no common Arrow type
    (tmp_path / "src").mkdir()
    with gzip.open(tmp_path / "src" / "web.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    ann = _annotate(tmp_path / "src" / "web.jsonl.gz", tmp_path / "ann")
    want = _kept_texts(ann, [r["text"] for r in records])

    run_select(SelectConfig(str(ann), str(tmp_path / "js"), recipe=Recipe.from_rules(RULES), progress=False,
                            workers=1))
    with gzip.open(tmp_path / "js" / "web.jsonl.gz", "rt", encoding="utf-8") as fh:
        got = [json.loads(line) for line in fh]
    assert [r["row"] for r in got] == sorted(want)
    for r in got:
        src = dict(records[r["row"]])
        src["source_shard"] = src.pop("shard")
        assert (r.pop("shard"), r["id"]) == ("web.jsonl.gz", src["id"])
        assert r.pop("text") == want[r.pop("row")]
        src.pop("text")
        assert r == src  # every key, every value as parsed

    # JSONL -> Parquet: schema inferred from the records, objects as structs, conflicts as JSON text
    run_select(SelectConfig(str(ann), str(tmp_path / "pq"), recipe=Recipe.from_rules(RULES), format="parquet",
                            progress=False, workers=1))
    out = pq.read_table(tmp_path / "pq" / "web.parquet")
    types = {f.name: f.type for f in out.schema}
    assert pa.types.is_struct(types["meta"]) and pa.types.is_struct(types["quality"])
    assert types["quality"].field("flags").type == pa.list_(pa.bool_())
    assert types["n"] == pa.int64() and types["mixed"] == pa.string() and types["maybe"] == pa.string()
    for r in out.to_pylist():
        src = records[r["row"]]
        assert r["text"] == want[r["row"]] and r["source_shard"] == src["shard"] and r["n"] == src["n"]
        assert r["quality"] == src["quality"] and r["maybe"] == src["maybe"]
        assert json.loads(r["mixed"]) == src["mixed"]
        assert {k: v for k, v in r["meta"].items() if v is not None} == src["meta"]  # absent -> null


def test_dotted_text_field_is_cut_in_place(shared_dir, tmp_path):
    """A text inside an object stays there (cut by the line rule); nothing else moves."""
    records = [{"doc": {"body": r["text"], "lang": r["meta"]["lang"]}, "id": r["id"]} for r in _records(shared_dir, 40)]
    (tmp_path / "src").mkdir()
    with open(tmp_path / "src" / "d.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    ann = tmp_path / "ann"
    run_annotate(AnnotateConfig([str(tmp_path / "src" / "d.jsonl")], str(ann), text_field="doc.body",
                                signals=["rps_doc_word_count", "rps_lines_num_words"], workers=1, progress=False))
    want = _kept_texts(ann, [r["doc"]["body"] for r in records])
    run_select(SelectConfig(str(ann), str(tmp_path / "js"), recipe=Recipe.from_rules(RULES), progress=False,
                            workers=1))
    with gzip.open(tmp_path / "js" / "d.jsonl.gz", "rt", encoding="utf-8") as fh:
        got = [json.loads(line) for line in fh]
    assert got and [r["row"] for r in got] == sorted(want)
    for r in got:
        assert r == {"id": records[r["row"]]["id"], "shard": "d.jsonl", "row": r["row"],
                     "doc": {"body": want[r["row"]], "lang": records[r["row"]]["doc"]["lang"]}}
