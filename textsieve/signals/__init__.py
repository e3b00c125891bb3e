"""Quality signals: importing this package registers every built-in signal.

The built-in modules are imported here, in this order, because registry order is column order
in attribute shards. Signals from outside the package: `register_signal(...)` or the
`textsieve.signals` entry-point group (docs/architecture.md, "Add a signal").
"""

from textsieve.signals import (
    rpv1_arxiv,
    rpv1_code,
    rpv1_stackexchange,
    rpv1_wikipedia,
    rpv2_content,
    rpv2_lines,
    rpv2_natural_language,
    rpv2_repetition,
)
from textsieve.signals.registry import (
    REGISTRY,
    DocScores,
    LineScores,
    Signal,
    UnknownSignalError,
    register_signal,
    signal,
    unregister_signal,
)

#: the modules of the built-in signals, in registration order
BUILTIN_MODULES = (rpv2_content, rpv2_lines, rpv2_natural_language, rpv2_repetition, rpv1_arxiv,
                   rpv1_stackexchange, rpv1_code, rpv1_wikipedia)

__all__ = ["BUILTIN_MODULES", "REGISTRY", "DocScores", "LineScores", "Signal", "UnknownSignalError",
           "register_signal", "signal", "unregister_signal"]
