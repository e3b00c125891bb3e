"""Real token counts (`textsieve tokens`, `train tokenizer`) on real text, and their use by DSIR,
the funnel and the report.

The tokenizer is trained here on the bundled sample (small vocabulary, for speed); the pool is
the first 200 web documents of the dev corpus. Counts are checked against the libraries' own
encoders on the same texts, not against numbers written down.
"""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _files import web_docs

from textsieve.cli import main
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.doc_set import DocSetError
from textsieve.stages.training.tokens import TokensConfig, output_schema, run_tokens
from textsieve.tokenization.columns import TokenColumnError
from textsieve.tokenization.tokenizer import TokenizerError, load_tokenizer, train_bpe

VOCAB = 700
TRAIN = ["--vocab", str(VOCAB), "--max-docs", "250", "-q"]  # `train tokenizer` options (small, for speed)
BUDGET = 20_000  # tokens to draw (the 200 documents hold about 300,000)


def _bytes_to_unicode() -> dict[str, int]:
    """GPT-2's byte <-> printable character table (what the byte-level pre-tokenizer writes), reversed."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def to_tiktoken(tokenizer_json: Path, out: Path) -> None:
    """A tiktoken BPE file from a byte-level BPE tokenizer.json: each vocabulary entry's bytes with
    its id as rank. Merges were learnt in id order, so tiktoken's lowest-rank-first merging
    reproduces the BPE exactly (with the GPT-2 split regex the byte-level pre-tokenizer uses)."""
    dec = _bytes_to_unicode()
    j = json.loads(tokenizer_json.read_text("utf-8"))
    special = {t["content"] for t in j["added_tokens"]}
    vocab = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    out.write_text("".join(f"{base64.b64encode(bytes(dec[c] for c in tok)).decode()} {i}\n"
                           for tok, i in vocab if tok not in special))


@pytest.fixture(scope="module")
def env(dev_dir, tmp_path_factory) -> dict:
    from textsieve.sample import build_sample

    tmp = tmp_path_factory.mktemp("tokens")
    build_sample(tmp / "sample.jsonl.gz")
    docs = web_docs(dev_dir, 200)
    (tmp / "docs").mkdir()
    for k in range(2):
        with gzip.open(tmp / "docs" / f"s{k}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in docs[k * 100:(k + 1) * 100])
    run_annotate(AnnotateConfig([str(tmp / "docs")], str(tmp / "attrs"),
                                signals=["rps_doc_word_count", "rps_lines_num_words"], workers=1, progress=False))
    assert main(["train", "tokenizer", str(tmp / "sample.jsonl.gz"), *TRAIN, "--output", str(tmp / "tok.json")]) == 0
    return {"tmp": tmp, "texts": [d["text"] for d in docs], "ids": [d["id"] for d in docs]}


def _copy(env: dict, tmp_path: Path) -> Path:
    d = tmp_path / "attrs"
    shutil.copytree(env["tmp"] / "attrs", d)
    return d


def _counts(attrs: Path, name: str) -> list[int]:
    return [n for k in range(2) for n in pq.read_table(attrs / "sets" / f"tokens_{name}" / f"s{k}.parquet")
            .column(f"ts_tokens_{name}").to_pylist()]


def _count_map(attrs: Path, name: str) -> dict[tuple[str, int], int]:
    out = {}
    for k in range(2):
        t = pq.read_table(attrs / "sets" / f"tokens_{name}" / f"s{k}.parquet")
        out.update(zip(zip(t.column("shard").to_pylist(), t.column("row").to_pylist()),
                       t.column(f"ts_tokens_{name}").to_pylist()))
    return out


def test_training_is_deterministic_and_counts_equal_tokenizers_own(env, tmp_path):
    from tokenizers import Tokenizer

    tok_path = env["tmp"] / "tok.json"
    again = tmp_path / "again.json"
    assert main(["train", "tokenizer", str(env["tmp"] / "sample.jsonl.gz"), *TRAIN, "--output", str(again)]) == 0
    assert again.read_bytes() == tok_path.read_bytes()  # same documents and settings: the same file
    tok = load_tokenizer(str(tok_path))
    assert (tok.name, tok.kind, tok.vocab_size, tok.eos_id) == ("tok", "hf", VOCAB, 0)

    attrs = _copy(env, tmp_path)
    res = run_tokens(TokensConfig(str(attrs), str(tok_path), workers=2, progress=False))
    plain = Tokenizer.from_file(str(tok_path))
    want = [len(e.ids) for e in plain.encode_batch(env["texts"], add_special_tokens=False)]
    assert _counts(attrs, "tok") == want
    assert (res.documents, res.tokens, res.column, res.computed) == (200, sum(want), "ts_tokens_tok", 2)
    t = pq.read_table(attrs / "sets" / "tokens_tok" / "s0.parquet")
    assert t.schema.equals(output_schema("tok")) and t.column("id").to_pylist() == env["ids"][:100]
    summary = json.loads((attrs / "sets" / "tokens_tok" / ".textsieve" / "summary.json").read_text())
    assert (summary["tokenizer_fingerprint"], summary["tokenizer_kind"]) == (tok.fingerprint, "hf")
    assert summary["ts_tokens_tok"] == sum(want)
    # a special-token string inside a document is text, never the control token
    ids = tok.encode_batch(["a page quoting <|endoftext|> in its text"])[0]
    assert tok.eos_id not in ids and len(ids) > 5


def test_tiktoken_file_counts_like_the_bpe_it_was_made_from(env, tmp_path):
    import tiktoken

    tk_path = tmp_path / "bpe.tiktoken"
    to_tiktoken(env["tmp"] / "tok.json", tk_path)
    attrs = _copy(env, tmp_path)
    res = run_tokens(TokensConfig(str(attrs), str(tk_path), tiktoken_pattern="gpt2", workers=1, progress=False))
    hf = load_tokenizer(str(env["tmp"] / "tok.json"))
    assert _counts(attrs, "bpe") == hf.count_batch(env["texts"]).tolist()
    tk = load_tokenizer(str(tk_path), pattern="gpt2")
    assert tk.kind == "tiktoken" and tk.encode_batch(env["texts"][:20]) == hf.encode_batch(env["texts"][:20])
    # a lone surrogate (not UTF-8) is one U+FFFD for both kinds, never a crash
    assert hf.encode_batch(["a\ud800b"]) == tk.encode_batch(["a\ud800b"]) == hf.encode_batch(["a\ufffdb"])
    ranks = {base64.b64decode(a): int(b) for a, b in (ln.split() for ln in tk_path.read_text().splitlines())}
    own = tiktoken.Encoding("own", pat_str=tk.pattern or "", mergeable_ranks=ranks, special_tokens={})
    assert res.tokens == sum(len(x) for x in own.encode_ordinary_batch(env["texts"]))
    summary = json.loads((attrs / "sets" / "tokens_bpe" / ".textsieve" / "summary.json").read_text())
    assert summary["tokenizer_kind"] == "tiktoken"


def test_rerun_is_a_noop_and_a_changed_tokenizer_file_recounts(env, tmp_path):
    attrs = _copy(env, tmp_path)
    tok = tmp_path / "t.json"
    shutil.copy(env["tmp"] / "tok.json", tok)
    first = run_tokens(TokensConfig(str(attrs), str(tok), workers=1, progress=False))
    again = run_tokens(TokensConfig(str(attrs), str(tok), workers=1, progress=False))
    assert again.skipped and again.computed == 0 and again.tokens == first.tokens
    # retrained in place (another vocabulary): the fingerprint changes, every shard is counted again
    train_bpe(env["texts"], 300, str(tok))
    changed = run_tokens(TokensConfig(str(attrs), str(tok), workers=1, progress=False))
    assert changed.computed == 2 and not changed.skipped
    assert _counts(attrs, "t") == load_tokenizer(str(tok)).count_batch(env["texts"]).tolist()
    assert changed.tokens > first.tokens  # a smaller vocabulary needs more tokens
    # another tokenizer file under the same name is refused, not silently replaced
    other = tmp_path / "other" / "t.json"
    other.parent.mkdir()
    shutil.copy(env["tmp"] / "tok.json", other)
    with pytest.raises(DocSetError, match="other settings: tokenizer="):
        run_tokens(TokensConfig(str(attrs), str(other), workers=1, progress=False))
    assert run_tokens(TokensConfig(str(attrs), str(other), overwrite=True, workers=1, progress=False)).tokens \
        == first.tokens


def test_bad_tokenizer_paths_are_one_line_errors(env, tmp_path, capsys):
    attrs = str(env["tmp"] / "attrs")
    (tmp_path / "notes.txt").write_text("just some words, not a tokenizer\n")
    (tmp_path / "empty").mkdir()
    cases = {str(tmp_path / "missing.json"): "does not exist",
             str(tmp_path / "notes.txt"): "neither a tokenizer.json nor a tiktoken BPE file",
             str(env["tmp"] / "sample.jsonl.gz"): "neither a tokenizer.json nor a tiktoken BPE file",
             str(tmp_path / "empty"): "folder without a tokenizer.json"}
    for path, message in cases.items():
        assert main(["tokens", attrs, "--tokenizer", path, "-q"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("textsieve: error: tokenizer: ") and message in err and path in err
        assert "\n" not in err
    with pytest.raises(TokenizerError, match="lower-case"):
        load_tokenizer(str(env["tmp"] / "tok.json"), name="My Tok")
    with pytest.raises(TokenizerError, match="tiktoken files only"):
        load_tokenizer(str(env["tmp"] / "tok.json"), pattern="gpt2")


def test_dsir_token_budget_counts_real_tokens(env, tmp_path, dev_dir):
    from textsieve.dsir.resample import resample
    from textsieve.stages.select.dsir_fit import DsirFitConfig, run_fit

    attrs = _copy(env, tmp_path)
    run_fit(DsirFitConfig(targets=[str(dev_dir / "target_wiki.jsonl.gz")], raw=str(attrs), name="wiki",
                          progress=False))
    words = resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1)  # no tokens set: word tokens
    assert words.token_column is None
    assert main(["tokens", str(attrs), "--tokenizer", str(env["tmp"] / "tok.json"), "-q"]) == 0
    counts = _count_map(attrs, "tok")
    before = sum(counts[(s, int(w))] for s, w in zip(words.shard.tolist(), words.row.tolist()))
    assert before != words.tokens  # the word-token budget is not a budget in the tokenizer's tokens
    for replace in (False, True):
        r = resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1, replace=replace)  # automatic: one set
        got = [counts[(s, int(w))] * int(c) for s, w, c in zip(r.shard.tolist(), r.row.tolist(), r.count.tolist())]
        assert r.token_column == "ts_tokens_tok" and r.summary()["token_column"] == "ts_tokens_tok"
        assert r.tokens == sum(got) >= BUDGET
        if not replace:  # the draw stops at the document that reaches the budget
            assert sum(got) - max(got) < BUDGET
    w2 = resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1, token_column="words")
    assert w2.token_column is None and w2.tokens == words.tokens and w2.row.tolist() == words.row.tolist()
    # two tokens sets: automatic is ambiguous, an explicit column is used
    assert main(["tokens", str(attrs), "--tokenizer", str(env["tmp"] / "tok.json"), "--name", "b", "-q"]) == 0
    with pytest.raises(TokenColumnError, match="several token counts"):
        resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1)
    with pytest.raises(TokenColumnError, match="no token counts ts_tokens_nope"):
        resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1, token_column="nope")
    r = resample(str(attrs), [("wiki", 1.0)], tokens=BUDGET, seed=1, token_column="ts_tokens_b")
    out = tmp_path / "sel"
    assert main(["select", str(attrs), "--dsir", "wiki", "--tokens", str(BUDGET), "--seed", "1", "--token-column",
                 "ts_tokens_b", "-o", str(out), "-q"]) == 0
    sel = json.loads((out / ".textsieve" / "selection.json").read_text())
    assert sel["dsir"]["token_column"] == "ts_tokens_b" and sel["dsir"]["tokens"] == r.tokens >= BUDGET


def test_funnel_and_report_show_real_tokens(env, tmp_path):
    from textsieve.recipes.funnel import compute_funnel
    from textsieve.recipes.language import load_recipe
    from textsieve.recipes.survivors import survivors
    from textsieve.report.collect import collect
    from textsieve.report.html import render

    attrs = _copy(env, tmp_path)
    recipe_doc = tmp_path / "r.yaml"
    recipe_doc.write_text("name: r\nrules:\n  long: \"rps_doc_word_count >= 300\"\n")
    recipe = load_recipe(str(recipe_doc))
    assert compute_funnel(str(attrs), recipe).tokens == {}  # no tokens set: nothing computed
    res = run_tokens(TokensConfig(str(attrs), str(env["tmp"] / "tok.json"), workers=1, progress=False))
    f = compute_funnel(str(attrs), recipe)
    keep = survivors(str(attrs), recipe)
    counts = _count_map(attrs, "tok")
    want = sum(counts[(s, int(r))] for s in keep for r in keep[s])
    assert f.tokens == {"ts_tokens_tok": {"total": res.tokens, "kept": want, "estimated": False}}
    assert 0 < want < res.tokens and "tokens kept (ts_tokens_tok)" in f.table()
    lines = tmp_path / "l.yaml"
    lines.write_text("name: l\nrules:\n  words: \"line: rps_lines_num_words >= 8\"\n")
    fl = compute_funnel(str(attrs), load_recipe(str(lines)))
    assert fl.tokens["ts_tokens_tok"]["estimated"] and fl.tokens["ts_tokens_tok"]["kept"] < res.tokens
    data = collect(str(attrs), str(recipe_doc))
    assert data.tokens["ts_tokens_tok"]["total"] == res.tokens
    assert data.funnel is not None and data.funnel.tokens["ts_tokens_tok"]["kept"] == want
    html = render(data)
    assert f"{res.tokens:,}" in html and "tokens kept by recipe" in html


def test_a_tokenizer_file_the_library_panics_on_is_a_located_error(tmp_path, monkeypatch):
    """Issue 25's fuzzer, tokenizer case 2847: a tokenizer.json with a run of its BPE vocabulary
    deleted made the Rust library panic (`pyo3_runtime.PanicException: range end index 18 out of
    range for slice of length 16`), which derives from BaseException, so it escaped as a raw
    error. The panic itself is the library's; what textsieve owes is one located line."""
    import tokenizers

    class PanicException(BaseException):  # pyo3's, as tokenizers raises it
        pass

    def panics(_text: str):
        raise PanicException("range end index 18 out of range for slice of length 16")

    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "BPE", "vocab": {}, "merges": []}}', "utf-8")
    monkeypatch.setattr(tokenizers.Tokenizer, "from_str", staticmethod(panics))
    with pytest.raises(TokenizerError, match=r"tokenizer\.json is not a Hugging Face tokenizer\.json \(range end"):
        load_tokenizer(str(path))
