"""Real tokenizers loaded from a local file: a Hugging Face `tokenizer.json` or a tiktoken BPE file.

Why a wrapper: `tokens`, DSIR's token budget, `mix` and the training shards all need the same
three things from "the tokenizer the user trains with" - token ids of a batch of texts, their
counts, and an identity (`fingerprint`, the SHA-256 of the file's bytes) that changes when the
file does, so a stage keyed on it re-runs. Both libraries are used offline only: the file is read
by path (through fsspec) and nothing is downloaded at run time.

Conventions, the same for both kinds (they decide what a count means):
- A document's tokens are its text's tokens only: no BOS/EOS or other post-processor tokens
  (`add_special_tokens=False`); the end-of-text separator is the shard writer's to add (`eos_id`).
- Special-token strings inside a document's text are encoded as ordinary text (HF:
  `encode_special_tokens = True`; tiktoken: `encode_ordinary`), so a web page quoting
  ``<|endoftext|>`` can never inject a control token into training data.

tiktoken files hold only the mergeable ranks (base64 token, rank per line), not the split
regex nor the special tokens, so those are settings: `pattern` is a preset name
(`PATTERNS`: cl100k_base, o200k_base, r50k_base/gpt2, p50k_base) or a regex; by default the
preset named by the file's stem (``cl100k_base.tiktoken`` -> cl100k_base's regex and special
token ids), else cl100k_base's regex with ``<|endoftext|>`` = the highest rank + 1.
The file is parsed here in tiktoken's own format rather than through
`tiktoken.load.load_tiktoken_bpe`: that function caches file contents under a key made from the
*path* (in the temp dir), so a tokenizer file changed in place would be read stale.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import fsspec
import numpy as np

from textsieve.errors import TextsieveError

__all__ = ["PATTERNS", "Tokenizer", "TokenizerError", "load_tokenizer", "safe_name", "train_bpe"]

_CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
           r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
#: tiktoken split regexes by encoding name (copied from tiktoken_ext.openai_public, which would download)
PATTERNS: dict[str, str] = {"cl100k_base": _CL100K, "o200k_base": _O200K, "r50k_base": _R50K, "gpt2": _R50K,
                            "p50k_base": _R50K}
#: the special tokens of OpenAI's encodings (used when the file's stem names one)
_SPECIALS: dict[str, dict[str, int]] = {
    "cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    "r50k_base": {"<|endoftext|>": 50256}, "gpt2": {"<|endoftext|>": 50256}, "p50k_base": {"<|endoftext|>": 50256},
}
#: end-of-text token strings looked up in a tokenizer.json, in this order, when no tokenizer_config.json names one
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|eos|>", "<|im_end|>")
ENDOFTEXT = "<|endoftext|>"
_NAME = re.compile(r"[a-z0-9_]+")


class TokenizerError(TextsieveError, ValueError):
    """A tokenizer path or setting that cannot be used (missing file, not a tokenizer, bad name)."""


def safe_name(text: str) -> str:
    """`text` as a column suffix: lower case, every run of other characters than [a-z0-9_] one `_`."""
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")


@dataclass
class Tokenizer:
    """A loaded tokenizer; `encode_batch`/`count_batch` are the only calls the stages make."""

    name: str  # column suffix ([a-z0-9_]+): ts_tokens_<name>
    kind: str  # "hf" | "tiktoken"
    vocab_size: int  # ids are < vocab_size (uint16 shards fit when vocab_size <= 65536)
    eos_id: int | None  # the end-of-text token's id, None when the tokenizer has none
    fingerprint: str  # SHA-256 of the file's bytes, 16 hex digits
    path: str  # the file read (a folder's tokenizer.json)
    pattern: str | None = None  # tiktoken: the split regex used
    #: False: a special token's string in a text is that one token, as HF's `tokenize()` and tiktoken's
    #: `encode(allowed_special="all")` make it (RedPajama-1T's GitHub filter counted so); True: plain text
    special_as_text: bool = True
    _impl: Any = field(default=None, repr=False)

    def _hf_batch(self, texts: Sequence[str], offsets: bool = False) -> list[Any]:
        encode = self._impl.encode_batch if offsets else self._impl.encode_batch_fast  # _fast leaves offsets 0
        try:
            return encode(list(texts), add_special_tokens=False)
        except TypeError:  # a lone surrogate (not UTF-8): replaced by U+FFFD, as tiktoken does
            clean = [t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in texts]
            return encode(clean, add_special_tokens=False)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text (no special tokens added; special strings encoded as text)."""
        if self.kind == "hf":
            return [e.ids for e in self._hf_batch(texts)]
        return self._tiktoken_batch(texts)

    def _tiktoken_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if self.special_as_text:
            return self._impl.encode_ordinary_batch(list(texts))
        return self._impl.encode_batch(list(texts), allowed_special="all")

    def encode_offsets_batch(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: its token ids (uint32) and each token's code-point (start, end) as uint32
        pairs, for stages that mark text by token (`dedup substring`). tiktoken gives each
        token's start (`decode_with_offsets`); its end is the next token's start."""
        out = []
        if self.kind == "hf":
            for e in self._hf_batch(texts, offsets=True):
                # fromiter over the flattened pairs: a third faster than asarray of the list of tuples
                pairs = np.fromiter(chain.from_iterable(e.offsets), dtype=np.uint32, count=2 * len(e.ids))
                out.append((np.asarray(e.ids, dtype=np.uint32), pairs.reshape(-1, 2)))
            return out
        for ids in self._tiktoken_batch(texts):
            decoded, starts = self._impl.decode_with_offsets(ids)
            bounds = np.asarray([*starts, len(decoded)], dtype=np.uint32)
            out.append((np.asarray(ids, dtype=np.uint32), np.stack([bounds[:-1], bounds[1:]], axis=1)))
        return out

    def count_batch(self, texts: Sequence[str]) -> np.ndarray:
        """The number of tokens of each text, as int64 (the same tokens `encode_batch` gives)."""
        if self.kind == "hf":
            encs = self._hf_batch(texts)
            return np.fromiter((len(e) for e in encs), dtype=np.int64, count=len(encs))
        ids = self._tiktoken_batch(texts)
        return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))

    def info(self) -> dict[str, Any]:
        """What identifies this tokenizer's output (stage `info`, manifests)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "fingerprint": self.fingerprint,
                               "vocab_size": self.vocab_size, "eos_id": self.eos_id}
        if self.pattern is not None:
            out["pattern"] = self.pattern
        return out


def _read(path: str) -> tuple[str, bytes, bool]:
    """(file path, its bytes, whether `path` was a folder)."""
    try:
        fs, p = fsspec.core.url_to_fs(path)
        folder = fs.isdir(p)
        if folder:
            p = p.rstrip("/") + "/tokenizer.json"
            if not fs.exists(p):
                raise TokenizerError(f"tokenizer: {path} is a folder without a tokenizer.json")
        elif not fs.exists(p):
            raise TokenizerError(f"tokenizer: {path} does not exist")
        with fs.open(p, "rb") as fh:
            data: bytes = fh.read()
    except TokenizerError:
        raise
    except (OSError, ValueError, ImportError) as e:
        raise TokenizerError(f"tokenizer: cannot read {path}: {e}") from e
    return (p if "://" not in path else path.rstrip("/") + ("/tokenizer.json" if folder else "")), data, folder


def _stem(path: str, folder: bool) -> str:
    parts = [x for x in re.split(r"[/\\]", path.rstrip("/\\")) if x]
    if not parts:
        return ""
    if folder:
        return parts[-1]
    stem = parts[-1].split(".")[0]
    if stem == "tokenizer" and len(parts) > 1:  # models/gpt2/tokenizer.json -> gpt2
        return parts[-2]
    return stem


def _name(path: str, folder: bool, name: str | None) -> str:
    if name is not None:
        if not _NAME.fullmatch(name):
            raise TokenizerError(f"tokenizer: name {name!r} must be lower-case letters, digits and _ only "
                                 "(it becomes the column ts_tokens_<name>)")
        return name
    derived = safe_name(_stem(path, folder))
    if not derived:
        raise TokenizerError(f"tokenizer: cannot make a name from {path}; pass a name (--name)")
    return derived


def load_tokenizer(path: str, name: str | None = None, *, pattern: str | None = None,
                   special_as_text: bool = True) -> Tokenizer:
    """Load the tokenizer at `path`: a tokenizer.json (or a folder holding one) or a tiktoken BPE file.

    `name` (the column suffix) defaults to the file's stem, or its folder's name for a file called
    tokenizer.json. `pattern` is for tiktoken files only (see the module doc). `special_as_text`
    False counts a special token's string inside a text as that one token (`Tokenizer`).
    """
    file, data, folder = _read(path)
    fingerprint = hashlib.sha256(data).hexdigest()[:16]
    tok_name = _name(path, folder, name)
    head = data.lstrip()[:1]
    if folder or file.endswith(".json") or head in (b"{", b"["):
        if pattern is not None:
            raise TokenizerError(f"tokenizer: {path} is a tokenizer.json; a tiktoken pattern applies to "
                                 "tiktoken files only")
        tok = _load_hf(path, file, data, folder, tok_name, fingerprint)
        tok._impl.encode_special_tokens = special_as_text
    else:
        tok = _load_tiktoken(path, file, data, tok_name, fingerprint, pattern)
    tok.special_as_text = special_as_text
    return tok


def _need(module: str) -> None:
    """A missing optional library is a one-line error naming the install, not a traceback."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise TokenizerError(f"tokenizer: the {module} library is not installed (pip install {module})")


def _load_hf(path: str, file: str, data: bytes, folder: bool, name: str, fingerprint: str) -> Tokenizer:
    _need("tokenizers")
    from tokenizers import Tokenizer as HFTokenizer

    try:
        impl = HFTokenizer.from_str(data.decode("utf-8"))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # tokenizers raises plain Exception for a bad file, and a Rust panic
        # (pyo3's PanicException, a BaseException) for some damaged ones, e.g. merges naming
        # vocabulary entries the file lost (issue 25's fuzzer, tokenizer case 2847)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TokenizerError(f"tokenizer: {path} is not a Hugging Face tokenizer.json ({first})") from None
    impl.encode_special_tokens = True
    impl.no_padding()
    impl.no_truncation()
    eos = _hf_eos(impl, file, folder)
    return Tokenizer(name=name, kind="hf", vocab_size=int(impl.get_vocab_size(with_added_tokens=True)),
                     eos_id=eos, fingerprint=fingerprint, path=file, _impl=impl)


def _hf_eos(impl: Any, file: str, folder: bool) -> int | None:
    """The eos token: tokenizer_config.json's `eos_token` beside the file if any, else a usual name."""
    names: list[str] = []
    cfg = os.path.join(os.path.dirname(file), "tokenizer_config.json")
    if "://" not in file and os.path.exists(cfg):
        try:
            with open(cfg, encoding="utf-8") as fh:
                e = json.load(fh).get("eos_token")
            names.append(e["content"] if isinstance(e, dict) else e)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    for n in [*names, *EOS_CANDIDATES]:
        if isinstance(n, str):
            i = impl.token_to_id(n)
            if i is not None:
                return int(i)
    return None


def parse_tiktoken(data: bytes, path: str) -> dict[bytes, int]:
    """tiktoken's BPE file format: one `base64(token) rank` per line."""
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError as e:
            raise TokenizerError(f"tokenizer: {path} is neither a tokenizer.json nor a tiktoken BPE file "
                                 f"(line {n} is not `base64-token rank`)") from e
    if not ranks:
        raise TokenizerError(f"tokenizer: {path} is empty, not a tokenizer")
    return ranks


def _load_tiktoken(path: str, file: str, data: bytes, name: str, fingerprint: str,
                   pattern: str | None) -> Tokenizer:
    _need("tiktoken")
    import tiktoken

    ranks = parse_tiktoken(data, path)
    stem = _stem(file, False)
    preset = pattern if pattern is not None else (stem if stem in PATTERNS else "cl100k_base")
    pat = PATTERNS.get(preset, preset)
    top = max(ranks.values())
    specials = _SPECIALS.get(stem) if pattern is None or pattern == stem else None
    if specials is None or min(specials.values()) <= top:
        specials = {ENDOFTEXT: top + 1}
    try:
        impl = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    except ValueError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TokenizerError(f"tokenizer: cannot use {path} as a tiktoken encoding: {first}") from e
    return Tokenizer(name=name, kind="tiktoken", vocab_size=int(impl.n_vocab), eos_id=specials.get(ENDOFTEXT),
                     fingerprint=fingerprint, path=file, pattern=pat, _impl=impl)


def train_bpe(texts: Iterable[str], vocab_size: int, output: str, *, min_frequency: int = 2,
              special_tokens: Sequence[str] = (ENDOFTEXT,), length: int | None = None,
              show_progress: bool = False) -> Tokenizer:
    """Train a byte-level BPE (GPT-2 style) on `texts` with `tokenizers` and write it to `output`.

    Byte-level: every byte is in the initial alphabet, so any text encodes without unknown
    tokens. The special tokens get the first ids (0, 1, ...); the first is the end-of-text token.
    Deterministic for the same texts and settings (tests check two runs give identical files).
    Returns the written tokenizer, loaded back.
    """
    _need("tokenizers")
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    from textsieve.io.atomic import atomic_open

    if vocab_size < 256 + len(special_tokens) + 1:
        raise TokenizerError(f"train tokenizer: vocab size {vocab_size} is too small for a byte-level BPE "
                             f"(256 bytes + {len(special_tokens)} special token(s) + at least one merge)")
    if min_frequency < 1:
        raise TokenizerError(f"train tokenizer: min frequency must be >= 1, not {min_frequency}")
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(special_tokens), show_progress=show_progress,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer, length=length)
    fs, p = fsspec.core.url_to_fs(output)
    parent = os.path.dirname(p)
    if parent:
        fs.makedirs(parent, exist_ok=True)
    with atomic_open(fs, p, "w") as fh:
        fh.write(tok.to_str(pretty=True))
    return load_tokenizer(output)
