"""`textsieve eval kl`: DSIR's KL-reduction metric beside a random selection of equal size."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from _shared import SHARED

from textsieve.cli import main
from textsieve.eval.kl import KLEvalConfig, evaluate_kl, kl_divergence

DEV = SHARED / "corpora" / "dev"


def test_kl_divergence_basics():
    p = np.array([10, 0, 30])
    assert kl_divergence(p, p * 7) == pytest.approx(0, abs=1e-12)
    assert kl_divergence(p, np.array([1, 1, 1])) > 0
    # zero mass in q where p has mass is penalised through the 1e-10 floor, not infinite
    assert np.isfinite(kl_divergence(np.array([1, 1]), np.array([1, 0])))


@pytest.fixture(scope="module")
def files(tmp_path_factory, dev_dir):
    tmp = tmp_path_factory.mktemp("evalkl")
    docs = []
    with gzip.open(DEV / "web_sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            docs.append(json.loads(line))
            if len(docs) == 1500:
                break
    pool = tmp / "pool.jsonl"
    pool.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    news = tmp / "prose.jsonl"  # the pool without Usenet, code, chat, UDHR and snippets: closer to Wikipedia
    noise = ("20ng/", "cpython-stdlib/", "nltk-npschat/", "udhr/", "hfdummy/", "nltk-webtext/")
    news.write_text("".join(json.dumps(d) + "\n" for d in docs if not d["id"].startswith(noise)), encoding="utf-8")
    chat = tmp / "chat.jsonl"  # Usenet posts with headers: further away
    chat.write_text("".join(json.dumps(d) + "\n" for d in docs if d["id"].startswith("20ng/")), encoding="utf-8")
    return {"tmp": tmp, "pool": pool, "news": news, "chat": chat, "target": DEV / "target_wiki.jsonl.gz"}


def test_news_closer_to_wiki_than_usenet_and_random(files):
    cfg = dict(target=[str(files["target"])], pool=[str(files["pool"])])
    news = evaluate_kl(KLEvalConfig(selection=[str(files["news"])], **cfg))
    chat = evaluate_kl(KLEvalConfig(selection=[str(files["chat"])], **cfg))
    assert news.kl_reduction > news.kl_reduction_random and news.kl_reduction > 0
    assert chat.kl_reduction < news.kl_reduction
    assert news.pool_docs == news.pool_sample_docs == 1500
    assert news.random_docs == news.selection_docs
    again = evaluate_kl(KLEvalConfig(selection=[str(files["news"])], **cfg))
    assert again.to_json() == news.to_json()  # seeded
    other = evaluate_kl(KLEvalConfig(selection=[str(files["news"])], hash_seed=9, **cfg))
    assert other.kl_target_pool != news.kl_target_pool  # a different hash space


def test_cli_json_and_text(files, capsys):
    args = ["eval", "kl", "--selection", str(files["news"]), "--target", str(files["target"]),
            "--pool", str(files["pool"]), "--pool-sample", "500"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pool_sample_docs"] == 500 and out["pool_docs"] == 1500
    assert set(out) >= {"kl_reduction", "kl_reduction_random", "buckets", "ngrams", "hash_seed"}
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "selection" in text and "random" in text and "KL reduction" in text


def test_empty_selection_is_a_clear_error(files, capsys):
    empty = files["tmp"] / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["eval", "kl", "--selection", str(empty), "--target", str(files["target"]),
                 "--pool", str(files["pool"])]) == 2
    assert "no selected documents" in capsys.readouterr().err
