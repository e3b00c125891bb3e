"""`textsieve signals`: list the registered signals."""

from __future__ import annotations

import argparse
import json

from textsieve.commands.tree import CommandTree


def run(args: argparse.Namespace) -> int:
    from textsieve.signals import REGISTRY
    from textsieve.signals.selection import groups

    if args.json:
        print(json.dumps([{"name": s.name, "level": s.level, "type": s.dtype, "group": s.group,
                           "needs": list(s.needs), "definition": s.definition} for s in REGISTRY.values()],
                         indent=2))
        return 0
    width = max(len(n) for n in REGISTRY)
    for s in REGISTRY.values():
        print(f"{s.name:<{width}}  {s.level:<4}  {s.dtype:<5}  {s.definition}")
    print(f"{'minhash':<{width}}  doc   bands  RPv2 MinHash: 13-word shingles, 128 permutations, seed 42, "
          "bands for Jaccard 1.0/0.9/0.8/0.7 (columns signature_sim{t})")
    print("\ngroups: " + ", ".join(f"{g} ({len(names)})" for g, names in groups().items()) + ", minhash, all")
    return 0


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    s = sub.add_parser("signals", parents=[common], help="list the signals with level, type and definition")
    s.add_argument("--json", action="store_true", help="machine-readable list")
    s.set_defaults(func=run)
