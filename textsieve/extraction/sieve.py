"""The ``auto``, ``textsieve``, ``textsieve-rules`` and ``cascade`` engines: resiliparse's fast DOM
and main-content text, then boilerplate rules on its lines and a learned decision per line.

resiliparse's main-content mode is ~10x faster than trafilatura but keeps what sits around the
article inside the same container: "related articles" blocks, share/newsletter prompts, author
boxes, comment headers (precision 0.79 on the dev pages, against trafilatura's 0.91). Those
leftovers are mostly *after* the article's last paragraph (254 of 374 leaked ``without`` snippets),
some before its first. Two general rules (no per-site rules) remove most of them:

1. **Densest span.** Each output line (one block: paragraph, heading, list item) gets a score:
   prose (>= `PROSE_WORDS` words, or >= 5 words ending like a sentence) scores its word count, a
   short line scores `-SHORT_PENALTY`, a link-dominated line (link text > `MAX_LINK_DENSITY` of
   its text) scores minus its linked words. The kept text is the span with the largest sum (the
   maximum-subarray form of the BTE "body text extraction" idea), extended back over the headings
   directly above it (the title). Link density comes from resiliparse's ``minimal_html`` output
   with links on, so it costs no second pass over the DOM.
2. **End-of-article markers.** A short line that is only a section label such as "Mehr zum
   Thema", "Related articles", "Lea también", "Über den Autor", "Kommentare" (`TAIL_MARKER`, in
   German, English, Spanish, French, Polish and Italian, the dev set's languages) is dropped; once
   at least `TAIL_AFTER` of the span's words are behind it, everything from it on is dropped.

Before both, a third rule works on the page itself:

0. **Boilerplate class/id.** Author boxes, photo captions and credits, newsletter prompts, teaser
   cards and fact boxes often sit inside the article container and read like prose; only their
   ``class``/``id`` gives them away (`BOILERPLATE_WORDS`). `mark_boilerplate` relabels those
   elements so resiliparse's own main-content pass drops them (no Python DOM walk).

On the 495 dev pages rules 0-2 give F1 0.907 (precision 0.886, recall 0.929; 0.898 without
rule 0): the ``textsieve-rules`` engine. The ``textsieve`` engine keeps rule 0, computes rules 1-2's
decisions and lets the learned block classifier (`blocks`) decide each line with them among its
features: F1 0.926 on pages it was not trained on, at ~8x trafilatura's speed. The ``auto`` engine
(the default) sends the pages whose main content `collapsed` to trafilatura (1.6% of the dev pages;
held-out F1 0.931, trafilatura 0.929); the ``cascade`` engine also the pages the classifier doubts
most (held-out F1 0.933). See docs/extraction.md for the tables and why the default engine is
what it is.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from textsieve.extraction.blocks import (
    SENTENCE_END,
    Block,
    BlockModel,
    RuleView,
    doubt,
    fallback_priority,
    features,
    load_model,
    parse_blocks,
)
from textsieve.extraction.engines import Engine, Extracted, dist_version
from textsieve.native import boilerplate_edits

PROSE_WORDS = 10
SHORT_PENALTY = 1.0
MAX_LINK_DENSITY = 0.5
TAIL_AFTER = 0.5
MAX_MARKER_WORDS = 10

#: resiliparse options: main content, block structure and links kept as minimal HTML (for the
#: link density), everything that is not reading text left out.
RESILIPARSE_OPTIONS: dict[str, Any] = {
    "main_content": True, "preserve_formatting": "minimal_html", "links": True, "list_bullets": False,
    "alt_texts": False, "form_fields": False, "noscript": False, "comments": False,
}

#: class/id words of blocks that sit inside the article container but are not its text (author
#: boxes, image captions, newsletter prompts, teaser cards, fact boxes). Matched as substrings of
#: the attribute value, case-insensitively, except when the value also names content (`_CONTENT_WORDS`).
BOILERPLATE_WORDS = ("author", "caption", "newsletter", "teaser", "byline", "factbox", "infobox")

SETTINGS: dict[str, Any] = {
    "resiliparse": RESILIPARSE_OPTIONS, "boilerplate_words": list(BOILERPLATE_WORDS),
    "prose_words": PROSE_WORDS, "short_penalty": SHORT_PENALTY,
    "max_link_density": MAX_LINK_DENSITY, "tail_after": TAIL_AFTER, "max_marker_words": MAX_MARKER_WORDS,
}


#: Section labels that open what follows a main text (related links, sharing, newsletter,
#: comments, author box, tags); matched against a whole short line, case-insensitively.
TAIL_MARKER = re.compile(r"""^(?:
 (?:das\ )?k(?:ö|oe)nnte\ (?:dich|sie|euch|ihnen)\ (?:auch|ebenfalls)\ (?:interessieren|gefallen)|
 (?:auch|ebenfalls|sehr)\ interessant|
 (?:mehr|weitere[sn]?|noch\ mehr|ähnliche|aktuelle)\ (?:zum\ thema|artikel|beiträge|beitraege|news|nachrichten
   |themen|infos?|informationen|meldungen|links|geschichten|storys|videos)\b.*|
 (?:weitere\ )?beiträge\ zum\ thema|verwandte\ (?:artikel|themen|beiträge)|empfohlene\ artikel|
 lesen\ sie\ (?:auch|mehr|hier)\b.*|über\ (?:den|die)\ autor(?:in)?|zum\ autor|autor(?:in)?|
 kommentare?|kommentieren|\d+\ kommentare?|(?:jetzt\ )?(?:artikel\ )?teilen|diesen\ artikel\ teilen|seite\ teilen|
 (?:dir|ihnen)\ hat\ (?:der|dieser)\ artikel\ gefallen.*|war\ (?:der|dieser)\ artikel\ (?:nützlich|hilfreich).*|
 newsletter|(?:jetzt\ )?(?:zum\ )?newsletter\ (?:abonnieren|anmelden|bestellen).*|
 abonnier(?:e|en\ sie)\ unseren\ newsletter.*|
 share(?:\ this)?(?:\ article|\ post|\ story)?|related(?:\ (?:articles|posts|stories|content|news|topics))?|
 you\ (?:may|might)\ (?:also\ )?(?:like|enjoy|be\ interested\ in).*|(?:read|see)\ (?:also|more|next)\b.*|
 more\ (?:from|on|in|stories|articles|news)\b.*|recommended(?:\ for\ you)?|about\ the\ author|comments?|\d+\ comments?|
 leave\ a\ (?:comment|reply)|post\ a\ comment|share\ this|sign\ up\ for\ (?:our|the)\ newsletter.*|
 subscribe\ to\ (?:our|the)\ newsletter.*|tags?|schlagw(?:orte|örter)|themen|
 lea\ (?:también|tambien)\b.*|te\ puede\ interesar.*|noticias\ relacionadas|art[ií]culos\ relacionados|comentarios|
 (?:à\ |a\ )?lire\ aussi.*|sur\ le\ même\ sujet|articles\ similaires|commentaires?|
 czytaj\ (?:też|także|również)\b.*|zobacz\ (?:też|także|również)\b.*|polecamy|komentarze|
 leggi\ anche.*|articoli\ correlati|commenti
)[\s:.!…?]*$""", re.IGNORECASE | re.VERBOSE)


def _score(text: str, words: int, link_density: float) -> float:
    if link_density > MAX_LINK_DENSITY:
        return -SHORT_PENALTY - words * link_density
    if words >= PROSE_WORDS or (words >= 5 and text.endswith(SENTENCE_END)):
        return float(words)
    return -SHORT_PENALTY


def rule_decisions(blocks: list[Block]) -> RuleView:
    """Rules 1 and 2 over a page's blocks: (span start, span end, kept flags, end-of-article marker
    flags, index of the cut at a late marker or the span's end). The learned classifier reads these
    as features; `rules_text` keeps the flagged blocks."""
    n = len(blocks)
    best = run = 0.0
    start = best_start = best_end = 0
    for i, b in enumerate(blocks):
        if run <= 0:
            run, start = 0.0, i
        run += _score(b.text, b.words, b.link_density)
        if run > best:
            best, best_start, best_end = run, start, i + 1
    if best <= 0:  # no prose anywhere (a list page, a form): keep everything resiliparse kept
        best_start, best_end = 0, n
    while best_start > 0 and blocks[best_start - 1].is_heading \
            and blocks[best_start - 1].link_density <= MAX_LINK_DENSITY:
        best_start -= 1
    total = sum(b.words for b in blocks[best_start:best_end])
    seen = 0
    kept, marker, cut = [0] * n, [0] * n, best_end
    for i in range(best_start, best_end):
        words = blocks[i].words
        if words <= MAX_MARKER_WORDS and TAIL_MARKER.match(blocks[i].text):
            marker[i] = 1
            if seen >= TAIL_AFTER * total:
                cut = i
                break
            continue
        seen += words
        kept[i] = 1
    return best_start, best_end, kept, marker, cut


def rules_text(minimal_html: str) -> str:
    """The main text of resiliparse's minimal-HTML output by rules 1 and 2 alone (module docstring)."""
    blocks = parse_blocks(minimal_html)
    kept = rule_decisions(blocks)[2]
    return "\n".join(b.text for b, k in zip(blocks, kept) if k)


def learned_text(minimal_html: str, model: BlockModel) -> str:
    """The main text chosen block by block by the learned classifier (`blocks`), which reads rules
    1 and 2's decisions among its features."""
    return _kept_text(*learned_blocks(minimal_html, model), model)


def learned_blocks(minimal_html: str, model: BlockModel) -> tuple[list[Block], np.ndarray]:
    """The page's blocks and the learned classifier's probability for each."""
    blocks = parse_blocks(minimal_html)
    if not blocks:
        return blocks, np.zeros(0)
    return blocks, model.probabilities(features(blocks, rule_decisions(blocks)))


def _kept_text(blocks: list[Block], probs: np.ndarray, model: BlockModel) -> str:
    return "\n".join(b.text for b, p in zip(blocks, probs) if p > model.threshold)


_CONTENT_WORDS = re.compile(rb"content|article|entry|main|body|text|story|post", re.IGNORECASE)
_KEEP_TAGS = frozenset({b"article", b"main", b"body", b"html"})
_TAG_NAME = re.compile(rb"<([a-z][a-z0-9]*)")


_ATTR_HEAD = re.compile(rb"\s(class|id)\s*=\s*$")


def mark_boilerplate(html: str) -> str:
    """``html`` with every element whose class or id names a boilerplate block (`BOILERPLATE_WORDS`)
    relabelled so resiliparse's main-content pass drops it; article/main/body and values that
    also name content ("author-content", "teaser_blog_text") are left alone.

    resiliparse's main-content mode drops an element whose class list holds "footer" or whose id
    is "footer", so relabelling lets its own C++ pass remove the block; a Python walk over its DOM
    would cost ~10 us per element (several ms per page; lexbor's CSS attribute selectors ~10 ms).
    The words are found in one pass over the page's UTF-8 bytes, ASCII-lowercased (``str.lower``
    plus a regex over every attribute cost ~4 ms), and each hit is kept only when it lies inside a
    ``class="..."`` or ``id="..."`` value of an opening tag (`_check_hit`). The C kernel does both
    in one pass (`_native_edits`); without it, `_word_hits` and `_check_hit` give the same edits."""
    data = html.encode("utf-8", "surrogatepass")
    edits = _native_edits(data)
    if edits is None:
        low = data.lower()  # ASCII only: byte offsets stay those of ``data``
        edits = {}  # value start -> (value end, replacement value)
        for i in _word_hits(low):  # which word hit does not matter: the edit is the value's
            _check_hit(data, low, i, edits)
    if not edits:
        return html
    parts, pos = [], 0
    for begin in sorted(edits):
        stop, value = edits[begin]
        parts += [data[pos:begin], value]
        pos = stop
    parts.append(data[pos:])
    return b"".join(parts).decode("utf-8", "surrogatepass")


_WORDS_BYTES = tuple(w.encode() for w in BOILERPLATE_WORDS)
_WORDS_JOINED = b"".join(_WORDS_BYTES)
_WORD_OFFSETS = np.cumsum([0] + [len(w) for w in _WORDS_BYTES]).astype(np.int64)


def _word_hits(low: bytes) -> list[int]:
    """Offsets of every `BOILERPLATE_WORDS` occurrence in ``low``, one ``bytes.find`` loop per word
    (without the C kernel, which finds and checks the words in one pass)."""
    hits = []
    for word in _WORDS_BYTES:
        i = low.find(word)
        while i >= 0:
            hits.append(i)
            i = low.find(word, i + len(word))
    return hits


def _native_edits(data: bytes) -> dict[int, tuple[int, bytes]] | None:
    """`mark_boilerplate`'s edits from the C kernel (`native.boilerplate_edits`: the word search
    and every `_check_hit` test in one pass, ~0.1 ms on the dev pages against ~0.6 ms for the
    search plus the checks in Python), or None without it."""
    kernel = boilerplate_edits()
    room = 64
    while kernel is not None:
        begin, stop, is_class = np.empty(room, np.int64), np.empty(room, np.int64), np.empty(room, np.uint8)
        found = kernel(data, len(data), _WORDS_JOINED, _WORD_OFFSETS.ctypes.data, len(_WORDS_BYTES), MAX_VALUE_BYTES,
                       begin.ctypes.data, stop.ctypes.data, is_class.ctypes.data, room)
        if found < 0:
            return None
        if found <= room:
            return {b: (e, data[b:e] + b" footer" if c else b"footer")
                    for b, e, c in zip(begin[:found].tolist(), stop[:found].tolist(), is_class[:found].tolist())}
        room = found
    return None


#: how far before a word its class/id value may open (longer class lists are not looked into)
MAX_VALUE_BYTES = 256


def _check_hit(data: bytes, low: bytes, i: int, edits: dict[int, tuple[int, bytes]]) -> None:
    """Record the edit for a word found at byte ``i`` when it is inside a class/id value."""
    lo = max(0, i - MAX_VALUE_BYTES)  # bounded: an unbounded rfind scans back to the page start per hit
    q = max(low.rfind(b'"', lo, i), low.rfind(b"'", lo, i))
    if q < 0 or q + 1 in edits or low.find(b">", q, i) >= 0 or low.find(b"<", q, i) >= 0:
        return
    head = _ATTR_HEAD.search(low, max(0, q - 16), q)
    if head is None:
        return
    stop = low.find(low[q:q + 1], i)
    lt = low.rfind(b"<", 0, q)
    if stop < 0 or lt < 0 or low.find(b">", lt, q) >= 0:
        return
    value = data[q + 1:stop]
    tag = _TAG_NAME.match(low, lt)
    if tag is None or tag.group(1) in _KEEP_TAGS or _CONTENT_WORDS.search(value):
        return
    edits[q + 1] = (stop, value + b" footer" if head.group(1) == b"class" else b"footer")


#: the whole page's text, as `RESILIPARSE_OPTIONS` reads it but without the main-content pass: what
#: `collapsed` compares the main content with
PAGE_OPTIONS: dict[str, Any] = dict(RESILIPARSE_OPTIONS, main_content=False)
#: `collapsed`: a main-content output under this many words ...
COLLAPSE_WORDS = 100
#: ... and under this share of the whole page's words lost the page
COLLAPSE_SHARE = 0.1


def collapsed(tree: Any, main_words: int) -> bool:
    """Whether resiliparse's main-content pass lost the page: its output has fewer than
    `COLLAPSE_WORDS` words and fewer than `COLLAPSE_SHARE` of the words of the page's whole text.

    Why: on a few pages the pass keeps a wrong, small container (a teaser, a caption, nothing) and
    the article is gone before any block is classified; no block decision can win it back. That is
    most of what separates the ``textsieve`` engine from trafilatura on the dev pages: 58 of its 89
    missed ``with`` snippets are not in its blocks at all, and 9 pages (1.8%) hold a third of them.
    The whole page's text is read only when the main content is short (6% of the dev pages, ~0.8 ms
    each), so the check costs the other pages nothing. A page with no text at all is not collapsed
    (``0 < 0.1 * 0`` is false: no engine finds anything there). On the dev pages the F1 of the
    ``auto`` engine is flat across the share (0.05-0.12) and the word floor (100-300): these are
    round values, not a fit."""
    if main_words >= COLLAPSE_WORDS:
        return False
    from resiliparse.extract.html2text import extract_plain_text

    page_words = sum(b.words for b in parse_blocks(extract_plain_text(tree, **PAGE_OPTIONS)))
    return main_words < COLLAPSE_SHARE * page_words


def build_engine(learned: bool = True, fallback: Engine | None = None, by_doubt: bool = True) -> Engine:
    """The registered ``textsieve`` engine (the learned block classifier over rules 0-2); with
    ``learned=False``, ``textsieve-rules`` (rules 0-2 alone); with a ``fallback`` engine, a page
    that `collapsed` is extracted by ``fallback`` instead (``auto``), and with ``by_doubt`` also a
    page whose `fallback_priority` is above the model's (``cascade``). The title stays
    resiliparse's. resiliparse is imported here, lazily."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    model = load_model() if learned or fallback is not None else None
    if fallback is not None and by_doubt and model is not None and not math.isfinite(model.fallback_priority):
        raise ValueError("the block model has no cascade threshold (retrain it with block_training)")

    def run(html: str, url: str | None) -> Extracted:
        tree = HTMLTree.parse(mark_boilerplate(html))
        title = " ".join(tree.title.split()) if tree.title else ""
        minimal = extract_plain_text(tree, **RESILIPARSE_OPTIONS)
        if model is None:
            return Extracted(rules_text(minimal), title or None)
        blocks, probs = learned_blocks(minimal, model)
        if fallback is None:
            return Extracted(_kept_text(blocks, probs, model), title or None)
        if collapsed(tree, sum(b.words for b in blocks)) or (
                by_doubt and fallback_priority(doubt(blocks, probs), len(html)) > model.fallback_priority):
            return Extracted(fallback.run(html, url).text, title or None, "fallback")
        return Extracted(_kept_text(blocks, probs, model), title or None, "fast")

    version = f"{dist_version('textsieve')}+resiliparse-{dist_version('resiliparse')}"
    if model is None:
        return Engine("textsieve-rules", version, SETTINGS, run)
    settings = dict(SETTINGS, block_model={"sha256": model.sha256, "threshold": model.threshold})
    if fallback is None:
        return Engine("textsieve", version, settings, run)
    settings["fallback"] = {"engine": fallback.name, "version": fallback.version, "settings": fallback.settings,
                            "collapse": {"words_below": COLLAPSE_WORDS, "share_below": COLLAPSE_SHARE}}
    if by_doubt:
        settings["fallback"]["priority_above"] = model.fallback_priority
    name = "cascade" if by_doubt else "auto"
    return Engine(name, f"{version}+{fallback.name}-{fallback.version}", settings, run, cascade=True)
