"""`textsieve mix`: plans, shares, epochs, infeasible mixes, schema errors, token columns, re-runs
(issue 14 item 4), on real web and Wikipedia text."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
import zstandard
from _files import read_jsonl
from _mix_corpus import corpus as build_corpus
from _mix_corpus import mix_file

from textsieve.cli import main
from textsieve.mixing.spec import MixError, load_mix
from textsieve.stages.training.mix import MixConfig, plan_mix, run_mix


@pytest.fixture(scope="module")
def corpus(dev_dir, tmp_path_factory):
    return build_corpus(dev_dir, tmp_path_factory)


def _records(out: Path) -> list[dict]:
    recs = []
    for p in sorted(out.glob("shard-*.jsonl.zst")):
        with open(p, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh).read()
        recs += [json.loads(line) for line in data.decode("utf-8").splitlines()]
    return recs


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main([*args, "--workers", "1"] if args[0] == "mix" else list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_shares_within_half_a_document_of_target(corpus, tmp_path):
    """Each source's tokens miss its target by at most half its largest document; the shards hold
    exactly the planned records, each text counted with the mix's tokenizer."""
    from textsieve.tokenization.tokenizer import load_tokenizer

    f = mix_file(tmp_path / "mix.yaml", corpus, tokens=400_000)
    res = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    recs = _records(tmp_path / "out")
    tok = load_tokenizer(str(corpus["tok"]))
    for sp in res.plan.sources:
        mine = [r for r in recs if r["source"] == sp.name]
        biggest = max(r["tokens"] for r in mine)
        assert abs(sp.drawn_tokens - sp.target_tokens) <= biggest / 2, (sp.name, sp.drawn_tokens, sp.target_tokens)
        assert sum(r["tokens"] for r in mine) == sp.drawn_tokens
        assert abs(sp.drawn_tokens / res.tokens - sp.share) < 0.01
    assert len(recs) == res.documents
    assert [len(x) for x in tok.encode_batch([r["text"] for r in recs[:50]])] == [r["tokens"] for r in recs[:50]]
    src = res.manifest["info"]["mix"]["sources"]
    assert [s["name"] for s in src] == ["web", "wiki"] and all(s["token_count"] == "tokenizer" for s in src)
    assert set(res.manifest["info"]["mix"]["languages"]["web"]) >= {"en"}  # ts_lang of the web attributes


def test_upsampling_whole_epochs_plus_partial_and_max_epochs(corpus, tmp_path):
    """wiki at 2.4 epochs: every document twice, some three times, never more (max_epochs 3);
    the partial epoch draws without replacement."""
    f = mix_file(tmp_path / "mix.yaml", corpus, tokens=720_000, web={"share": 0.4, "max_epochs": 1},
                 wiki={"share": 0.6, "max_epochs": 3})
    res = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    wiki = res.plan.sources[1]
    assert 2 < wiki.epochs_needed < 3 and wiki.epochs <= 3
    ids = [r["id"] for r in _records(tmp_path / "out") if r["source"] == "wiki"]
    counts = np.unique(ids, return_counts=True)[1]
    assert len(counts) == wiki.documents and counts.min() == 2 and counts.max() == 3
    web = [r["id"] for r in _records(tmp_path / "out") if r["source"] == "web"]
    assert len(web) == len(set(web))  # max_epochs 1: no repeats


@pytest.mark.parametrize("change, reason", [
    ({"wiki": {"max_epochs": 1, "share": 0.6}, "web": {"share": 0.4}, "tokens": 720_000}, "epochs > max_epochs 1"),
    ({"wiki": {"share": 0.2}}, "shares sum to 0.9, not 1"),
    ({"web": {"recipe": "EMPTY"}}, "source 'web': empty source"),
])
def test_infeasible_mix_flagged_before_anything_is_written(corpus, tmp_path, capsys, change, reason):
    web = dict(change.get("web", {}))
    if web.get("recipe") == "EMPTY":
        empty = tmp_path / "empty.yaml"
        empty.write_text(yaml.safe_dump({"name": "none", "rules": {"huge": "rps_doc_word_count > 100000000"}}))
        web["recipe"] = str(empty)
    f = mix_file(tmp_path / "mix.yaml", corpus, **{**change, "web": web})
    out = tmp_path / "out"
    rc, stdout, err = _cli(capsys, "mix", str(f), "--dry-run", "-q")
    assert rc != 0 and "INFEASIBLE" in stdout and "source" in stdout.splitlines()[1]
    assert err.count("\n") == 1 and err.startswith("textsieve: error: infeasible mix: ") and reason in err
    rc, stdout, err = _cli(capsys, "mix", str(f), "-o", str(out), "-q")
    assert rc != 0 and reason in err and err.count("\n") == 1 and "INFEASIBLE" in stdout
    assert not out.exists()


@pytest.mark.parametrize("data, key", [
    ({"sources": [{"name": "a", "attributes": "x", "recipe": "gopher", "share": 1.0, "sahre": 1}]}, "sahre"),
    ({"sources": [{"name": "a", "attributes": "x", "selection": "y", "share": 1}]}, "exactly one of attributes"),
    ({"sources": [{"name": "a", "attributes": "x", "share": 1}]}, "needs recipe: and/or dsir:"),
    ({"sources": [{"name": "a", "selection": "y"}]}, "share: (of the total tokens) or weight:"),
    ({"sources": [{"name": "a", "selection": "y", "share": -1}]}, "sources[0] (a).share: must be >= 0"),
    ({"sources": [{"name": "a", "selection": "y", "share": 1}], "format": "tfrecord"}, "format: expected one of"),
    ({"sources": [{"name": "a", "selection": "y", "share": 1}], "shard_size": "big"}, "shard_size: cannot read"),
    ({"sources": [{"name": "a", "selection": "y", "share": 1}], "tokens": "lots"}, "tokens: cannot read"),
    ({"sources": [{"name": "a", "selection": "y", "share": 0.5}, {"name": "b", "selection": "z", "weight": 1}]},
     "mix share: and weight:"),
    ({"sources": [{"name": "a", "selection": "y", "share": 1}, {"name": "a", "selection": "z", "share": 1}]},
     "name 'a' given twice"),
    ({"sources": [{"name": "a", "selection": "y", "dsir": "wiki", "share": 1}]}, "sources[0] (a).dsir: only for"),
])
def test_mix_file_errors_name_the_key(tmp_path, capsys, data, key):
    f = tmp_path / "mix.yaml"
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(MixError, match=None) as exc:
        load_mix(str(f))
    assert key in str(exc.value)
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and err.count("\n") == 1 and key in err


def test_missing_budget_and_bin_without_tokenizer_are_one_line_errors(corpus, tmp_path, capsys):
    f = mix_file(tmp_path / "mix.yaml", corpus, tokens=None)
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and err == "textsieve: error: tokens: the mix needs a total token budget (tokens: 5M in the " \
                              "file, or --tokens)\n"
    f = mix_file(tmp_path / "mix2.yaml", corpus, tokenizer="words", format="bin")
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and "format: bin writes token ids" in err and err.count("\n") == 1


def test_words_estimate_is_labelled(corpus, tmp_path, capsys):
    f = mix_file(tmp_path / "mix.yaml", corpus, tokenizer="words")
    rc, out, _ = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc == 0 and "(estimated: word/punctuation tokens)" in out.splitlines()[0]


def test_token_column_is_used_when_it_matches_the_tokenizer(corpus, tmp_path):
    """After `textsieve tokens` with the mix's tokenizer the plan reads ts_tokens_<name> and counts
    the same tokens as encoding does (same draw, same bytes)."""
    from textsieve.stages.training.tokens import TokensConfig, run_tokens

    web = tmp_path / "web-attrs"
    shutil.copytree(corpus["web"], web)
    f = mix_file(tmp_path / "mix.yaml", corpus, web={"attributes": str(web)})
    _, pools_before, plan_before = plan_mix(MixConfig(str(f), workers=1))
    run_tokens(TokensConfig(str(web), str(corpus["tok"]), workers=1, progress=False))
    _, pools, plan = plan_mix(MixConfig(str(f), workers=1))
    assert pools[0].token_count == "column:ts_tokens_tok" and pools_before[0].token_count == "tokenizer"
    assert [s.tokens for s in plan.sources] == [s.tokens for s in plan_before.sources]


def test_rerun_is_a_noop_and_other_settings_are_refused(corpus, tmp_path, capsys):
    f = mix_file(tmp_path / "mix.yaml", corpus)
    out = tmp_path / "out"
    first = run_mix(MixConfig(str(f), output=str(out), workers=1, progress=False))
    again = run_mix(MixConfig(str(f), output=str(out), workers=1, progress=False))
    assert again.skipped and not first.skipped and again.documents == first.documents
    rc, _, err = _cli(capsys, "mix", str(f), "-o", str(out), "--seed", "7", "-q")
    assert rc != 0 and "holds a mix made with other settings" in err and err.count("\n") == 1
    res = run_mix(MixConfig(str(f), output=str(out), seed=7, overwrite=True, workers=1, progress=False))
    assert not res.skipped
    rc, _, err = _cli(capsys, "mix", str(f), "-o", str(corpus["web"]), "-q")
    assert rc != 0 and err.count("\n") == 1 and str(corpus["web"]) in err  # never into an input


def test_report_shows_tokens_per_source_and_language(corpus, tmp_path, capsys):
    f = mix_file(tmp_path / "mix.yaml", corpus)
    out = tmp_path / "out"
    res = run_mix(MixConfig(str(f), output=str(out), workers=1, progress=False))
    rc, _, _ = _cli(capsys, "report", str(corpus["web"]), "-o", str(tmp_path / "r.html"), "--mix", str(out), "-q")
    page = (tmp_path / "r.html").read_text()
    assert rc == 0 and '<section id="mix">' in page and "Tokens per language" in page
    web = res.plan.sources[0]
    assert "<td>web</td><td>0.700</td>" in page and f"{web.drawn_tokens:,}" in page
    en = res.manifest["info"]["mix"]["languages"]["web"]["en"]
    assert f"<td>web</td><td>en</td><td>{en:,}</td>" in page
    rc, _, err = _cli(capsys, "report", str(corpus["web"]), "-o", str(tmp_path / "r2.html"), "--mix",
                      str(corpus["web"]), "-q")
    assert rc != 0 and err.count("\n") == 1 and "not a `textsieve mix` output" in err


# ---------------------------------------------------------------- issue 14 review: languages and redact: sources

@pytest.fixture(scope="module")
def sample_corpus(tmp_path_factory) -> dict[str, Path]:
    """The bundled sample (records carry `meta.lang`), annotated with `--lang-field meta.lang` (so
    no `ts_lang` column) and selected with `select` (a selection source)."""
    from _mix_corpus import RECIPE

    from textsieve.sample import SampleSources, build_sample
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.select.select import SelectConfig, run_select

    tmp = tmp_path_factory.mktemp("mixsample")
    with warnings.catch_warnings():  # without the standard library's docstrings (slow to parse): fewer documents
        warnings.simplefilter("ignore")
        build_sample(tmp / "data" / "sample.jsonl.gz", max_docs=150, sources=SampleSources(stdlib_dir=None))
    recipe = tmp / "words20.yaml"
    recipe.write_text(yaml.safe_dump(RECIPE))
    run_annotate(AnnotateConfig([str(tmp / "data")], str(tmp / "attrs"), signals=["rps_doc_word_count"],
                                lang_field="meta.lang", workers=1, progress=False))
    run_select(SelectConfig(directory=str(tmp / "attrs"), output=str(tmp / "sel"), recipe=str(recipe), workers=1,
                            progress=False))
    return {"root": tmp, "attrs": tmp / "attrs", "sel": tmp / "sel", "recipe": recipe}


def test_languages_come_from_the_recorded_lang_field(sample_corpus, tmp_path, capsys):
    """Before: a mix of the sample's attributes (language in meta.lang, no ts_lang) and of its
    `select` output listed every token as `unknown`; now as `en`, in the manifest, the records
    and the report. A selection's recorded lang_field (selection.json) is the field read."""
    sel = json.loads((sample_corpus["sel"] / ".textsieve" / "selection.json").read_text())
    assert sel["read_options"]["lang_field"] == "meta.lang"
    data = {"tokens": 20_000, "tokenizer": "words", "seed": 0, "shard_size": "8K tokens", "sources": [
        {"name": "attrs", "attributes": str(sample_corpus["attrs"]), "recipe": str(sample_corpus["recipe"]),
         "share": 0.5},
        {"name": "sel", "selection": str(sample_corpus["sel"]), "share": 0.5}]}
    res = run_mix(MixConfig(data, output=str(tmp_path / "out"), workers=1, progress=False))
    langs = res.manifest["info"]["mix"]["languages"]
    assert set(langs["attrs"]) == {"en"} and set(langs["sel"]) == {"en"}, langs
    assert {r["lang"] for r in _records(tmp_path / "out")} == {"en"}
    rc, _, _ = _cli(capsys, "report", str(sample_corpus["attrs"]), "-o", str(tmp_path / "r.html"), "--mix",
                    str(tmp_path / "out"), "-q")
    page = (tmp_path / "r.html").read_text()
    assert rc == 0 and f"<td>sel</td><td>en</td><td>{langs['sel']['en']:,}</td>" in page
    assert "<td>unknown</td>" not in page
    # the recorded field is the one read: point it at the records' `source` field instead
    moved = tmp_path / "sel2"
    shutil.copytree(sample_corpus["sel"], moved)
    _republish(moved, ".textsieve/selection.json",  # as select would have recorded it (an edit is not believed)
               json.dumps({**sel, "read_options": {**sel["read_options"], "lang_field": "source"}}).encode())
    data["sources"] = [{"name": "sel", "selection": str(moved), "share": 1.0}]
    _, pools, _ = plan_mix(MixConfig(data, workers=1))
    sources = {r["source"] for f in sorted(moved.glob("*.jsonl.gz")) for r in read_jsonl(f)}
    assert "python-docs" in sources and {x for sp in pools[0].shards for x in sp.lang} == sources


@pytest.fixture(scope="module")
def planted(dev_dir, tmp_path_factory) -> dict:
    """40 real web pages with planted PII (`benchmarks/_pii_labelled.py`), annotated, with `_pii`."""
    import gzip
    import sys

    from _files import web_docs

    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.training.pii import PiiConfig, run_pii

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import _pii_labelled as labelled

    tmp = tmp_path_factory.mktemp("mixpii")
    docs = labelled.build(web_docs(dev_dir, 40), seed=5, per_doc=3)
    (tmp / "data").mkdir()
    with gzip.open(tmp / "data" / "web.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in docs)
    run_annotate(AnnotateConfig([str(tmp / "data")], str(tmp / "attrs"), signals=["rps_doc_word_count"], workers=1,
                                progress=False))
    run_pii(PiiConfig(str(tmp / "attrs"), workers=1, progress=False))
    return {"docs": docs, "attrs": tmp / "attrs", "root": tmp}


def test_redact_source_has_no_planted_email_and_counts_redacted_tokens(corpus, planted, tmp_path):
    """Before: `redact:` was an unknown key. Now an attributes source with `redact: [pii]` writes
    every planted e-mail as its placeholder, counts the redacted texts' tokens (not the
    `ts_tokens_` column of the unredacted ones), and records per source what was replaced."""
    from textsieve.personal_data.redact import PLACEHOLDERS
    from textsieve.stages.training.tokens import TokensConfig, run_tokens
    from textsieve.tokenization.tokenizer import load_tokenizer

    attrs = tmp_path / "attrs"
    shutil.copytree(planted["attrs"], attrs)
    run_tokens(TokensConfig(str(attrs), str(corpus["tok"]), workers=1, progress=False))
    source = {"name": "web", "attributes": str(attrs), "recipe": str(corpus["recipe"]), "share": 1.0}

    def mix(out: str, **extra) -> tuple[list[dict], dict]:
        data = {"tokens": 1000, "tokenizer": str(corpus["tok"]), "seed": 0, "shard_size": "20K tokens",
                "sources": [source | extra]}
        _, _, plan = plan_mix(MixConfig(data, workers=1))
        data["tokens"] = plan.sources[0].tokens  # every document once
        res = run_mix(MixConfig(data, output=str(tmp_path / out), workers=1, progress=False))
        return _records(tmp_path / out), res.manifest["info"]["mix"]["sources"][0]

    emails = [p.value for d in planted["docs"] for p in d.plants if p.type == "email"]
    plain, plain_src = mix("plain")
    assert plain_src["token_count"] == "column:ts_tokens_tok" and "redacted" not in plain_src
    assert sum(e in r["text"] for r in plain for e in emails) >= len(emails) // 2  # the control: they are there
    recs, src = mix("redacted", redact=["pii"])
    assert len(recs) == len(plain) and src["token_count"] == "tokenizer"
    assert not [e for e in emails if any(e in r["text"] for r in recs)]
    tok = load_tokenizer(str(corpus["tok"]))
    assert [len(x) for x in tok.encode_batch([r["text"] for r in recs])] == [r["tokens"] for r in recs]
    assert src["tokens"] == sum(r["tokens"] for r in recs) < plain_src["tokens"]
    placed = {t: sum(r["text"].count(PLACEHOLDERS[t]) for r in recs) for t in PLACEHOLDERS}
    assert src["redacted"]["names"] == ["pii"] and "ts_pii_email" in src["redacted"]["columns"]
    assert src["redacted"]["replaced"] == placed and placed["email"] >= len(emails)


def test_redact_key_errors_are_one_line(corpus, tmp_path, capsys):
    f = mix_file(tmp_path / "m1.yaml", corpus, wiki={"redact": ["pii"]})
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and err.count("\n") == 1 and "sources[1] (wiki).redact: only for an attributes: source" in err
    f = mix_file(tmp_path / "m2.yaml", corpus, web={"redact": "pii"})
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and err.count("\n") == 1
    assert err.startswith("textsieve: error: sources: web: redact: pii: ") and "run `textsieve pii" in err
    f = mix_file(tmp_path / "m3.yaml", corpus, web={"redact": [3]})
    rc, _, err = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc != 0 and err.count("\n") == 1 and "redact: expected a list of names" in err


# ---------------------------------------------------------------- issue 26 item 6: stored counts, finished mixes

def _republish(folder: Path, rel: str, data: bytes) -> None:
    """Replace bookkeeping file `rel` of a published folder and record it in the manifest, as if
    the stage had written it so (a file edited behind the manifest's back is not believed)."""
    import hashlib

    from textsieve.io.publish import MANIFEST

    (folder / rel).write_bytes(data)
    book = json.loads((folder / MANIFEST).read_text())
    book["files"][rel].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    (folder / MANIFEST).write_text(json.dumps(book))


def _stored(corpus: dict, tmp_path: Path, name: str = "bpe") -> dict[str, Path]:
    """Copies of the corpus's folders with `textsieve tokens` run on both annotate folders under
    another name than the tokenizer file's stem, and the wiki selection made again from its copy
    (so its selection.json names that copy)."""
    from textsieve.stages.select.select import SelectConfig, run_select
    from textsieve.stages.training.tokens import TokensConfig, run_tokens

    web, wiki = tmp_path / "web-attrs", tmp_path / "wiki-attrs"
    shutil.copytree(corpus["web"], web)
    shutil.copytree(corpus["root"] / "wiki-attrs", wiki)
    for attrs in (web, wiki):
        run_tokens(TokensConfig(str(attrs), str(corpus["tok"]), name=name, workers=1, progress=False))
    run_select(SelectConfig(directory=str(wiki), output=str(tmp_path / "wiki-sel"), recipe=str(corpus["recipe"]),
                            workers=1, progress=False))
    return {"web": web, "wiki-sel": tmp_path / "wiki-sel"}


def test_plan_reads_stored_counts_and_a_finished_mix_returns_at_once(corpus, tmp_path, monkeypatch, capsys):
    """Before: the plan encoded every text of a selection source (and of a source whose tokens
    set had another name), in a dry run and again in a re-run of a published mix. Now both
    sources are planned from the counts `textsieve tokens` stored with the same tokenizer file
    (same numbers as encoding), and a re-run of the published mix reads no record and counts
    no token."""
    from textsieve.stages.training import mix_sources, mix_worker

    encoded = plan_mix(MixConfig(str(mix_file(tmp_path / "enc.yaml", corpus)), workers=1))[2]
    assert [s.token_count for s in encoded.sources] == ["tokenizer", "tokenizer"]
    stored = _stored(corpus, tmp_path)
    f = mix_file(tmp_path / "mix.yaml", corpus, web={"attributes": str(stored["web"])},
                 wiki={"selection": str(stored["wiki-sel"])})

    def no_encoding(task):
        raise AssertionError(f"encoded {task.pool.key}")

    monkeypatch.setattr(mix_worker, "count_task", no_encoding)
    _, pools, plan = plan_mix(MixConfig(str(f), workers=1))
    assert [p.token_count for p in pools] == ["column:ts_tokens_bpe"] * 2
    assert [s.tokens for s in plan.sources] == [s.tokens for s in encoded.sources]
    assert [s.documents for s in plan.sources] == [s.documents for s in encoded.sources]
    rc, out, _ = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc == 0 and "token counts:\n  web: stored counts ts_tokens_bpe" in out
    first = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    assert not first.skipped and first.tokens > 0

    def no_records(*args, **kwargs):
        raise AssertionError("a finished mix read the selection's records")

    monkeypatch.setattr(mix_sources, "_selection_records", no_records)
    again = run_mix(MixConfig(str(f), output=str(tmp_path / "out"), workers=1, progress=False))
    assert again.skipped and (again.documents, again.tokens, again.shards) == (first.documents, first.tokens,
                                                                              first.shards)
    assert again.plan.to_dict() == first.plan.to_dict()  # the published plan, read back


def test_the_plan_says_why_a_source_is_encoded(corpus, tmp_path, capsys):
    """Without stored counts, with counts of another tokenizer file, and with a selection made
    by an older textsieve (no annotate folder recorded), the plan names the reason and the fix."""
    from textsieve.io.publish import SELECTION_JSON
    from textsieve.tokenization.tokenizer import train_bpe

    f = mix_file(tmp_path / "mix.yaml", corpus)
    rc, out, _ = _cli(capsys, "mix", str(f), "--dry-run")
    assert rc == 0 and f"  web: {corpus['web']} has no stored token counts; `textsieve tokens {corpus['web']} " \
                       f"--tokenizer {corpus['tok']}` stores them" in out
    stored = _stored(corpus, tmp_path)
    from pydoc_data.topics import topics

    other = tmp_path / "other.json"  # another tokenizer file: the stored counts are not its counts
    train_bpe([topics[k] for k in sorted(topics)][:40], 300, str(other))
    g = mix_file(tmp_path / "other.yaml", corpus, tokenizer=str(other), web={"attributes": str(stored["web"])})
    rc, out, _ = _cli(capsys, "mix", str(g), "--dry-run")
    assert rc == 0 and "ts_tokens_bpe (" in out and f"were made with other tokenizer files than {other}" in out
    old = json.loads((stored["wiki-sel"] / SELECTION_JSON).read_text())
    old.pop("attributes")  # as an older textsieve wrote it
    _republish(stored["wiki-sel"], SELECTION_JSON, json.dumps(old).encode())
    h = mix_file(tmp_path / "old.yaml", corpus, wiki={"selection": str(stored["wiki-sel"])})
    rc, out, err = _cli(capsys, "mix", str(h), "--dry-run")
    assert "wiki: its selection.json does not name the annotate folder" in out + err
