"""KenLM models given by the user (`--models NAME=lm.bin`), scored by the `kenlm` package.

KenLM's binary format (`build_binary` output: probing or trie tables, optional quantization) is
KenLM's own; rather than re-implement it, textsieve loads such files through the `kenlm` Python
module (`pip install 'textsieve[kenlm]'` installs the `kenlm-ex` wheel; the `kenlm` sdist, which
compiles C++, provides the same module). ARPA files need no extra package:
`textsieve.models.perplexity` reads them itself.

The signal is the same `ts_perplexity_NAME` as for textsieve's own LMs: each document is one
sentence of RPv2-normalized words with digits mapped to 0 (`perplexity.tokenize`), scored with
`<s>` and `</s>`, perplexity 10^(-log10 P / (words + 1)) rounded to 1 decimal as CCNet does. The
model's vocabulary must come from that same tokenization to be meaningful. A KenLM file has no
head/middle/tail cutoffs, so no bucket signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from textsieve.errors import TextsieveError
from textsieve.models.ngram_lm_model import digits0

if TYPE_CHECKING:
    from textsieve.signals.registry import Signal
    from textsieve.text.views import BatchViews

KIND = "kenlm"
MAGIC = b"mmap lm http://kheafield.com/code"  # the first bytes of every KenLM binary file


def is_kenlm_binary(path: str) -> bool:
    """True for a KenLM binary file (by its magic header, not its extension)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


class KenLMLoadError(TextsieveError, ValueError):
    """A KenLM binary model that cannot be used: the `kenlm` module is missing, or the file is
    truncated or corrupt (the message names the file)."""


def _kenlm():
    try:
        import kenlm
    except ImportError:
        raise KenLMLoadError("KenLM binary models need the `kenlm` module: pip install 'textsieve[kenlm]' "
                             "(the kenlm-ex wheel), or give the model as ARPA (read without extra packages)") from None
    return kenlm


@dataclass
class KenLMModel:
    model: Any  # a `kenlm.Model`; kenlm is optional and ships no type information
    order: int

    def perplexities(self, normalized: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(perplexity rounded to 1 decimal, valid) of RPv2-normalized texts."""
        out = np.zeros(len(normalized), dtype=np.float64)
        valid = np.zeros(len(normalized), dtype=bool)
        for i, content in enumerate(normalized):
            words = digits0(content).split()
            if not words:
                continue
            log10p = self.model.score(" ".join(words), bos=True, eos=True)
            out[i] = round(10.0 ** (-log10p / (len(words) + 1)), 1)
            valid[i] = True
        return out, valid


def load_kenlm(path: str) -> KenLMModel:
    kenlm = _kenlm()
    try:
        model = kenlm.Model(path)
    except OSError as exc:  # kenlm's C++ loader: a truncated, corrupt or unreadable file
        why = str(exc).split(" (", 1)[-1].rstrip(")") if " (" in str(exc) else str(exc)
        raise KenLMLoadError(f"{path}: kenlm cannot read this KenLM binary model (truncated or corrupt?): "
                             f"{why}") from None
    return KenLMModel(model, int(model.order))


def kenlm_signals(name: str, model: KenLMModel) -> list[Signal]:
    from textsieve.signals.registry import DocScores, Signal

    def perplexity(v: BatchViews) -> DocScores:
        ppl, ok = model.perplexities(v.normalized)
        return DocScores(ppl, ok)

    return [Signal(f"ts_perplexity_{name}", "doc", "float", "perplexity",
                   f"Perplexity of the document (one sentence) under the {model.order}-gram KenLM model "
                   f"{name!r}, 10^(-sum log10 p / (words + 1)), rounded to 1 decimal.", (), perplexity)]


def _register() -> None:
    from textsieve.models.registry import KINDS, register_model_kind

    if KIND not in KINDS:
        register_model_kind(KIND, load=load_kenlm, signals=kenlm_signals,
                            extensions=(".bin", ".binary", ".klm", ".arpa.bin"), sniff=is_kenlm_binary)


_register()
