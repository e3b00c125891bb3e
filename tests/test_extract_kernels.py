"""The extraction engine's C kernels give what their Python twins give: `ts_boilerplate_edits`
(`sieve.mark_boilerplate`'s word search and class/id checks) and `ts_parse_blocks`
(`blocks.parse_blocks`), on real pages and on crafted and seeded random text aimed at their edges
(entities, Unicode whitespace, lone surrogates, unclosed tags and links, class/id windows)."""

from __future__ import annotations

import ctypes
import gzip
import random

import numpy as np
import pytest

from textsieve import native
from textsieve.extraction import blocks, sieve


def _python_edits(html: str) -> dict[int, tuple[int, bytes]]:
    data = html.encode("utf-8", "surrogatepass")
    low = data.lower()
    edits: dict[int, tuple[int, bytes]] = {}
    for i in sieve._word_hits(low):
        sieve._check_hit(data, low, i, edits)
    return edits


def _c_edits(html: str) -> dict[int, tuple[int, bytes]]:
    edits = sieve._native_edits(html.encode("utf-8", "surrogatepass"))
    assert edits is not None
    return edits


def _c_blocks_found(minimal_html: str) -> int:
    """What the C kernel returns for a page: its block count, or -1 (left to Python)."""
    data = minimal_html.encode("utf-8", "surrogatepass")
    room = data.count(b"\n") + 1
    info = np.empty((room, 4), np.int64)
    return native.parse_blocks()(data, len(data), ctypes.create_string_buffer(len(data) + 1), info.ctypes.data, room)


@pytest.fixture(autouse=True)
def _kernels_built():
    if native.boilerplate_edits() is None or native.parse_blocks() is None:
        pytest.skip("the _extract C library is not built (no C compiler at install time); the Python twins run")


def test_kernels_match_python_on_the_dev_pages(shared_dir):
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from textsieve.extraction.decode import decode_html

    pages = sorted((shared_dir / "corpora" / "extraction" / "html").glob("*.html.gz"))[:150]
    edited = in_c = 0
    for f in pages:
        html = decode_html(gzip.decompress(f.read_bytes()), None).text
        edits = _c_edits(html)
        assert edits == _python_edits(html), f.name
        edited += bool(edits)
        minimal = extract_plain_text(HTMLTree.parse(sieve.mark_boilerplate(html)), **sieve.RESILIPARSE_OPTIONS)
        assert blocks.parse_blocks(minimal) == blocks._parse_blocks_python(minimal), f.name
        in_c += _c_blocks_found(minimal) >= 0
    assert edited > 50 and in_c == len(pages)  # real pages relabel elements, and C parses every one


CRAFTED_LINES = [
    "", "\n\n", "  <p>Hello  world</p>  ", "<p>a&amp;b &quot;c&quot; &lt;d&gt;</p>", "<h2>Title</h2>\n<p>x</p>",
    "<p>see <a href=\"/x\">the <b>linked</b>  text</a> here</p>", "<p><a href=x>unclosed link</p>",
    "<p><a href=1>one <a href=2>two</a> three</a></p>", "<pre>  code\tline  </pre>", "<h7>not a heading</h7>",
    "<h1x>no</h1x>", "<prex>no</prex>", "<p>nbsp\xa0and\u3000ideographic\u2029sep\x1cfs\x85nel</p>", "\u200bzero width",
    "<abbr>no link</abbr>", "<a>bare</a>", "<p>lone \ud800 surrogate</p>", "emoji 😀 <a href=x>😀😀</a>",
    "<p>a < b and c > d</p>", "<p>unclosed <tag", "&nbsp;left to python", "<aé>non-ASCII after a</aé>", "<pé>x</pé>",
    "\t\x0b\x0c\r<p>ctrl</p>", "<p>" + "word " * 500 + "</p>", "<a href=x></a><p>empty link</p>",
]


def test_parse_blocks_crafted_and_random_lines_equal_python():
    for text in CRAFTED_LINES:
        assert blocks.parse_blocks(text) == blocks._parse_blocks_python(text), repr(text)
    assert _c_blocks_found("&nbsp;x") == -1 and _c_blocks_found("<aé>x</aé>") == -1  # Python's to decode
    assert _c_blocks_found("<p>a&amp;b</p>") == 1
    tokens = ["<a href=x>", "</a>", "<p>", "<pre>", "<h2>", "</h2>", "&amp;", "&quot;", "&lt;", "&gt;", " ", "  ", "\n",
              "\xa0", "\u3000", "\x1c", "\x85", "word", "é", "<", ">", "<abbr>", "<a>", "<a", "\ud800", "<h7>", "<h1x>",
              "Zoë", "\t", "<br>", "x.", "<p", "<pre", "</a", "😀", "\u2029"]
    rng = random.Random(7)
    in_c = 0
    for _ in range(4000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 25)))
        assert blocks.parse_blocks(text) == blocks._parse_blocks_python(text), repr(text)
        in_c += _c_blocks_found(text) >= 0
    assert in_c > 3500  # the rest put a non-ASCII character right after "<a" or "<p": Python decides


CRAFTED_PAGES = [
    '<div class="author-box">Bio</div>', '<DIV CLASS="Author-Box">Bio</DIV>', "<span class='byline x'>By</span>",
    '<p class="author-content">kept: names content</p>', '<article class="teaser">kept: article</article>',
    '<main id="caption">kept: main</main>', '<x data-id="author">not an attribute head</x>',
    '<b\tclass=\n"infobox">whitespace around =</b>', '<div class          =    "teaser">past the 16-byte window</div>',
    '<div class="' + "a " * 130 + 'teaser">value longer than 256 bytes</div>', '<div class="teaser>unclosed',
    '<h2 class="entry teaser">kept: entry</h2>', '<x1 id="byline">tag with a digit</x1>', 'id="author" with no tag',
    '<div id="author"><span class="caption">two</span></div>', '<p class="newsletter" id="factbox">both</p>',
]


def test_boilerplate_edits_crafted_and_random_elements_equal_python():
    for page in CRAFTED_PAGES:
        assert _c_edits(page) == _python_edits(page), page
    assert sieve.mark_boilerplate(CRAFTED_PAGES[0]) == '<div class="author-box footer">Bio</div>'
    assert sieve.mark_boilerplate('<p id="author">x</p>') == '<p id="footer">x</p>'
    rng = random.Random(3)
    spaces = ["", " ", "  ", "\t", "\n", "\x0b", " " * 10, "\xa0"]

    def element() -> str:
        tag = rng.choice(["div", "DIV", "main", "article", "body", "html", "span", "x1", "1x", "p", "mainx", ""])
        attr = rng.choice(["class", "id", "Class", "ID", "data-id", "xclass", "klass", "idx"])
        quote = rng.choice(['"', "'"])
        value = " ".join(rng.choice(["author", "Author-Box", "teaser", "caption", "post", "main", "newsletter", "é",
                                     "byline", "content-author", "factbox", "infobox", "<", ">", "'", '"',
                                     "a" * rng.randint(1, 300)]) for _ in range(rng.randint(0, 4)))
        return ("<" + tag + rng.choice([" ", "\t", "\n", "", "é "]) + rng.choice(["", 'a="b" ']) + attr
                + rng.choice(spaces) + rng.choice(["=", "", "=="]) + rng.choice(spaces) + quote + value
                + rng.choice([quote, "", quote + ">"]) + rng.choice([">", "", " >"])
                + rng.choice(["text", "author", ""]))

    edited = 0
    for _ in range(5000):
        page = "".join(element() for _ in range(rng.randint(1, 5)))
        edits = _c_edits(page)
        assert edits == _python_edits(page), repr(page)
        edited += len(edits)
    assert edited > 100


def test_without_the_kernels_pages_come_out_the_same(monkeypatch):
    page = ('<html><body><article><h1>Title</h1><div class="author">By me</div><p>One &amp; two, '
            '<a href="/x">a link</a>.</p><p>nbsp\xa0here &copy; 2024</p></article></body></html>')
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    marked = sieve.mark_boilerplate(page)
    parsed = blocks.parse_blocks(extract_plain_text(HTMLTree.parse(marked), **sieve.RESILIPARSE_OPTIONS))
    monkeypatch.setattr(sieve, "boilerplate_edits", lambda: None)
    monkeypatch.setattr(blocks, "native_parse_blocks", lambda: None)
    assert sieve.mark_boilerplate(page) == marked and 'class="author footer"' in marked
    assert blocks.parse_blocks(extract_plain_text(HTMLTree.parse(marked), **sieve.RESILIPARSE_OPTIONS)) == parsed
    assert [b.text for b in parsed][:2] == ["Title", "One & two, a link ."]  # a closing tag is a space


def test_features_equal_numpy_on_random_pages():
    """Random pages of random blocks (capitals whose lower case is longer, digits, commas,
    separators, sentence ends, links, every kind) and random rule views: the C matrix is the NumPy
    matrix, double for double."""
    if native.block_features() is None:
        pytest.skip("the _extract C library is not built")
    assert blocks._C_LAYOUT  # the feature list still has the columns the kernel writes
    rng = random.Random(11)
    pieces = ["Word", "word", "İstanbul", "ΣΊΣΥΦΟΣ", "3,14", "|", "©", "»", "«", "…", ".", "!", "?", ":", '"', "“", "”",
              ",", "ß", "ǅ", "x", "12", "😀", "\ud800"]
    for _ in range(700):
        n = rng.randint(1, 30)
        page = []
        for _ in range(n):
            words = ("".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 25)))
            text = " ".join(words)
            page.append(blocks.Block(text, rng.choice(blocks._KINDS), rng.choice([0.0, 1.0, rng.random()]),
                                     len(text.split())))
        if rng.random() < 0.3:
            page[rng.randrange(n)] = page[0]  # a repeated block
        start = rng.randint(0, n)
        end = rng.randint(start, n)
        rules = (start, end, [rng.randint(0, 1) for _ in range(n)], [rng.randint(0, 1) for _ in range(n)],
                 rng.randint(0, n))
        got, want = blocks.features(page, rules), blocks._features_numpy(page, rules)
        assert got.shape == want.shape == (n, len(blocks.FEATURES))
        assert np.array_equal(got, want), [blocks.FEATURES[j] for j in sorted(set(np.argwhere(got != want)[:, 1]))]
    assert blocks.features([], (0, 0, [], [], 0)).shape == (0, len(blocks.FEATURES))
