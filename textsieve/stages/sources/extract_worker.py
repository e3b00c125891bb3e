"""One input shard of `extract`: pages in, documents out (the unit of work a worker runs).

Each page goes through the same steps, and each step that can leave it out counts why:
HTTP status (`redirect`, `http_error`), a Content-Encoding that cannot be undone
(`undecodable_body`), content type (`not_html`: PDF, images, feeds...; a
page without a Content-Type is sniffed for markup), an empty body (`empty_body`), a body over
`--max-doc-bytes` (`too_large`), bytes -> text (`extract.decode`: charset from the header, then
`<meta>`, then detection), main-content extraction (`empty_extraction` when nothing is left,
`engine_error` when the engine fails on the page, `timeout` when decoding and extracting it take
longer than `--page-timeout`: `extraction.deadline`), optional ftfy repair, then language id on
the extracted text (the built-in py3langid model, batched). Damaged archive records are the
reader's business (`io.warc_pages`): with `--on-error skip` they are left out and counted as
bad records, with their locations.

The shard's output is written into the run's staging folder (`io.publish`), followed by a
small `.NAME.done.json` beside it with the shard's fingerprint and counts, so a re-run after a
kill adopts finished shards without reading them. Records keep input order, so the output is
byte-identical whatever the number of workers.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import fsspec

from textsieve.document import Document
from textsieve.extraction.deadline import PageClock, PageTimeout
from textsieve.io.atomic import atomic_open
from textsieve.io.doc_shards import write_doc_shard
from textsieve.io.html_files import html_pages
from textsieve.io.ids import UniqueIds
from textsieve.io.paths import Shard
from textsieve.io.readers import ReadOptions, ShardReader

LANG_BATCH = 256  # pages per language-id call
SAMPLES = 3  # extracted pages per shard kept for the report, beside their first raw lines
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xhtml", "text/xhtml"})
REASONS = ("redirect", "http_error", "not_html", "empty_body", "undecodable_body", "too_large", "engine_error",
           "empty_extraction", "timeout")
WARM_UP_PAGE = b"<html><head><title>Warm up</title></head><body><article><p>A first page.</p></article></body></html>"
LOCATED = 10  # pages named per shard for engine errors and timeouts


@dataclass(frozen=True)
class ExtractTask:
    """Everything a worker needs for one shard (picklable; the engine is built in the worker)."""

    shard: Shard
    output: str  # the output folder's URL (the worker opens its own filesystem)
    staged: str  # where the shard file goes (a path of that filesystem)
    fmt: str
    engine: str
    fix_text: bool
    on_error: str
    max_doc_bytes: int | None
    fingerprint: str  # settings + the input's identity
    id_mode: str = "fail"  # a repeated id among the shard's documents: fail, or suffix (`io.ids`)
    page_timeout: float = 0.0  # seconds one page may take to decode and extract; 0: no limit


_cache: dict[str, Any] = {}


def _engine(name: str) -> Any:
    key = f"engine:{name}"
    if key not in _cache:
        from textsieve.extraction.engines import get_engine

        _cache[key] = get_engine(name)
    return _cache[key]


def _langid() -> Any:
    if "langid" not in _cache:
        from textsieve.models.langid import Py3LangId

        _cache["langid"] = Py3LangId()
    return _cache["langid"]


def done_marker(staged: str) -> str:
    """The `.NAME.done.json` written beside a finished staged shard."""
    head, _, name = staged.rpartition("/")
    return f"{head}/.{name}.done.json" if head else f".{name}.done.json"


def read_done(fs: fsspec.AbstractFileSystem, staged: str) -> dict[str, Any] | None:
    """The marker of a finished staged shard (None when missing or unreadable)."""
    try:
        with fs.open(done_marker(staged), "rb") as fh:
            value = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and fs.exists(staged) else None


def media_type(content_type: str | None) -> str | None:
    """`text/html; charset=utf-8` -> `text/html` (None when there is no header)."""
    if content_type is None:
        return None
    return content_type.split(";", 1)[0].strip().lower() or None


def looks_like_html(body: bytes) -> bool:
    """Sniffing for pages without a Content-Type: markup near the start (as browsers sniff)."""
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or b"<html" in head


def raw_head(text: str, lines: int = 5, width: int = 160) -> list[str]:
    """The first non-blank lines of a page's markup, for the report's side-by-side view."""
    out = []
    for line in text.splitlines():
        if line.strip():
            out.append(line.strip()[:width])
            if len(out) == lines:
                break
    return out


class _Pages:
    """A shard's pages as (id, row, url, date, content_type, status, body), whatever the format."""

    def __init__(self, task: ExtractTask):
        self.task = task
        self.reader = ShardReader(task.shard, ReadOptions(on_error=task.on_error))

    def __iter__(self) -> Iterator[tuple[str, int, str | None, str | None, str | None, int | None, bytes | None,
                                         bool]]:
        """Pages as tuples ending in (body, oversize); the body is None when its Content-Encoding
        could not be undone, and oversize says it is over --max-doc-bytes (an HTML file's is then
        not even inflated whole)."""
        cap = self.task.max_doc_bytes
        if self.task.shard.format == "html":
            for f in html_pages(self.reader, cap):
                yield f.id, f.row, None, None, "text/html", None, f.body, f.oversize
            return
        from textsieve.io.warc_pages import read_pages

        for p in read_pages(self.reader, cap):  # a record over the cap is never read into memory
            body = None if p.body_error else p.body
            yield (p.id, p.row, p.url, p.date, p.content_type, p.status, body,
                   p.oversize or (cap is not None and body is not None and len(body) > cap))


def extract_shard(task: ExtractTask, on_page: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Extract one shard into `task.staged`; returns its counts (also written to the done marker).
    `on_page(docs, bytes_read)` is called every batch when the caller shows progress in-process."""
    from textsieve.extraction.decode import decode_html

    cpu = time.process_time()
    engine = _engine(task.engine)
    fix: Callable[[str], tuple[str, bool]] | None = None
    if task.fix_text:
        from textsieve.extraction.fixtext import fix_text

        fix = fix_text
    if task.page_timeout > 0:  # the engine's and decoder's first call imports and builds what they use: not
        _extract_page(engine, decode_html, WARM_UP_PAGE, "text/html", None)  # the first page's time
    pages = _Pages(task)
    ids = UniqueIds(task.shard, task.id_mode)
    skipped: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    counts: dict[str, Any] = {"pages": 0, "kept": 0, "replaced_bytes": 0, "fixed_text": 0}
    if engine.cascade:  # pages the engine ran on, and how many of them went to its fallback
        counts.update(engine_pages=0, fallback=0)
    errors: list[dict[str, str]] = []
    timeouts: list[dict[str, Any]] = []
    clock = PageClock(task.page_timeout)
    samples: list[dict[str, Any]] = []
    settings = {"engine": engine.name, "version": engine.version, "settings": engine.settings,
                "fix_text": task.fix_text}

    def documents() -> Iterator[dict[str, Any]]:
        batch: list[dict[str, Any]] = []
        for page_id, row, url, date, ctype, status, body, oversize in pages:
            counts["pages"] += 1
            if status is not None and 300 <= status < 400:
                skipped["redirect"] += 1
                continue
            if status is not None and not 200 <= status < 300:
                skipped["http_error"] += 1
                continue
            if body is None:
                skipped["undecodable_body"] += 1
                continue
            kind = media_type(ctype)
            if kind is not None and kind not in HTML_TYPES or kind is None and body and not looks_like_html(body):
                skipped["not_html"] += 1
                continue
            if oversize:
                skipped["too_large"] += 1
                continue
            if not body.strip():
                skipped["empty_body"] += 1
                continue
            try:
                with clock.page():  # PageTimeout past --page-timeout (`extraction.deadline`)
                    decoded, got, failure = _extract_page(engine, decode_html, body, ctype, url)
            except PageTimeout:
                skipped["timeout"] += 1
                if len(timeouts) < LOCATED:
                    timeouts.append({"id": page_id, "row": row, "url": url, "bytes": len(body)})
                continue
            if decoded is None:  # a codec that fails on these bytes
                skipped["undecodable_body"] += 1
                continue
            if got is None:  # a crash of a third-party engine on one page never ends the run
                skipped["engine_error"] += 1
                if len(errors) < LOCATED:
                    errors.append({"id": page_id, "error": failure[:300]})
                continue
            if got.path is not None:
                counts["engine_pages"] += 1
                counts["fallback"] += got.path == "fallback"
            text = got.text.strip()
            if not text:
                skipped["empty_extraction"] += 1
                continue
            meta: dict[str, Any] = {"extract": settings if got.path is None else {**settings, "path": got.path},
                                    "decode": {"source": decoded.source, "replaced": decoded.replaced}}
            if fix is not None:
                text, changed = fix(text)
                if changed:
                    counts["fixed_text"] += 1
                    meta["fixed_text"] = True
            counts["replaced_bytes"] += decoded.replaced
            sources[decoded.source] += 1
            if len(samples) < SAMPLES:
                samples.append({"id": page_id, "url": url, "raw_head": raw_head(decoded.text),
                                "text_head": text[:600]})
            page_id = ids.check(Document(page_id, "", row)).id  # unique among the shard's documents
            batch.append({"id": page_id, "text": text, "url": url, "title": got.title, "date": date,
                          "content_type": ctype, "charset": decoded.charset, "lang": None, "lang_score": None,
                          "meta": meta})
            if len(batch) >= LANG_BATCH:
                yield from _with_lang(batch)
                batch = []
                if on_page is not None:
                    on_page(LANG_BATCH, pages.reader.bytes_read)
        yield from _with_lang(batch)
        if on_page is not None and batch:
            on_page(len(batch), pages.reader.bytes_read)

    fs = fsspec.core.url_to_fs(task.output)[0]
    parquet = task.fmt == "parquet"
    records = (parquet_record(r) for r in documents()) if parquet else documents()
    schema = _schema(engine.cascade) if parquet else None
    with clock:  # the SIGALRM handler is installed for the shard, the timer armed per page
        counts["kept"] = write_doc_shard(fs, task.staged, task.fmt, records, schema)
    counts["skipped"] = {r: skipped[r] for r in REASONS if skipped[r]}
    bad = pages.reader.skipped
    counts["bad_records"] = len(bad)
    counts["bad_examples"] = [{"location": s.location, "reason": s.reason} for s in bad[:10]]
    counts["charset_sources"] = dict(sorted(sources.items()))
    counts.update(ids.meta())
    if errors:
        counts["engine_errors"] = errors
    if timeouts:
        counts["timeouts"] = timeouts
    if task.page_timeout > 0 and not clock.enforced:
        counts["page_timeout_enforced"] = False
    counts["samples"] = samples
    counts["cpu_seconds"] = round(time.process_time() - cpu, 3)  # this process's, for the per-core rates
    with atomic_open(fs, done_marker(task.staged), "wb") as fh:
        fh.write(json.dumps({"fingerprint": task.fingerprint, "counts": counts}).encode())
    return counts


def _extract_page(engine: Any, decode_html: Callable[[bytes, str | None], Any], body: bytes, ctype: str | None,
                  url: str | None) -> tuple[Any, Any, str]:
    """(decoded, extracted, failure) of one page: decoded is None when no codec takes the bytes,
    extracted None when the engine raised (failure then says what)."""
    try:
        decoded = decode_html(body, ctype)
    except (LookupError, UnicodeError, ValueError):
        return None, None, ""
    try:
        return decoded, engine.extract(decoded.text, url), ""
    except Exception as exc:
        return decoded, None, f"{type(exc).__name__}: {exc}"


def _with_lang(batch: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Language id on the extracted texts (the existing `ts_lang` model, CCNet's text preparation)."""
    if not batch:
        return
    langs, probs = _langid().predict([r["text"] for r in batch])
    for rec, lang, p in zip(batch, langs, probs.tolist()):
        rec["lang"] = lang
        rec["lang_score"] = None if p != p else round(float(p), 6)  # NaN: no features, no language
        yield rec


def _schema(cascade: bool = False) -> Any:
    """The Parquet schema of extracted documents (`meta.extract.settings` as a JSON string; with a
    cascade engine, `meta.extract.path` too)."""
    import pyarrow as pa

    extract = [("engine", pa.string()), ("version", pa.string()), ("settings", pa.string()), ("fix_text", pa.bool_())]
    if cascade:
        extract.append(("path", pa.string()))
    return pa.schema([
        ("id", pa.string()), ("text", pa.string()), ("url", pa.string()), ("title", pa.string()),
        ("date", pa.string()), ("content_type", pa.string()), ("charset", pa.string()), ("lang", pa.string()),
        ("lang_score", pa.float64()),
        ("meta", pa.struct([
            ("extract", pa.struct(extract)),
            ("decode", pa.struct([("source", pa.string()), ("replaced", pa.int64())])),
            ("fixed_text", pa.bool_()),
        ])),
    ])


def parquet_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A record as the Parquet schema holds it (settings as JSON text)."""
    meta = dict(rec["meta"])
    meta["extract"] = {**meta["extract"], "settings": json.dumps(meta["extract"]["settings"], sort_keys=True)}
    return {**rec, "meta": meta}
