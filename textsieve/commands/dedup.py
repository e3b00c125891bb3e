"""`textsieve dedup show`: the largest fuzzy or semantic clusters, or one cluster's members.

The `dedup` group's other commands (exact, fuzzy, lines, semantic) are stages: their commands
come from their descriptors (`commands.stage_commands`)."""

from __future__ import annotations

import argparse

from textsieve.commands.tree import CommandTree


def run_show(args: argparse.Namespace) -> int:
    """`dedup show`: the cluster list without --cluster, else that cluster (library: `show`)."""
    from textsieve.stages.dedup.show import show

    print(show(args.dir, args.cluster, args.threshold, bands=args.bands, lines=args.lines, top=args.top,
               semantic=args.semantic, eps=args.eps))
    return 0


def register(tree: CommandTree) -> None:
    tree.group("dedup", help="exact, fuzzy (MinHash-LSH), semantic and line deduplication", dest="mode",
               metavar="MODE")
    s = tree.parser("dedup show", help="list the largest fuzzy (or --semantic) clusters, or print one cluster's "
                    "members and their similarity",
                        description="Without --cluster: the --top largest clusters (size, id, first line) at "
                                    "--threshold (default: the lowest stored), or with --semantic at --eps (default: "
                                    "the loosest stored). With --cluster ID: its members.")
    s.add_argument("dir", metavar="DIR", help="an annotate output folder after `dedup fuzzy`")
    s.add_argument("--cluster", type=int, default=None, metavar="ID",
                   help="cluster id (a dup_fuzzy_t*_cluster value); default: list the largest clusters")
    s.add_argument("--threshold", type=float, default=None, metavar="T",
                   help="which threshold's clusters (default: the lowest one, or the lowest containing ID)")
    s.add_argument("--top", type=int, default=20, metavar="N", help="clusters listed without --cluster (default 20)")
    s.add_argument("--bands", choices=("rpv2", "fast"), default="rpv2")
    s.add_argument("--lines", type=int, default=2, help="first lines shown per member")
    s.add_argument("--semantic", action="store_true",
                   help="clusters of `dedup semantic` (DIR/sets/dedup_semantic) instead of fuzzy ones")
    s.add_argument("--eps", type=float, default=None, metavar="E",
                   help="with --semantic: which eps's clusters (default: the loosest stored)")

    s.set_defaults(func=run_show)
