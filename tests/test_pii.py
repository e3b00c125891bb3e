"""`textsieve pii` (issue 14 item 2): detectors on real web text with planted, valid PII
(`benchmarks/_pii_labelled.py`), their precision rules, and the `_pii` attribute set stage."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _files import web_docs

from textsieve.cli import main
from textsieve.personal_data.checks import card_ok, iban_ok, luhn_ok
from textsieve.personal_data.detect import PII_TYPES, PiiSettings, detect
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.doc_set import DocSetError
from textsieve.stages.training.pii import PiiConfig, PiiError, output_schema, run_pii

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _pii_labelled as labelled  # noqa: E402

N_DOCS = 200


@pytest.fixture(scope="module")
def planted(dev_dir) -> list[labelled.LabelledDoc]:
    return labelled.build(web_docs(dev_dir, N_DOCS), seed=14, decoy_rate=0.6)


def _covers(spans, start: int, end: int) -> bool:
    return any(s <= start and e >= end for s, e, _ in spans)


def test_recall_on_planted_values_of_every_type_and_no_hit_on_decoys(planted):
    found = {t: 0 for t in PII_TYPES}
    total = {t: 0 for t in PII_TYPES}
    decoy_hits = []
    for doc in planted:
        hits = detect(doc.text, PiiSettings())
        for p in doc.plants:
            if p.type == "decoy":
                decoy_hits += [(t, doc.text[s:e], p.value) for t, spans in hits.items() for s, e, _ in spans
                               if s < p.end and p.start < e]
                continue
            total[p.type] += 1
            # the whole value, but a leading "+" or "(" of a phone number may stay outside
            start = p.start + len(p.value) - len(p.value.lstrip("+("))
            found[p.type] += _covers(hits[p.type], start, p.end)
    assert min(total.values()) >= 30
    assert found == total
    assert decoy_hits == []


@pytest.mark.parametrize("text", [
    "Order 4111 1111 1111 1112 was shipped.",  # Luhn fails
    "Test card 6232 0903 2169 2376 560 is declined.",  # 19 digits fail Luhn; its first 16 pass: not a card
    "IBAN DE88 3704 0044 0532 0130 00 (wrong check digits)",  # mod 97 fails
    "IBAN DE89 3704 0044 0532 0130 0 is one character short.",  # German IBANs have 22 characters
    "ISBN 978-3-16-148410-0 and 9783161484100, ISBN-10 0-306-40615-2.",
    "Released on 2021-03-14 (14.03.2021), 03/14/2021.",
    "Upgrade to version 1.2.3.4 or v2.0.11.7; see section-7.1.1.1.",
    "Coordinates 45.83011076, 2.294481; price 1,299.00.",
    "Use the logo@2x.png asset and std::vector<int> with a::b.",
    "The time was 10:30:45 and the MAC 00:1A:2B:3C:4D:5E.",
    "Netmask 255.255.255.0, gateway 192.168.1.1, docs use 192.0.2.1 and 2001:db8::1; __version__ = '0.5.1.2'",
])
def test_no_hit_on_numbers_that_fail_their_checks(text):
    assert {t: s for t, s in detect(text, PiiSettings()).items() if s} == {}


def test_known_values_and_offsets_are_python_str_offsets():
    text = ("Grüße an zoë — schreib an anna.smith@web.de, ruf +49 30 901820 an; Karte 4111-1111-1111-1111, "
            "IBAN GB82 WEST 1234 5698 7654 32, Server 2a00:1450:4001:82a::200e und 8.8.8.8 (nicht 10.0.0.1).")
    hits = detect(text, PiiSettings())
    got = {t: [text[s:e] for s, e, _ in spans] for t, spans in hits.items()}
    assert got == {"email": ["anna.smith@web.de"], "ip": ["2a00:1450:4001:82a::200e", "8.8.8.8"],
                   "phone": ["+49 30 901820"], "credit_card": ["4111-1111-1111-1111"],
                   "iban": ["GB82 WEST 1234 5698 7654 32"]}
    assert [v for _, _, v in hits["ip"]] == [6, 4] and hits["phone"][0][2] == 49
    assert luhn_ok("4111111111111111") and card_ok("378282246310005") and not card_ok("1234567812345670")
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")


def test_national_numbers_follow_the_phone_regions():
    text = "Ruf 030 901820 an oder (202) 555-0143."
    us = [text[s:e] for s, e, _ in detect(text, PiiSettings(types=("phone",)))["phone"]]
    de = [text[s:e] for s, e, _ in detect(text, PiiSettings(types=("phone",), phone_regions=("DE",)))["phone"]]
    assert "030 901820" not in us and "030 901820" in de


@pytest.fixture(scope="module")
def attrs(planted, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pii")
    (tmp / "docs").mkdir()
    for k in range(2):
        with gzip.open(tmp / "docs" / f"part{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for d in planted[k * 30:(k + 1) * 30]:
                fh.write(json.dumps({"id": d.id, "text": d.text, "source": "web"}) + "\n")
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"), signals=["rps_doc_word_count"],
                                workers=1, progress=False))
    return tmp / "attrs"


def test_stage_writes_spans_counts_and_refuses_other_settings(attrs, planted, tmp_path, capsys):
    import shutil

    d = tmp_path / "a"
    shutil.copytree(attrs, d)
    res = run_pii(PiiConfig(str(d), workers=1, progress=False))
    assert (res.documents, res.shards) == (60, 2)
    t = pq.read_table(d / "sets" / "pii" / "part0.parquet")
    assert t.schema == output_schema()
    texts = {x.id: x for x in planted}
    n = 0
    for row in t.to_pylist():
        doc = texts[row["id"]]
        spans = [(s["start"], s["end"]) for c in PII_TYPES for s in row[f"ts_pii_{c}"]]
        assert row["ts_pii_count"] == len(spans)
        for p in doc.plants:
            if p.type != "decoy":
                assert any(doc.text[s:e].endswith(p.value.lstrip("+(")) for s, e in spans), p
        n += row["ts_pii_count"]
    summary = json.loads((d / "sets" / "pii" / ".textsieve" / "summary.json").read_text())
    assert summary["ts_pii_count"] >= n and summary["types"] == list(PII_TYPES)
    assert summary["phone_regions"] == ["US"] and summary["detector_version"] == 1
    assert run_pii(PiiConfig(str(d), workers=1, progress=False)).skipped
    with pytest.raises(DocSetError, match=r"types=.*--overwrite"):
        run_pii(PiiConfig(str(d), types="email,ip", progress=False))
    sub = run_pii(PiiConfig(str(d), types=["email", "ip"], overwrite=True, workers=1, progress=False))
    assert pq.read_table(d / "sets" / "pii" / "part1.parquet").column_names == ["id", "shard", "row", "ts_pii_email",
                                                                       "ts_pii_ip", "ts_pii_count"]
    assert sub.summary["ts_pii_count"] < summary["ts_pii_count"]
    assert main(["pii", str(d), "--types", "email,card", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["textsieve: error: pii: unknown type(s) card; valid: email, ip, phone, credit_card, iban"]
    with pytest.raises(PiiError, match=r"unknown phone region\(s\) XX; use ISO 3166 codes"):
        run_pii(PiiConfig(str(d), phone_regions="us,XX", progress=False))


def test_recipes_see_pii_spans_as_free_spans_not_a_document_value(tmp_path):
    """`ts_pii_email` holds any number of spans anywhere in a text; recipes read a doc-level
    span column as its first span's score, so `ts_pii_email > 0` silently meant "the first
    e-mail's score". The column now says its level in its field metadata: recipes refuse it
    as a value and `ts_pii_count` is the one to use."""
    from textsieve.recipes.schema import read_schema
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.training.pii import PiiConfig, run_pii

    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "text": f"mail me at a{i}@example.org or b@example.com\n"})
                            + "\n" for i in range(3)))
    run_annotate(AnnotateConfig([str(docs)], str(tmp_path / "a"), signals=["rps_doc_word_count"], workers=1,
                                progress=False))
    run_pii(PiiConfig(str(tmp_path / "a"), workers=1))
    schema = read_schema(str(tmp_path / "a"))
    assert schema.columns["ts_pii_email"].kind == "other"
    assert schema.columns["ts_pii_count"].kind == "scalar"
