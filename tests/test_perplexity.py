"""n-gram LM perplexity: Kneser-Ney training, ARPA round trip, scoring twin, buckets, CLI + annotate."""

from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _shared import SHARED

from textsieve.cli import main as cli
from textsieve.models.format import ModelFormatError
from textsieve.models.ngram_lm_model import hash_words, read_arpa, train_kn, write_arpa
from textsieve.models.perplexity import PerplexityModel, heldout_perplexities, load_arpa, load_lm, tokenize


def read_texts(path: Path, n: int | None = None) -> list[str]:
    out = []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line)["text"])
            if n is not None and len(out) >= n:
                break
    return out


@pytest.fixture(scope="module")
def corpora():
    if not (SHARED / "corpora").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set TEXTSIEVE_SHARED)")
    dev = SHARED / "corpora" / "dev"
    return read_texts(dev / "target_wiki.jsonl.gz"), read_texts(dev / "web_sample.jsonl.gz", 300)


@pytest.fixture(scope="module")
def small_lm(corpora):
    wiki, _ = corpora
    return train_kn([tokenize(t) for t in wiki[:80]], order=3)


class ArpaTwin:
    """Readable ARPA backoff semantics over the words themselves (the scorer's pure twin)."""

    def __init__(self, text: str):
        self.p: dict[tuple[str, ...], float] = {}
        self.bo: dict[tuple[str, ...], float] = {}
        section = 0
        order = 0
        for line in text.splitlines():
            if line.startswith("ngram "):
                order = max(order, int(line[6:].partition("=")[0]))
            elif line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:-7])
            elif section and line.strip() and not line.startswith("\\"):
                parts = line.split("\t")
                words = tuple(parts[1].split(" "))
                self.p[words] = float(parts[0])
                if len(parts) == 3:
                    self.bo[words] = float(parts[2])
        self.order = order  # from the header: a highest order may list no n-grams

    def logp(self, hist: tuple[str, ...], w: str) -> float:
        if (w,) not in self.p:
            w = "<unk>"
        hist = hist[max(0, len(hist) - (self.order - 1)):] if self.order > 1 else ()
        if hist + (w,) in self.p:
            return self.p[hist + (w,)]
        return self.bo.get(hist, 0.0) + self.logp(hist[1:], w)

    def doc(self, words: list[str]) -> float:
        seq = ["<s>"] + words + ["</s>"]
        return sum(self.logp(tuple(seq[max(0, i - self.order + 1):i]), seq[i]) for i in range(1, len(seq)))


def arpa_text(lm) -> str:
    buf = io.StringIO()
    write_arpa(lm, buf)
    return buf.getvalue()


def test_kneser_ney_distributions_sum_to_one(small_lm):
    twin = ArpaTwin(arpa_text(small_lm))
    vocab = [w for w in small_lm.vocab if w != "<s>"]
    contexts = [(), ("<s>",), ("the",), ("of", "the"), ("<s>", "the"), ("zzz", "qqq"), ("the", "zzz")]
    for h in contexts:
        total = sum(10 ** twin.logp(h, w) for w in vocab)
        assert total == pytest.approx(1.0, abs=2e-4), h  # float32 log10 values in the file
    d1, d2, d3 = small_lm.discounts[-1]
    assert 0 < d1 < d2 and 0 < d3 < 3  # Chen & Goodman: D1 < D2; D3+ need not exceed D2 on small data


def test_scorer_equals_the_arpa_twin_and_round_trips_through_arpa(small_lm, corpora):
    wiki, web = corpora
    docs = [tokenize(t) for t in wiki[80:110] + web[:30]] + [[], ["unseenword"] * 3]
    text = arpa_text(small_lm)
    twin = ArpaTwin(text)
    want = np.array([twin.doc(d) for d in docs])
    flat = [w for d in docs for w in d]
    off = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in docs], out=off[1:])
    got, count = small_lm.tables.doc_log10(hash_words(flat), off)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-3)
    assert list(count) == [len(d) + 1 for d in docs]
    again, _ = read_arpa(io.StringIO(text)).doc_log10(hash_words(flat), off)
    assert np.allclose(again, want, rtol=1e-6, atol=1e-3)


def test_hand_written_arpa_backoff():
    arpa = "\n".join([
        "\\data\\", "ngram 1=4", "ngram 2=2", "",
        "\\1-grams:", "-1.0\t<unk>", "-99\t<s>\t-0.5", "-0.3\ta\t-0.2", "-0.6\t</s>", "",
        "\\2-grams:", "-0.1\t<s> a", "-0.4\ta </s>", "", "\\end\\", ""])
    tables = read_arpa(io.StringIO(arpa))
    h = hash_words(["a", "b", "a"])
    total, count = tables.doc_log10(h, np.array([0, 1, 3]))
    # "a": p(a|<s>) + p(</s>|a) ; "b a": <unk> via backoff of <s>, then a after <unk>, then </s>|a
    assert total[0] == pytest.approx(-0.1 + -0.4, abs=1e-6)
    assert total[1] == pytest.approx((-0.5 - 1.0) + (-0.3) + (-0.4), abs=1e-6)
    assert list(count) == [2, 3]
    model = PerplexityModel(tables, None)
    ppl, ok = model.perplexities(["a", "b a", ""])
    assert ppl[0] == round(10 ** (0.5 / 2), 1) and list(ok) == [True, True, False]


def test_heldout_cutoffs_and_wiki_vs_web(corpora):
    wiki, web = corpora
    docs = [tokenize(t) for t in wiki]
    ppl = heldout_perplexities(docs, order=3, folds=5)
    lm = train_kn(docs[:500], order=3)
    m = PerplexityModel(lm.tables, tuple(np.percentile(ppl, (30, 60))))
    held_wiki, _ = m.perplexities([" ".join(d) for d in docs[500:]])
    web_ppl, ok = m.perplexities([" ".join(tokenize(t)) for t in web])
    assert np.median(held_wiki) * 2 < np.median(web_ppl[ok])
    in_sample, _ = m.perplexities([" ".join(d) for d in docs[:100]])
    assert np.median(in_sample) * 5 < np.median(ppl)  # why cutoffs come from held-out folds
    b = m.buckets(np.asarray(ppl))
    assert 0.25 < np.mean(b == 0) < 0.35 and 0.25 < np.mean(b == 1) < 0.35


def test_train_lm_cli_annotate_tsm_and_arpa(corpora, tmp_path):
    wiki, web = corpora
    target = tmp_path / "wiki.jsonl"
    target.write_text("".join(json.dumps({"id": f"w{i}", "text": t}) + "\n" for i, t in enumerate(wiki[:300])))
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": f"p{i}", "text": t}) + "\n"
                            for i, t in enumerate(web[:150] + wiki[300:350] + [""])))
    model, arpa = tmp_path / "wiki.tsm", tmp_path / "wiki.arpa.gz"
    assert cli(["train", "lm", "--corpus", str(target), "-o", str(model), "--arpa", str(arpa), "--quiet"]) == 0
    lm = load_lm(str(model))
    lo, hi = lm.cutoffs
    assert 0 < lo < hi and lm.params["cutoff_source"] == "5-fold held-out" and lm.tables.order == 3
    ann = tmp_path / "ann"
    assert cli(["annotate", str(pool), "-o", str(ann), "--signals", "rps_doc_word_count", "--workers", "1",
                "--models", f"wiki={model}", "--models", f"wa={arpa}", "--quiet"]) == 0
    t = pq.read_table(next(ann.rglob("*.parquet")))
    ppl = [s[0]["score"] for s in t.column("ts_perplexity_wiki").to_pylist()]
    assert ppl == [s[0]["score"] for s in t.column("ts_perplexity_wa").to_pylist()]
    assert ppl[-1] is None  # no words
    bucket = [s[0]["score"] for s in t.column("ts_perplexity_wiki_bucket").to_pylist()]
    assert bucket[:-1] == [0.0 if p < lo else 1.0 if p < hi else 2.0 for p in ppl[:-1]]
    assert "ts_perplexity_wa_bucket" not in t.column_names  # an ARPA file has no cutoffs
    assert np.median(ppl[150:200]) < np.median(ppl[:150])
    texts = read_texts(pool)
    direct, _ = lm.perplexities([" ".join(tokenize(x)) for x in texts])
    assert ppl[:-1] == list(direct[:-1])


def test_bad_inputs_are_named(tmp_path, corpora):
    bad = tmp_path / "broken.arpa"
    bad.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\ta\n\\end\\\n")
    with pytest.raises(ModelFormatError, match=r"broken\.arpa.*1-grams"):
        load_arpa(str(bad))
    target = tmp_path / "t.jsonl"
    target.write_text(json.dumps({"id": "a", "text": "some words here"}) + "\n")
    assert cli(["train", "lm", "--corpus", str(target), "-o", str(tmp_path / "m.tsm"), "--folds", "1",
                "--quiet"]) == 2
    with pytest.raises(ValueError, match="order"):
        train_kn([["a"]], order=9)
    assert math.isfinite(train_kn([["a", "b"]], order=2).tables.unk_logprob)


@pytest.mark.parametrize("order", [4, 5])
def test_short_documents_high_orders(order):
    """Orders above 3 on documents shorter than the order; at 5 no document reaches the order and
    its level is empty (this used to fail in the smoothing)."""
    docs = [["x"], ["y", "x"], ["x", "y", "y"]]
    lm = train_kn(docs[:2], order=order)
    assert [len(k) for k in lm.tables.keys] == [5, 4, 3, 1, 0][:order]
    twin = ArpaTwin(arpa_text(lm))
    flat = [w for d in docs for w in d]
    total, count = lm.tables.doc_log10(hash_words(flat), np.array([0, 1, 3, 6]))
    assert np.allclose(total, [twin.doc(d) for d in docs], atol=1e-4) and count.tolist() == [2, 3, 4]
