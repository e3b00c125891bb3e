"""Issue 10 item 4: `lang` is validated, and a document whose language has no word lists gets
null word-list signals (not RPv2's silent 0.0), counted per language in one warning, the shard
metadata and annotate.json. Documents in languages with lists keep RPv2's exact values.

Fixtures are real web documents of several languages from the dev corpus (`meta.lang`)."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from textsieve.cli import main
from textsieve.signals.reference import load_bad_words, load_stop_words, reference_signals
from textsieve.signals.resources import add_resources, load_word_lists
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.annotate.lang import NO_LANG, LanguageError

WORD_LIST_SIGNALS = ("rps_doc_stop_word_fraction", "rps_doc_ldnoobw_words")
# A few of the most frequent Portuguese function words: a user-supplied list for a language
# beyond RPv2's five.
PT_STOP = ["de", "a", "o", "que", "e", "do", "da", "em", "um", "para", "é", "com", "não", "uma", "os", "no",
           "se", "na", "por", "mais", "as", "dos", "como", "mas", "ao", "ele", "das"]


def _docs(shared_dir: Path, want: dict[str, int]) -> list[dict]:
    """The first `want[lang]` documents of each language of the dev web sample, in file order."""
    left = dict(want)
    out = []
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            lang = (doc.get("meta") or {}).get("lang")
            if left.get(lang, 0) > 0:
                left[lang] -= 1
                out.append(doc)
                if not any(left.values()):
                    break
    assert not any(left.values()), left
    return out


def _write(path: Path, docs: list[dict]) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    return str(path)


def _scores(table, column: str) -> list:
    return [spans[0]["score"] for spans in table.column(column).to_pylist()]


def _meta(path: Path) -> dict:
    return json.loads(pq.read_metadata(path).metadata[b"textsieve"])


# ----------------------------------------------------------------------------- validation


def test_unknown_lang_is_one_line_cli_error_listing_codes(shared_dir, tmp_path, capsys):
    src = _write(tmp_path / "docs.jsonl", _docs(shared_dir, {"en": 3}))
    out = tmp_path / "out"
    assert main(["annotate", src, "-o", str(out), "--lang", "english", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("textsieve: error: ") and err.count("\n") == 1, err
    assert "'english'" in err and "did you mean 'en'" in err
    assert "en, de, fr, es, it, auto" in err and "Traceback" not in err
    assert not (out / "docs" / "docs.parquet").exists()
    assert main(["annotate", src, "-o", str(out), "--lang", "xx", "-q"]) == 2
    assert "'xx'" in capsys.readouterr().err


def test_unknown_lang_is_an_error_in_the_api(shared_dir, tmp_path):
    src = _write(tmp_path / "docs.jsonl", _docs(shared_dir, {"en": 3}))
    with pytest.raises(LanguageError, match="valid codes: en, de, fr, es, it, auto") as exc:
        run_annotate(AnnotateConfig([src], str(tmp_path / "out"), lang="pcm", workers=1, progress=False))
    assert isinstance(exc.value, ValueError)
    for ok in ("en", "de", "auto", None):  # None with a lang field: no fallback language
        run_annotate(AnnotateConfig([src], str(tmp_path / f"ok-{ok}"), lang=ok, lang_field="meta.lang",
                                    signals="rps_doc_word_count", workers=1, progress=False))


def test_unknown_lang_in_a_pipeline_fails_the_dry_run(shared_dir, tmp_path, capsys):
    src = _write(tmp_path / "docs.jsonl", _docs(shared_dir, {"en": 3}))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(json.dumps({"inputs": [src], "output": str(tmp_path / "out"),
                                    "annotate": {"lang": "english"}}))  # JSON is YAML
    for extra in (["--dry-run"], []):
        assert main(["run", str(pipeline), *extra]) == 2
        assert "valid codes: en, de, fr, es, it, auto" in capsys.readouterr().err
    assert not (tmp_path / "out" / "attrs").exists()


# ----------------------------------------------------------------------------- nulls and counts


def test_languages_without_lists_get_null_and_are_counted(shared_dir, resources_dir, tmp_path, caplog):
    docs = _docs(shared_dir, {"en": 12, "de": 6, "pcm": 4, "ja": 3})
    docs.append({"id": "no-lang", "text": docs[0]["text"]})  # no meta.lang and no fallback language
    src = _write(tmp_path / "docs.jsonl", docs)
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        res = run_annotate(AnnotateConfig([src], str(out), lang=None, lang_field="meta.lang", workers=2,
                                          batch_size=7, resources=str(resources_dir), progress=False,
                                          signals="content"))
    table = pq.read_table(out / "docs" / "docs.parquet")
    stop = {g: load_stop_words(resources_dir / "stopwords" / f"{g}.json") for g in ("en", "de")}
    bad = {g: load_bad_words(resources_dir / "ldnoobw" / g) for g in ("en", "de")}
    rows = table.to_pylist()
    for doc, row in zip(docs, rows):
        lang = (doc.get("meta") or {}).get("lang")
        for name in WORD_LIST_SIGNALS:
            if lang in ("en", "de"):  # RPv2's exact values, and never null
                expected = reference_signals(doc["text"], stop[lang], bad[lang])[name]
                assert [[s["start"], s["end"], s["score"]] for s in row[name]] == expected, (doc["id"], name)
                assert row[name + "__score"] is not None
            else:  # one [0, len, null] span, the scalar twin null too
                assert row[name] == [{"start": 0, "end": len(doc["text"]), "score": None}], (doc["id"], name)
                assert row[name + "__score"] is None
    expected_counts = {"ja": 3, "pcm": 4, NO_LANG: 1}
    assert _meta(out / "docs" / "docs.parquet")["langs_without_word_lists"] == expected_counts
    assert res.langs_without_word_lists == expected_counts
    summary = json.loads((out / ".textsieve" / "annotate.json").read_text())
    assert summary["result"]["langs_without_word_lists"] == expected_counts
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    msg = warnings[0]
    assert msg.startswith("8 document(s) are in a language without word lists")
    assert "pcm 4, ja 3, (none) 1" in msg and "rps_doc_stop_word_fraction, rps_doc_ldnoobw_words" in msg
    assert "textsieve resources add DIR" in msg and "--resources DIR" in msg and "en, de, fr, es, it" in msg


def test_rpv2_languages_only_means_no_warning_and_zero_counts(shared_dir, resources_dir, tmp_path, caplog):
    src = _write(tmp_path / "docs.jsonl", _docs(shared_dir, {"en": 4, "fr": 2}))
    with caplog.at_level(logging.WARNING):
        run_annotate(AnnotateConfig([src], str(tmp_path / "out"), lang_field="meta.lang", workers=1,
                                    resources=str(resources_dir), progress=False, signals="content"))
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    table = pq.read_table(tmp_path / "out" / "docs" / "docs.parquet")
    assert None not in _scores(table, "rps_doc_stop_word_fraction")
    assert _meta(tmp_path / "out" / "docs" / "docs.parquet")["langs_without_word_lists"] == {}


def test_null_word_list_scores_fail_every_recipe_rule(shared_dir, resources_dir, tmp_path):
    from textsieve.recipes.funnel import compute_funnel
    from textsieve.recipes.language import Recipe

    src = _write(tmp_path / "docs.jsonl", _docs(shared_dir, {"en": 6, "ja": 2, "pcm": 3}))
    run_annotate(AnnotateConfig([src], str(tmp_path / "attrs"), lang_field="meta.lang", workers=1,
                                resources=str(resources_dir), progress=False, signals="content"))
    rules = {"at_least": "rps_doc_stop_word_fraction >= 0", "below": "rps_doc_stop_word_fraction < 2",
             "not_above": "not (rps_doc_stop_word_fraction > 2)", "bad_words": "rps_doc_ldnoobw_words <= 1000",
             "known": "rps_doc_stop_word_fraction is not null"}
    funnel = compute_funnel(str(tmp_path / "attrs"), Recipe.from_rules(rules))
    assert funnel.total == 11 and funnel.kept == 6
    assert {r.name: r.removed_alone for r in funnel.rules} == {name: 5 for name in rules}
    keep = compute_funnel(str(tmp_path / "attrs"),
                          Recipe.from_rules({"keep_unknown": "rps_doc_stop_word_fraction is null or "
                                                             "rps_doc_stop_word_fraction >= 0"}))
    assert keep.kept == 11  # the documented way to keep them


def test_lang_auto_nulls_detected_languages_without_lists(shared_dir, resources_dir, tmp_path):
    pytest.importorskip("py3langid")
    docs = _docs(shared_dir, {"en": 5, "de": 3, "ja": 3, "ru": 2})
    src = _write(tmp_path / "docs.jsonl", docs)
    res = run_annotate(AnnotateConfig([src], str(tmp_path / "out"), lang="auto", workers=1, progress=False,
                                      resources=str(resources_dir), signals="rps_doc_stop_word_fraction"))
    table = pq.read_table(tmp_path / "out" / "docs" / "docs.parquet")
    detected = table.column("ts_lang").to_pylist()
    stop = _scores(table, "rps_doc_stop_word_fraction")
    listed = ("en", "de", "fr", "es", "it")
    assert [s is None for s in stop] == [g not in listed for g in detected]
    assert sum(g in ("ja", "ru") for g in detected) >= 4  # the detector sees them
    expected = Counter(g or NO_LANG for g in detected if g not in listed)
    assert res.langs_without_word_lists == dict(sorted(expected.items()))


# ----------------------------------------------------------------------------- more languages


def test_user_lists_for_another_language(shared_dir, resources_dir, tmp_path, caplog, capsys):
    res_dir = tmp_path / "res"
    shutil.copytree(resources_dir, res_dir)
    (res_dir / "stopwords" / "pt.json").write_text(json.dumps(PT_STOP), encoding="utf-8")
    (res_dir / "ldnoobw" / "README.md").write_text("not a list")  # as in an LDNOOBW checkout
    lists = load_word_lists(res_dir)
    assert lists.extra_langs == ("pt",) and lists.missing == []

    docs = _docs(shared_dir, {"en": 3, "pt": 4})
    src = _write(tmp_path / "docs.jsonl", docs)
    with caplog.at_level(logging.WARNING):
        res = run_annotate(AnnotateConfig([src], str(tmp_path / "out"), lang_field="meta.lang", workers=1,
                                          resources=str(res_dir), progress=False, signals="content"))
    table = pq.read_table(tmp_path / "out" / "docs" / "docs.parquet")
    stop, bad = _scores(table, "rps_doc_stop_word_fraction"), _scores(table, "rps_doc_ldnoobw_words")
    for doc, s, b in zip(docs, stop, bad):
        if doc["meta"]["lang"] == "pt":  # a stop-word list but no LDNOOBW list
            assert s == reference_signals(doc["text"], frozenset(PT_STOP), None)["rps_doc_stop_word_fraction"][0][2]
            assert s > 0 and b is None
        else:
            assert s is not None and b is not None
    assert res.langs_without_word_lists == {"pt": 4}
    msg = caplog.records[-1].getMessage()
    assert "pt 4 (only rps_doc_ldnoobw_words)" in msg and "installed for: en, de, fr, es, it, pt." in msg

    # `--lang pt` is now valid, and the valid codes list it
    run_annotate(AnnotateConfig([src], str(tmp_path / "pt"), lang="pt", workers=1, resources=str(res_dir),
                                progress=False, signals="rps_doc_stop_word_fraction"))
    assert main(["annotate", src, "-o", str(tmp_path / "x"), "--lang", "pl", "--resources", str(res_dir),
                 "-q"]) == 2
    assert "en, de, fr, es, it, pt, auto" in capsys.readouterr().err

    dest = add_resources(res_dir)  # installing copies the extra list, not the README
    assert (dest / "stopwords" / "pt.json").is_file() and not (dest / "ldnoobw" / "README.md").exists()
    assert load_word_lists(dest).stop_words["pt"] == frozenset(PT_STOP)


# ----------------------------------------------------------------------------- --lang auto fallback

#: dev-corpus documents py3langid tags Nigerian Pidgin (`pcm`, no word lists): English Usenet posts
#: and web pages with English close behind (they fall back to en), and real Pidgin and Krio
#: (UDHR translations, English at ~0) and a C4 page with English at 0.42 of pcm (they keep pcm)
PCM_FALLS_BACK = ("20ng/test/rec.sport.baseball/104842", "20ng/train/comp.sys.mac.hardware/51522",
                  "c4-en/0635", "20ng/train/rec.sport.hockey/53532")
PCM_STAYS = ("udhr/NigerianPidginEnglish-Latin1", "udhr/Krio-UTF8", "c4-en/0083")


def _by_id(shared_dir: Path, ids: tuple[str, ...]) -> list[dict]:
    want, out = set(ids), {}
    with gzip.open(shared_dir / "corpora" / "dev" / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc["id"] in want:
                out[doc["id"]] = doc
    return [out[i] for i in ids]


def test_lang_auto_falls_back_to_a_close_language_with_lists(shared_dir, tmp_path, caplog):
    """English text mis-tagged `pcm` gets English word-list signals (RPv2's en values), counted as
    fallbacks; real Pidgin keeps `pcm` and null. The rule is checked against py3langid's own
    `rank` (not our kernel): fall back when P(en) >= FALLBACK_SHARE * P(top)."""
    pytest.importorskip("py3langid")
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from textsieve.models.langid import Py3LangId, prepare
    from textsieve.stages.annotate.lang import FALLBACK_SHARE

    docs = _by_id(shared_dir, PCM_FALLS_BACK + PCM_STAYS) + _docs(shared_dir, {"en": 2})
    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    ranks = [ident.rank(Py3LangId._nfc(prepare(d["text"]))) for d in docs]
    falls = [r[0][0] == "pcm" and dict(r)["en"] >= FALLBACK_SHARE * r[0][1] for r in ranks]
    assert falls == [True] * 4 + [False] * 5 and [r[0][0] for r in ranks[:7]] == ["pcm"] * 7
    src = _write(tmp_path / "docs.jsonl", docs)
    caplog.set_level(logging.INFO, logger="textsieve")
    res = run_annotate(AnnotateConfig([src], str(tmp_path / "auto"), lang="auto", workers=1, progress=False,
                                      signals="rps_doc_stop_word_fraction"))
    en = run_annotate(AnnotateConfig([src], str(tmp_path / "en"), lang="en", workers=1, progress=False,
                                     signals="rps_doc_stop_word_fraction"))
    assert en.documents == res.documents == 9
    auto_t = pq.read_table(tmp_path / "auto" / "docs" / "docs.parquet")
    en_t = pq.read_table(tmp_path / "en" / "docs" / "docs.parquet")
    assert auto_t.column("ts_lang").to_pylist()[:7] == ["pcm"] * 7  # what the model said, unchanged
    stop, stop_en = _scores(auto_t, "rps_doc_stop_word_fraction"), _scores(en_t, "rps_doc_stop_word_fraction")
    assert stop[:4] == stop_en[:4] and all(s > 0 for s in stop[:4])  # English stop words found, en values
    assert stop[4:7] == [None] * 3 and stop[7:] == stop_en[7:]
    assert res.lang_fallbacks == {"pcm->en": 4} and res.langs_without_word_lists == {"pcm": 3}
    assert res.lang_confidence["pcm"]["docs"] == 7 and res.lang_confidence["en"]["docs"] == 2
    assert 0 < res.lang_confidence["pcm"]["mean_score"] < 1
    summary = json.loads((tmp_path / "auto" / ".textsieve" / "annotate.json").read_text())["result"]
    assert summary["lang_fallbacks"] == {"pcm->en": 4} and summary["lang_confidence"] == res.lang_confidence
    assert _meta(tmp_path / "auto" / "docs" / "docs.parquet")["lang_fallbacks"] == {"pcm->en": 4}
    assert any("pcm->en 4" in r.getMessage() for r in caplog.records)
