"""The mix plan: per source the tokens available, the tokens wanted, the epochs that takes, and
the seeded draw that meets it.

Why a module of its own: the plan is both what `mix --dry-run` prints and what a real run
executes, so the two cannot disagree, and infeasible mixes are found here, before anything is
written. Sampling per source: a source's available documents (a DSIR draw with replacement
contributes each document as many times as it was drawn) are taken in whole epochs, then one
partial epoch: a seeded permutation of the documents, cut just before or just after the
document where the running token sum reaches the remainder, whichever is closer (so a partial
epoch draws without replacement, and a source misses its target by at most half a document).
The seed of source i is (seed, i): adding a source does not change the draw of the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from textsieve.display import result_display

SHARE_TOLERANCE = 1e-6  # shares must sum to 1 within this


@dataclass
class SourcePlan:
    """One source's line of the plan."""

    name: str
    share: float
    max_epochs: float
    documents: int = 0  # available documents (distinct)
    units: int = 0  # available documents with DSIR multiplicity (one epoch)
    tokens: int = 0  # tokens of one epoch
    target_tokens: int = 0
    epochs_needed: float = 0.0
    problem: str | None = None
    # filled by `draw`
    drawn_documents: int = 0  # records written (with repeats)
    drawn_distinct: int = 0
    drawn_tokens: int = 0
    # how the counts were made (tokenizer | column:<name> | words) and why (`mix_counts`)
    token_count: str = "tokenizer"
    count_note: str = ""

    @property
    def epochs(self) -> float:
        """Epochs actually drawn (tokens drawn / tokens of one epoch)."""
        return self.drawn_tokens / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict:
        return {"name": self.name, "share": self.share, "max_epochs": self.max_epochs,
                "available_documents": self.documents, "available_units": self.units,
                "available_tokens": self.tokens, "target_tokens": self.target_tokens,
                "epochs_needed": round(self.epochs_needed, 6), "problem": self.problem,
                "documents": self.drawn_documents, "distinct_documents": self.drawn_distinct,
                "tokens": self.drawn_tokens, "epochs": round(self.epochs, 6), "token_count": self.token_count,
                "count_note": self.count_note}

    @classmethod
    def from_dict(cls, d: dict) -> SourcePlan:
        """The line `to_dict` wrote (a published mix's manifest), read back."""
        return cls(str(d.get("name", "")), float(d.get("share", 0.0)), float(d.get("max_epochs", 1.0)),
                   int(d.get("available_documents", 0)), int(d.get("available_units", 0)),
                   int(d.get("available_tokens", 0)), int(d.get("target_tokens", 0)),
                   float(d.get("epochs_needed", 0.0)), d.get("problem"), int(d.get("documents", 0)),
                   int(d.get("distinct_documents", 0)), int(d.get("tokens", 0)),
                   str(d.get("token_count", "tokenizer")), str(d.get("count_note", "")))


@result_display
@dataclass
class Plan:
    """The whole mix's plan; `problems` empty means feasible."""

    total_tokens: int
    sources: list[SourcePlan]
    problems: list[str] = field(default_factory=list)
    token_count: str = "tokenizer"  # how counts were made: tokenizer | column | words (estimate)

    @property
    def feasible(self) -> bool:
        return not self.problems

    def table(self) -> str:
        """The plan as a fixed-width table (what `--dry-run` prints)."""
        label = " (estimated: word/punctuation tokens)" if self.token_count == "words" else ""
        head = ["source", "share", "docs", "tokens", "target", "epochs", "max", "status"]
        rows = [[s.name, f"{s.share:.3f}", f"{s.documents:,}", f"{s.tokens:,}", f"{s.target_tokens:,}",
                 f"{s.epochs_needed:.2f}", f"{s.max_epochs:g}", s.problem or "ok"] for s in self.sources]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        fmt = "  ".join(f"{{:<{w}}}" if i in (0, 7) else f"{{:>{w}}}" for i, w in enumerate(widths))
        lines = [f"mix plan: {self.total_tokens:,} tokens{label}", fmt.format(*head)]
        lines += [fmt.format(*r) for r in rows]
        notes = [f"  {s.name}: {s.count_note}" for s in self.sources if s.count_note]
        if notes:  # where each source's counts come from: stored, or why its texts were encoded
            lines += ["token counts:", *notes]
        lines.append("feasible" if self.feasible else "INFEASIBLE: " + "; ".join(self.problems))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"total_tokens": self.total_tokens, "token_count": self.token_count, "feasible": self.feasible,
                "problems": self.problems, "sources": [s.to_dict() for s in self.sources]}

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        """The plan `to_dict` wrote (a published mix's manifest), read back: what a re-run of a
        finished mix returns without planning again."""
        return cls(int(d.get("total_tokens", 0)), [SourcePlan.from_dict(x) for x in d.get("sources") or []],
                   list(d.get("problems") or []), str(d.get("token_count", "tokenizer")))


def make_plan(names: list[str], shares: list[float], max_epochs: list[float], units_tokens: list[np.ndarray],
              distinct: list[int], total_tokens: int, token_count: str = "tokenizer") -> Plan:
    """The plan for sources with the given per-unit token counts (`units_tokens[i]`: one entry per
    document of source i, repeated by its DSIR multiplicity)."""
    plans: list[SourcePlan] = []
    problems: list[str] = []
    total_share = sum(shares)
    if abs(total_share - 1.0) > SHARE_TOLERANCE:
        problems.append(f"shares sum to {total_share:g}, not 1")
    for name, share, cap, toks, n in zip(names, shares, max_epochs, units_tokens, distinct):
        sp = SourcePlan(name, share, cap, documents=n, units=len(toks), tokens=int(toks.sum()))
        sp.target_tokens = int(round(share * total_tokens))
        if sp.tokens == 0:
            sp.problem = "empty source" if sp.units == 0 else "no tokens"
            if sp.target_tokens > 0:
                problems.append(f"source {name!r}: {sp.problem}, but its target is {sp.target_tokens:,} tokens")
        else:
            sp.epochs_needed = sp.target_tokens / sp.tokens
            if sp.epochs_needed > cap + 1e-12:
                sp.problem = f"needs {sp.epochs_needed:.2f} epochs > max_epochs {cap:g}"
                problems.append(f"source {name!r} {sp.problem}")
        plans.append(sp)
    return Plan(total_tokens, plans, problems, token_count)


def draw_counts(tokens: np.ndarray, unit_doc: np.ndarray, n_docs: int, target: int,
                seed: int, index: int, max_epochs: float | None = None) -> np.ndarray:
    """Times each document is written so that the tokens reach `target`: whole epochs over the
    units, then a seeded partial epoch without replacement (module doc). `unit_doc[u]`: the
    document of unit u; returns int64 counts per document. The closer cut is not taken when it
    would exceed `max_epochs`."""
    counts = np.zeros(n_docs, np.int64)
    total = int(tokens.sum())
    if total <= 0 or target <= 0:
        return counts
    full = target // total
    if full:
        counts += full * np.bincount(unit_doc, minlength=n_docs).astype(np.int64)
    rest = target - full * total
    if rest > 0:
        order = np.random.default_rng([seed, index]).permutation(len(tokens))
        cum = np.cumsum(tokens[order])
        first = min(int(np.searchsorted(cum, rest, side="left")), len(order) - 1)  # reaches the remainder
        below = int(cum[first - 1]) if first else 0
        take = first if first and rest - below < int(cum[first]) - rest else first + 1  # the closer cut
        if max_epochs is not None and take > first and full * total + int(cum[first]) > max_epochs * total:
            take = first
        counts += np.bincount(unit_doc[order[:take]], minlength=n_docs).astype(np.int64)
    return counts


def epochs_text(epochs: float) -> str:
    """'2 + 0.37' style for a fractional epoch count (full epochs + partial)."""
    full = math.floor(epochs + 1e-12)
    return f"{full} + {epochs - full:.2f}" if epochs - full > 1e-9 else f"{full}"


__all__ = ["Plan", "SourcePlan", "draw_counts", "epochs_text", "make_plan"]
