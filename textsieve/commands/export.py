"""`textsieve export FORMAT`: write attributes in another tool's format."""

from __future__ import annotations

import argparse
import sys

from textsieve.commands.options import ExamplesFormatter, examples, writes
from textsieve.commands.tree import CommandTree


def run_rpv2(args: argparse.Namespace) -> int:
    from textsieve.export.rpv2 import export_rpv2

    n = export_rpv2(args.dir, args.output, overwrite=args.overwrite)
    print(f"wrote {n:,} documents to {args.output}", file=sys.stderr)
    return 0


def run_dolma(args: argparse.Namespace) -> int:
    from textsieve.interop.dolma import export_attributes

    res = export_attributes(args.dir, args.output, args.name, args.columns or None, args.documents)
    docs = f" and {len(res.document_files)} documents file(s)" if res.document_files else ""
    print(f"wrote {res.documents:,} documents' attributes ({len(res.keys)} keys, e.g. {res.keys[0]}) to "
          f"{args.output}/attributes/{args.name}/{docs}", file=sys.stderr)
    return 0


def run_rpv2_clusters(args: argparse.Namespace) -> int:
    from textsieve.stages.dedup.show import export_rpv2_clusters

    n = export_rpv2_clusters(args.dir, args.threshold, args.output)
    print(f"wrote {n:,} clustered documents to {args.output}", file=sys.stderr)
    verify = _fuzzy_verify_mode(args.dir)
    if verify not in (None, "none"):
        print(f"note: these clusters were verified (dedup fuzzy --verify {verify}); RPv2's run_lsh.py clusters "
              "are those of `dedup fuzzy --verify none`", file=sys.stderr)
    return 0


def _fuzzy_verify_mode(directory: str) -> str | None:


    from textsieve.io.attributes import set_summary
    from textsieve.stages.dedup.fuzzy import FUZZY_SET

    return (set_summary(directory, FUZZY_SET) or {}).get("verify")


def register(tree: CommandTree) -> None:
    sub, common = tree.top, tree.common
    e = sub.add_parser("export", parents=[common], help="export attributes in another tool's format")
    esub = e.add_subparsers(dest="format", required=True, metavar="FORMAT")
    erp = esub.add_parser("rpv2", parents=[common],
                          help="RedPajama-V2's released layout (quality_signals/, minhash/, duplicates/) in a "
                               "folder, or with -o FILE.jsonl[.gz] one JSONL of id, quality_signals, minhash (hex)")
    erp.add_argument("dir", metavar="DIR", help="an annotate (or import rpv2) output folder")
    erp.add_argument("-o", "--output", required=True, metavar="FOLDER|FILE.jsonl.gz")
    erp.add_argument("--overwrite", action="store_true",
                     help="replace the files of a folder that holds files no `export rpv2` published")
    erp.set_defaults(func=run_rpv2)
    writes(erp, "export rpv2", "output", "dir")
    erc = esub.add_parser("rpv2-clusters", parents=[common],
                          help="RedPajama-V2 LSH cluster file (id, id_int, cluster_id) from `dedup fuzzy` "
                               "(RPv2's own clusters: run dedup fuzzy with --verify none)")
    erc.add_argument("dir", metavar="DIR", help="an annotate output folder after `dedup fuzzy`")
    erc.add_argument("--threshold", type=float, required=True, metavar="T")
    erc.add_argument("-o", "--output", required=True, metavar="FILE.parquet")
    erc.set_defaults(func=run_rpv2_clusters)
    writes(erc, "export rpv2-clusters", "output", "dir")
    edo = esub.add_parser("dolma", parents=[common],
                          help="Dolma's layout: attributes/NAME/<rel> beside documents/<rel>, for Dolma's mixer",
                          epilog=examples("textsieve annotate sample.jsonl.gz -o rep-attrs --signals repetition",
                                          "textsieve export dolma rep-attrs -o rep-dolma"),
                          description="Write the attributes of DIR and its attribute sets as Dolma attribute files "
                                      "(keys NAME__COLUMN, a scalar as one span [0, length, value]) so Dolma's "
                                      "mixer can filter on them, e.g. with "
                                      "$.attributes[?(@.textsieve__rps_doc_word_count[0][2] >= 50)].",
                          formatter_class=ExamplesFormatter)
    edo.add_argument("dir", metavar="DIR", help="an annotate (or import) output folder")
    edo.add_argument("-o", "--output", required=True, metavar="ROOT", help="the Dolma root to write into")
    edo.add_argument("--name", default="textsieve", help="attribute folder and key prefix (default: textsieve)")
    edo.add_argument("--column", dest="columns", action="append", metavar="COLUMN",
                     help="export only this attribute column (repeatable; default: every column with a Dolma form)")
    edo.add_argument("--documents", choices=("auto", "always", "never"), default="auto",
                     help="write the documents to ROOT/documents/ unless they already lie there (auto), always, "
                          "or never (default: auto)")
    edo.set_defaults(func=run_dolma)
    writes(edo, "export dolma", "output", "dir")
    # Other export formats add a subparser to `esub` here.
