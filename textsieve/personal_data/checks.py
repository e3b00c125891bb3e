"""Checksums and registries that tell a real card number or IBAN from a run of digits.

Why apart from the matchers (`pii.detect`): these are fixed, published rules (Luhn, ISO 13616
mod-97, the IBAN registry's lengths, card networks' IIN ranges) that the benchmark's planted
values are generated from too (`valid_*` helpers), so a generator and a detector cannot drift.
"""

from __future__ import annotations

#: IBAN length per country (SWIFT's ISO 13616 IBAN registry)
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

#: card networks: (IIN prefix range low, high, digits of the prefix, allowed lengths)
_CARD_RANGES: tuple[tuple[int, int, int, tuple[int, ...]], ...] = (
    (4, 4, 1, (13, 16, 19)),  # Visa
    (51, 55, 2, (16,)),  # Mastercard
    (2221, 2720, 4, (16,)),  # Mastercard 2-series
    (34, 34, 2, (15,)), (37, 37, 2, (15,)),  # American Express
    (300, 305, 3, (14, 16, 17, 18, 19)), (3095, 3095, 4, (14, 16, 17, 18, 19)),  # Diners Club
    (36, 36, 2, (14, 16, 17, 18, 19)), (38, 39, 2, (14, 16, 17, 18, 19)),
    (6011, 6011, 4, (16, 17, 18, 19)), (644, 649, 3, (16, 17, 18, 19)), (65, 65, 2, (16, 17, 18, 19)),  # Discover
    (3528, 3589, 4, (16, 17, 18, 19)),  # JCB
    (62, 62, 2, (16, 17, 18, 19)),  # UnionPay
    (2200, 2204, 4, (16, 17, 18, 19)),  # Mir
    (5018, 5018, 4, (13, 15, 16, 19)), (5020, 5020, 4, (13, 15, 16, 19)), (5038, 5038, 4, (13, 15, 16, 19)),
    (5893, 5893, 4, (13, 15, 16, 19)), (6304, 6304, 4, (13, 15, 16, 19)), (6759, 6759, 4, (13, 15, 16, 19)),
    (6761, 6763, 4, (13, 15, 16, 19)),  # Maestro
)


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check every payment card number carries."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def card_network_ok(digits: str) -> bool:
    """Whether the number starts with a known network's IIN and has one of its lengths."""
    n = len(digits)
    return any(n in lengths and low <= int(digits[:width]) <= high for low, high, width, lengths in _CARD_RANGES)


def card_ok(digits: str) -> bool:
    """A plausible payment card number: 13-19 digits, a known IIN and length, Luhn-valid."""
    return 13 <= len(digits) <= 19 and digits.isdigit() and card_network_ok(digits) and luhn_ok(digits)


def iban_mod97(iban: str) -> int:
    """ISO 13616 / ISO 7064 MOD 97-10 of a compact IBAN: 1 for a valid one."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97


def iban_ok(compact: str) -> bool:
    """A valid IBAN without spaces: known country, its registered length, check digits mod 97 == 1."""
    return (IBAN_LENGTHS.get(compact[:2]) == len(compact) and compact[2:4].isdigit() and compact.isalnum()
            and compact.isascii() and iban_mod97(compact) == 1)


def luhn_complete(prefix: str) -> str:
    """`prefix` plus the check digit that makes it Luhn-valid (for generating test cards)."""
    for d in "0123456789":
        if luhn_ok(prefix + d):
            return prefix + d
    raise AssertionError("unreachable: one check digit always fits")


def iban_complete(country: str, bban: str) -> str:
    """The IBAN of a BBAN with its check digits computed (for generating test IBANs)."""
    check = 98 - iban_mod97(f"{country}00{bban}")
    return f"{country}{check:02d}{bban}"


__all__ = ["IBAN_LENGTHS", "card_network_ok", "card_ok", "iban_complete", "iban_mod97", "iban_ok",
           "luhn_complete", "luhn_ok"]
