"""The Kneser-Ney n-gram LM (normalisation, smoothing, save/load) and `textsieve eval lm`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from textsieve.cli import main
from textsieve.eval.lm import LMEvalConfig, evaluate_lm, ids_and_texts, random_baseline, target_heldout
from textsieve.models.kneser_ney import UNICODE_WORDS, NgramLM, take_documents

tokenize = UNICODE_WORDS.split
BOS, EOS = UNICODE_WORDS.keys.bos, UNICODE_WORDS.keys.eos


def _topics() -> list[str]:
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def test_tokenize_lowercases_unicode_words_and_drops_punctuation():
    words, lengths = tokenize(["Hello, World! hello", "", "Größe über-alles 42_x", None])
    assert lengths.tolist() == [3, 0, 4, 0]
    assert words[0] == words[2] and words[0] != words[1]
    w2, _ = tokenize(["größe"])
    assert w2[0] == words[3]


def test_take_documents_matches_tokenizing_the_subset():
    docs = _topics()[:50]
    words, lengths = tokenize(docs)
    pick = np.array([7, 3, 3, 40])
    w, n = take_documents(words, lengths, pick)
    w2, n2 = tokenize([docs[i] for i in pick])
    assert np.array_equal(w, w2) and np.array_equal(n, n2)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_distribution_sums_to_one(order):
    """Every context's distribution over the whole (open) vocabulary sums to 1."""
    docs = _topics()[:40]
    vocab_size = 50_000
    lm = NgramLM.fit(docs, order=order, vocab_size=vocab_size)
    seen = np.unique(np.concatenate([tokenize(docs)[0], [EOS]]))
    assert len(seen) < vocab_size
    unseen = np.uint64(12345)  # not a real word's hash
    targets = np.concatenate([seen, [unseen]])
    rng = np.random.default_rng(0)
    for _ in range(4):
        hist_words = [BOS, unseen] + list(rng.choice(seen, 2))
        hist = [np.full(len(targets), hist_words[rng.integers(len(hist_words))], np.uint64)
                for _ in range(order - 1)]
        p, _ = lm.prob(targets, hist)
        total = p[:-1].sum() + (vocab_size - len(seen)) * p[-1]
        assert total == pytest.approx(1.0, abs=1e-9)
        assert (p > 0).all()


def test_in_domain_training_gives_lower_perplexity_and_save_load(tmp_path):
    docs = _topics()
    train, test = docs[::2], docs[1::2]
    lm = NgramLM.fit(train)
    ev = lm.evaluate(test)
    assert 20 < ev["perplexity"] < 2000 and 0 < ev["oov_rate"] < 0.2
    # a model of the same size trained on the licence texts and docstrings of other domains does worse
    other = NgramLM.fit(["the quick brown fox jumps over the lazy dog " * 20] * 10)
    assert other.perplexity(test) > 5 * ev["perplexity"]
    # more data of the domain helps
    assert NgramLM.fit(train[: len(train) // 8]).perplexity(test) > ev["perplexity"]
    # trigram beats unigram in domain
    assert NgramLM.fit(train, order=1).perplexity(test) > ev["perplexity"]
    path = tmp_path / "lm.npz"
    lm.save(path)
    back = NgramLM.load(path)
    assert back.order == 3 and back.tokens == lm.tokens
    assert back.perplexity(test) == ev["perplexity"]
    per_doc = back.doc_perplexity(test[:5])
    s, n = lm.score(test[:5])
    np.testing.assert_allclose(per_doc, np.exp(-s / n))


def test_tokenizer_is_a_parameter_rpv2_words(tmp_path):
    """The same fit runs on the signals' tokens (RPv2-normalized words, digits as 0): its
    distributions sum to one too, and a saved model only loads with the tokenizer it was fitted with."""
    from textsieve.models.ngram_lm_model import RPV2_WORDS, hash_words

    docs = _topics()[:40]
    lm = NgramLM.fit(docs, order=3, vocab_size=50_000, tokenizer=RPV2_WORDS)
    words, lengths = RPV2_WORDS.split(["Hello, World! 1984 hello", ""])
    assert lengths.tolist() == [4, 0] and words.tolist() == hash_words(["hello", "world", "0000", "hello"]).tolist()
    seen = np.unique(np.concatenate([RPV2_WORDS.split(docs)[0], [RPV2_WORDS.keys.eos]]))
    targets = np.concatenate([seen, [np.uint64(12345)]])
    hist = [np.full(len(targets), seen[7], np.uint64), np.full(len(targets), RPV2_WORDS.keys.bos, np.uint64)]
    p, _ = lm.prob(targets, hist)
    assert p[:-1].sum() + (50_000 - len(seen)) * p[-1] == pytest.approx(1.0, abs=1e-9)
    assert lm.perplexity(docs[:5]) < NgramLM.fit(docs, order=3, vocab_size=50_000).perplexity(docs[:5]) * 10
    path = tmp_path / "rpv2.npz"
    lm.save(path)
    assert NgramLM.load(path, tokenizer=RPV2_WORDS).perplexity(docs[:5]) == lm.perplexity(docs[:5])
    with pytest.raises(ValueError, match="tokenizer"):
        NgramLM.load(path)


def test_evaluate_lm_api(tmp_path):
    """`evaluate_lm` is the whole evaluation: a config in, a result out, nothing printed."""
    docs = _topics()
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(docs)]
    for name, part in (("pool", rows), ("sel", rows[:60]), ("target", rows[::3])):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    cfg = LMEvalConfig(selection=str(tmp_path / "sel.jsonl"), target=str(tmp_path / "target.jsonl"),
                       pool=str(tmp_path / "pool.jsonl"), order=2, progress=False)
    res = evaluate_lm(cfg)
    assert res.documents == 60 and res.pool_documents == len(docs)
    assert res.tokens_random >= res.tokens and res.perplexity > 0 and res.perplexity_random > 0
    out = res.to_json()
    assert list(out)[:2] == ["perplexity", "perplexity_random"] and "progress" not in out["config"]
    assert out["config"]["order"] == 2
    with pytest.raises(ValueError, match="--match"):
        evaluate_lm(LMEvalConfig(selection=cfg.selection, target=cfg.target, pool=cfg.pool, match="words"))


def test_heldout_split_is_stable_and_sized():
    ids = [f"doc/{i}" for i in range(4000)]
    h = target_heldout(ids, 0.25, seed=0)
    assert abs(h.mean() - 0.25) < 0.03
    assert np.array_equal(h, target_heldout(list(reversed(ids)), 0.25)[::-1])
    assert target_heldout(ids, 1.0).all()
    with pytest.raises(ValueError, match="heldout-fraction"):
        target_heldout(ids, 0.0)


def test_random_baseline_matches_tokens_or_docs():
    lengths = np.arange(1, 101)
    pick = random_baseline(lengths, 10, 500, "tokens", seed=3)
    assert lengths[pick].sum() >= 500 and lengths[pick[:-1]].sum() < 500
    assert len(set(pick.tolist())) == len(pick)
    assert len(random_baseline(lengths, 10, 500, "docs", seed=3)) == 10
    assert np.array_equal(pick, random_baseline(lengths, 10, 500, "tokens", seed=3))


@pytest.fixture
def dev(shared_dir) -> Path:
    d = shared_dir / "corpora" / "dev"
    if not (d / "web_sample.jsonl.gz").is_file():
        pytest.skip(f"dev corpora not found at {d}")
    return d


def test_eval_lm_cli_on_dev_corpus(dev, tmp_path, capsys):
    """A selection of news and C4 web text from a 3,000-document pool is closer to Wikipedia
    than a random sample of as many tokens; the select-style folder's selection.json is skipped."""
    pool = tmp_path / "pool.jsonl.gz"
    sel_dir = tmp_path / "selected"
    sel_dir.mkdir()
    with gzip.open(dev / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(3000)]
    with gzip.open(pool, "wt", encoding="utf-8") as out:
        out.writelines(lines)
    chosen = [ln for ln in lines if json.loads(ln)["id"].startswith(("c4-en/", "nltk-abc/"))]
    assert len(chosen) > 200
    with gzip.open(sel_dir / "part-0.jsonl.gz", "wt", encoding="utf-8") as out:
        out.writelines(chosen)
    (sel_dir / ".textsieve").mkdir(exist_ok=True)
    (sel_dir / ".textsieve" / "selection.json").write_text(json.dumps({"recipe": "test", "kept": len(chosen)},
                                                                      indent=1))
    assert len(ids_and_texts(str(sel_dir))[1]) == len(chosen)

    rc = main(["eval", "lm", "--selection", str(sel_dir), "--target", str(dev / "target_wiki.jsonl.gz"),
               "--pool", str(pool), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    for key in ("perplexity", "perplexity_random", "oov_rate", "oov_rate_random", "tokens", "tokens_random",
                "documents", "documents_random", "target_documents", "target_tokens"):
        assert key in res
    assert res["documents"] == len(chosen)
    assert abs(res["tokens_random"] - res["tokens"]) < 0.05 * res["tokens"]
    assert 250 < res["target_documents"] < 360  # half of 607 by id hash
    assert res["perplexity"] < 0.9 * res["perplexity_random"]

    rc = main(["eval", "lm", "--selection", str(sel_dir), "--target", str(dev / "target_wiki.jsonl.gz"),
               "--pool", str(pool), "--match", "docs", "-q"])
    out = capsys.readouterr().out
    assert rc == 0 and "selection" in out and "random" in out


def test_eval_lm_bad_input_is_named(tmp_path, capsys):
    target = tmp_path / "t.jsonl"
    target.write_text("".join(json.dumps({"id": f"t{i}", "text": f"some words number {i}"}) + "\n"
                              for i in range(20)))
    rc = main(["eval", "lm", "--selection", str(tmp_path / "nope.jsonl"), "--target", str(target),
               "--pool", str(target)])
    assert rc == 2
    assert "nope.jsonl" in capsys.readouterr().err
    rc = main(["eval", "lm", "--selection", str(target), "--target", str(target), "--pool", str(target),
               "--heldout-fraction", "1.5"])
    assert rc == 2
    assert "--heldout-fraction" in capsys.readouterr().err
