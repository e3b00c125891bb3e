"""`textsieve embed --model FOLDER` with a real sentence-transformers model, built in the test.

The model is tiny and random (a WordPiece tokenizer trained on web documents, a 2-layer 64-d
`BertModel`, mean pooling, max_seq_length 128) and saved with `SentenceTransformer.save`, so
nothing is downloaded. What is checked against sentence-transformers itself: a document that
fits is the model's own `encode`; a long one is the token-weighted mean of its windows' vectors
(docs/embeddings.md), each window exactly the document's own tokens; the stage runs with the
network cut off, `models show` prints the model's identity, a re-run is a no-op and a changed
model file re-embeds. Skipped where torch or sentence-transformers is not installed (CI's venv).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _files import web_docs
from _offline import run_offline_cli

from textsieve.cli import main
from textsieve.embedding.models import EmbeddingModelError, load_embedder
from textsieve.embedding.store import read_embeddings
from textsieve.embedding.transformer import PREPARE, _IdFeeder
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.annotate.embed import EmbedConfig, run_embed

MAX_SEQ = 128
SIZE = MAX_SEQ - 2  # tokens per window: [CLS] ... [SEP]
N_DOCS = 40


def _needs_sentence_transformers() -> Any:
    for mod in ("torch", "sentence_transformers"):
        pytest.importorskip(mod, reason=f"{mod} is not installed (optional: pip install 'textsieve[transformers]'); "
                                        "the sentence-transformers embedding path is not tested here")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import sentence_transformers

    return sentence_transformers


@pytest.fixture(scope="module")
def docs(dev_dir) -> list[dict]:
    """Real web documents: the first 30 whole (all longer than one window), then 10 cut to their
    first 10 words (one window each: this small vocabulary spends ~8 tokens on a word)."""
    out = web_docs(dev_dir, N_DOCS)
    for d in out[30:]:
        d["text"] = " ".join(d["text"].split()[:10])
    return out


@pytest.fixture(scope="module")
def st_folder(dev_dir, tmp_path_factory) -> Path:
    """A sentence-transformers folder: WordPiece tokenizer (1,000 pieces, so many words split into
    "##" pieces) trained on 400 web documents, a seeded random BertModel, mean pooling."""
    _needs_sentence_transformers()
    import torch
    from sentence_transformers import SentenceTransformer
    try:  # sentence-transformers >= 6 (where the old `models` path warns), else 3-5
        from sentence_transformers.base.modules import Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:
        from sentence_transformers.models import Pooling, Transformer
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    texts = [d["text"] for d in web_docs(dev_dir, 400)]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=1000, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    root = tmp_path_factory.mktemp("st")
    hf = root / "bert"
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]", model_max_length=MAX_SEQ).save_pretrained(hf)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=MAX_SEQ + 2,
                         initializer_range=0.5)).save_pretrained(hf)
    first = Transformer(str(hf), max_seq_length=MAX_SEQ)
    model = SentenceTransformer(modules=[first, Pooling(64, pooling_mode="mean")], device="cpu")
    folder = root / "tiny-st"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def model(st_folder) -> Any:
    """The folder loaded by sentence-transformers itself (the reference), in eval mode."""
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(str(st_folder), device="cpu", local_files_only=True)
    assert m.max_seq_length == MAX_SEQ
    return m.eval()


@pytest.fixture(scope="module")
def attrs(docs, st_folder, tmp_path_factory) -> Path:
    """An annotate folder over the documents, embedded with the model (`textsieve embed --model`)."""
    root = tmp_path_factory.mktemp("st-attrs")
    with gzip.open(root / "docs.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)
    out = root / "attrs"
    run_annotate(AnnotateConfig(inputs=[str(root / "docs.jsonl.gz")], output=str(out), signals="rps_doc_word_count",
                                progress=False, workers=1))
    res = run_embed(EmbedConfig(directory=str(out), model=str(st_folder), workers=1, progress=False))
    assert (res.documents, res.computed, res.column) == (N_DOCS, 1, "ts_embed_tiny_st")
    return out


def _stored(attrs: Path) -> tuple[list[str], np.ndarray]:
    """The stored set, rows re-normalised: float16 storage leaves norms ~1e-4 off 1, which would
    hide in (or fake) a cosine of 0.9999; the direction is what is compared."""
    ids, mat = read_embeddings(str(attrs), "tiny_st")
    norms = np.linalg.norm(mat, axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=2e-3)
    return list(ids), mat / norms[:, None]


def _token_ids(model: Any, text: str) -> list[int]:
    return list(model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def _window_vectors(model: Any, windows: list[list[int]]) -> np.ndarray:
    """The model's vectors of windows of token ids of one length, through sentence-transformers."""
    import torch

    ids = torch.tensor([[model.tokenizer.cls_token_id, *w, model.tokenizer.sep_token_id] for w in windows])
    with torch.inference_mode():
        return model({"input_ids": ids, "attention_mask": torch.ones_like(ids)})["sentence_embedding"].numpy()


def _pooled(model: Any, ids: list[int]) -> tuple[np.ndarray, int]:
    """docs/embeddings.md's rule by hand: windows of SIZE tokens (the first 64), their vectors
    weighted by their tokens, L2-normalised; and the number of windows. (The full windows go
    through the model as one unpadded batch, a last short one alone.)"""
    windows = [ids[s:s + SIZE] for s in range(0, min(len(ids), SIZE * 64), SIZE)]
    full = [w for w in windows if len(w) == SIZE]
    v = SIZE * _window_vectors(model, full).sum(axis=0) if full else np.zeros(64, np.float32)
    v = v + sum(len(w) * _window_vectors(model, [w])[0] for w in windows if len(w) < SIZE)
    return v / np.linalg.norm(v), len(windows)


def test_a_document_that_fits_is_the_models_own_embedding(attrs, docs, model, st_folder):
    """One window: exactly `model.encode(text, normalize_embeddings=True)`; stored in corpus order,
    unit length; embedding again gives the same vectors (the model runs in eval mode: no dropout)."""
    ids, mat = _stored(attrs)
    assert list(ids) == [d["id"] for d in docs] and mat.shape == (N_DOCS, 64)
    short = [i for i, d in enumerate(docs) if len(_token_ids(model, d["text"])) <= SIZE]
    assert short == list(range(30, N_DOCS))
    ref = model.encode([docs[i]["text"] for i in short], normalize_embeddings=True)
    cos = np.sum(mat[short] * ref, axis=1)
    assert cos.min() >= 0.9999, cos
    emb = load_embedder(str(st_folder))
    texts = [d["text"] for d in docs[28:34]]
    np.testing.assert_allclose(emb.embed(texts), emb.embed(texts), atol=1e-6)


def test_a_long_document_is_the_token_weighted_mean_of_its_windows(attrs, docs, model, st_folder):
    """Documents of 2 to 64 windows equal the documented rule computed window by window; past 64
    windows the rest of the document is not read."""
    _, mat = _stored(attrs)
    counts = []
    for i in range(30):
        want, n = _pooled(model, _token_ids(model, docs[i]["text"]))
        counts.append(n)
        assert float(mat[i] @ want) >= 0.9999, (i, n)
    assert min(counts) >= 2
    # one document of over 64 windows: its vector is the first 64 windows' pool
    text = " ".join(d["text"] for d in docs[:30])
    ids = _token_ids(model, text)
    assert len(ids) > 64 * SIZE, len(ids)
    want, n = _pooled(model, ids)
    assert n == 64
    got = load_embedder(str(st_folder)).embed([text])[0]
    assert float(got @ want) >= 0.9999


def test_windows_are_the_documents_own_tokens(docs, model, st_folder, monkeypatch):
    """Every window reaches the model as [CLS] + its slice of the document's token ids + [SEP], never
    longer than max_seq_length. (Before: windows were decoded to text and re-tokenised; a window
    starting inside a word decoded to "##..." and re-tokenised 2 tokens longer, so the model
    truncated it silently - most windows of real web text.)"""
    import torch

    seen: list[list[int]] = []
    pad, vocab = model.tokenizer.pad_token_id, len(model.tokenizer)
    lookup = torch.nn.Embedding.forward

    def record(self, ids):  # the ids BERT's word embeddings look up, padding dropped
        if self.num_embeddings == vocab:
            seen.extend([t for t in row if t != pad] for row in ids.tolist())
        return lookup(self, ids)

    emb = load_embedder(str(st_folder))
    texts = [d["text"] for d in docs[:8]]
    monkeypatch.setattr(torch.nn.Embedding, "forward", record)
    emb.embed(texts)
    monkeypatch.undo()
    cls, sep = model.tokenizer.cls_token_id, model.tokenizer.sep_token_id
    want = []
    for t in texts:
        ids = _token_ids(model, t)
        want += [[cls, *ids[s:s + SIZE], sep] for s in range(0, min(len(ids), SIZE * 64), SIZE)]
    assert max(len(r) for r in seen) <= MAX_SEQ
    assert sorted(seen) == sorted(want)


def test_a_text_without_tokens_is_a_zero_vector(st_folder):
    """As for the static models (Embedder.embed's contract): no tokens, no vector - not the vector
    of a bare [CLS] [SEP]."""
    out = load_embedder(str(st_folder)).embed(["", "  \n\t", "a real word"])
    assert np.array_equal(out[:2], np.zeros((2, 64), np.float32))
    assert abs(float(np.linalg.norm(out[2])) - 1.0) < 1e-5


def test_offline_cli_models_show_and_resume(attrs, st_folder, tmp_path, capsys):
    """`textsieve embed --model FOLDER` in a fresh process whose sockets cannot connect gives the
    same vectors; `models show FOLDER` prints its identity; a re-run is a no-op; a file of the
    folder changed in place re-embeds under a new fingerprint."""
    folder = tmp_path / "tiny-st"
    shutil.copytree(st_folder, folder)
    copy = tmp_path / "attrs"
    shutil.copytree(attrs, copy, ignore=shutil.ignore_patterns("embed_*"))
    out = run_offline_cli(["embed", str(copy), "--model", str(folder), "--workers", "1", "-q"], timeout=300)
    assert out.returncode == 0, out.stderr
    ids, mat = read_embeddings(str(copy), "tiny_st")
    assert np.array_equal(mat, read_embeddings(str(attrs), "tiny_st")[1])

    emb = load_embedder(str(folder))
    assert main(["models", "show", str(folder), "--compact"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["model"], shown["model_kind"], shown["dim"]) == ("tiny_st", "sentence_transformers", 64)
    assert shown["fingerprint"] == emb.fingerprint and shown["model_path"] == str(folder)

    again = run_embed(EmbedConfig(directory=str(copy), model=str(folder), workers=1, progress=False))
    assert again.skipped and again.computed == 0
    with open(folder / "modules.json", "a", encoding="utf-8") as fh:
        fh.write("\n")
    changed = run_embed(EmbedConfig(directory=str(copy), model=str(folder), workers=1, progress=False))
    assert changed.computed == 1 and changed.model["model_fingerprint"] != emb.fingerprint
    assert np.array_equal(read_embeddings(str(copy), "tiny_st")[1], mat)


def test_the_set_records_how_the_model_ran_and_texts_are_prepared_as_the_model_does(attrs, model, st_folder):
    """The set's identity says how the windows reached the model and which releases computed the
    vectors (another way, or other releases, and the set is recomputed); texts with outer spaces
    and capitals are the model's own `encode`; a lone surrogate is named, not a tokenizer TypeError."""
    import sentence_transformers
    import torch

    summary = json.loads((attrs / "sets" / "embed_tiny_st" / ".textsieve" / "summary.json").read_text())
    run = summary["runtime"]
    assert run["windows"] == "token ids" and run["text"] in PREPARE
    assert (run["sentence-transformers"], run["torch"]) == (sentence_transformers.__version__, torch.__version__)
    emb = load_embedder(str(st_folder))
    texts = ["  Leading and trailing Spaces, Capitals.  ", "\tTabs\tand MIXED case\n"]
    ref = model.encode(texts, normalize_embeddings=True)
    assert np.sum(emb.embed(texts) * ref, axis=1).min() >= 0.9999
    with pytest.raises(EmbeddingModelError, match=r"text #1 .*lone surrogate U\+D800"):
        emb.embed(["fine", "bad \ud800 text"])


class _CharTokenizer:
    """A stand-in tokenizer: one id per character, [1] ... [2] around a sequence."""

    pad_token_id = 0
    padding_side = "right"

    def __call__(self, text: str, add_special_tokens: bool = True, **_: Any) -> dict[str, list[int]]:
        ids = [ord(c) for c in text]
        return {"input_ids": [1, *ids, 2] if add_special_tokens else ids}


class _PreparingModel:
    """A stand-in model whose `preprocess` prepares the text with `prep` before tokenising."""

    default_prompt_name = None

    def __init__(self, prep: Any) -> None:
        self.tokenizer = _CharTokenizer()
        self._prep = prep

    def preprocess(self, texts: list[str]) -> dict[str, Any]:
        ids = self.tokenizer(self._prep(texts[0]))["input_ids"]
        return {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), np.int64)}


@pytest.mark.parametrize("name", list(PREPARE))
def test_the_id_path_prepares_texts_as_the_model_release_does(name):
    """Older sentence-transformers releases strip a text (and lower-case it for do_lower_case
    models) before tokenising; newer ones pass it as given. The probe finds which, so the id
    windows are the tokens the model's own `encode` would see (runs without torch)."""
    feeder = _IdFeeder.of(_PreparingModel(PREPARE[name]))
    assert feeder is not None and feeder.prepare == name
    assert (feeder.prefix, feeder.suffix) == ([1], [2])


def test_a_preparation_it_cannot_reproduce_takes_the_text_path():
    """A model that rewrites texts otherwise (here: a prompt prepended) is fed text windows."""
    assert _IdFeeder.of(_PreparingModel(lambda t: "query: " + t)) is None
