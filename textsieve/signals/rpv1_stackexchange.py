"""RedPajama-1T's StackExchange decision as a signal (group `rpv1_stackexchange`), for the
`rpv1-stackexchange` recipe.

The reference has no per-record filter: `filter.py` writes a record for every question that has
a title, answered or not, whatever its score or language (the language is only labelled). Its
one choice beyond that is which sites to read, the 28 largest, which is a choice of input files,
not of records. `textsieve source stackexchange` makes the same per-post decisions in both modes
(title-less posts and answers without their question give no record), so the recipe's one rule
keeps every record of a default-mode run: exactly the reference's set. The signal says whether a
document has the reference's question-and-answers form (`Q: ...`, then `\\nA: ...` per answer),
which every record of the family has; documents from elsewhere mixed into the same folder get 0.
"""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import DocScores, signal
from textsieve.text.views import BatchViews

G = "rpv1_stackexchange"


@signal("rpv1_stackexchange_qa", level="doc", group=G, dtype="int",
        definition="1 if the text is a StackExchange question record ('Q: ' first, as RedPajama-1T writes "
                   "one), else 0; the reference keeps every such record.")
def qa_record(v: BatchViews) -> DocScores:
    return DocScores(np.fromiter((t.startswith("Q: ") for t in v.texts), dtype=np.int64, count=v.n_docs))
