"""Replace spans of a text (personal data, benchmark passages) while cutting its lines.

Why one function for both: `select` may cut lines (a recipe's `line:` rules) and redact spans
in the same record, and both refer to offsets of the *original* text. Applying one after the
other would shift the second's offsets; here the kept line slices and the spans are walked
together in original coordinates, so a span is replaced wherever any part of it survives the
line cut (once, at its first kept character), and a span inside a cut line is simply gone.

Overlapping spans (a phone number inside a longer match, two span columns covering the same
passage) are merged first into one region, which takes the replacement and label of the span
that starts first (the longer one on a tie) and is counted once under that label. Adjacent
spans (one ends where the next starts) stay two regions.

Placeholders follow dolma's PII tagger (`|||EMAIL_ADDRESS|||`, `|||PHONE_NUMBER|||`,
`|||IP_ADDRESS|||`), with the same form for the types it lacks.
"""

from __future__ import annotations

from collections.abc import Sequence

#: the placeholder written for each PII type by `--redact pii`
PLACEHOLDERS = {"email": "|||EMAIL_ADDRESS|||", "ip": "|||IP_ADDRESS|||", "phone": "|||PHONE_NUMBER|||",
                "credit_card": "|||CREDIT_CARD|||", "iban": "|||IBAN|||"}

#: (start, end, replacement, label)
Region = tuple[int, int, str, str]


def merge_regions(regions: Sequence[Region], length: int) -> list[Region]:
    """Regions clipped to [0, length), empty ones dropped, overlapping ones merged (see module doc)."""
    clipped = sorted(((max(0, s), min(length, e), r, lab) for s, e, r, lab in regions if min(length, e) > max(0, s)),
                     key=lambda x: (x[0], -x[1]))
    out: list[Region] = []
    for s, e, r, lab in clipped:
        if out and s < out[-1][1]:
            ps, pe, pr, plab = out[-1]
            out[-1] = (ps, max(pe, e), pr, plab)
        else:
            out.append((s, e, r, lab))
    return out


def redact(text: str, regions: Sequence[Region], keep: Sequence[tuple[int, int]] | None = None,
           labels: Sequence[str] = ()) -> tuple[str, dict[str, int]]:
    """`text` with its kept slices `keep` (default: all of it) concatenated and every region in
    them replaced; and the number of regions replaced per label (every label of `labels`
    present, zeros included, so records have one shape)."""
    counts = dict.fromkeys(labels, 0)
    merged = merge_regions(regions, len(text))
    slices = [(0, len(text))] if keep is None else keep
    if not merged:
        return (text if keep is None else "".join(text[s:e] for s, e in slices)), counts
    out: list[str] = []
    j = 0
    done = -1  # index of the last region whose replacement was written
    for s, e in slices:
        pos = s
        while j < len(merged) and merged[j][1] <= pos:
            j += 1
        k = j
        while k < len(merged) and merged[k][0] < e:
            rs, re_, rep, lab = merged[k]
            a = max(rs, pos)
            out.append(text[pos:a])
            if k > done:
                out.append(rep)
                counts[lab] = counts.get(lab, 0) + 1
                done = k
            pos = min(re_, e)
            if re_ > e:
                break
            k += 1
        out.append(text[pos:e])
        j = k
    return "".join(out), counts


__all__ = ["PLACEHOLDERS", "Region", "merge_regions", "redact"]
