"""Optional mojibake repair (``--fix-text``) with ftfy.

Off by default: ftfy's heuristics are good but not free (a few ms per page) and, rarely, change
text that was right; a user who turns it on gets the number of documents it changed counted.
"""

from __future__ import annotations

from typing import Any

#: ftfy options: repair mojibake and HTML entities left in the text, but keep the text's own
#: characters otherwise (no NFKC folding, no quote straightening, no line-break changes), so that
#: a text without mojibake comes back byte-identical.
FTFY_SETTINGS: dict[str, Any] = {
    "unescape_html": "auto",  # only when the text has no "<" (then it is not markup)
    "fix_encoding": True,
    "restore_byte_a0": True,
    "replace_lossy_sequences": True,
    "decode_inconsistent_utf8": True,
    "fix_c1_controls": True,
    "fix_latin_ligatures": False,
    "fix_character_width": False,
    "uncurl_quotes": False,
    "fix_line_breaks": False,
    "fix_surrogates": True,
    "remove_terminal_escapes": True,
    "remove_control_chars": False,
    "normalization": None,
}


def fix_text(text: str) -> tuple[str, bool]:
    """``(fixed text, whether ftfy changed it)``; e.g. ``"Â£30.4m"`` -> ``("£30.4m", True)``."""
    import ftfy

    fixed = ftfy.fix_text(text, ftfy.TextFixerConfig(**FTFY_SETTINGS))
    return fixed, fixed != text
