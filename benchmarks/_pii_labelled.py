"""A labelled PII set built from real web text: realistic values planted into real documents.

Why planted: web text has personal data (Usenet headers, shop imprints) but no labels, and
hand-labelling 15k documents is out of reach. So every positive is a value generated here to be
*valid* the way real ones are (phone numbers valid in libphonenumber's plans for 14 countries,
written in international, E.164 and US national form; card numbers with real IIN prefixes and a
Luhn digit in the printed layouts; IBANs with the registry's length and mod-97 check digits for
12 countries, compact and in groups of four; public IPv4 and IPv6, compressed and full; e-mail
addresses of several shapes), each inside a sentence of the kind it appears in. Next to them go
*decoys* that a sloppy matcher takes for PII: card numbers failing Luhn, IBANs failing mod 97,
dates, version strings, ISBNs, prices, coordinates. Hits on decoys are false positives; hits on
the untouched real text ("natural" hits) are counted apart (they may well be real PII; the
benchmark prints a sample to check by hand).

Deterministic for a seed. Used by `benchmarks/pii.py` and `tests/test_pii.py`.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass, field

from textsieve.personal_data.checks import IBAN_LENGTHS, iban_complete, iban_mod97, luhn_complete, luhn_ok

TYPES = ("email", "ip", "phone", "credit_card", "iban")
PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN", "BR", "JP", "AU", "ES", "IT", "NL", "CA", "MX", "ZA")
IBAN_COUNTRIES = ("DE", "GB", "FR", "ES", "IT", "NL", "BE", "CH", "AT", "PL", "SE", "NO")
_FIRST = ("anna", "john", "maria", "li", "oliver", "sofia", "ahmed", "lucas", "emma", "raj", "chloe", "mateo")
_LAST = ("smith", "mueller", "garcia", "chen", "rossi", "dubois", "kowalski", "tanaka", "silva", "nguyen")
_DOMAINS = ("gmail.com", "yahoo.co.uk", "web.de", "outlook.com", "mail.example-shop.de", "cs.university.edu",
            "orange.fr", "company.io", "research.lab.org", "posteo.net")

_TEMPLATES = {
    "email": ("Contact: {v}", "Write to {v} for details.", "E-mail: {v}", "send your CV to <{v}>",
              "questions? ({v})"),
    "ip": ("The server at {v} stopped responding.", "Client IP: {v}", "ping {v} and check the route",
           "logged in from {v} yesterday"),
    "phone": ("Call us at {v}.", "Tel: {v}", "Phone {v} (mon-fri)", "reach me on {v} after 6pm",
              "Fax: {v}"),
    "credit_card": ("Card number: {v}", "I paid with {v} and it was charged twice.", "cc {v} exp 04/27",
                    "Kreditkarte: {v}"),
    "iban": ("IBAN: {v}", "Please transfer to {v} (BIC ABCDDEFFXXX).", "Bankverbindung IBAN {v}",
             "account {v} reference 2231"),
}
_DECOYS = ("Published 2021-03-14, updated 14.03.2021.", "Upgrade to version 1.2.3.4 or v2.0.11.7 today.",
           "ISBN 978-3-16-148410-0 (ISBN-10: 0-306-40615-2).", "Order no. 4000 1234 5678 9011 is on its way.",
           "Price: 1,299.00 EUR, item 100200300400.", "Located at 48.858370, 2.294481 (Eiffel tower).",
           "Ref DE00 1234 5678 9012 3456 78 is invalid.", "Build 20230415.1 released at 10:30:45.",
           "Tracking 1Z 999 AA1 01 2345 6784.", "Serial 3782-8224-6310-006 is a demo.")


@dataclass
class Plant:
    start: int
    end: int
    type: str  # one of TYPES, or "decoy"
    value: str


@dataclass
class LabelledDoc:
    id: str
    text: str
    plants: list[Plant] = field(default_factory=list)


def _email(rng: random.Random) -> str:
    f, last = rng.choice(_FIRST), rng.choice(_LAST)
    local = rng.choice((f"{f}.{last}", f"{f[0]}{last}{rng.randint(1, 99)}", f"{f}_{last}", f"{f}+news",
                        f"{last}.{f}{rng.randint(1970, 2005)}"))
    return f"{local}@{rng.choice(_DOMAINS)}"


def _ip(rng: random.Random) -> str:
    if rng.random() < 0.6:
        while True:
            a = ipaddress.IPv4Address(rng.getrandbits(32))
            if a.is_global:
                return str(a)
    while True:  # global unicast (RIR allocations under 2a00::/12 and 2600::/12)
        a6 = ipaddress.IPv6Address((rng.choice((0x2A00, 0x2600)) + rng.randrange(16) << 112) | rng.getrandbits(112))
        if rng.random() < 0.5:  # with a run of zeros: the compressed form uses ::
            a6 = ipaddress.IPv6Address(int(a6) & ~((1 << 64) - 1) | rng.getrandbits(16))
        if a6.is_global:
            return a6.compressed if rng.random() < 0.7 else a6.exploded


def _phone(rng: random.Random) -> str:
    import phonenumbers
    from phonenumbers import PhoneNumberFormat, PhoneNumberType

    region = rng.choice(PHONE_REGIONS)
    kind = rng.choice((PhoneNumberType.FIXED_LINE, PhoneNumberType.MOBILE))
    ex = phonenumbers.example_number_for_type(region, kind) or phonenumbers.example_number(region)
    digits = str(ex.national_number)
    for _ in range(200):
        cand = digits[:-4] + "".join(rng.choice("0123456789") for _ in range(4))
        num = phonenumbers.parse(f"+{ex.country_code}{cand}")
        if phonenumbers.is_valid_number(num):
            break
    else:
        num = ex
    if region in ("US", "CA") and rng.random() < 0.5:
        return phonenumbers.format_number(num, PhoneNumberFormat.NATIONAL)
    fmt = PhoneNumberFormat.E164 if rng.random() < 0.2 else PhoneNumberFormat.INTERNATIONAL
    return phonenumbers.format_number(num, fmt)


_CARD_BRANDS = (("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16),
                ("65", 16), ("3530", 16), ("36", 14), ("62", 16), ("62", 19))


def _card(rng: random.Random) -> str:
    prefix, n = rng.choice(_CARD_BRANDS)
    body = prefix + "".join(rng.choice("0123456789") for _ in range(n - len(prefix) - 1))
    digits = luhn_complete(body)
    style = rng.choice(("space", "dash", "none"))
    if style == "none":
        return digits
    sep = " " if style == "space" else "-"
    if n == 15:
        return sep.join((digits[:4], digits[4:10], digits[10:]))
    if n == 14:
        return sep.join((digits[:4], digits[4:10], digits[10:]))
    return sep.join(digits[i:i + 4] for i in range(0, n, 4))


def _iban(rng: random.Random) -> str:
    cc = rng.choice(IBAN_COUNTRIES)
    n = IBAN_LENGTHS[cc] - 4
    letters = {"GB": 4, "NL": 4}.get(cc, 0)
    bban = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(letters))
    if cc == "IT":
        bban = rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    bban += "".join(rng.choice("0123456789") for _ in range(n - len(bban)))
    iban = iban_complete(cc, bban)
    return iban if rng.random() < 0.4 else " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))


_GENERATORS = {"email": _email, "ip": _ip, "phone": _phone, "credit_card": _card, "iban": _iban}


def _cut_point(text: str, rng: random.Random) -> int:
    """A line or sentence boundary of `text` (or its end)."""
    points = [i + 1 for i, c in enumerate(text) if c == "\n"] + [i + 2 for i in range(len(text) - 1)
                                                                 if text[i] == "." and text[i + 1] == " "]
    return rng.choice(points) if points else len(text)


def build(docs: list[dict], seed: int = 0, per_doc: int = 2, decoy_rate: float = 0.3) -> list[LabelledDoc]:
    """Each document with about `per_doc` planted values (types in turn, so every type gets its
    share) and, with probability `decoy_rate`, one decoy sentence."""
    rng = random.Random(seed)
    out = []
    k = 0
    for d in docs:
        text = d["text"]
        inserts: list[tuple[int, str, str, str]] = []  # (position, sentence, type, value)
        for _ in range(rng.randint(max(0, per_doc - 1), per_doc + 1)):
            t = TYPES[k % len(TYPES)]
            k += 1
            value = _GENERATORS[t](rng)
            inserts.append((_cut_point(text, rng), rng.choice(_TEMPLATES[t]), t, value))
        if rng.random() < decoy_rate:
            decoy = rng.choice((*_DECOYS, "card", "iban"))
            if decoy == "card":
                decoy = f"Test card {bad_luhn(_card(rng))} is declined."
            elif decoy == "iban":
                decoy = f"Wrong IBAN {bad_iban(_iban(rng))} was rejected."
            inserts.append((_cut_point(text, rng), "{v}", "decoy", decoy))
        pieces, plants, last, pos = [], [], 0, 0
        for at, sentence, t, value in sorted(inserts, key=lambda x: x[0]):
            pieces.append(text[last:at])
            pos += at - last
            head, tail = sentence.split("{v}")
            pre = "" if at == 0 or text[at - 1] in "\n " else " "
            chunk = f"{pre}{head}{value}{tail}\n"
            start = pos + len(pre) + len(head)
            plants.append(Plant(start, start + len(value), t, value))
            pieces.append(chunk)
            pos += len(chunk)
            last = at
        pieces.append(text[last:])
        new = "".join(pieces)
        assert all(new[p.start:p.end] == p.value for p in plants)
        out.append(LabelledDoc(str(d.get("id", len(out))), new, plants))
    return out


def bad_luhn(card: str) -> str:
    """`card` with its last digit changed so the Luhn check fails (a decoy)."""
    last = card[-1]
    for d in "0123456789":
        if d != last and not luhn_ok("".join(c for c in card[:-1] + d if c.isdigit())):
            return card[:-1] + d
    raise AssertionError("unreachable")


def bad_iban(iban: str) -> str:
    """`iban` with its check digits changed so mod 97 fails (a decoy)."""
    compact = iban.replace(" ", "")
    for k in range(2, 99):
        cand = f"{compact[:2]}{k:02d}{compact[4:]}"
        if iban_mod97(cand) != 1:
            return cand + iban[len(cand):] if " " not in iban else f"{cand[:4]}{iban[4:]}"
    raise AssertionError("unreachable")


__all__ = ["LabelledDoc", "Plant", "TYPES", "bad_iban", "bad_luhn", "build"]
