"""RedPajama-1T's arXiv decision as signals (group `rpv1_arxiv`), for the `rpv1-arxiv` recipe.

The reference (`arxiv_cleaner.py`) has no quality filter: it writes every project whose cleaned
text is not empty. `textsieve source arxiv` makes the same per-project decisions in both modes
(projects that fail to load or clean, or clean to nothing, give no record), so the recipe's one
rule, a non-empty text, keeps every record of a default-mode run: exactly the reference's set.
The second signal is for users who want more than the reference: it is 0 for a record whose text
is only the newlines joining files that each cleaned to nothing (the reference keeps such a
record).
"""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import DocScores, signal
from textsieve.text.views import BatchViews

G = "rpv1_arxiv"


@signal("rpv1_arxiv_text_chars", level="doc", group=G, dtype="int",
        definition="Characters of the text; RedPajama-1T's arXiv script writes a project when this is > 0.")
def text_chars(v: BatchViews) -> DocScores:
    return DocScores(v.lengths.astype(np.int64))


@signal("rpv1_arxiv_visible_chars", level="doc", group=G, dtype="int",
        definition="Characters of the text that are not whitespace (0: only the newlines joining empty files).")
def visible_chars(v: BatchViews) -> DocScores:
    return DocScores(np.fromiter((len("".join(t.split())) for t in v.texts), dtype=np.int64, count=v.n_docs))
