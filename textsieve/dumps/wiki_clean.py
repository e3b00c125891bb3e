"""Wikitext to plain text, as RedPajama-1T's Wikipedia builder cleaned it (rpv1-sources spec, 4.3).

The cleaning runs mwparserfromhell, the parser the reference ran, so its tree (and its quirks:
which markup survives `strip_code`, how removing a node during a traversal skips the next
one) is the reference's: per flat section (the lead, then each heading with its text), media
links are removed, category links keep their bare name, `ref` and `table` tags (HTML and
wiki tables) are removed, `strip_code()` flattens the rest, magic words (`__NOTOC__`) are
deleted, and the sections are joined with a blank line.

The reference's parser was mwparserfromhell 0.6.5, whose tokenizer gives up on constructs
nested deeper than 40 levels (0.6.6 raised that to MediaWiki's 100; nothing else in the parser
changed through 0.7.2). With `max_depth=40` (reference mode) on a newer mwparserfromhell, every
page is first tokenized by mwparserfromhell's pure-Python tokenizer limited to 40: where the
limit stopped a construct, those tokens make the tree; elsewhere the limits cannot be told apart
and the C tokenizer's tree is used, as the reference's was. A cheaper test of the tree's depth
is not enough: a construct that fails deep inside a shallow tree still changes the parse
(checked against 0.6.5 on generated pages while writing this).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import mwparserfromhell
import mwparserfromhell.parser as parser_module
from mwparserfromhell.parser import ParserError
from mwparserfromhell.parser.builder import Builder
from mwparserfromhell.parser.tokenizer import Tokenizer
from mwparserfromhell.wikicode import Wikicode

from textsieve.dumps.wiki_aliases import CATEGORY_ALIASES, CATEGORY_PREFIXES, MEDIA_ALIASES, MEDIA_PREFIXES

__all__ = ["REFERENCE_MAX_DEPTH", "LinkPrefixes", "ParserError", "clean_wikitext", "link_prefixes", "page_url"]

#: the nesting limit of the reference's parser (mwparserfromhell 0.6.5)
REFERENCE_MAX_DEPTH = 40
#: magic words: two underscores, capital letters A-Z (or none), two underscores
MAGIC_WORD = re.compile("__[A-Z]*__")
#: tags removed with their contents before `strip_code` (wiki tables parse as `table` tags)
REMOVED_TAGS = frozenset({"ref", "table"})


@dataclass(frozen=True)
class LinkPrefixes:
    """Which wikilinks are media (removed) and which are categories (kept as their name)."""

    media: re.Pattern[str]
    category: re.Pattern[str]


def _names(siteinfo: dict[int, str], keys: Iterable[int]) -> list[str]:
    return [siteinfo[k] for k in keys if siteinfo.get(k)]


def link_prefixes(lang: str, siteinfo: dict[int, str] | None = None, *, reference: bool = False) -> LinkPrefixes:
    """The media and category title patterns for `lang`.

    Reference mode: the English names plus the language's table (`wiki_aliases`), joined into
    one case-insensitive pattern unescaped, as the builder did; a language missing from the
    table takes its names from the dump's siteinfo (namespaces -2, 6, 14). Default mode: the
    table and the siteinfo names together (a namespace renamed since the table was taken still
    counts), each escaped and with its spaces also written as underscores.
    """
    names = siteinfo or {}
    if reference:
        media = [*MEDIA_PREFIXES, *MEDIA_ALIASES.get(lang, _names(names, (-2, 6)))]
        cats = [*CATEGORY_PREFIXES, *CATEGORY_ALIASES.get(lang, _names(names, (14,)))]
        return LinkPrefixes(_compile(media, escape=False), _compile(cats, escape=False))
    media = [*MEDIA_PREFIXES, *MEDIA_ALIASES.get(lang, ()), *_names(names, (-2, 6))]
    cats = [*CATEGORY_PREFIXES, *CATEGORY_ALIASES.get(lang, ()), *_names(names, (14,))]
    return LinkPrefixes(_compile(_spellings(media), escape=True), _compile(_spellings(cats), escape=True))


def _spellings(names: list[str]) -> list[str]:
    out: dict[str, None] = {}
    for name in names:
        out[name] = None
        out[name.replace(" ", "_")] = None
    return list(out)


def _compile(names: list[str], *, escape: bool) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in names) if escape else "|".join(names)
    return re.compile(f"^(?:{alternatives}):", flags=re.IGNORECASE | re.UNICODE)


def page_url(lang: str, title: str) -> str:
    """The article's URL as the reference wrote it: `urllib.parse.quote` of the title (spaces as
    `%20`, `/` kept, other bytes percent-encoded UTF-8)."""
    return f"https://{lang}.wikipedia.org/wiki/{urllib.parse.quote(title)}"


class _DepthLimitedTokenizer(Tokenizer):
    """mwparserfromhell's pure-Python tokenizer with another nesting limit, noting whether the
    limit ever stopped a construct from being parsed."""

    def __init__(self, max_depth: int) -> None:
        super().__init__()
        self.MAX_DEPTH = max_depth
        self.refused = False

    def _can_recurse(self) -> bool:
        if self._depth < self.MAX_DEPTH:
            return True
        self.refused = True
        return False


@lru_cache(maxsize=1)
def installed_max_depth() -> int:
    """The nesting limit of the installed mwparserfromhell (its Python tokenizer states the one
    its C tokenizer was built with: 40 up to 0.6.5, 100 since 0.6.6)."""
    return int(Tokenizer.MAX_DEPTH)


def parse_wikitext(text: str, max_depth: int | None = None) -> Wikicode:
    """Parse `text` with mwparserfromhell (`ParserError` on an internal error); with `max_depth`
    (the reference's 40) as a parser with that nesting limit would.

    When the installed parser's limit differs, the text is first tokenized by the pure-Python
    tokenizer limited to `max_depth`: if the limit never stopped a construct, the two limits
    cannot be told apart and the C tokenizer's parse is the answer (the C and Python tokenizers
    differ on rare malformed markup, and the reference ran the C one); if it did, the limited
    tokens are built into the tree.
    """
    if max_depth is None or max_depth == installed_max_depth():
        return mwparserfromhell.parse(text)
    probe = _DepthLimitedTokenizer(max_depth)
    tokens = probe.tokenize(text)
    if not probe.refused and parser_module.use_c and parser_module.CTokenizer is not None:
        return mwparserfromhell.parse(text)
    return Builder().build(tokens)  # (without the C tokenizer the probe's tokens are the parse)


def clean_wikitext(raw: str, prefixes: LinkPrefixes, *, max_depth: int | None = None) -> str:
    """The page's plain text: section by section, media links and `ref`/`table` tags removed,
    category links reduced to their name, `strip_code()`, magic words deleted; sections joined
    with "\\n\\n" (empty ones included). The traversal mutates the tree while iterating it, as
    the reference does, so the same nodes are skipped."""
    code = parse_wikitext(raw, max_depth)
    texts = []
    for section in code.get_sections(flat=True, include_lead=True, include_headings=True):
        for link in section.ifilter_wikilinks(recursive=True):
            title = str(link.title)
            if prefixes.media.match(title):
                _remove(section, link)
            elif prefixes.category.match(title):
                try:
                    link.text = prefixes.category.sub("", link.__strip__() or "")
                except ValueError:  # the reference ignores these too
                    pass
        for tag in section.ifilter_tags(matches=_removed_tag, recursive=True):
            _remove(section, tag)
        texts.append(MAGIC_WORD.sub("", section.strip_code().strip()))
    return "\n\n".join(texts)


def _removed_tag(node: Any) -> bool:
    return str(node.tag) in REMOVED_TAGS


def _remove(section: Wikicode, node: Any) -> None:
    try:
        section.remove(node)
    except ValueError:  # already gone with an enclosing node
        pass
