"""RedPajama-1T's Wikipedia decision as a signal (group `rpv1_wikipedia`), for the
`rpv1-wikipedia` recipe.

The reference (the Hugging Face `wikipedia` builder, rpv1-sources spec, 4) has no per-record
filter: its decisions are about pages (main namespace, not a redirect, has text, cleans to
something), and `textsieve source wikipedia` makes them while reading, in both modes. What is
left to state over the written documents is the last one, as a measurement: the characters of
the cleaned text, which the builder requires to be non-zero. The recipe's one rule on it keeps
every record of a default-mode run: exactly the reference's set of pages.
"""

from __future__ import annotations

import numpy as np

from textsieve.signals.registry import DocScores, signal
from textsieve.text.views import BatchViews

G = "rpv1_wikipedia"


@signal("rpv1_wikipedia_text_chars", level="doc", group=G, dtype="int",
        definition="Characters of the cleaned article text; RedPajama-1T's Wikipedia builder writes a page when "
                   "this is > 0.")
def text_chars(v: BatchViews) -> DocScores:
    return DocScores(v.lengths.astype(np.int64))
