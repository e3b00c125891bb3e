"""A sample crawl: the bundled sample corpus as web pages in WARC files, for `textsieve extract`.

Common Crawl users start from WARC files, and a first run should show what extraction does
without downloading a crawl. So the sample's prose documents (Python's help topics, licences,
docstrings: see `textsieve.sample`) are laid out the way real sites lay out articles: a menu, a
cookie banner, a headline, the text in paragraphs, related links and a footer, and written as
HTTP `response` records, each after its `request` record, as crawlers write them. A few records
are what a real crawl also holds and extraction must leave out: a redirect, a PDF, an image, a
404 page and an empty body. Some pages are encoded as Windows-1252 and declare it in `<meta>`
only, one declares nothing.

Deterministic like the sample: record ids, dates and URLs come from the documents' ids, and
every gzip member has no timestamp, so two builds on one machine are byte-identical.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import json
import tempfile
import uuid
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

SHARD_PAGES = 40  # HTML pages per WARC file
DATE = "2024-05-01T12:00:00Z"

_MENU = ("Home", "Documentation", "Downloads", "Community", "About us", "Contact")
_RELATED = ("Getting started", "Release notes", "Frequently asked questions", "Mailing lists")


@dataclass(frozen=True)
class CrawlInfo:
    folder: Path
    files: list[Path]
    pages: int  # HTML response records
    other: int  # response records that are not HTML pages (redirect, PDF, image, 404, empty)


def _uuid(seed: str) -> str:
    return f"<urn:uuid:{uuid.UUID(hashlib.md5(seed.encode()).hexdigest())}>"


def page_html(title: str, paragraphs: list[str], charset: str | None = "utf-8") -> str:
    """One article page with the boilerplate a main-content extractor must drop."""
    meta = f'<meta charset="{charset}">' if charset else ""
    menu = "".join(f'<li><a href="/{m.lower().replace(" ", "-")}">{m}</a></li>' for m in _MENU)
    related = "".join(f'<li><a href="/{r.lower().replace(" ", "-")}">{r}</a></li>' for r in _RELATED)
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head>{meta}<title>{html.escape(title)} | Example Docs</title>"
            "<script>window.dataLayer = window.dataLayer || [];</script></head>\n<body>\n"
            '<div class="cookie-banner">We use cookies to improve your experience. <a href="/privacy">'
            "Accept all cookies</a></div>\n"
            f'<header><a class="logo" href="/">Example Docs</a><nav><ul>{menu}</ul></nav></header>\n'
            f"<main><article><h1>{html.escape(title)}</h1>\n{body}\n</article></main>\n"
            f'<aside><h2>Related pages</h2><ul>{related}</ul></aside>\n'
            "<footer><p>Copyright 2024 Example Docs. All rights reserved.</p><p><a href=\"/imprint\">Imprint</a> "
            "| <a href=\"/privacy\">Privacy policy</a> | <a href=\"/terms\">Terms of use</a></p></footer>\n"
            "</body></html>\n")


def _paragraphs(text: str) -> list[str]:
    parts = [" ".join(p.split()) for p in text.split("\n\n")]
    return [p for p in parts if p][:40]


def _response(writer, url: str, status: str, ctype: str | None, body: bytes, seed: str) -> None:
    from warcio.statusandheaders import StatusAndHeaders

    headers = [("Content-Type", ctype)] if ctype else []
    if status.startswith("301"):
        headers.append(("Location", url.rsplit("/", 1)[0] + "/"))
    headers.append(("Content-Length", str(len(body))))
    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    req = writer.create_warc_record(url, "request", payload=BytesIO(b""), warc_headers_dict={
        "WARC-Record-ID": _uuid("req" + seed), "WARC-Date": DATE},
        http_headers=StatusAndHeaders(f"GET /{url.split('/', 3)[-1]} HTTP/1.1", [("Host", "docs.example.org")],
                                      is_http_request=True))
    writer.write_record(req)
    rec = writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http,
                                    warc_headers_dict={"WARC-Record-ID": _uuid(seed), "WARC-Date": DATE})
    writer.write_record(rec)


def _prose_docs(max_docs: int) -> list[dict]:
    from textsieve.sample import build_sample

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sample.jsonl.gz"
        build_sample(path, max_docs=max_docs)
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            docs = [json.loads(line) for line in fh]
    return [d for d in docs if d["source"] not in ("python-source", "debian-copyright")
            and len(_paragraphs(d["text"])) >= 2]


def build_sample_crawl(folder: str | Path, max_pages: int = 120) -> CrawlInfo:
    """Write `folder/crawl-NNNN.warc.gz` files of sample pages (see the module doc)."""
    from warcio.warcwriter import WARCWriter

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    docs = _prose_docs(500)[:max_pages]
    files: list[Path] = []
    other = 0
    for k in range(0, len(docs), SHARD_PAGES):
        path = out / f"crawl-{k // SHARD_PAGES:04d}.warc.gz"
        buf = BytesIO()
        writer = WARCWriter(buf, gzip=True)
        for i, doc in enumerate(docs[k:k + SHARD_PAGES], start=k):
            paragraphs = _paragraphs(doc["text"])
            title = paragraphs[0][:80]
            url = f"https://docs.example.org/{doc['id'].replace(':', '/')}"
            charset: str | None = "utf-8"
            ctype = "text/html; charset=utf-8"
            if i % 9 == 4:  # declared in <meta> only, as Windows-1252
                charset, ctype = "windows-1252", "text/html"
            elif i % 23 == 11:  # declared nowhere
                charset, ctype = None, "text/html"
            page = page_html(title, paragraphs[1:], charset)
            try:
                body = page.encode(charset or "utf-8")
            except UnicodeEncodeError:
                body = page.encode("utf-8")
                ctype = "text/html; charset=utf-8"
            _response(writer, url, "200 OK", ctype, body, doc["id"])
        base = f"https://docs.example.org/shard-{k // SHARD_PAGES}"
        for name, status, ctype, body in (
                ("moved", "301 Moved Permanently", "text/html", b"<html><body>Moved</body></html>"),
                ("manual.pdf", "200 OK", "application/pdf", b"%PDF-1.4\n% sample\n"),
                ("logo.png", "200 OK", "image/png", b"\x89PNG\r\n\x1a\n" + bytes(24)),
                ("missing", "404 Not Found", "text/html", b"<html><body><h1>Not found</h1></body></html>"),
                ("empty", "200 OK", "text/html", b"")):
            _response(writer, f"{base}/{name}", status, ctype, body, f"{base}/{name}")
            other += 1
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(path)
        files.append(path)
    return CrawlInfo(out, files, len(docs), other)
