"""The learned block classifier of the ``textsieve`` engine: which of resiliparse's main-content blocks
are the page's main text.

resiliparse's main-content pass keeps the article container whole, so what sits beside the text in it
(teasers, author boxes, "related" lists, newsletter prompts, comment headers) comes out too. The rules
of `sieve` (the densest span of prose lines, end-of-article labels) remove much of it; this module
decides per block with a small model instead, over cheap features of each block and its neighbours:
its words and characters, link density, sentence ending, digit and capital shares, tag (paragraph,
heading, preformatted), its position on the page, whether the densest-span rule keeps it, and the
page's size. The rules' decision is one of the features, so the model learns when to overrule it.

The model is gradient-boosted decision trees (scikit-learn's ``GradientBoostingClassifier``) trained
by `textsieve.extraction.block_training` on the extraction dev pages and shipped as a JSON file in
the package (``models/blocks.json``): no download, and the same bytes give the same decisions on
every machine (features are rounded to float32 before the comparisons, as scikit-learn does). It is
evaluated in C (`native.tree_raw`, ~10 us a page) or, without a C compiler at install time, in NumPy
(~0.3 ms a page) with the same arithmetic.
"""

from __future__ import annotations

import ctypes
import hashlib
import html as html_lib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from textsieve.native import block_features as native_block_features
from textsieve.native import parse_blocks as native_parse_blocks
from textsieve.native import tree_raw

MODEL_PATH = Path(__file__).resolve().parent / "models" / "blocks.json"

_TAG = re.compile(r"<[^>]*>")
_ANCHOR = re.compile(r"<a\b[^>]*>(.*?)</a>", re.DOTALL)
_BLOCK_TAG = re.compile(r"<(h[1-6]|p|pre)\b")
SENTENCE_END = ('.', '!', '?', ':', '"', '“', '”', '»', '«', '…')


@dataclass(frozen=True)
class Block:
    """One line of resiliparse's minimal-HTML output: its text (whitespace-collapsed), the kind of
    its opening tag (``p``, ``h``, ``pre`` or ``""``), the share of its characters inside links and
    its words (whitespace-separated, counted once here for the rules, features and doubt)."""

    text: str
    kind: str
    link_density: float
    words: int

    @property
    def is_heading(self) -> bool:
        return self.kind == "h"


#: `Block.kind` by the C kernel's kind code
_KINDS = ("", "p", "h", "pre")


def parse_blocks(minimal_html: str) -> list[Block]:
    """The non-empty blocks of resiliparse's minimal-HTML output. An ``<a>`` resiliparse left
    unclosed is an empty (image) link and counts no text.

    The C kernel (`native.parse_blocks`, ~0.05 ms a dev page against ~0.5 ms here) gives the same
    blocks; a page holding what only Python decodes exactly (an entity other than the four
    resiliparse writes) is parsed here."""
    kernel = native_parse_blocks()
    if kernel is not None:
        data = minimal_html.encode("utf-8", "surrogatepass")
        room = data.count(b"\n") + 1
        text = ctypes.create_string_buffer(len(data) + 1)
        info = np.empty((room, 4), np.int64)
        found = kernel(data, len(data), text, info.ctypes.data, room)
        if found >= 0:
            used = int(info[found - 1, 0]) if found else 0
            joined = text.raw.decode("utf-8", "surrogatepass")[:used] if found else ""
            out, start = [], 0
            for end, kind, linked, words in info[:found].tolist():
                out.append(Block(joined[start:end], _KINDS[kind], min(1.0, linked / (end - start)), words))
                start = end
            return out
    return _parse_blocks_python(minimal_html)


def _parse_blocks_python(minimal_html: str) -> list[Block]:
    """`parse_blocks` in Python (without the C kernel, and for the pages it leaves to Python)."""
    out = []
    for raw in minimal_html.split("\n"):
        s = raw.strip()
        if not s:
            continue
        parts = html_lib.unescape(_TAG.sub(" ", s)).split()
        if not parts:
            continue
        text = " ".join(parts)
        linked = sum(len(" ".join(html_lib.unescape(_TAG.sub(" ", a)).split())) for a in _ANCHOR.findall(s))
        tag = _BLOCK_TAG.match(s)
        kind = "" if tag is None else ("h" if tag.group(1).startswith("h") else tag.group(1))
        out.append(Block(text, kind, min(1.0, linked / len(text)), len(parts)))
    return out


#: The rules' view of a page (`sieve.rule_decisions`): span start and end, kept flags, marker
#: flags, and the index where the end-of-article cut falls (the span's end when there is none).
RuleView = tuple[int, int, list[int], list[int], int]

OWN = ("log_words", "log_chars", "link_density", "sentence_end", "starts_upper", "ascii_digit_share",
       "capital_share", "has_separator", "commas_per_word", "tag_p", "tag_h", "tag_pre", "tag_none")
NEIGHBOUR = ("log_words", "log_chars", "link_density", "sentence_end", "tag_p", "tag_h", "tag_none")
CONTEXT = ("position", "words_before", "words_through", "in_span", "rule_keeps", "is_marker", "after_cut",
           "span_distance", "log_blocks", "log_page_words", "span_share", "repeated", "rule_keeps_previous")
#: Where the block stands relative to the page's prose (blocks of >= 10 words, or >= 5 ending like a
#: sentence, not link-dominated): what comes after the last paragraph is mostly boilerplate.
PROSE = ("from_first_prose", "from_last_prose", "prose_before_share", "prose_after_share", "words_vs_largest",
         "window_link_density", "prev2_log_words", "prev2_link_density", "next2_log_words", "next2_link_density")
#: Feature names in column order (the model file names them too, and loading checks they agree).
FEATURES = (OWN + tuple(f"prev_{n}" for n in NEIGHBOUR) + tuple(f"next_{n}" for n in NEIGHBOUR) + CONTEXT
            + PROSE)
_NEIGHBOUR_COLS = [OWN.index(n) for n in NEIGHBOUR]


def _char_shares(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per text: the share of ASCII digits and the share of characters that ``str.lower`` changes
    (capitals), over all texts at once on their code points."""
    joined = "".join(texts)
    lowered = joined.lower()
    chars = np.array([len(t) for t in texts], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(chars)[:-1]])
    code = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    digit = ((code >= 48) & (code <= 57)).astype(np.int64)
    if len(lowered) == len(joined):
        upper = (code != np.frombuffer(lowered.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)).astype(np.int64)
    else:  # a capital whose lower case is longer (U+0130): count text by text
        upper = np.array([c != c.lower() for c in joined], dtype=np.int64)
    return np.add.reduceat(digit, starts) / chars, np.add.reduceat(upper, starts) / chars


_WINDOW_COL = FEATURES.index("window_link_density")
#: the column layout `ts_block_features` writes; a feature list edited without the kernel falls
#: back to `_features_numpy` instead of filling the wrong columns
_C_LAYOUT = (len(OWN), len(NEIGHBOUR), len(CONTEXT), len(PROSE), tuple(_NEIGHBOUR_COLS), _WINDOW_COL) == (
    13, 7, 13, 10, (0, 1, 2, 3, 9, 10, 12), 45)


def features(blocks: list[Block], rules: RuleView) -> np.ndarray:
    """The ``len(blocks) x len(FEATURES)`` matrix (float64) of one page: one C pass
    (`native.block_features`, ~0.05 ms a page against ~0.5 ms of NumPy calls) or `_features_numpy`,
    the same doubles. What needs Python's Unicode tables (capitals) or NumPy's own arithmetic
    (``np.log1p``; ``np.convolve``, which may sum through BLAS) is computed here for both."""
    n = len(blocks)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    kernel = native_block_features() if _C_LAYOUT else None
    if kernel is None:
        return _features_numpy(blocks, rules)
    start, end, kept, marker, cut = rules
    texts = [b.text for b in blocks]
    words = np.array([b.words for b in blocks], dtype=np.float64)
    chars = np.array([len(t) for t in texts], dtype=np.float64)
    link = np.array([b.link_density for b in blocks], dtype=np.float64)
    kind = np.array([_KINDS.index(b.kind) for b in blocks], dtype=np.int64)
    counts: dict[str, int] = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    upper_first = np.array([t[:1].isupper() for t in texts], dtype=np.uint8)
    repeated = np.array([counts[t] > 1 for t in texts], dtype=np.uint8)
    joined = "".join(texts)
    lowered = joined.lower()
    code = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(lowered) == len(joined):
        low = np.frombuffer(lowered.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    else:  # a capital whose lower case is longer (U+0130): which code points lowering changes
        low = np.array([c != c.lower() for c in joined], dtype=np.uint32)
    cp_end = np.cumsum(chars).astype(np.int64)
    log_words, log_chars = np.log1p(words), np.log1p(chars)
    kept_a, marker_a = np.asarray(kept, dtype=np.int64), np.asarray(marker, dtype=np.int64)
    out = np.empty((n, len(FEATURES)))
    kernel(n, words.ctypes.data, chars.ctypes.data, link.ctypes.data, kind.ctypes.data, log_words.ctypes.data,
           log_chars.ctypes.data, upper_first.ctypes.data, repeated.ctypes.data, code.ctypes.data, low.ctypes.data,
           int(len(lowered) != len(joined)), cp_end.ctypes.data, start, end, kept_a.ctypes.data, marker_a.ctypes.data,
           cut, len(FEATURES), out.ctypes.data)
    out[:, _WINDOW_COL] = _window_link_density(link)
    return out


def _window_link_density(density: np.ndarray) -> np.ndarray:
    """The mean link density of the seven blocks centred on each (zeros past the page's ends)."""
    padded = np.concatenate([np.zeros(3), density, np.zeros(3)])
    return np.convolve(padded, np.ones(7), mode="valid") / 7.0


def _features_numpy(blocks: list[Block], rules: RuleView) -> np.ndarray:
    """`features` with NumPy, column by column (without the C kernel)."""
    n = len(blocks)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    start, end, kept, marker, cut = rules
    texts = [b.text for b in blocks]
    words = np.array([b.words for b in blocks], dtype=np.float64)
    chars = np.array([len(t) for t in texts], dtype=np.float64)
    kind = [b.kind for b in blocks]
    digit_share, upper_share = _char_shares(texts)
    own = np.empty((n, len(OWN)))
    own[:, 0] = np.log1p(words)
    own[:, 1] = np.log1p(chars)
    own[:, 2] = [b.link_density for b in blocks]
    own[:, 3] = [t.endswith(SENTENCE_END) for t in texts]
    own[:, 4] = [t[:1].isupper() for t in texts]
    own[:, 5] = digit_share
    own[:, 6] = upper_share
    own[:, 7] = [("|" in t or "©" in t or "»" in t[:3]) for t in texts]
    own[:, 8] = [t.count(",") for t in texts] / np.maximum(words, 1)
    for col, name in ((9, "p"), (10, "h"), (11, "pre"), (12, "")):
        own[:, col] = [k == name for k in kind]
    neighbour = own[:, _NEIGHBOUR_COLS]
    prev = np.zeros_like(neighbour)
    prev[1:] = neighbour[:-1]
    nxt = np.zeros_like(neighbour)
    nxt[:-1] = neighbour[1:]
    total = words.sum() or 1.0
    index = np.arange(n, dtype=np.float64)
    before = np.concatenate([[0.0], np.cumsum(words)[:-1]])
    counts: dict[str, int] = {}
    for t in texts:
        counts[t] = counts.get(t, 0) + 1
    kept_a = np.array(kept, dtype=np.float64)
    context = np.empty((n, len(CONTEXT)))
    context[:, 0] = index / n
    context[:, 1] = before / total
    context[:, 2] = (before + words) / total
    context[:, 3] = (index >= start) & (index < end)
    context[:, 4] = kept_a
    context[:, 5] = marker
    context[:, 6] = index >= cut
    context[:, 7] = np.where(index < start, (start - index) / n, np.where(index >= end, (index - end + 1) / n, 0.0))
    context[:, 8] = math.log1p(n)
    context[:, 9] = math.log1p(total)
    context[:, 10] = words[start:end].sum() / total
    context[:, 11] = [counts[t] > 1 for t in texts]
    context[:, 12] = np.concatenate([[0.0], kept_a[:-1]])
    return np.hstack([own, prev, nxt, context, _prose(own, words, index, n)])


def _prose(own: np.ndarray, words: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """The `PROSE` columns."""
    density = own[:, 2]
    prose = ((words >= 10) | ((words >= 5) & (own[:, 3] > 0))) & (density <= 0.5)
    out = np.zeros((n, len(PROSE)))
    if prose.any():
        where = np.flatnonzero(prose)
        out[:, 0] = (index - where[0]) / n
        out[:, 1] = (index - where[-1]) / n
        prose_words = np.where(prose, words, 0.0)
        total = prose_words.sum()
        through = np.cumsum(prose_words)
        out[:, 2] = (through - prose_words) / total
        out[:, 3] = (total - through) / total
    out[:, 4] = words / max(words.max(), 1.0)
    out[:, 5] = _window_link_density(density)
    log_words = own[:, 0]
    out[2:, 6], out[2:, 7] = log_words[:-2], density[:-2]
    out[:-2, 8], out[:-2, 9] = log_words[2:], density[2:]
    return out


class BlockModel:
    """Gradient-boosted trees loaded from the JSON ``export`` writes; `probabilities` scores blocks.

    Every tree is stored as complete arrays over its nodes; a leaf points to itself, so all trees are
    walked together for ``depth`` steps."""

    def __init__(self, spec: dict[str, Any], sha256: str) -> None:
        if tuple(spec["features"]) != FEATURES:
            raise ValueError("block model: its feature list differs from this textsieve's (retrain it)")
        self.sha256 = sha256
        self.threshold = float(spec["threshold"])
        cascade = spec.get("cascade") or {}
        #: `fallback_priority` above it: the cascade's fallback engine takes the page
        self.fallback_priority = float(cascade.get("priority", math.inf))
        self.depth = int(spec["depth"])
        self.init = float(spec["init"])
        self.rate = float(spec["learning_rate"])
        self.offset = np.array(spec["tree_offsets"], dtype=np.int64)
        self.feature = np.array(spec["feature"], dtype=np.int64)
        self.cut = np.array(spec["threshold_values"], dtype=np.float64)
        self.left = np.array(spec["left"], dtype=np.int64)
        self.right = np.array(spec["right"], dtype=np.int64)
        self.value = np.array(spec["value"], dtype=np.float64)
        self._pointers = (self.offset.ctypes.data, len(self.offset), self.depth, self.feature.ctypes.data,
                          self.cut.ctypes.data, self.left.ctypes.data, self.right.ctypes.data,
                          self.value.ctypes.data, self.init, self.rate)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """P(main text) per row of ``x`` (a `features` matrix)."""
        return 1.0 / (1.0 + np.exp(-self.raw(x)))

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The trees' raw score per row: C (`native.tree_raw`) when built, else the same arithmetic
        in NumPy (features rounded to float32; ``raw += rate * leaf`` tree by tree, scikit-learn's
        order), so both give the same doubles."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        out = np.empty(len(x))
        if len(x) == 0:
            return out
        walk = tree_raw()
        if walk is not None:
            walk(x.ctypes.data, len(x), x.shape[1], *self._pointers, out.ctypes.data)
            return out
        x32 = x.astype(np.float32).astype(np.float64)
        rows = np.arange(len(x))[:, None]
        node = np.broadcast_to(self.offset, (len(x), len(self.offset))).copy()
        for _ in range(self.depth):
            go_left = x32[rows, self.feature[node]] <= self.cut[node]
            node = np.where(go_left, self.left[node], self.right[node])
        leaf = self.value[node]
        out[:] = self.init
        for t in range(leaf.shape[1]):
            out += self.rate * leaf[:, t]
        return out

    def keep(self, x: np.ndarray) -> np.ndarray:
        """Which rows are main text (probability above the model's threshold)."""
        return self.probabilities(x) > self.threshold


def doubt(blocks: list[Block], probabilities: np.ndarray) -> float:
    """How unsure the classifier is about a page: the expected share of its words on the wrong side
    (each block's words times min(p, 1 - p), over all words); 1.0 for a page without blocks. The
    cascade ranks pages by it per character (`fallback_priority`)."""
    if not blocks:
        return 1.0
    words = np.array([b.words for b in blocks], dtype=np.float64)
    return float((words * np.minimum(probabilities, 1.0 - probabilities)).sum() / max(words.sum(), 1.0))


#: pages shorter than this many characters count as this long in `fallback_priority`
MIN_PAGE_CHARS = 1000


def fallback_priority(page_doubt: float, page_chars: int) -> float:
    """How much sending a page to the cascade's fallback is worth for its cost: its `doubt` (what
    could be gained) per 100,000 characters of HTML (what trafilatura's time grows with). Ranking by
    doubt alone sent the larger pages, which cost trafilatura ~2x its mean time; per character,
    4% of the pages cost less than 3% did by doubt alone, for the same held-out F1."""
    return page_doubt * 100_000 / max(page_chars, MIN_PAGE_CHARS)


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> BlockModel:
    """The block model at ``path`` (default: the one shipped in the package), read once per process."""
    data = Path(path or MODEL_PATH).read_bytes()
    return BlockModel(json.loads(data), hashlib.sha256(data).hexdigest())


def export(classifier: Any, threshold: float) -> dict[str, Any]:
    """A fitted binary ``GradientBoostingClassifier`` (on `FEATURES` columns) as the JSON-ready dict
    `BlockModel` reads: its trees flattened into one node array, leaves pointing to themselves."""
    offsets: list[int] = []
    feature: list[int] = []
    cut: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    depth = 0
    for est in classifier.estimators_[:, 0]:
        tree = est.tree_
        base = len(feature)
        offsets.append(base)
        depth = max(depth, int(tree.max_depth))
        for k in range(tree.node_count):
            leaf = tree.children_left[k] < 0
            feature.append(0 if leaf else int(tree.feature[k]))
            cut.append(float("inf") if leaf else float(tree.threshold[k]))
            left.append(base + (k if leaf else int(tree.children_left[k])))
            right.append(base + (k if leaf else int(tree.children_right[k])))
            value.append(float(tree.value[k].ravel()[0]))
    prior = classifier.init_.class_prior_[1]
    return {"kind": "gradient-boosted trees", "features": list(FEATURES), "threshold": threshold,
            "depth": depth, "init": float(math.log(prior / (1 - prior))),
            "learning_rate": float(classifier.learning_rate), "tree_offsets": offsets, "feature": feature,
            "threshold_values": cut, "left": left, "right": right, "value": value}
