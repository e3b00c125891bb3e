"""Embeddings (`textsieve embed`, `annotate --signals embed`) on real text, offline.

The default model is WordLlama L2-Supercat from the wordllama wheel, run by textsieve's own
static inference (`embedding.static`). What is checked against the libraries themselves:
our vectors equal WordLlama's own inference of the whitespace-normalised text, and a Model2Vec
folder gives Model2Vec's own vectors. The stage: column type, order, determinism across worker
counts, resume, refusal of another model under the same name, errors, and a run with the
network cut off.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _files import web_docs
from _offline import run_offline_cli

from textsieve.cli import main
from textsieve.embedding.models import EmbeddingModelError, load_embedder
from textsieve.embedding.static import wordllama_files
from textsieve.embedding.store import column_name, read_embeddings, to_arrow, to_numpy
from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
from textsieve.stages.annotate.embed import EmbedConfig, run_embed
from textsieve.stages.doc_set import DocSetError

N_DOCS = 240


@pytest.fixture(scope="module")
def docs(dev_dir) -> list[dict]:
    return web_docs(dev_dir, N_DOCS)


@pytest.fixture(scope="module")
def attrs(docs, tmp_path_factory) -> Path:
    """An annotate folder of two shards (so two workers have work) over the first web documents."""
    root = tmp_path_factory.mktemp("embed")
    for i, part in enumerate((docs[:N_DOCS // 2], docs[N_DOCS // 2:])):
        with gzip.open(root / f"part{i}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d) + "\n" for d in part)
    out = root / "attrs"
    run_annotate(AnnotateConfig(inputs=[str(root / "part0.jsonl.gz"), str(root / "part1.jsonl.gz")], output=str(out),
                                signals="rps_doc_word_count", progress=False, workers=1))
    return out


def test_default_model_is_wordllamas_own_inference_of_the_normalised_text(docs):
    """The documented rule: whitespace carries no meaning, so our vector of a text is WordLlama's
    own `embed(" ".join(text.split()), norm=True)` (its inference class, built from the wheel's
    files; `WordLlama.load()` would go to the network)."""
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    emb = load_embedder()
    assert (emb.name, emb.dim, emb.kind) == ("wordllama", 256, "static")
    texts = [d["text"] for d in docs[:120]]
    ours = emb.embed(texts)
    ref_model = WordLlamaInference(emb.embed_fn.__self__.vectors, Tokenizer.from_file(wordllama_files()[0]))
    ref = np.concatenate([ref_model.embed([" ".join(t.split()) for t in texts[i:i + 16]], norm=True)
                          for i in range(0, len(texts), 16)])
    cos = np.sum(ours * ref, axis=1)
    assert cos.min() > 0.9999, cos.min()
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    # a batch's vectors do not depend on the batch: one by one gives the same bits
    alone = np.concatenate([emb.embed([t]) for t in texts[:20]])
    assert np.array_equal(alone, ours[:20])
    assert np.array_equal(emb.embed(["", "   \n"]), np.zeros((2, 256), np.float32))


def _model2vec_folder(root: Path, texts: list[str], dim: int = 24) -> Path:
    """A small Model2Vec folder: a WordPiece (BERT-style, lower-cased) tokenizer trained on `texts`,
    seeded random vectors and per-token weights, Model2Vec's config."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=800, special_tokens=["[PAD]", "[UNK]"]))
    root.mkdir()
    tok.save(str(root / "tokenizer.json"))
    rng = np.random.default_rng(7)
    vocab = tok.get_vocab_size()
    save_file({"embeddings": rng.standard_normal((vocab, dim)).astype(np.float32),
               "weights": rng.uniform(0.5, 1.5, vocab).astype(np.float32)}, str(root / "model.safetensors"))
    (root / "config.json").write_text(json.dumps({"model_type": "model2vec", "architectures": ["StaticModel"],
                                                  "normalize": True, "hidden_dim": dim}))
    return root


def test_a_model2vec_folder_gives_model2vecs_own_vectors(docs, tmp_path):
    model2vec = pytest.importorskip("model2vec")
    texts = [d["text"] for d in docs[:80]]
    folder = _model2vec_folder(tmp_path / "m2v-small", texts)
    emb = load_embedder(str(folder))
    assert (emb.name, emb.dim) == ("m2v_small", 24)
    ours = emb.embed(texts)
    ref = model2vec.StaticModel.from_pretrained(str(folder)).encode([" ".join(t.split()) for t in texts],
                                                                   max_length=None, use_multiprocessing=False)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    assert np.sum(ours * ref, axis=1).min() > 0.9999


def test_sentence_transformer_chunk_and_pool_rule():
    """A long document is cut into windows of max_seq_length - 2 tokens; its vector is the token-weighted
    mean of the windows' vectors (a stand-in model: whitespace tokens, a vector per word count)."""
    from textsieve.embedding.transformer import chunk_and_pool

    class Tok:
        def __call__(self, text, **kw):
            return {"input_ids": [hash(w) % 1000 for w in text.split()]}

        def decode(self, ids):
            return " ".join(f"w{i}" for i in ids)

    class Model:
        max_seq_length = 12
        tokenizer = Tok()

        def encode(self, texts, **kw):
            return np.array([[len(t.split()), 1.0] for t in texts], np.float32)

    short, long_ = "a b c", " ".join(["x"] * 25)  # 25 tokens -> windows of 10, 10, 5
    out = chunk_and_pool(Model(), [short, long_])
    want_long = (10 * np.array([10, 1]) + 10 * np.array([10, 1]) + 5 * np.array([5, 1])) / 25
    np.testing.assert_allclose(out[1], want_long / np.linalg.norm(want_long), rtol=1e-6)
    np.testing.assert_allclose(out[0], np.array([3, 1]) / np.linalg.norm([3, 1]), rtol=1e-6)


@pytest.mark.slow  # > 2 s: outside the quick suite
def test_embed_stage_writes_float16_vectors_in_annotate_order_and_resumes(attrs, docs, tmp_path):
    res = run_embed(EmbedConfig(directory=str(attrs), workers=1, progress=False))
    assert (res.documents, res.shards, res.computed, res.column) == (N_DOCS, 2, 2, "ts_embed_wordllama")
    assert res.computed_documents == N_DOCS
    shard = pq.read_table(attrs / "sets" / "embed_wordllama" / "part0.parquet")
    assert shard.schema.field("ts_embed_wordllama").type == pa.list_(pa.float16(), 256)
    assert shard.column("id").to_pylist() == [d["id"] for d in docs[:N_DOCS // 2]]
    ids, matrix = read_embeddings(str(attrs))
    assert ids == [d["id"] for d in docs] and matrix.shape == (N_DOCS, 256)
    direct = load_embedder().embed([d["text"] for d in docs])
    np.testing.assert_array_equal(matrix, direct.astype(np.float16).astype(np.float32))
    summary = json.loads((attrs / "sets" / "embed_wordllama" / ".textsieve" / "summary.json").read_text())
    assert summary["model_fingerprint"] == res.model["model_fingerprint"] and summary["n_docs"] == N_DOCS
    again = run_embed(EmbedConfig(directory=str(attrs), workers=1, progress=False))
    assert again.skipped and again.computed == 0 and again.computed_documents == 0
    # two workers write the same bytes
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(attrs, copy, ignore=shutil.ignore_patterns("embed_*"))
    run_embed(EmbedConfig(directory=str(copy), workers=2, progress=False))
    for name in ("part0.parquet", "part1.parquet"):
        a = pq.read_table(attrs / "sets" / "embed_wordllama" / name).column(column_name("wordllama"))
        b = pq.read_table(copy / "sets" / "embed_wordllama" / name).column(column_name("wordllama"))
        assert a.equals(b)


def test_another_model_under_the_same_name_is_refused(attrs, docs, tmp_path):
    run_embed(EmbedConfig(directory=str(attrs), workers=1, progress=False))
    folder = _model2vec_folder(tmp_path / "other", [d["text"] for d in docs[:60]])
    with pytest.raises(DocSetError, match="other settings"):
        run_embed(EmbedConfig(directory=str(attrs), model=str(folder), name="wordllama", workers=1, progress=False))
    res = run_embed(EmbedConfig(directory=str(attrs), model=str(folder), workers=1, progress=False))
    assert res.column == "ts_embed_other"
    assert (attrs / "sets" / "embed_wordllama" / ".textsieve" / "summary.json").exists()
    # the same model moved elsewhere is that model, not another one: accepted, same vectors
    ids, before = read_embeddings(str(attrs), "other")
    moved = tmp_path / "moved" / "other"
    shutil.copytree(folder, moved)
    shutil.rmtree(folder)
    again = run_embed(EmbedConfig(directory=str(attrs), model=str(moved), workers=1, progress=False))
    assert np.array_equal(read_embeddings(str(attrs), "other")[1], before)
    assert again.computed == 0 and not again.skipped  # every shard kept; the summary says where the model is
    summary = json.loads((attrs / "sets" / "embed_other" / ".textsieve" / "summary.json").read_text())
    assert summary["model_path"] == str(moved)


def test_annotate_signals_embed_writes_the_embedding_set(docs, tmp_path):
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs[:30]))
    res = run_annotate(AnnotateConfig(inputs=[str(src)], output=str(tmp_path / "a"), signals="rps_doc_word_count,embed",
                                      progress=False, workers=1))
    assert res.embed is not None and res.embed.documents == 30
    names = pq.read_schema(tmp_path / "a" / "docs" / "docs.parquet").names
    assert "rps_doc_word_count" in names and not any(n.startswith("ts_embed") for n in names)
    assert (tmp_path / "a" / "sets" / "embed_wordllama" / "docs.parquet").exists()


def test_errors_are_one_line(attrs, tmp_path, capsys):
    with pytest.raises(EmbeddingModelError, match="nothing is downloaded"):
        load_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert main(["embed", str(tmp_path), "-q"]) == 2
    assert "not an annotate output folder" in capsys.readouterr().err
    assert main(["embed", str(attrs), "--model", str(tmp_path / "missing"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "no such file or folder" in err and "Traceback" not in err
    (tmp_path / "empty").mkdir()
    assert main(["embed", str(attrs), "--model", str(tmp_path / "empty"), "-q"]) == 2
    assert "not an embedding model folder" in capsys.readouterr().err


def test_a_text_with_a_lone_surrogate_is_named_not_a_traceback(docs):
    """Python callers can pass what no file reader would hand over: a str with a lone surrogate,
    which has no UTF-8 form. The error names the text; the text before it is not the one blamed."""
    emb = load_embedder()
    texts = [docs[0]["text"], docs[1]["text"][:200] + "\ud800" + docs[1]["text"][200:]]
    with pytest.raises(EmbeddingModelError, match=r"text #1 .*lone surrogate U\+D800 at character 200"):
        emb.embed(texts)
    assert emb.embed(texts[:1]).shape == (1, emb.dim)


def test_models_show_prints_the_embedding_models_identity(capsys):
    assert main(["models", "show", "builtin:wordllama", "--compact"]) == 0
    header = json.loads(capsys.readouterr().out)
    emb = load_embedder()
    assert header["kind"] == "embedding" and header["fingerprint"] == emb.fingerprint and header["dim"] == 256
    assert header["model_package"].startswith("wordllama ")


def test_embedding_columns_are_written_without_a_dictionary(tmp_path):
    """Float vectors hardly repeat: no dictionary for them (5x faster to write), one for the rest,
    whatever dots the names hold."""
    import fsspec

    from textsieve.io.atomic import AtomicParquetWriter, _column_layout

    def dictionary(schema: pa.Schema) -> bool | list[str]:
        return _column_layout(schema)[0]

    vec = pa.list_(pa.float16(), 4)
    assert _column_layout(pa.schema([("id", pa.string())])) == (True, None)
    assert dictionary(pa.schema([("id", pa.string()), ("a", vec), ("a.b", pa.string()),
                                 ("s", pa.list_(pa.int32()))])) == ["id", "a.b", "s.list.element"]
    # MinHash band bytes are random too (a repeat is a near-duplicate): no dictionary, alone or beside vectors
    bands = pa.list_(pa.binary())
    assert _column_layout(pa.schema([("id", pa.string()), ("signature_sim0.8", bands)])) == \
        (["id"], {"signature_sim0.8.list.element": "DELTA_LENGTH_BYTE_ARRAY"})
    assert dictionary(pa.schema([("a", vec), ("b", bands), ("c", pa.int64())])) == ["c"]
    table = pa.table({"id": ["x", "y"], "e": to_arrow(np.ones((2, 4), np.float32))})
    w = AtomicParquetWriter(fsspec.filesystem("file"), str(tmp_path / "e.parquet"), table.schema)
    w.write(table)
    w.close()
    meta = pq.ParquetFile(tmp_path / "e.parquet").metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
    assert "RLE_DICTIONARY" in encodings["id"] and "RLE_DICTIONARY" not in encodings["e.list.element"]


def test_the_rate_shown_leaves_the_one_time_kernel_compile_out():
    from textsieve.stages.annotate.embed import EmbedResult

    res = EmbedResult(output="o", set_name="embed_x", column="c", documents=500, computed=1, computed_documents=500,
                      seconds=0.25, compile_seconds=5.5, kernels_compiled=6)
    assert res.rate_text() == "2,000 docs/s; 5.5 s one-time kernel compile"
    res.kernels_compiled = 0  # loaded from numba's cache: nothing to say
    assert res.rate_text() == "2,000 docs/s"
    res.computed_documents = 100  # a re-run that kept the other shards: only the embedded ones count
    assert res.rate_text() == "400 docs/s"


def test_float16_round_trip():
    m = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    back = to_numpy(to_arrow(m))
    np.testing.assert_allclose(back, m, rtol=1e-3, atol=1e-3)


def test_embeds_with_the_network_cut_off(attrs, tmp_path):
    """Nothing is downloaded: in a fresh process whose sockets cannot connect (and HF_HUB_OFFLINE=1,
    no proxy), `textsieve embed` still embeds with the default model."""
    import shutil

    copy = tmp_path / "offline"
    shutil.copytree(attrs, copy, ignore=shutil.ignore_patterns("embed_*"))
    out = run_offline_cli(["embed", str(copy), "--workers", "1", "-q"])
    assert out.returncode == 0, out.stderr
    assert read_embeddings(str(copy))[1].shape == (N_DOCS, 256)


def test_pipeline_embeds_dedups_semantically_and_targets_then_reruns_as_a_noop(docs, dev_dir, tmp_path):
    """A pipeline file with `embed:`, `dedup: semantic:` and an embedding DSIR fit runs them in
    order; a second run does nothing; without embeddings the file is refused, naming the key."""
    import yaml

    from textsieve.pipeline.config import PipelineConfigError, load
    from textsieve.pipeline.run import run_pipeline

    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs[:150]))
    with gzip.open(dev_dir / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        wiki = [json.loads(next(fh)) for _ in range(60)]
    (tmp_path / "wiki.jsonl").write_text("".join(json.dumps(d) + "\n" for d in wiki))
    doc = {"inputs": ["docs.jsonl"], "output": "out", "workers": 1,
           "annotate": {"signals": ["rps_doc_word_count"]}, "embed": {},
           "dedup": {"semantic": {"eps": [0.1], "clusters": 4}},
           "dsir": [{"name": "wiki", "targets": ["wiki.jsonl"], "features": "embed"}],
           "select": {"dsir": "wiki", "k": 20}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc))
    cfg = load(str(tmp_path / "p.yaml"))
    assert cfg.stages() == ["annotate", "embed", "dedup_semantic", "dsir:wiki", "select"]
    first = run_pipeline(cfg, quiet=True)
    attrs = tmp_path / "out" / "attrs"
    assert (attrs / "sets" / "embed_wordllama" / ".textsieve" / "summary.json").exists()
    assert "dup_semantic_e1_cluster" in pq.read_schema(attrs / "sets" / "dedup_semantic" / "docs.parquet").names
    assert (attrs / "sets" / "dsir_wiki").is_dir()
    assert [s.status for s in first.stages] == ["ran"] * 5
    again = run_pipeline(load(str(tmp_path / "p.yaml")), quiet=True)
    assert [s.status for s in again.stages][1:] == ["skipped"] * 4
    # the embeddings change behind the pipeline's back (another model written under the same name):
    # the stages that read them run again, never serving results of the old vectors
    other = _model2vec_folder(tmp_path / "other", [d["text"] for d in docs[:60]])
    run_embed(EmbedConfig(directory=str(attrs), model=str(other), name="wordllama", overwrite=True, progress=False))
    third = run_pipeline(load(str(tmp_path / "p.yaml")), quiet=True)
    assert {s.name: s.status for s in third.stages} == {"annotate": "skipped", "embed": "skipped",
                                                      "dedup_semantic": "ran", "dsir:wiki": "ran", "select": "ran"}
    del doc["embed"]
    (tmp_path / "p2.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(PipelineConfigError, match=r"dedup.semantic: needs embeddings"):
        load(str(tmp_path / "p2.yaml"))


def test_a_quantized_model2vec_folder_with_a_token_mapping(docs, tmp_path):
    """Model2Vec's vocabulary quantization stores fewer vectors and a token id -> row `mapping`."""
    model2vec = pytest.importorskip("model2vec")
    from safetensors.numpy import load_file, save_file

    texts = [d["text"] for d in docs[:40]]
    folder = _model2vec_folder(tmp_path / "m2v-q", texts)
    arrays = load_file(str(folder / "model.safetensors"))
    vocab = arrays["embeddings"].shape[0]
    mapping = (np.arange(vocab) % 50).astype(np.int64)  # 50 shared rows
    save_file({"embeddings": arrays["embeddings"][:50], "weights": arrays["weights"], "mapping": mapping},
              str(folder / "model.safetensors"))
    ours = load_embedder(str(folder)).embed(texts)
    ref = model2vec.StaticModel.from_pretrained(str(folder)).encode([" ".join(t.split()) for t in texts],
                                                                   max_length=None, use_multiprocessing=False)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    assert np.sum(ours * ref, axis=1).min() > 0.9999


def test_a_worker_that_would_run_the_model_otherwise_is_refused():
    """A Ray worker whose libraries run the model another way than the process that started the
    run (say, other sentence-transformers releases) must not add its vectors to the set."""
    from textsieve.stages.annotate.embed import _setup

    emb = load_embedder()
    params = {"model": "wordllama", "name": emb.name, "fingerprint": emb.fingerprint}
    assert _setup({**params, "runtime": {}}).fingerprint == emb.fingerprint
    with pytest.raises(EmbeddingModelError, match="a worker runs wordllama as {}, the run started as"):
        _setup({**params, "runtime": {"windows": "token ids"}})
