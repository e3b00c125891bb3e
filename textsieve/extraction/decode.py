"""Bytes of a web page -> text, choosing the charset the way a browser would.

Order (first that applies wins):

1. a byte-order mark (UTF-8, UTF-16 LE/BE) -- it beats every declaration, as in the WHATWG
   encoding standard;
2. the HTTP ``Content-Type`` header's ``charset=``;
3. ``<meta charset=...>`` or ``<meta http-equiv="content-type" content="...; charset=...">`` in the
   first 4 KB;
4. detection (resiliparse's ``detect_encoding``, a fast uchardet-style detector) -- only when
   nothing is declared and the bytes are not valid UTF-8;
5. UTF-8.

A declared charset Python does not know falls through to the next step. A declared charset that
fails strict decoding is not trusted blindly (the dev set has pages declaring UTF-8 that hold
Latin-1 bytes):

- declared UTF-8, the bytes mostly valid UTF-8 with a few stray single bytes (a template in UTF-8,
  one string pasted in Latin-1): decode UTF-8 and read each stray byte as cp1252 (counted in
  ``mixed``), so ``M\\xe4scot`` reads ``Mäscot`` and not ``M�scot``;
- otherwise, if detection names another charset that decodes the page without errors, use it
  (``source="detected"``);
- otherwise decode with the declared charset and replace the undecodable bytes.

Names are normalised to Python codec names, with the browser aliases of the WHATWG standard:
ISO-8859-1, US-ASCII and Latin-1 are decoded as cp1252 (what browsers do, and what such pages
mean: their curly quotes and euro signs are cp1252 bytes), GB2312/GBK as GB18030, and so on.
"""

from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass

#: How far into the body `<meta charset>` is looked for (the WHATWG prescan reads 1024 bytes;
#: real pages put a long <head> of scripts first, so 4 KB finds more declarations).
META_SCAN_BYTES = 4096

#: WHATWG encoding-standard labels whose browser meaning differs from Python's codec of the same
#: name (or that Python does not know), lowercased.
_BROWSER_ALIASES = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "iso_8859-1": "cp1252", "latin1": "cp1252",
    "latin-1": "cp1252", "l1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252", "ansi_x3.4-1968": "cp1252",
    "iso-8859-9": "cp1254", "iso8859-9": "cp1254", "latin5": "cp1254", "iso-8859-11": "cp874", "tis-620": "cp874",
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "gb_2312-80": "gb18030", "cp936": "gb18030",
    "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932", "ms_kanji": "cp932",
    "windows-31j": "cp932", "euc-kr": "cp949", "ks_c_5601-1987": "cp949", "big5": "big5hkscs",
    "x-user-defined": "cp1252",
}
#: A <meta> cannot truthfully declare UTF-16 (the prescan read it as ASCII), so browsers use
#: UTF-8 there; an HTTP header can, and is followed.
_META_ALIASES = {"utf-16": "utf-8", "utf-16le": "utf-8", "utf-16be": "utf-8", "unicode": "utf-8",
                 "utf_16": "utf-8", "utf-16-le": "utf-8", "utf-16-be": "utf-8", "utf_16_le": "utf-8",
                 "utf_16_be": "utf-8"}
#: Python codecs that are not character encodings of a page (transforms such as base64 and zlib
#: are refused by `_is_text_encoding`), or that decode markup instead of bytes: never used.
_NOT_PAGE_CODECS = frozenset({"unicode_escape", "raw_unicode_escape", "punycode", "idna", "utf_7",
                              "undefined", "mbcs", "oem", "palmos"})

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_META_RE = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:\-]+)", re.IGNORECASE)
_HEADER_RE = re.compile(r"charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:\-]+)", re.IGNORECASE)
#: A valid UTF-8 multi-byte sequence (2-4 bytes): evidence that a page really is UTF-8.
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


@dataclass(frozen=True)
class Decoded:
    """A decoded page.

    ``charset`` is the Python codec used, ``source`` where it came from ("bom", "http", "meta",
    "detected", "default"), ``replaced`` the number of undecodable bytes replaced with U+FFFD in
    the final decode, and ``mixed`` the number of stray bytes read as cp1252 inside a UTF-8 page.
    """

    text: str
    charset: str
    source: str
    replaced: int
    mixed: int = 0


def normalize_charset(label: str | None, meta: bool = False) -> str | None:
    """The Python codec name a browser would use for a charset label (`meta`: declared in a
    `<meta>`), or None when unknown or not a character encoding (base64, zlib, unicode_escape...)."""
    if not label:
        return None
    key = label.strip().strip("\"'").lower()
    if meta and key in _META_ALIASES:
        return _META_ALIASES[key]
    if key in _BROWSER_ALIASES:
        return _BROWSER_ALIASES[key]
    try:
        info = codecs.lookup(key)
    except LookupError:
        return None
    name = info.name
    if not getattr(info, "_is_text_encoding", True) or name.replace("-", "_") in _NOT_PAGE_CODECS:
        return None
    if meta and name in _META_ALIASES:
        return _META_ALIASES[name]
    # codecs.lookup resolves aliases to canonical names ("latin_1", "iso8859-1"): map those too
    return _BROWSER_ALIASES.get(name.replace("_", "-"), name)


def charset_from_content_type(content_type: str | None) -> str | None:
    """The raw ``charset=`` label of an HTTP Content-Type header value, if any."""
    if not content_type:
        return None
    m = _HEADER_RE.search(content_type)
    return m.group(1) if m else None


def charset_from_meta(body: bytes) -> str | None:
    """The raw charset label of the first `<meta>` declaring one in the first 4 KB, if any."""
    m = _META_RE.search(body, 0, META_SCAN_BYTES)
    return m.group(1).decode("ascii", "replace") if m else None


def detect_charset(body: bytes) -> str | None:
    """The detector's guess as a Python codec name (None when it has none)."""
    from resiliparse.parse.encoding import detect_encoding

    return normalize_charset(detect_encoding(body))


def decode_html(body: bytes, content_type: str | None = None) -> Decoded:
    """Decode a page's bytes; see the module docstring for the order of the rules."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            text, replaced = _decode_replacing(body[len(bom):], bom_codec)
            return Decoded(text, bom_codec, "bom", replaced)
    for source, label in (("http", charset_from_content_type(content_type)), ("meta", charset_from_meta(body))):
        codec = normalize_charset(label, meta=source == "meta")
        if codec is None:
            continue
        try:
            return Decoded(body.decode(codec), codec, source, 0)
        except UnicodeDecodeError:
            return _declared_but_failing(body, codec, source)
    try:
        return Decoded(body.decode("utf-8"), "utf-8", "default", 0)
    except UnicodeDecodeError:
        pass
    detected = detect_charset(body)
    if detected and detected != "utf-8":
        text, replaced = _decode_replacing(body, detected)
        return Decoded(text, detected, "detected", replaced)
    return _utf8_with_fallback(body, "default")


def _declared_but_failing(body: bytes, codec: str, source: str) -> Decoded:
    """The declared codec does not decode the bytes cleanly: mixed UTF-8, detection, or replace."""
    if codec == "utf-8" and _mostly_utf8(body):
        return _utf8_with_fallback(body, source)
    detected = detect_charset(body)
    if detected and detected != codec:
        try:
            return Decoded(body.decode(detected), detected, "detected", 0)
        except UnicodeDecodeError:
            pass
    if codec == "utf-8":
        return _utf8_with_fallback(body, source)
    text, replaced = _decode_replacing(body, codec)
    return Decoded(text, codec, source, replaced)


def _mostly_utf8(body: bytes) -> bool:
    """More valid UTF-8 multi-byte sequences than invalid bytes: UTF-8 with stray bytes."""
    _, invalid = _decode_replacing(body, "utf-8")
    return len(_UTF8_MULTIBYTE.findall(body)) > invalid


class _Counts(threading.local):
    """Per-thread tallies of the error handlers below (handlers are global, calls may overlap)."""

    replaced = 0
    mixed = 0


_COUNTS = _Counts()


def _count_and_replace(err: UnicodeError) -> tuple[str, int]:
    assert isinstance(err, UnicodeDecodeError)
    _COUNTS.replaced += err.end - err.start
    return "\ufffd", err.end


def _cp1252_or_replace(err: UnicodeError) -> tuple[str, int]:
    assert isinstance(err, UnicodeDecodeError)
    bad = err.object[err.start:err.end]
    if len(bad) == 1 and bad[0] >= 0xA0:
        _COUNTS.mixed += 1
        return bytes(bad).decode("cp1252"), err.end
    _COUNTS.replaced += len(bad)
    return "\ufffd", err.end


codecs.register_error("textsieve-count", _count_and_replace)
codecs.register_error("textsieve-cp1252", _cp1252_or_replace)


def _utf8_with_fallback(body: bytes, source: str) -> Decoded:
    """UTF-8, reading each lone invalid byte >= 0xA0 (a Latin-1 letter or sign) as cp1252;
    longer invalid spans (truncated sequences, binary junk) become U+FFFD and are counted."""
    _COUNTS.replaced = _COUNTS.mixed = 0
    text = body.decode("utf-8", errors="textsieve-cp1252")
    return Decoded(text, "utf-8", source, _COUNTS.replaced, _COUNTS.mixed)


def _decode_replacing(body: bytes, codec: str) -> tuple[str, int]:
    """Decode with U+FFFD for undecodable bytes, counting the bytes replaced."""
    _COUNTS.replaced = 0
    text = body.decode(codec, errors="textsieve-count")
    return text, _COUNTS.replaced
