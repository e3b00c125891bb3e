"""`textsieve decontaminate` (being built: issue 14)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Placeholder until the stage lands: adds no command."""
