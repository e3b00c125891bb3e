"""Quality signals: importing this package registers every built-in signal."""

from textsieve.signals import rpv2_content, rpv2_lines, rpv2_natural_language, rpv2_repetition  # noqa: F401
from textsieve.signals.registry import REGISTRY, DocScores, LineScores, Signal

__all__ = ["REGISTRY", "DocScores", "LineScores", "Signal"]
