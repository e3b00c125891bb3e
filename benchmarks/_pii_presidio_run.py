"""Run presidio-analyzer's pattern recognizers over texts; executed by `benchmarks/pii.py` with the
interpreter of ``benchmarks/.venvs/presidio`` (``_presidio_env.py``), never imported by textsieve.

Input: a JSON file with a list of texts. Output: a JSON file with, per text, [[start, end, type], ...]
(types in textsieve's names) and the seconds spent analysing (imports and a warm-up excluded).
Each recognizer runs directly (`analyze(text, [entity], None)`): no spaCy NLP engine or model, so
context words do not raise scores; every result with a score > 0 counts as a hit.
"""

from __future__ import annotations

import json
import logging
import sys
import time

logging.getLogger("tldextract").setLevel(logging.CRITICAL)
logging.getLogger("presidio-analyzer").setLevel(logging.CRITICAL)

from presidio_analyzer.predefined_recognizers import (  # noqa: E402
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
)

RECOGNIZERS = ((EmailRecognizer(), "EMAIL_ADDRESS", "email"), (IpRecognizer(), "IP_ADDRESS", "ip"),
               (PhoneRecognizer(), "PHONE_NUMBER", "phone"), (CreditCardRecognizer(), "CREDIT_CARD", "credit_card"),
               (IbanRecognizer(), "IBAN_CODE", "iban"))


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as fh:
        texts = json.load(fh)
    for rec, entity, _ in RECOGNIZERS:  # warm-up: tldextract's suffix list, compiled patterns
        rec.analyze("warm up a@b.com 8.8.8.8 +1 202 555 0143", [entity], None)
    out = []
    start = time.perf_counter()
    for text in texts:
        hits = []
        for rec, entity, name in RECOGNIZERS:
            hits += [[r.start, r.end, name] for r in rec.analyze(text, [entity], None) if r.score > 0]
        out.append(hits)
    seconds = time.perf_counter() - start
    with open(dst, "w", encoding="utf-8") as fh:
        json.dump({"hits": out, "seconds": seconds}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
