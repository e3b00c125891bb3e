"""`textsieve dedup exact|fuzzy|show`: exact and MinHash-LSH deduplication, and cluster reports."""

from __future__ import annotations

import argparse
import sys


def run_exact(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup_exact import ExactConfig, run_exact as run

    res = run(ExactConfig(inputs=args.inputs, output=args.output, normalize=args.normalize, bloom_fp=args.bloom_fp,
                          bloom_capacity=args.bloom_capacity, memory=args.memory, text_field=args.text_field,
                          id_field=args.id_field, tmp_dir=args.tmp_dir, workers=args.workers,
                          executor=args.executor, address=args.address, progress=not args.quiet))
    if not args.quiet:
        print(f"dedup exact: {res.removed:,} of {res.documents:,} documents are duplicates "
              f"({res.seconds:.1f} s) -> {res.output}", file=sys.stderr)
    return 0


def run_fuzzy(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup import FuzzyConfig, run_fuzzy as run

    res = run(FuzzyConfig(directory=args.dir, thresholds=args.threshold or [0.8], bands=args.bands,
                          verify=args.verify, keep=args.keep, memory=args.memory, workers=args.workers or 1,
                          tmp_dir=args.tmp_dir, overwrite=args.overwrite, progress=not args.quiet,
                          executor=args.executor, address=args.address))
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


def run_show(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup_show import show_cluster

    print(show_cluster(args.dir, args.cluster, args.threshold, bands=args.bands, lines=args.lines))
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser("dedup", parents=[common], help="exact and fuzzy (MinHash-LSH) deduplication")
    dsub = d.add_subparsers(dest="mode", required=True, metavar="MODE")
    mem = dict(default="2GB", metavar="SIZE", help="working-memory budget, e.g. 2GB, 512MB (default 2GB); "
               "larger key tables are sorted on disk in several passes")

    e = dsub.add_parser("exact", parents=[common], help="flag documents with identical (normalized) text",
                        description="Documents with identical text form duplicate groups; the first in corpus order "
                                    "(shards sorted by path, then record order) is kept. Writes dup_exact_group, "
                                    "dup_exact_size, dup_exact_keep to OUT/_dedup_exact/.")
    e.add_argument("inputs", nargs="+", metavar="ANNOTATED_OR_INPUT",
                   help="one annotate output folder (texts are re-read from its sources), or input files/folders")
    e.add_argument("-o", "--output", metavar="DIR", help="where _dedup_exact/ goes (required for raw inputs; "
                   "default: the annotate folder)")
    e.add_argument("--normalize", choices=("none", "rpv2"), default="none",
                   help="none: hash the raw text; rpv2: hash RPv2-normalized text (punctuation removed, "
                        "lowercase, whitespace collapsed, NFD)")
    e.add_argument("--bloom-fp", type=float, default=None, metavar="RATE",
                   help="stream through a Bloom filter with this false-positive rate instead of exact grouping")
    e.add_argument("--bloom-capacity", type=int, default=None, metavar="N",
                   help="documents the Bloom filter is sized for (default: the corpus size, when known)")
    e.add_argument("--memory", **mem)
    e.add_argument("--text-field", default="text", metavar="FIELD")
    e.add_argument("--id-field", default="id", metavar="FIELD")
    e.add_argument("--tmp-dir", default=None, metavar="DIR", help="local folder for partition files")
    e.add_argument("--workers", type=int, default=None,
                   help="processes reading and hashing shards, one shard each (default: all cores)")
    e.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="hash shards on the local pool or as Ray tasks; grouping is local (same output)")
    e.add_argument("--address", default=None, metavar="ADDR",
                   help="with --executor ray: Ray cluster to join; default: start a local Ray")
    e.set_defaults(func=run_exact)

    f = dsub.add_parser("fuzzy", parents=[common], help="MinHash-LSH clusters from annotate's bands",
                        description="Clusters near-duplicates over the stored MinHash bands (RPv2 §8): equal bands "
                                    "in the same band index are candidate pairs; connected components; cluster id = "
                                    "smallest id_int. Writes dup_fuzzy_t<P>_cluster/_size/_keep per threshold to "
                                    "DIR/_dedup_fuzzy/ and summary.json.")
    f.add_argument("dir", metavar="DIR", help="an annotate output folder with MinHash bands")
    f.add_argument("--threshold", type=float, action="append", metavar="T",
                   help="similarity threshold with stored bands (1.0, 0.9, 0.8, 0.7); repeat for several (default 0.8)")
    f.add_argument("--bands", choices=("rpv2", "fast"), default="rpv2",
                   help="band columns: rpv2 = signature_sim<T> (RPv2-compatible), fast = ts_fastsig_sim<T>")
    f.add_argument("--verify", choices=("exact", "estimated", "none"), default="exact",
                   help="check LSH candidate pairs before clustering: exact (default) = true Jaccard of the "
                        "13-word shingle sets of the re-read texts >= T; estimated = MinHash Jaccard >= T "
                        "(no text re-read); none = every candidate pair is an edge, exactly RPv2's clusters")
    f.add_argument("--keep", choices=("first", "longest", "none"), default="first",
                   help="per cluster keep: first = the member with the smallest id_int (RPv2's representative), "
                        "longest = most characters, none = drop whole clusters")
    f.add_argument("--memory", **mem)
    f.add_argument("--workers", type=int, default=1, help="processes for re-reading texts (default 1)")
    f.add_argument("--tmp-dir", default=None, metavar="DIR", help="local folder for partition files")
    f.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local, or Ray: banding + grouping as a distributed shuffle (same output)")
    f.add_argument("--address", default=None, metavar="ADDR",
                   help="with --executor ray: Ray cluster to join; default: start a local Ray")
    f.add_argument("--overwrite", action="store_true", help="recompute even if the output is up to date")
    f.set_defaults(func=run_fuzzy)

    s = dsub.add_parser("show", parents=[common], help="print a fuzzy cluster's members and their similarity")
    s.add_argument("dir", metavar="DIR", help="an annotate output folder after `dedup fuzzy`")
    s.add_argument("--cluster", type=int, required=True, metavar="ID", help="cluster id (a dup_fuzzy_t*_cluster value)")
    s.add_argument("--threshold", type=float, default=None, metavar="T",
                   help="which threshold's clusters (default: the lowest one containing ID)")
    s.add_argument("--bands", choices=("rpv2", "fast"), default="rpv2")
    s.add_argument("--lines", type=int, default=2, help="first lines shown per member")
    s.set_defaults(func=run_show)
