"""sentence-transformers models by path (optional: `pip install sentence-transformers`, torch).

Chunk-and-pool: a transformer sees at most `max_seq_length` tokens, so a long document is cut
into consecutive windows of that many tokens (less the model's special tokens; at most
`MAX_WINDOWS`, i.e. the document's first ~16-32k tokens), every window is embedded, and the
document vector is the mean of the window vectors weighted by each window's token count, then
L2-normalised. A document that fits is one window: exactly the model's own embedding. The model
runs on CUDA when torch sees a GPU, else on the CPU; loading never touches the network
(`local_files_only`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

MAX_WINDOWS = 64
BATCH = 64


def _windows(tokenizer: Any, text: str, size: int) -> list[tuple[str, int]]:
    """The text's token windows as (text, tokens) pairs."""
    ids = tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"]
    if len(ids) <= size:
        return [(text, max(1, len(ids)))]
    out = []
    for start in range(0, min(len(ids), size * MAX_WINDOWS), size):
        part = ids[start:start + size]
        out.append((tokenizer.decode(part), len(part)))
    return out


def chunk_and_pool(model: Any, texts: list[str]) -> np.ndarray:
    """Document vectors of `texts` by the module's rule, float32 unit rows."""
    size = max(8, int(getattr(model, "max_seq_length", 256) or 256) - 2)
    tokenizer = model.tokenizer
    pieces: list[str] = []
    weights: list[int] = []
    owner: list[int] = []
    for i, t in enumerate(texts):
        for piece, n in _windows(tokenizer, t, size):
            pieces.append(piece)
            weights.append(n)
            owner.append(i)
    vecs = np.asarray(model.encode(pieces, batch_size=BATCH, convert_to_numpy=True, show_progress_bar=False),
                      dtype=np.float32)
    out = np.zeros((len(texts), vecs.shape[1] if vecs.ndim == 2 else 0), np.float32)
    np.add.at(out, np.asarray(owner, np.int64), vecs * np.asarray(weights, np.float32)[:, None])
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    np.divide(out, norms[:, None], out=out, where=norms[:, None] > 0)
    return out


def load_sentence_transformer(name: str, path: str) -> Any:
    """An `Embedder` for the sentence-transformers folder `path`."""
    from textsieve.embedding.models import Embedder, EmbeddingModelError, files_fingerprint

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub when it is imported
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise EmbeddingModelError(f"{path} is a sentence-transformers model: pip install sentence-transformers "
                                  "(torch) to use it, or use the default static model") from e
    device = None
    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        pass
    model = SentenceTransformer(path, device=device, local_files_only=True)
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs)
    dim = int(model.get_sentence_embedding_dimension() or 0)
    return Embedder(name=name, kind="sentence_transformers", dim=dim, path=path,
                    fingerprint=files_fingerprint(files), files=files,
                    embed_fn=lambda texts: chunk_and_pool(model, texts))
