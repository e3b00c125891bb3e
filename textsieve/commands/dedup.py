"""`textsieve dedup exact|fuzzy|semantic|lines|show`: exact, MinHash-LSH, semantic (SemDeDup) and CCNet line
deduplication, and cluster reports."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, add_config_options, config_from_args, examples, writes


def run_exact(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup.exact import ExactConfig
    from textsieve.stages.dedup.exact import run_exact as run

    res = run(config_from_args(ExactConfig, args))
    if not args.quiet:
        print(f"dedup exact: {res.removed:,} of {res.documents:,} documents are duplicates "
              f"({res.seconds:.1f} s) -> {res.output}", file=sys.stderr)
    return 0


def run_fuzzy(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup.fuzzy import FuzzyConfig
    from textsieve.stages.dedup.fuzzy import run_fuzzy as run

    res = run(config_from_args(FuzzyConfig, args))
    if not args.quiet:
        if res.skipped:
            print(f"dedup fuzzy: already done with this configuration ({res.output}); --overwrite to redo",
                  file=sys.stderr)
        for t, s in res.summary["thresholds"].items():
            print(f"  threshold {t}: {s['n_clusters']:,} clusters, {s['n_docs_in_clusters']:,} docs in clusters, "
                  f"{s['n_removed']:,} to drop ({100 * s['duplicate_fraction']:.2f}%)", file=sys.stderr)
        if not res.skipped:
            print(f"dedup fuzzy: done in {res.seconds:.1f} s -> {res.output}", file=sys.stderr)
    return 0


def run_semantic(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup.semantic import SemanticConfig
    from textsieve.stages.dedup.semantic import run_semantic as run

    res = run(config_from_args(SemanticConfig, args))
    if not args.quiet:
        if res.skipped:
            print(f"dedup semantic: already done with this configuration ({res.output}); --overwrite to redo",
                  file=sys.stderr)
        for e, s in res.summary["eps"].items():
            print(f"  eps {e} (cosine >= {s['min_cosine']:g}): {s['n_clusters']:,} clusters, "
                  f"{s['n_docs_in_clusters']:,} docs in clusters, {s['n_removed']:,} to drop "
                  f"({100 * s['duplicate_fraction']:.2f}%)", file=sys.stderr)
        if not res.skipped:
            print(f"dedup semantic: done in {res.seconds:.1f} s -> {res.output}", file=sys.stderr)
    return 0


def run_lines(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup.lines import LinesConfig
    from textsieve.stages.dedup.lines import run_lines as run

    res = run(config_from_args(LinesConfig, args))
    if not args.quiet:
        if res.skipped:
            print(f"dedup lines: already done with these settings ({res.output}); --overwrite to redo",
                  file=sys.stderr)
        share = res.duplicate_lines / res.lines if res.lines else 0.0
        print(f"dedup lines: {res.duplicate_lines:,} of {res.lines:,} lines are duplicates ({100 * share:.1f}%) in "
              f"{res.documents:,} documents, {res.groups:,} group(s) ({res.seconds:.1f} s) -> {res.output}",
              file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    """`dedup show`: the cluster list without --cluster, else that cluster (library: `show`)."""
    from textsieve.stages.dedup.show import show

    print(show(args.dir, args.cluster, args.threshold, bands=args.bands, lines=args.lines, top=args.top,
               semantic=args.semantic, eps=args.eps))
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser("dedup", parents=[common], help="exact, fuzzy (MinHash-LSH), semantic and line deduplication")
    dsub = d.add_subparsers(dest="mode", required=True, metavar="MODE")
    from textsieve.stages.dedup.exact import ExactConfig
    from textsieve.stages.dedup.fuzzy import FuzzyConfig

    e = dsub.add_parser("exact", parents=[common], help="flag documents with identical (normalized) text",
                        formatter_class=ExamplesFormatter,
                        epilog=examples("textsieve dedup exact attrs/", "textsieve dedup exact attrs/ --normalize rpv2",
                                        "textsieve dedup exact data/*.jsonl.gz -o exact-out/"),
                        description="Documents with identical text form duplicate groups; the first in corpus order "
                                    "(shards sorted by path, then record order) is kept. Writes dup_exact_group, "
                                    "dup_exact_size, dup_exact_keep to OUT/_dedup_exact/; other settings get a set "
                                    "of their own (--normalize rpv2: _dedup_exact_rpv2/ with dup_exact_rpv2_*; Bloom "
                                    "mode adds _bloom), so earlier results are kept.")
    add_config_options(e, ExactConfig)
    e.set_defaults(func=run_exact)
    writes(e, "dedup exact", "output", "inputs")

    f = dsub.add_parser("fuzzy", parents=[common], help="MinHash-LSH clusters from annotate's bands",
                        formatter_class=ExamplesFormatter,
                        epilog=examples("textsieve dedup fuzzy attrs/ --threshold 0.8 --threshold 0.7 --memory 2GB",
                                        "textsieve dedup show attrs/ --top 5"),
                        description="Clusters near-duplicates over the stored MinHash bands (RPv2 §8): equal bands "
                                    "in the same band index are candidate pairs; connected components; cluster id = "
                                    "smallest id_int. Writes dup_fuzzy_t<P>_cluster/_size/_keep per threshold to "
                                    "DIR/_dedup_fuzzy/ and summary.json.")
    add_config_options(f, FuzzyConfig)
    f.set_defaults(func=run_fuzzy)

    from textsieve.stages.dedup.semantic import SemanticConfig

    sm = dsub.add_parser("semantic", parents=[common], help="SemDeDup: near-duplicates by embedding similarity",
                         formatter_class=ExamplesFormatter,
                         epilog=examples("textsieve dedup semantic attrs-emb/ --eps 0.05",
                                         "textsieve dedup semantic attrs-emb/ --eps 0.05 --eps 0.1 --keep longest "
                                         "--overwrite",
                                         "textsieve dedup show attrs-emb/ --semantic --top 5"),
                         description="SemDeDup on the CPU over the embeddings of `textsieve embed DIR`: seeded "
                                     "mini-batch k-means (fit on a sample, assignment streamed), then within each "
                                     "cluster the pairs with cosine similarity >= 1 - EPS are duplicates; connected "
                                     "components; cluster id = the corpus ordinal of the earliest member. Writes "
                                     "dup_semantic_e<D>_cluster/_size/_keep per eps (0.05 -> e05) to "
                                     "DIR/_dedup_semantic/ and summary.json.")
    add_config_options(sm, SemanticConfig)
    sm.set_defaults(func=run_semantic)

    from textsieve.stages.dedup.lines import LinesConfig

    ln = dsub.add_parser("lines", parents=[common], help="flag lines repeated across documents (CCNet line dedup)",
                         formatter_class=ExamplesFormatter,
                         epilog=examples("textsieve dedup lines attrs/",
                                         "textsieve dedup lines attrs/ --group-shards 2 --memory 512MB --overwrite",
                                         "textsieve dedup lines attrs/ --normalize punct --bloom-fp 0.001 --overwrite"),
                         description="CCNet's line dedup: lines are normalised (strip, lowercase, digits -> 0, CCNet's "
                                     "punctuation removed) and hashed; within each group of --group-shards consecutive "
                                     "shards, a line whose normalised text occurs in two or more documents is a "
                                     "duplicate (every occurrence, the first included), as is a repeat within one "
                                     "document; blank lines never are. Writes the line-level span column "
                                     "dup_lines_seen (1 = duplicate) and dup_lines_count/_chars/_frac to "
                                     "DIR/_dedup_lines/. Drop the lines in a recipe: "
                                     "'line: dup_lines_seen == 0'.")
    add_config_options(ln, LinesConfig)
    ln.set_defaults(func=run_lines)

    s = dsub.add_parser("show", parents=[common], help="list the largest fuzzy (or --semantic) clusters, or print "
                        "one cluster's members and their similarity",
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
                   help="clusters of `dedup semantic` (DIR/_dedup_semantic) instead of fuzzy ones")
    s.add_argument("--eps", type=float, default=None, metavar="E",
                   help="with --semantic: which eps's clusters (default: the loosest stored)")

    s.set_defaults(func=run_show)
