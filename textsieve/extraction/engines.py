"""Main-content extraction engines, by name.

An engine turns one decoded HTML page into its main text (menus, footers, cookie banners, related
links and comment sections dropped) and the page title. Every engine is built by a factory
registered under a name (`register_engine`), so the stage, the CLI's ``--engine`` choices, the
Python API and the benchmark all see the same list; the factories import their library lazily,
so importing this module (the ``--help`` path does, for `ENGINE_NAMES`) stays cheap.

Each engine carries the exact options it runs with (`Engine.settings`) and its library's version:
both go into every record's ``meta.extract``, so an output says how it was made.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textsieve.exec.library_logs import apply_library_level


@dataclass(frozen=True)
class Extracted:
    """One page's main text ("" when the engine found none) and title (None when absent); for a
    cascade engine, which way the page went (``path``: "fast" or "fallback"; None otherwise)."""

    text: str
    title: str | None
    path: str | None = None


@dataclass(frozen=True)
class Engine:
    """A ready-to-use extractor: ``extract(html, url)`` plus what to record about it."""

    name: str
    version: str
    settings: dict[str, Any]
    run: Callable[[str, str | None], Extracted] = field(repr=False)
    cascade: bool = False  # pages carry `Extracted.path`; extract counts the fallbacks

    def extract(self, html: str, url: str | None = None) -> Extracted:
        """Main text and title of one page (``html`` already decoded, see `decode.decode_html`)."""
        return self.run(html, url)


@dataclass(frozen=True)
class _Registration:
    factory: Callable[[], Engine]
    description: str
    extra: str | None  # the pip extra that provides the library, for optional engines


_REGISTRY: dict[str, _Registration] = {}


class UnknownEngineError(ValueError):
    """An engine name that is not registered, or whose optional library is not installed."""


def register_engine(name: str, factory: Callable[[], Engine], *, description: str = "",
                    extra: str | None = None) -> None:
    """Make ``get_engine(name)`` build ``factory()``; ``extra`` names the pip extra to install when
    the factory's import fails (an optional engine)."""
    _REGISTRY[name] = _Registration(factory, description, extra)


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``; unknown names and missing optional libraries are a
    one-line `UnknownEngineError` (a ValueError) naming the choices or the extra to install."""
    reg = _REGISTRY.get(name)
    if reg is None:
        raise UnknownEngineError(f"unknown extraction engine {name!r}; choose one of: {', '.join(_REGISTRY)}")
    apply_library_level()  # the libraries' per-page log records follow textsieve's levels, in workers too
    try:
        return reg.factory()
    except ImportError as err:
        if reg.extra is None:
            raise
        raise UnknownEngineError(
            f"extraction engine {name!r} needs an optional library that is not installed ({err}); "
            f"install it with: pip install 'textsieve[{reg.extra}]'") from None


def engine_descriptions() -> dict[str, str]:
    """``{name: one-line description}`` of every registered engine, for help texts and docs."""
    return {name: reg.description for name, reg in _REGISTRY.items()}


def dist_version(dist: str) -> str:
    """The installed version of distribution ``dist`` ("unknown" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # lazy: ~30 ms, not on the --help path

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


_TITLE_RE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def html_title(html: str) -> str | None:
    """The page's ``<title>``, whitespace-collapsed and unescaped (None when missing or empty);
    a regex, not a parse, so engines whose library does not report a title pay nothing for it."""
    m = _TITLE_RE.search(html)
    if not m:
        return None
    title = " ".join(html_lib.unescape(m.group(1)).split())
    return title or None


# ---- resiliparse --------------------------------------------------------------------------------

#: resiliparse's main-content mode with the page's structure kept (one block per line) and
#: everything that is not reading text left out: alt texts, form fields, <noscript>, comments.
RESILIPARSE_SETTINGS: dict[str, Any] = {
    "main_content": True, "preserve_formatting": True, "list_bullets": True, "alt_texts": False,
    "links": False, "form_fields": False, "noscript": False, "comments": False,
}


def _resiliparse() -> Engine:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    settings = dict(RESILIPARSE_SETTINGS)

    def run(html: str, url: str | None) -> Extracted:
        tree = HTMLTree.parse(html)
        text = extract_plain_text(tree, **settings)
        return Extracted(text.strip(), (" ".join(tree.title.split()) or None) if tree.title else None)

    return Engine("resiliparse", dist_version("resiliparse"), settings, run)


# ---- trafilatura --------------------------------------------------------------------------------

#: datatrove's Trafilatura extractor options (corpus building: no comments, tables kept).
TRAFILATURA_SETTINGS: dict[str, Any] = {
    "include_comments": False, "include_tables": True, "include_images": False, "include_links": False,
    "output_format": "txt", "deduplicate": False, "with_metadata": False,
}


def _trafilatura(fast: bool) -> Callable[[], Engine]:
    def factory() -> Engine:
        import trafilatura

        settings = {**TRAFILATURA_SETTINGS, "fast": fast}

        def run(html: str, url: str | None) -> Extracted:
            text = trafilatura.extract(html, url=url, **settings)
            return Extracted((text or "").strip(), html_title(html))

        return Engine("trafilatura-fast" if fast else "trafilatura", dist_version("trafilatura"), settings, run)

    return factory


# ---- jusText ------------------------------------------------------------------------------------

_LANG_ATTR_RE = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?\s*([A-Za-z]{2,3})", re.IGNORECASE)

#: ISO 639-1 code -> jusText stoplist name, for the languages whose names differ from a plain
#: lookup; the rest are found by `_justext_stoplist_name`.
_JUSTEXT_LANGS = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pl": "Polish",
    "nl": "Dutch", "pt": "Portuguese", "ru": "Russian", "cs": "Czech", "sk": "Slovak", "sv": "Swedish",
    "da": "Danish", "fi": "Finnish", "hu": "Hungarian", "ro": "Romanian", "tr": "Turkish", "el": "Greek",
    "bg": "Bulgarian", "uk": "Ukrainian", "hr": "Croatian", "sl": "Slovenian", "sr": "Serbian",
    "no": "Norwegian_Bokmal", "nb": "Norwegian_Bokmal", "nn": "Norwegian_Nynorsk", "ca": "Catalan",
    "et": "Estonian", "lv": "Latvian", "lt": "Lithuanian", "id": "Indonesian", "ms": "Malay",
    "vi": "Vietnamese", "ar": "Arabic", "fa": "Persian", "he": "Hebrew", "hi": "Hindi", "ko": "Korean",
    "eu": "Basque", "gl": "Galician", "is": "Icelandic", "ga": "Irish", "cy": "Welsh", "af": "Afrikaans",
}

JUSTEXT_SETTINGS: dict[str, Any] = {
    "stoplist": "per page: <html lang>, else py3langid on the page's text; English when neither is known",
    "length_low": 70, "length_high": 200, "stopwords_low": 0.3, "stopwords_high": 0.32,
    "max_link_density": 0.2, "max_heading_distance": 200, "no_headings": False,
}


def _justext() -> Engine:
    import justext

    settings = dict(JUSTEXT_SETTINGS)
    params = {k: v for k, v in settings.items() if k != "stoplist"}
    stoplists: dict[str, frozenset[str]] = {}

    def stoplist(html: str) -> frozenset[str]:
        name = _JUSTEXT_LANGS.get(_page_language(html), "English")
        if name not in stoplists:
            stoplists[name] = justext.get_stoplist(name)
        return stoplists[name]

    def run(html: str, url: str | None) -> Extracted:
        if not html.strip():
            return Extracted("", None)
        paragraphs = justext.justext(html, stoplist(html), **params)
        text = "\n".join(p.text for p in paragraphs if not p.is_boilerplate)
        return Extracted(text.strip(), html_title(html))

    return Engine("justext", dist_version("jusText"), settings, run)


_TAG_RE = re.compile(r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<[^>]+>", re.IGNORECASE | re.DOTALL)


def _page_language(html: str) -> str:
    """The page's language code: ``<html lang>`` when given, else py3langid on a tag-stripped
    slice of the body (cheap: jusText only needs the stoplist's language)."""
    m = _LANG_ATTR_RE.search(html, 0, 20_000)
    if m:
        return m.group(1).lower()[:2]
    import py3langid

    body = html.find("<body")
    text = " ".join(_TAG_RE.sub(" ", html[max(body, 0):][:60_000]).split())[:3000]
    return str(py3langid.classify(text)[0]) if text else "en"


# ---- readability (optional) ---------------------------------------------------------------------

READABILITY_SETTINGS: dict[str, Any] = {"min_text_length": 25, "retry_length": 250}


def _readability() -> Engine:
    import lxml.html
    from readability import Document  # optional: pip install 'textsieve[readability]'

    settings = dict(READABILITY_SETTINGS)

    def run(html: str, url: str | None) -> Extracted:
        if not html.strip():
            return Extracted("", None)
        doc = Document(html, url=url, **settings)
        summary = doc.summary(html_partial=True)
        root = lxml.html.fromstring(summary) if summary.strip() else None
        text = _block_text(root) if root is not None else ""
        return Extracted(text, html_title(html))

    return Engine("readability", dist_version("readability-lxml"), settings, run)


_BLOCKS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "br", "pre", "blockquote",
           "section", "article", "table", "ul", "ol", "dd", "dt", "figcaption"}


def _block_text(root: Any) -> str:
    """Text of an lxml tree with a line break after every block element (readability returns
    HTML, and ``text_content()`` would glue paragraphs together)."""
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.lower() in _BLOCKS:
            el.tail = "\n" + (el.tail or "")
    lines = (" ".join(line.split()) for line in root.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def _textsieve() -> Engine:
    from textsieve.extraction.sieve import build_engine

    return build_engine(learned=True)


def _textsieve_rules() -> Engine:
    from textsieve.extraction.sieve import build_engine

    return build_engine(learned=False)


def _cascade() -> Engine:
    from textsieve.extraction.sieve import build_engine

    return build_engine(fallback=get_engine("trafilatura"))


def _auto() -> Engine:
    from textsieve.extraction.sieve import build_engine

    return build_engine(fallback=get_engine("trafilatura"), by_doubt=False)


register_engine("auto", _auto,
                description="textsieve, and trafilatura for a page whose main content it lost (~2%): trafilatura's "
                            "F1 at ~7x its speed; the default")
register_engine("trafilatura", _trafilatura(fast=False),
                description="trafilatura as datatrove runs it (no comments, tables kept)")
register_engine("textsieve", _textsieve,
                description="resiliparse main content, blocks kept by a learned classifier: ~8x faster, lower F1")
register_engine("cascade", _cascade,
                description="auto, and trafilatura also for the pages its block classifier doubts most (~5%)")
register_engine("textsieve-rules", _textsieve_rules,
                description="resiliparse main content plus the rule post-filters alone (textsieve before the model)")
register_engine("resiliparse", _resiliparse, description="resiliparse extract_plain_text(main_content=True)")
register_engine("trafilatura-fast", _trafilatura(fast=True), description="trafilatura with fast=True")
register_engine("justext", _justext, description="jusText, stoplist by page language")
register_engine("readability", _readability, description="readability-lxml (optional extra 'readability')",
                extra="readability")

#: Every registered engine name, for option choices.
ENGINE_NAMES: tuple[str, ...] = tuple(_REGISTRY)

#: The engine `extract` uses unless told otherwise. Chosen on the dev-set measurements
#: (docs/extraction.md, `benchmarks/extract.py`): ``auto`` is the one engine with trafilatura's F1
#: (or better) on pages its classifier was not trained on at >= 5x trafilatura's CPU per page and
#: end to end; ``textsieve`` is the fastest choice, ``trafilatura`` what datatrove/FineWeb run.
DEFAULT_ENGINE = "auto"
