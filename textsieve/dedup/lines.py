"""CCNet-style line dedup: line normalisation, line keys and the duplicate rule over a group.

What CCNet does (facebookresearch/cc_net, read in `cc_net/dedup.py`, `cc_net/flat_hash_set.py`,
`cc_net/text_normalizer.py` and `cc_net/mine.py`): every line of a document (`text.split("\\n")`)
is normalised by `normalize_for_dedup` and hashed; `HashesCollector` puts each *document's*
line hashes into one set whose value becomes 1 once a hash is added by a second document
(`AbstractDedupHashSet.add`: the value is "already contained before this add", and one add is
one document); the hash sets of `hash_in_mem` consecutive shards are merged (`mine.py`:
`jsonql.grouper(hashes, hash_in_mem)`, defaults `num_shards=1600`, `hash_in_mem=50`, so a group
is 3.1% of a dump); `DuplicatesRemover` then drops every line whose hash has value 1 in its
group, **the first occurrence included** (the two-pass mode "done in the paper, and in
mine.py", `deduplicate_two_pass`), and `finalize_doc` also drops a line repeated inside its
own document after its first occurrence there. So, per group of shards:

* a line is a duplicate when its normalised text occurs in at least two documents of the
  group (every occurrence is a duplicate), or when it repeats a line earlier in the same
  document (the later occurrences are);
* CCNet also hashes blank lines (their hash is in nearly every group, so it drops them). Here a
  line whose normalised text is empty is **never** a duplicate: it carries no content, and
  flagging it would only merge paragraphs when `select` cuts the flagged lines. This is the one
  deliberate difference from CCNet's rule.

Normalisations (`--normalize`):

* ``ccnet`` (default): exactly `normalize_for_dedup`: strip, lowercase, every Unicode decimal
  digit (`\\d`) -> ``0``, delete CCNet's 36 Unicode punctuation characters (``，。、„”“«»...►``)
  and the control characters U+0000-U+001F and U+007F-U+009F. Note that CCNet keeps ASCII
  punctuation: ``Foo!`` and ``foo`` differ, ``Foo！`` (full width) and ``foo`` match.
* ``none`` (`dedup paragraphs`' default, as dolma): the line as written, without its newline (a
  line of only whitespace is blank).
* ``punct``: ``ccnet``, then also delete every Unicode punctuation character (categories P*)
  and ASCII `string.punctuation`, and collapse whitespace runs to one space:
  ``Copyright 2019 Foo!`` and ``copyright 2020  foo`` match.

A line's key is XXH3-128 of its normalised UTF-8 (two uint64), not CCNet's first 8 bytes of
SHA-1: a false match between two different lines needs a 128-bit collision.

Lines are split exactly as annotate splits them for the `rps_lines_*` signals (`[^\\n]*\\n|[^\\n]+$`:
each line keeps its newline, a trailing newline makes no empty last line), so span i of the
output is line i of those signals.
"""

from __future__ import annotations

import functools
import re
import string
import sys
import unicodedata
from collections.abc import Iterable

import numpy as np
import xxhash

NORMALIZATIONS = ("ccnet", "punct", "none")

#: `cc_net.text_normalizer.UNICODE_PUNCT`'s keys: what `normalize_for_dedup` deletes, with the controls
CCNET_PUNCT = "，。、„”“«»１」「《》´∶：？！（）；–—．～’…━〈〉【】％►"
_CONTROLS = "".join(map(chr, [*range(0, 32), *range(127, 160)]))
_CCNET_DELETE = {ord(c): None for c in CCNET_PUNCT + _CONTROLS}
_DIGIT = re.compile(r"\d")
_SPACES = re.compile(r"\s+")

#: One line's record for the group pass: its key, its ordinal among the group's lines (blank
#: lines included, so it indexes the flags), its document's ordinal in the group, and `rep` = 1
#: when it repeats a line earlier in the same document.
LINE_ROW = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("line", "<u8"), ("doc", "<u8"), ("rep", "u1")])


class LineNormalizeError(ValueError):
    """An unknown `--normalize` mode."""


def check_normalize(mode: str) -> None:
    if mode not in NORMALIZATIONS:
        raise LineNormalizeError(f"dedup lines: --normalize must be one of {', '.join(NORMALIZATIONS)}, not {mode!r}")


@functools.lru_cache(maxsize=1)
def _punct_delete() -> dict[int, None]:
    """Every Unicode punctuation character and ASCII `string.punctuation`, for `str.translate`
    (built once per process, ~0.2 s: a scan of the code space)."""
    table = {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)).startswith("P")}
    table.update({ord(c): None for c in string.punctuation})
    return table


def normalize_line(line: str, mode: str = "ccnet") -> str:
    """The text a line is keyed by under `mode` (see the module doc)."""
    if mode == "none":  # dolma's paragraphs: the text as written, without its newline; blank is blank
        return line[:-1] if line.endswith("\n") and line.strip() else line if line.strip() else ""
    line = line.strip()
    if not line:
        return line
    line = _DIGIT.sub("0", line.lower()).translate(_CCNET_DELETE)
    if mode == "punct":
        line = _SPACES.sub(" ", line.translate(_punct_delete())).strip()
    elif mode != "ccnet":
        check_normalize(mode)
    return line


def split_lines(text: str) -> list[str]:
    """The raw lines of `text` as annotate splits them, each with its newline (none for an
    unterminated last line); no lines for an empty text."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_ends(lines: Iterable[str]) -> np.ndarray:
    """Code-point end offsets of consecutive lines (line i spans [ends[i-1], ends[i]))."""
    return np.cumsum(np.fromiter((len(x) for x in lines), dtype=np.int64), dtype=np.int64)


def doc_keys(lines: list[str], mode: str = "ccnet") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(h1, h2, blank, rep) per line: the 128-bit key of the normalised line, whether it
    normalises to nothing, and whether it repeats a (non-blank) line earlier in the document."""
    n = len(lines)
    blank = np.zeros(n, dtype=bool)
    rep = np.zeros(n, dtype=bool)
    seen: set[str] = set()
    digest = xxhash.xxh3_128_digest
    raw = bytearray()
    for i, line in enumerate(lines):
        norm = normalize_line(line, mode)
        if not norm:
            blank[i] = True
        elif norm in seen:
            rep[i] = True
        else:
            seen.add(norm)
        raw += digest(norm.encode("utf-8", "surrogatepass"))
    pairs = np.frombuffer(bytes(raw), dtype=">u8").reshape(-1, 2)
    return pairs[:, 0].astype(np.uint64), pairs[:, 1].astype(np.uint64), blank, rep


def doc_rows(lines: list[str], mode: str, first_line: int, doc: int) -> np.ndarray:
    """The `LINE_ROW`s of one document's non-blank lines (line ordinals from `first_line`)."""
    h1, h2, blank, rep = doc_keys(lines, mode)
    keep = np.flatnonzero(~blank)
    rows = np.empty(keep.shape[0], dtype=LINE_ROW)
    rows["h1"], rows["h2"] = h1[keep], h2[keep]
    rows["line"] = keep.astype(np.uint64) + np.uint64(first_line)
    rows["doc"] = doc
    rows["rep"] = rep[keep]
    return rows


# ---------------------------------------------------------------- the rule over one partition

KEY_STAT = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("dmin", "<u8"), ("dmax", "<u8")])


def key_stats(rows: np.ndarray) -> np.ndarray:
    """Per distinct key of `rows` (LINE_ROW or KEY_STAT): the smallest and largest document it
    occurs in, sorted by key. Two stats of one key merge by min/max, so a partition too large
    for memory is summarised chunk by chunk."""
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=KEY_STAT)
    order = np.lexsort((rows["h2"], rows["h1"]))
    h1, h2 = rows["h1"][order], rows["h2"][order]
    names = rows.dtype.names or ()
    lo = rows["dmin" if "dmin" in names else "doc"][order]
    hi = rows["dmax" if "dmax" in names else "doc"][order]
    new = np.empty(h1.shape[0], dtype=bool)
    new[0] = True
    new[1:] = (h1[1:] != h1[:-1]) | (h2[1:] != h2[:-1])
    starts = np.flatnonzero(new)
    out = np.empty(starts.shape[0], dtype=KEY_STAT)
    out["h1"], out["h2"] = h1[starts], h2[starts]
    out["dmin"] = np.minimum.reduceat(lo, starts)
    out["dmax"] = np.maximum.reduceat(hi, starts)
    return out


def merge_stats(parts: list[np.ndarray]) -> np.ndarray:
    return key_stats(np.concatenate(parts)) if parts else np.zeros(0, dtype=KEY_STAT)


def multi_doc(rows: np.ndarray, stats: np.ndarray) -> np.ndarray:
    """For each row: whether its key occurs in two or more documents (per `stats`, which holds
    every key of `rows`)."""
    idx = np.searchsorted(stats["h1"], rows["h1"], side="left")
    # distinct keys may share h1 (a 64-bit collision): step to the entry with the same h2
    wrong = stats["h2"][np.minimum(idx, stats.shape[0] - 1)] != rows["h2"]
    while wrong.any():
        idx[wrong] += 1
        wrong = stats["h2"][np.minimum(idx, stats.shape[0] - 1)] != rows["h2"]
    return stats["dmin"][idx] != stats["dmax"][idx]


def flagged_lines(rows: np.ndarray, stats: np.ndarray | None = None) -> np.ndarray:
    """Line ordinals of `rows` that are duplicates under CCNet's rule (module doc): the key
    occurs in two or more documents, or the line repeats one earlier in its document."""
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    dup = multi_doc(rows, key_stats(rows) if stats is None else stats) | rows["rep"].astype(bool)
    return rows["line"][dup]


def later_lines(rows: np.ndarray, stats: np.ndarray | None = None) -> np.ndarray:
    """Line ordinals of `rows` whose key occurred at an earlier line of the group: dolma's
    paragraph rule, the first occurrence in corpus order kept. The rows carry their line ordinal
    as `doc` (`stages.dedup.lines`, keep-first), so `key_stats`' `dmin` is each key's first line."""
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    stats = key_stats(rows) if stats is None else stats
    idx = np.searchsorted(stats["h1"], rows["h1"], side="left")
    wrong = stats["h2"][np.minimum(idx, stats.shape[0] - 1)] != rows["h2"]
    while wrong.any():
        idx[wrong] += 1
        wrong = stats["h2"][np.minimum(idx, stats.shape[0] - 1)] != rows["h2"]
    return rows["line"][stats["dmin"][idx] != rows["doc"]]
