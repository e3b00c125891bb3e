"""Reading a StackExchange site's `Posts.xml` as rows: from the file, or streamed out of the site's `.7z`.

The Internet Archive dump has one `<site>.7z` per site (`beer.stackexchange.com.7z`;
Stack Overflow's posts alone in `stackoverflow.com-Posts.7z`) holding `Posts.xml`, which
RedPajama-1T's scripts read renamed to `<site>.xml`. A site's name is what its URLs are made
of, so it comes from the file name (or, for a bare `Posts.xml`, its folder's name).

Two ways to read rows, one per mode:

* `reference_rows`: `filter.py`'s line-based reading, exactly: the file in text mode (UTF-8,
  universal newlines, so CRLF files read the same), every line but the first two and the last
  parsed on its own as an XML element (`xml.etree`, whose attribute handling is the
  reference's). A file laid out otherwise fails where the reference fails.
* `scan_rows`: the default mode's, independent of the line layout: rows found as the markup
  between one `<` and the next (a `<` cannot occur unescaped in an attribute value), each
  parsed on its own with the same parser, so a row spanning lines, several rows on a line, a
  `<!DOCTYPE>` or comment line all read, and one damaged row is one located error instead of
  the end of the file.

A `.7z` member is decompressed by `py7zr` in a thread feeding a small queue, so a site is
streamed, never extracted to disk nor held whole in memory (py7zr hands over blocks of up to
128 MB; at most two wait).
"""

from __future__ import annotations

import codecs
import io
import queue
import re
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, NamedTuple

import fsspec
import py7zr
from py7zr.io import Py7zIO, WriterFactory

from textsieve.dumps.family import SourceError

POSTS = "posts.xml"  # the member of a site archive that holds the posts (compared lower-cased)
ARCHIVE_SUFFIX = ".7z"
_CHUNK = 1 << 20
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8
_ROW_START = re.compile(r"row[\s/>]")


class Row(NamedTuple):
    """One `<row>` of Posts.xml: the line it starts on (1-based) and its attributes, decoded."""

    line: int
    attrib: dict[str, str]


class BadRow(NamedTuple):
    """A row that does not parse (or is not UTF-8): where, and the parser's message."""

    line: int
    error: str


def site_of(path: str) -> str:
    """The site a Posts dump belongs to, from its name: `beer.stackexchange.com.xml`,
    `beer.stackexchange.com.7z`, `stackoverflow.com-Posts.7z`, `beer.stackexchange.com/Posts.xml`,
    and the reference's `stackoverflow_part3.xml` (a piece of Stack Overflow)."""
    parts = path.rstrip("/").replace("\\", "/").split("/")
    name = parts[-1]
    stem = name[: -len(ARCHIVE_SUFFIX)] if name.lower().endswith(ARCHIVE_SUFFIX) else name.removesuffix(".xml")
    if stem.lower().endswith("-posts"):
        stem = stem[: -len("-posts")]
    if stem.lower() == "posts":  # a bare Posts.xml: the folder it was extracted into names the site
        stem = parts[-2] if len(parts) > 1 else ""
    if "stackoverflow_part" in stem:  # the reference's split of Stack Overflow: post_processing.py's rule
        return "stackoverflow.com"
    if "." not in stem:
        raise SourceError(f"{path}: cannot tell the site from the name; name the file after the site "
                          "(beer.stackexchange.com.xml, beer.stackexchange.com.7z) or put Posts.xml in a folder "
                          "so named")
    return stem


def archive_member(path: str) -> str:
    """The name of the Posts.xml member of a site archive (SourceError if it has none or several)."""
    try:
        with fsspec.open(path, "rb") as fh, py7zr.SevenZipFile(fh) as archive:
            names = [n for n in archive.getnames() if n.replace("\\", "/").rsplit("/", 1)[-1].lower() == POSTS]
    except (py7zr.Bad7zFile, EOFError, OSError, ValueError) as exc:
        raise SourceError(f"{path}: not a readable 7z archive ({exc})") from None
    if len(names) != 1:
        raise SourceError(f"{path}: {'no' if not names else 'more than one'} Posts.xml in the archive")
    return names[0]


@contextmanager
def open_posts(path: str, member: str | None = None) -> Iterator[IO[bytes]]:
    """The bytes of Posts.xml: the file itself, or `member` streamed out of the `.7z` at `path`."""
    if member is None:
        with fsspec.open(path, "rb") as fh:
            yield fh
        return
    with fsspec.open(path, "rb") as fh:
        stream = _ArchiveStream(fh, member, path)
        try:
            yield io.BufferedReader(stream, _CHUNK)
        finally:
            stream.close()


def count_lines(binary: IO[bytes]) -> int:
    """The number of lines Python's text mode reads (`\\n`, `\\r\\n` and a lone `\\r` end one):
    `count.py`'s `sum(1 for line in f)`."""
    n = 0
    last = b""
    crlf_split = 0
    while chunk := binary.read(_CHUNK):
        if last == b"\r" and chunk[:1] == b"\n":
            crlf_split += 1
        n += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
        last = chunk[-1:]
    n -= crlf_split
    return n + (1 if last and last not in b"\r\n" else 0)


def reference_rows(binary: IO[bytes]) -> Iterator[Row | BadRow]:
    """`filter.py`'s reading: lines 3 to the one before last, each parsed as an element."""
    text = io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape", newline=None)
    previous: tuple[int, str] | None = None
    for i, line in enumerate(text):
        if previous is not None:
            yield _parse(*previous)
            previous = None
        if i > 1:
            previous = (i + 1, line)


def scan_rows(binary: IO[bytes]) -> Iterator[Row | BadRow]:
    """Every `<row .../>` of the file, wherever lines break (the default mode's reading)."""
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    line = 1  # the line `rest` starts on
    rest = ""
    in_comment = False
    first = True
    while True:
        chunk = binary.read(_CHUNK)
        text = utf8.decode(chunk, final=not chunk)
        if first:
            text, first = text.removeprefix("\ufeff"), False
        scan = len(rest)  # `rest` is one unfinished piece: look for its end in the new text only
        rest += text
        start = 0 if rest.startswith("<") else rest.find("<")
        if start < 0:
            line += rest.count("\n")
            rest = ""
        else:
            line += rest.count("\n", 0, start)
            while True:
                end = rest.find("<", max(start + 1, scan))
                if end < 0 and chunk:
                    break
                piece = rest[start:] if end < 0 else rest[start:end]
                if in_comment or piece.startswith("<!--"):
                    in_comment = "-->" not in piece
                elif _ROW_START.match(piece, 1):
                    yield _parse(line, piece)
                elif not piece.startswith(("<?", "<!", "<posts", "</posts")):
                    yield BadRow(line, f"not a <row> element: {piece[:40].strip()!r}")
                line += piece.count("\n")
                if end < 0:
                    break
                start = end
            rest = rest[start:] if chunk else ""
        if not chunk:
            return


def _parse(line: int, markup: str) -> Row | BadRow:
    if _NOT_UTF8.search(markup):
        return BadRow(line, "not UTF-8")
    try:
        return Row(line, ET.fromstring(markup).attrib)
    except ET.ParseError as exc:
        return BadRow(line, f"not a well-formed row ({exc})")


class _Stop(Exception):
    """Raised inside py7zr's thread when the reader went away."""


class _QueueWriter(Py7zIO):
    """Where py7zr writes the member's blocks: a bounded queue the reader takes them from."""

    def __init__(self, out: queue.Queue, stop: threading.Event):
        self.out, self.stop = out, stop

    def write(self, s: bytes | bytearray) -> int:
        _put(self.out, bytes(s), self.stop)
        return len(s)

    def read(self, size: int | None = None) -> bytes:
        return b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0

    def flush(self) -> None:
        pass

    def size(self) -> int:
        return 0


class _Factory(WriterFactory):
    def __init__(self, writer: _QueueWriter):
        self.writer = writer

    def create(self, filename: str) -> Py7zIO:
        return self.writer


def _put(out: queue.Queue, item: Any, stop: threading.Event) -> None:
    while True:
        if stop.is_set():
            raise _Stop
        try:
            out.put(item, timeout=0.1)
            return
        except queue.Full:
            continue


class _ArchiveStream(io.RawIOBase):
    """The bytes of one archive member, decompressed by py7zr in a thread as they are read."""

    def __init__(self, fh: IO[bytes], member: str, where: str):
        self._where = where
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._buf = memoryview(b"")
        self._done = False
        self._thread = threading.Thread(target=self._extract, args=(fh, member), daemon=True)
        self._thread.start()

    def _extract(self, fh: IO[bytes], member: str) -> None:
        try:
            with py7zr.SevenZipFile(fh) as archive:
                archive.extract(targets=[member], factory=_Factory(_QueueWriter(self._queue, self._stop)))
            _put(self._queue, None, self._stop)
        except _Stop:
            return
        except Exception as exc:  # handed to the reader, which raises it where the data ends
            try:
                _put(self._queue, exc, self._stop)
            except _Stop:
                return

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            if self._done:
                return 0
            item = self._queue.get()
            if item is None:
                self._done = True
                return 0
            if isinstance(item, Exception):
                self._done = True
                raise SourceError(f"{self._where}: damaged 7z archive ({type(item).__name__}: {item})") from None
            self._buf = memoryview(item)
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        super().close()
