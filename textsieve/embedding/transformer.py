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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_WINDOWS = 64
BATCH = 64
#: how a sentence-transformers release prepares a text before its tokenizer sees it: older releases
#: strip it (and lower-case it for `do_lower_case` models), newer ones pass it as given (a lower-casing
#: model lower-cases in its tokenizer's normalizer). `_IdFeeder.of` finds which by probing the model.
PREPARE: dict[str, Callable[[str], str]] = {
    "as given": lambda t: t,
    "stripped": str.strip,
    "stripped, lower-cased": lambda t: t.strip().lower(),
    "lower-cased": str.lower,
}
#: a probe text that tells the preparations apart (outer spaces, capitals)
PROBE = "  Ab Cd. "


def _windows(tokenizer: Any, text: str, size: int) -> list[tuple[str, int]]:
    """The text's token windows as (text, tokens) pairs: the fallback for a model that cannot be fed
    token ids (see `_IdFeeder`). A window's decoded text need not re-tokenise to the same tokens
    (a WordPiece window that starts inside a word decodes to "##..."), so this path is approximate."""
    ids = tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"]
    if not ids:  # no tokens: no window, a zero vector
        return []
    if len(ids) <= size:
        return [(text, len(ids))]
    out = []
    for start in range(0, min(len(ids), size * MAX_WINDOWS), size):
        part = ids[start:start + size]
        out.append((tokenizer.decode(part), len(part)))
    return out


@dataclass
class _IdFeeder:
    """Feeds token-id windows straight to the model, so every window is exactly the tokens it was cut
    from: decoding a window and letting the model re-tokenise it changes the tokens (a window that
    starts inside a word decodes to "##ton" and re-tokenises to "#", "#", "ton") and, two tokens over
    `max_seq_length`, is truncated silently: 3,295 of 5,014 windows of the first 300 dev web documents
    did both with a 2k-piece WordPiece model (tests/test_embed_transformer.py checks the ids)."""

    prefix: list[int]  # the special tokens the tokenizer puts around one sequence
    suffix: list[int]
    pad: int
    left: bool  # padding_side == "left" (last-token pooling models)
    extra: dict[str, Any]  # non-tensor features preprocess adds (e.g. modality="text")
    token_types: bool
    prepare: str = "as given"  # the model's own text preparation (a `PREPARE` key), applied before tokenising

    @classmethod
    def of(cls, model: Any) -> _IdFeeder | None:
        """The feeder for `model`, or None when its input cannot be built from ids with certainty (a
        first module that is not a tokenizer-backed transformer, a default prompt, unknown features)."""
        tok = getattr(model, "tokenizer", None)
        prep = getattr(model, "preprocess", None) or getattr(model, "tokenize", None)
        pad = getattr(tok, "pad_token_id", None)
        if tok is None or prep is None or pad is None or getattr(model, "default_prompt_name", None):
            return None
        try:
            bare = list(tok("a", add_special_tokens=False)["input_ids"])
            full = list(tok("a")["input_ids"])
            feats = prep(["a"])
            ids = [int(i) for i in feats["input_ids"][0].tolist()]
            probed = [int(i) for i in prep([PROBE])["input_ids"][0].tolist()]
            prepare = next((name for name, f in PREPARE.items() if list(tok(f(PROBE))["input_ids"]) == probed), None)
        except Exception:  # not the tokenizer API this path relies on: take the text path
            return None
        k = next((k for k in range(len(full) - len(bare) + 1) if full[k:k + len(bare)] == bare), None)
        if k is None or not bare or ids != full or prepare is None:
            return None
        tensors = {key for key, v in feats.items() if hasattr(v, "shape")}
        if not tensors <= {"input_ids", "attention_mask", "token_type_ids"}:
            return None
        return cls(prefix=full[:k], suffix=full[k + len(bare):], pad=int(pad),
                   left=getattr(tok, "padding_side", "right") == "left",
                   extra={key: v for key, v in feats.items() if key not in tensors},
                   token_types="token_type_ids" in tensors, prepare=prepare)

    def encode(self, model: Any, windows: list[list[int]]) -> np.ndarray:
        """float32 (len(windows), dim): the model's sentence embedding of each id window (longest
        first in batches, as `encode` does, so padding is small)."""
        import torch

        order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))
        out: np.ndarray | None = None
        for b in range(0, len(order), BATCH):
            rows = order[b:b + BATCH]
            seqs = [self.prefix + windows[i] + self.suffix for i in rows]
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, s in enumerate(seqs):
                cols = slice(width - len(s), width) if self.left else slice(0, len(s))
                ids[r, cols] = torch.tensor(s, dtype=torch.long)
                mask[r, cols] = 1
            feats: dict[str, Any] = {**self.extra, "input_ids": ids.to(model.device),
                                     "attention_mask": mask.to(model.device)}
            if self.token_types:
                feats["token_type_ids"] = torch.zeros_like(feats["input_ids"])
            with torch.inference_mode():
                vecs = model(feats)["sentence_embedding"].float().cpu().numpy()
            if getattr(model, "truncate_dim", None):  # as `encode` does (a Matryoshka model's setting)
                vecs = vecs[:, :model.truncate_dim]
            if out is None:
                out = np.zeros((len(windows), vecs.shape[1]), np.float32)
            out[rows] = vecs
        return out if out is not None else np.zeros((0, 0), np.float32)


def _dimension(model: Any) -> int:
    """The model's output dimension (`get_embedding_dimension` since sentence-transformers 6, where
    the older name warns; 0 when it does not say)."""
    get = getattr(model, "get_embedding_dimension", None) or getattr(model, "get_sentence_embedding_dimension", None)
    return int((get() if get is not None else 0) or 0)


def chunk_and_pool(model: Any, texts: list[str], feeder: _IdFeeder | None = None) -> np.ndarray:
    """Document vectors of `texts` by the module's rule, float32 unit rows (zero for a text without
    tokens, as for the static models). With a `feeder` the windows go to the model as token ids."""
    tokenizer = model.tokenizer
    special = len(feeder.prefix) + len(feeder.suffix) if feeder is not None else 2
    size = max(8, int(getattr(model, "max_seq_length", 256) or 256) - special)
    weights: list[int] = []
    owner: list[int] = []
    if feeder is not None:
        windows: list[list[int]] = []
        prepare = PREPARE[feeder.prepare]
        all_ids = tokenizer([prepare(t) for t in texts], add_special_tokens=False, truncation=False,
                            verbose=False)["input_ids"]
        for i, ids in enumerate(all_ids):
            for start in range(0, min(len(ids), size * MAX_WINDOWS), size):
                windows.append(list(ids[start:start + size]))
                weights.append(len(windows[-1]))
                owner.append(i)
        vecs = feeder.encode(model, windows) if windows else np.zeros((0, 0), np.float32)
    else:
        pieces: list[str] = []
        for i, t in enumerate(texts):
            for piece, n in _windows(tokenizer, t, size):
                pieces.append(piece)
                weights.append(n)
                owner.append(i)
        vecs = (np.asarray(model.encode(pieces, batch_size=BATCH, convert_to_numpy=True, show_progress_bar=False),
                           dtype=np.float32) if pieces else np.zeros((0, 0), np.float32))
    dim = vecs.shape[1] if vecs.ndim == 2 and vecs.shape[1] else _dimension(model)
    out = np.zeros((len(texts), dim), np.float32)
    if owner:
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
    model.eval()  # loaded in training mode: dropout would make every vector random
    feeder = _IdFeeder.of(model)
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs)
    dim = _dimension(model)
    return Embedder(name=name, kind="sentence_transformers", dim=dim, path=path,
                    fingerprint=files_fingerprint(files), files=files,
                    embed_fn=lambda texts: chunk_and_pool(model, texts, feeder), runtime=runtime(feeder))


def runtime(feeder: _IdFeeder | None) -> dict[str, str]:
    """How the windows reach the model and the library releases that compute the vectors (the
    embedding set's identity: a set made another way, or by other releases, is recomputed)."""
    from importlib import metadata

    out = {"windows": "token ids" if feeder is not None else "text (decoded windows, re-tokenised: approximate)"}
    if feeder is not None:
        out["text"] = feeder.prepare
    for pkg in ("sentence-transformers", "transformers", "torch"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out
