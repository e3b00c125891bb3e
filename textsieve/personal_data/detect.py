"""Find personal data in text: e-mail addresses, IPv4/IPv6 addresses, phone numbers, payment card
numbers and IBANs, as character spans [start, end) into the Python str.

Why these rules (each precision-first, since a false hit is text lost at redaction):

- email: an RFC 5322 "dot-atom" local part and a domain of DNS labels ending in an alphabetic
  TLD; a "TLD" that is an image or asset extension (`logo@2x.png`) is not an address.
- ip: dotted quads and colon-hex groups, each validated by the standard library's `ipaddress`
  (no 256, no leading zeros) and public (`is_global`, as datatrove's default of masking public
  IPs only): private, loopback, link-local, documentation and reserved ranges and netmasks
  (`255.255.255.0`) say nothing about a person. A quad right after `v`/`version`/`build`, or
  glued to a letter, dot or dash (`v1.2.3.4`, `section-7.1.1.1`), is a version string; an IPv6
  candidate needs three non-empty groups and a digit (`::1`, `dead::beef`, C++ `a::b` are not
  addresses worth masking). Score: the IP version (4 or 6).
- phone: Google's libphonenumber rules through the `phonenumbers` port's `PhoneNumberMatcher`,
  the library made for the job (it knows every country's numbering plan). Numbers written in
  international form (`+44 20 7946 0958`) are found whatever the region; numbers in national
  form only for the `regions` given (default US, as presidio's first region), at the `leniency`
  given (default `valid`: the number must exist in the numbering plan, libphonenumber's
  default). A bare decimal such as `45.83011076` and a hit holding a date (`34 17.04.2020`)
  are dropped. A phone hit inside a card number,
  IBAN or IP address is dropped (those are checksum- or structure-validated). Score: the
  country calling code.
- credit_card: 13-19 digits, optionally grouped by spaces or dashes in one of the printed
  layouts (4-4-4-4[-3], Amex 4-6-5, Diners 4-6-4), with a known network's IIN prefix and length,
  and a valid Luhn digit (`pii.checks`). So ISBNs, order numbers and dates are not cards. A
  number continuing a grouped run to its left (the digits of an IBAN that failed its check)
  is neither a card nor a phone.
- iban: two capital letters, two check digits and the country's registered length (ISO 13616;
  spaces allowed between characters), MOD 97-10 == 1.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from textsieve.personal_data.checks import IBAN_LENGTHS, card_ok, iban_ok

PII_TYPES = ("email", "ip", "phone", "credit_card", "iban")
#: bumped whenever a rule changes what is found (part of the `sets/pii` set's fingerprint)
DETECTOR_VERSION = 1
LENIENCIES = ("possible", "valid", "strict_grouping", "exact_grouping")
Span = tuple[int, int, int]  # start, end, score

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
                    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24})(?![\w-]|\.[A-Za-z0-9])")
_ASSET_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "ico", "tif", "tiff", "css", "js",
                         "pdf", "avif", "heic", "mp4", "webm"})
_IPV4 = re.compile(r"(?<![\w.-])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_VERSION_BEFORE = re.compile(r"(?:version|ver\.?|release|build)\s*$", re.IGNORECASE)
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:\.\d{1,3}){0,3}(?![\w:])")
_CARD = re.compile(r"(?<![\w.,+-])\d(?:[ -]?\d){12,18}(?!\w|[.,-]\d)")
_CARD_SEP = re.compile(r"[ -]")
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}")
_DECIMAL = re.compile(r"\d+[.,]\d+")
_DIGIT = re.compile(r"\d")
#: the head of an IBAN-like run (`NL02 ZAWO `) right before a hit: the hit is its tail, not a card or phone
_IBAN_HEAD = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4})* ?$")
_DATE = re.compile(r"(?<!\d)\d{1,2}[./]\d{1,2}[./](?:19|20)\d{2}(?!\d)")


@dataclass(frozen=True)
class PiiSettings:
    """What the detectors look for; every field changes results (the set's fingerprint has it)."""

    types: tuple[str, ...] = PII_TYPES
    phone_regions: tuple[str, ...] = ("US",)
    phone_leniency: str = "valid"


def find_emails(text: str) -> list[Span]:
    if "@" not in text:
        return []
    return [(m.start(), m.end(), 1) for m in _EMAIL.finditer(text) if m.group(1).lower() not in _ASSET_TLDS]


def find_ips(text: str) -> list[Span]:
    out: list[Span] = []
    if "." in text:
        for m in _IPV4.finditer(text):
            try:
                if not ipaddress.IPv4Address(m.group()).is_global:
                    continue
            except ValueError:
                continue
            if not _VERSION_BEFORE.search(text, max(0, m.start() - 12), m.start()):
                out.append((m.start(), m.end(), 4))
    if "::" in text or text.count(":") >= 7:
        for m in _IPV6.finditer(text):
            s = m.group()
            if sum(1 for g in s.split(":") if g) < 3 or not any(c.isdigit() for c in s):
                continue
            try:
                if not ipaddress.IPv6Address(s).is_global:
                    continue
            except ValueError:
                continue
            out.append((m.start(), m.end(), 6))
    out.sort()
    return out


def _card_layout_ok(groups: list[str]) -> bool:
    """Printed card layouts: 4-4-4-4(-1..4) or Amex/Diners 4-6-5 / 4-6-4; no separator at all is fine."""
    sizes = [len(g) for g in groups]
    if len(sizes) == 1:
        return True
    if sizes in ([4, 6, 5], [4, 6, 4]):
        return True
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4


def find_cards(text: str) -> list[Span]:
    out: list[Span] = []
    for m in _CARD.finditer(text):
        raw = m.group()
        if _continues_left(text, m.start()):
            continue
        seps = set(_CARD_SEP.findall(raw))
        if len(seps) > 1:
            continue
        groups = _CARD_SEP.split(raw) if seps else [raw]
        # the longest run of whole groups that is a card: a candidate may have swallowed a following
        # number (`4111 1111 1111 1111 12/25`), but one printed in a card's layout is judged whole
        for k in range(len(groups), 0, -1):
            digits = "".join(groups[:k])
            if len(digits) < 13:
                break
            if _card_layout_ok(groups[:k]):
                if card_ok(digits):
                    out.append((m.start(), m.start() + sum(len(g) for g in groups[:k]) + k - 1, 1))
                    break
                if len(digits) <= 19:
                    break
    return out


def _continues_left(text: str, start: int) -> bool:
    """Whether the number at `start` is the tail of a longer grouped run (an IBAN's digits)."""
    return _IBAN_HEAD.search(text, max(0, start - 40), start) is not None


def find_ibans(text: str) -> list[Span]:
    out: list[Span] = []
    n = len(text)
    for m in _IBAN_START.finditer(text):
        want = IBAN_LENGTHS.get(m.group()[:2])
        if want is None:
            continue
        chars = [m.group()]
        got, i, end = 4, m.end(), m.end()
        while got < want and i < n:
            c = text[i]
            if c == " " and i + 1 < n and text[i + 1] != " " and end == i:
                i += 1
                continue
            if not (c.isascii() and (c.isdigit() or c.isupper())):
                break
            chars.append(c)
            got += 1
            i += 1
            end = i
        if got != want or (end < n and text[end].isascii() and text[end].isalnum()):
            continue
        if iban_ok("".join(chars)):
            out.append((m.start(), end, 1))
    return out


def find_phones(text: str, regions: tuple[str, ...] = ("US",), leniency: str = "valid") -> list[Span]:
    """Phone numbers by `phonenumbers.PhoneNumberMatcher`, one pass per region, union of hits
    (an overlapping later hit is dropped)."""
    import phonenumbers

    lenient = getattr(phonenumbers.Leniency, leniency.upper())
    hits: list[Span] = []
    for region in regions:
        for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=lenient):
            if _DECIMAL.fullmatch(m.raw_string) or _DATE.search(m.raw_string) or _continues_left(text, m.start):
                continue
            hits.append((m.start, m.end, int(m.number.country_code or 0)))
    if len(regions) > 1:
        hits = _drop_overlaps(sorted(hits))
    return hits


def _drop_overlaps(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for s in spans:
        if not out or s[0] >= out[-1][1]:
            out.append(s)
    return out


def _outside(spans: list[Span], taken: list[Span]) -> list[Span]:
    """`spans` minus those overlapping any of `taken`."""
    if not taken:
        return spans
    return [s for s in spans if not any(t[0] < s[1] and s[0] < t[1] for t in taken)]


def _mask(text: str, spans: list[Span]) -> str:
    """`text` with `spans` (sorted) overwritten by `~`, same length so offsets hold: the validated
    card, IBAN and IP hits, which libphonenumber then does not try (it is the slow detector)."""
    if not spans:
        return text
    parts, pos = [], 0
    for s, e, _ in spans:
        s = max(s, pos)
        if e > s:
            parts += [text[pos:s], "~" * (e - s)]
            pos = e
    parts.append(text[pos:])
    return "".join(parts)


def detect(text: str, settings: PiiSettings) -> dict[str, list[Span]]:
    """Every selected type's spans in `text`, sorted by start."""
    out: dict[str, list[Span]] = {}
    types = settings.types
    if "email" in types:
        out["email"] = find_emails(text)
    if "ip" in types:
        out["ip"] = find_ips(text)
    if "credit_card" in types:
        out["credit_card"] = find_cards(text)
    if "iban" in types:
        out["iban"] = find_ibans(text)
    if "phone" in types:
        taken = sorted(out.get("credit_card", []) + out.get("iban", []) + out.get("ip", []))
        masked = _mask(text, taken)
        phones = find_phones(masked, settings.phone_regions, settings.phone_leniency) if _DIGIT.search(masked) else []
        out["phone"] = _outside(phones, taken)
    return {t: out[t] for t in PII_TYPES if t in out}


__all__ = ["DETECTOR_VERSION", "LENIENCIES", "PII_TYPES", "PiiSettings", "Span", "detect", "find_cards",
           "find_emails", "find_ibans", "find_ips", "find_phones"]
