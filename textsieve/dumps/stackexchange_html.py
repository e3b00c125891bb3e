"""The text of an HTML fragment exactly as `BeautifulSoup(html, "lxml").get_text()` gave it to
RedPajama-1T's StackExchange script (bs4 4.12, lxml 4.9.2 with libxml2 2.9), ten times faster.

Why not call BeautifulSoup: it builds a whole tree of Python objects to concatenate strings, and
that was most of the reference's time. What decides the text is lxml's HTML parser (which tags
it implies, what it decodes) plus four rules of bs4's tree building, which `_Text` applies to
the parser's events directly: consecutive data is one string; a string of ASCII whitespace
only (space, `\\n`, `\\t`, `\\f`, `\\r`) becomes `\\n` if it holds one, else a space, unless a
`<pre>` or `<textarea>` is open; strings inside `<script>`, `<style>`, `<template>`, `<rt>` or
`<rp>` are left out, as are comments, processing instructions and doctypes; an end tag closes
up to the most recent open tag of its name, or nothing. Tests compare it with BeautifulSoup on
every golden HTML string and on random fragments.

libxml2 2.14 (lxml 6) replaced the HTML tokenizer with an HTML5 one, which reads some input
otherwise than the 2.9 the reference ran. On such a libxml2, `_as_libxml2_29` rewrites the
markup first so that the old reading comes out (each rule was checked against bs4 4.12 + lxml
4.9.2; with lxml 5 no rewriting is needed):

* a raw `\\r` in text is kept (HTML5 turns `\\r\\n` and `\\r` into `\\n`): written `&#13;`;
* a named reference is decoded only if it ends in `;` and is one of HTML 4's 252 names or
  `apos` (HTML5 decodes `&copy` and `&notes`'s `&not`, and 2,000 more names): others are
  escaped to stay literal;
* a numeric reference to a character XML does not allow (`&#0;`, a surrogate) gives nothing
  and `&#128;`-`&#159;` give the C1 control (HTML5: U+FFFD, and Windows-1252's `€`...);
* `<title>`, `<textarea>`, `<xmp>`, `<iframe>`, `<noscript>`, `<plaintext>`, `<noembed>`,
  `<noframes>` hold markup, not raw text (a question titled "How do I style a <textarea>?"
  is parsed with its body); `<![CDATA[` is text; `<!-->` and `<!--->` open a comment.
"""

from __future__ import annotations

import html.entities
import re
import threading
from typing import Any

from lxml import etree

_ASCII_SPACES = "\x20\x0a\x09\x0c\x0d"
_HIDDEN = frozenset({"rt", "rp", "style", "script", "template"})  # bs4's string containers: not text
_PRESERVE = frozenset({"pre", "textarea"})  # whitespace-only strings kept as they are
#: libxml2 2.14 and later read HTML as HTML5 does (see the module docstring)
HTML5_TOKENIZER = etree.LIBXML_VERSION >= (2, 14)


class _Text:
    """An lxml parser target that does what bs4's tree builder and `get_text()` do together."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.out: list[str] = []
        self.buf: list[str] = []
        self.stack: list[str] = []
        self.pre: list[int] = []  # stack depths of the open whitespace-preserving tags
        self.hidden: list[int] = []  # stack depths of the open string-container tags

    def flush(self, keep: bool = True) -> None:
        if not self.buf:
            return
        s = "".join(self.buf)
        self.buf = []
        if _HOLE in s:  # a reference libxml2 2.9 dropped: it split the text, added nothing
            s = s.replace(_HOLE, "")
            if not s:
                return
        if not self.pre and not s.strip(_ASCII_SPACES):
            s = "\n" if "\n" in s else " "
        if keep and not self.hidden:
            self.out.append(s)

    def start(self, tag: str, attrib: Any, nsmap: Any = None) -> None:
        self.flush()
        tag = _ORIGINAL.get(tag, tag)
        self.stack.append(tag)
        if tag in _PRESERVE:
            self.pre.append(len(self.stack))
        if tag in _HIDDEN:
            self.hidden.append(len(self.stack))

    def end(self, tag: str) -> None:
        self.flush()
        tag = _ORIGINAL.get(tag, tag)
        if tag not in self.stack:
            return
        while self.stack:
            depth = len(self.stack)
            top = self.stack.pop()
            if self.pre and self.pre[-1] == depth:
                self.pre.pop()
            if self.hidden and self.hidden[-1] == depth:
                self.hidden.pop()
            if top == tag:
                return

    def data(self, data: str) -> None:
        self.buf.append(data)

    def _dropped(self, text: str) -> None:
        self.flush()
        self.buf = [text]
        self.flush(keep=False)

    def comment(self, text: str) -> None:
        self._dropped(text)

    def pi(self, target: str, data: str | None = None) -> None:
        self._dropped(f"{target} {data}")

    def doctype(self, *args: Any) -> None:
        self._dropped("doctype")

    def close(self) -> None:
        return None


_local = threading.local()


def html_text(markup: str) -> str:
    """`BeautifulSoup(markup, "lxml").get_text()` as bs4 4.12 over libxml2 2.9 returns it."""
    state = getattr(_local, "state", None)
    if state is None:
        target = _Text()
        state = _local.state = (target, etree.HTMLParser(target=target, recover=True))
    target, parser = state
    if markup[:1] == "\ufeff":  # bs4 strips a leading BOM before lxml sees it
        markup = markup[1:]
    if HTML5_TOKENIZER:
        markup = _as_libxml2_29(markup)
    target.reset()
    try:
        parser.feed(markup)
        parser.close()
    except (UnicodeDecodeError, LookupError, etree.ParserError):  # bs4 then tries the UTF-8 bytes
        target.reset()
        fresh = etree.HTMLParser(target=target, recover=True, encoding="utf8")
        fresh.feed(markup.encode("utf-8", "surrogatepass"))
        fresh.close()
        _local.state = None
    target.flush()
    return "".join(target.out)


_HOLE = "\U0010fffd"  # stands for a dropped reference while parsing (a private-use code point)
_RENAMED = "x-ts29-"  # the prefix that hides a tag from the HTML5 tokenizer's raw-text rules
_TAG = re.compile(r"<[A-Za-z/!?][^>]*>")
_REF = re.compile(r"&(?:#[xX]([0-9A-Fa-f]*);?|#([0-9]*);?|([A-Za-z][A-Za-z0-9]*)(;?))")
_HOLDERS = ("title", "textarea", "xmp", "iframe", "noscript", "plaintext", "noembed", "noframes")
_MARKUP_HOLDERS = re.compile(rf"(</?)({'|'.join(_HOLDERS)})(?=[\s/>])", re.IGNORECASE)
_ORIGINAL = {_RENAMED + name: name for name in _HOLDERS}
_HTML4_NAMES = frozenset(html.entities.name2codepoint) | {"apos"}  # libxml2 2.9's html40EntitiesTable


def _as_libxml2_29(markup: str) -> str:
    """The markup rewritten so that an HTML5 tokenizer reads it as libxml2 2.9 did. References
    are rewritten everywhere (in a tag or a comment the change shows in no text), a raw `\\r`
    only outside tags (there it separates attributes)."""
    hole = "" if _HOLE in markup else _HOLE
    if "&" in markup:
        markup = _REF.sub(lambda m: _ref_29(m, hole), markup)
    if "<!" in markup:
        markup = markup.replace("<![CDATA[", "&lt;![CDATA[").replace("<!--->", "<!-- ->").replace("<!-->", "<!-- >")
    if _MARKUP_HOLDERS.search(markup):
        markup = _MARKUP_HOLDERS.sub(rf"\1{_RENAMED}\2", markup)
    if "\r" in markup:
        out: list[str] = []
        pos = 0
        for m in _TAG.finditer(markup):
            out += (markup[pos:m.start()].replace("\r", "&#13;"), m.group(0))
            pos = m.end()
        out.append(markup[pos:].replace("\r", "&#13;"))
        markup = "".join(out)
    return markup


def _ref_29(m: re.Match[str], hole: str) -> str:
    hexa, decimal, name, semicolon = m.groups()
    if name is not None:
        return m.group(0) if semicolon and name in _HTML4_NAMES else "&amp;" + m.group(0)[1:]
    digits = hexa if hexa is not None else decimal
    value = int(digits, 16 if hexa is not None else 10) if digits else 0
    if not (value in (0x9, 0xA, 0xD) or 0x20 <= value <= 0xD7FF or 0xE000 <= value <= 0xFFFD
            or 0x10000 <= value <= 0x10FFFF):
        return hole
    return chr(value) if 0x80 <= value <= 0x9F else f"&#{value};"
