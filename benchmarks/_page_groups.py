"""Language and kind of each extraction dev page, so `extract.py` can report precision, recall and
F1 per group (issue 27: a gain on articles must not hide a loss elsewhere).

* language: textsieve's built-in language id (py3langid, as `extract` tags documents) on the
  page's `with` snippets, the hand-picked main text; languages with fewer than 10 pages are
  pooled as `other`.
* kind, decided in this order from the URL and the HTML (heuristics, stated so the table can be
  read with them in mind):
  - `product`: the URL names a shop or product path, or the HTML carries schema.org `Product`
    markup or an add-to-cart control;
  - `listing/forum`: the URL names a forum, thread, board, topic, tag, category or archive path,
    or the page repeats `<article` 10 times or more (a list of teasers or posts);
  - `short`: under SHORT_CHARS characters of visible text in all, menus and footers included (a
    notice, a contact page, a stub);
  - `article`: everything else (news, blog posts, documentation pages).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

#: a page with less visible text than this (menus and footers included) is `short`
SHORT_CHARS = 5000
_PRODUCT_URL = re.compile(r"(shop|store|produkt|product|artikel/|/p/|/dp/|item|warenkorb|cart)", re.I)
_PRODUCT_HTML = re.compile(r"(schema\.org/Product|itemtype=\"https?://schema\.org/Product|add[-_ ]to[-_ ]cart|"
                           r"in den warenkorb|ajouter au panier)", re.I)
_LISTING_URL = re.compile(r"(forum|thread|board|topic|/tag/|/tags/|categor|kategorie|archiv|/page/\d|showthread|"
                          r"viewtopic|community)", re.I)


_DROP = re.compile(r"<(script|style|noscript)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")


def visible_chars(html: str) -> int:
    """Characters of the page's text outside tags, scripts and styles, whitespace collapsed."""
    return len(" ".join(_TAG.sub(" ", _DROP.sub(" ", html)).split()))


def _kind(url: str, html: str) -> str:
    if _PRODUCT_URL.search(url) or _PRODUCT_HTML.search(html):
        return "product"
    if _LISTING_URL.search(url) or html.lower().count("<article") >= 10:
        return "listing/forum"
    if visible_chars(html) < SHORT_CHARS:
        return "short"
    return "article"


def page_groups(extraction_dir: Path) -> dict[str, tuple[str, str]]:
    """{page id: (language, kind)} for every page of the set."""
    from textsieve.models.langid import Py3LangId

    expect = json.loads((extraction_dir / "expectations.json").read_text())
    ids = sorted(expect)
    snippets = [" ".join(expect[p]["with"]) for p in ids]
    langs, _ = Py3LangId().predict(snippets)
    count = Counter(langs)
    out = {}
    for pid, lang in zip(ids, langs):
        path = extraction_dir / "html" / f"{pid}.html.gz"
        html = gzip.decompress(path.read_bytes()).decode("utf-8", "replace") if path.exists() else ""
        url = expect[pid].get("url") or expect[pid].get("key") or ""
        out[pid] = (lang if count[lang] >= 10 else "other", _kind(url, html))
    return out


def grouped_scores(per_page: dict[str, list[int]], groups: dict[str, tuple[str, str]],
                   which: int) -> dict[str, tuple[int, float, float, float]]:
    """{group: (pages, precision, recall, F1)} from the scorer's per-page (tp, fp, fn, tn), by
    language (`which` 0) or kind (1); micro-averaged like the scorer's totals."""
    sums: dict[str, list[int]] = {}
    for pid, (tp, fp, fn, _tn) in per_page.items():
        g = groups.get(pid, ("?", "?"))[which]
        s = sums.setdefault(g, [0, 0, 0, 0])
        s[0] += 1
        s[1] += tp
        s[2] += fp
        s[3] += fn
    out = {}
    for g, (n, tp, fp, fn) in sorted(sums.items(), key=lambda kv: -kv[1][0]):
        out[g] = (n, tp / (tp + fp) if tp + fp else 0.0, tp / (tp + fn) if tp + fn else 0.0,
                  2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0)
    return out
