"""Semantic dedup (SemDeDup) vs MinHash fuzzy dedup: recall per edit kind, what semantic finds that
MinHash misses, false merges of unrelated documents, and speed.

Usage::

    python benchmarks/dedup_semantic.py [--bases 500] [--variants 4] [--distractors 1000] [--seed 0]
                                        [--eps 0.05,0.1] [--keep DIR]

The set: the dedup quality benchmark's near-duplicates (``_neardup.build_set``: real dev-corpus
documents, each with edited copies - insertions, deletions, substitutions, boilerplate,
paragraph shuffles, format-only - at true Jaccard targets in [0.55, 1]) plus, per original,
one copy of each paraphrase-style edit (``_paraphrase``: sentence reorder, synonym swaps from
a distributional substitute list built at run time from the dev corpora, and both), plus
unrelated distractor documents.

Rows: recall = share of (original, edited copy) pairs that end up in one cluster, per edit
kind, for ``dedup fuzzy --threshold 0.8`` (default verify exact) and ``dedup semantic --eps E``
(default k-means clusters: documents / 200). "sem-only" = pairs semantic joins that MinHash
does not. False merges: pairs of documents of different families (distractors are families of
one) in one cluster; those whose 13-word-shingle Jaccard is >= 0.5 are natural copies in the
corpus, the rest are counted as false (``false merge rate`` = documents with such a false
partner / all documents). Speed: ``textsieve embed`` and ``dedup semantic`` in this process
(one worker), docs/s of each.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _neardup as nd  # noqa: E402
import _paraphrase as pp  # noqa: E402


def _paraphrases(docs: list[nd.Doc], subs: dict[str, str], seed: int) -> list[nd.Doc]:
    originals = [d for d in docs if d.kind == "original"]
    out = []
    for d in originals:
        for j, kind in enumerate(pp.PARAPHRASE_KINDS):
            text = pp.paraphrase(d.text, kind, subs, seed * 1_000_003 + d.family * 101 + 50 + j)
            out.append(nd.Doc(f"nd/{d.family:05d}/p{j}", text, d.family, kind,
                              nd.jaccard(nd.rpv2_shingles(d.text), nd.rpv2_shingles(text))))
    return out


def _semantic(ann: Path, eps: list[float]) -> tuple[dict[float, dict[str, int]], dict, float, float, int]:
    """({eps: {id: cluster or -1}}, stats, embed seconds, dedup seconds, docs) in this process."""
    from textsieve.stages.annotate.embed import EmbedConfig, run_embed
    from textsieve.stages.dedup.semantic import SemanticConfig, ekey, run_semantic

    t = time.perf_counter()
    emb = run_embed(EmbedConfig(str(ann), workers=1, progress=False, overwrite=True))
    t_embed = time.perf_counter() - t
    t = time.perf_counter()
    res = run_semantic(SemanticConfig(str(ann), eps=eps, progress=False, overwrite=True))
    t_dedup = time.perf_counter() - t
    out: dict[float, dict[str, int]] = {e: {} for e in eps}
    for f in sorted((ann / "_dedup_semantic").rglob("*.parquet")):
        tab = pq.read_table(f).to_pydict()
        for e in eps:
            col = tab[f"{ekey(e)}_cluster"]
            out[e].update({i: (-1 if c is None else int(c)) for i, c in zip(tab["id"], col)})
    return out, res.stats, t_embed, t_dedup, emb.documents


def _sources(docs: list[nd.Doc], raw: list[tuple[str, str]]) -> dict[str, str]:
    """Each document's source collection (its corpus id's first part; a copy gets its original's)."""
    by_text = {t: i.split("/", 1)[0] for i, t in raw}
    fam = {d.family: by_text.get(d.text, "?") for d in docs if d.kind == "original"}
    return {d.id: fam[d.family] if d.family >= 0 else d.id.split("/", 1)[0] for d in docs}


def _together(a: str, b: str, lab: dict[str, int]) -> bool:
    return lab.get(a, -1) >= 0 and lab.get(a) == lab.get(b)


def _false_merges(docs: list[nd.Doc], lab: dict[str, int]) -> tuple[int, int, set[str]]:
    """(cross-family pairs, of them natural copies with J >= 0.5, documents with a false partner)."""
    fam = {d.id: (d.family if d.family >= 0 else -1 - k) for k, d in enumerate(docs)}
    text = {d.id: d.text for d in docs}
    groups = defaultdict(list)
    for i, c in lab.items():
        if c >= 0:
            groups[c].append(i)
    cross = natural = 0
    falsely: set[str] = set()
    for members in groups.values():
        for x in range(len(members)):
            for y in range(x + 1, len(members)):
                a, b = members[x], members[y]
                if fam[a] == fam[b]:
                    continue
                cross += 1
                if nd.jaccard(nd.rpv2_shingles(text[a]), nd.rpv2_shingles(text[b])) >= 0.5:
                    natural += 1
                else:
                    falsely.update((a, b))
    return cross, natural, falsely


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", type=int, default=500)
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--distractors", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eps", default="0.05,0.1")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temp folder)")
    args = ap.parse_args()
    eps = [float(x) for x in args.eps.split(",")]
    tmp = None
    if args.keep:
        work = args.keep
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ts-dedup-semantic-")
        work = Path(tmp.name)

    t0 = time.perf_counter()
    raw = nd.load_docs(nd.dev_corpus())
    docs = nd.build_set(raw, args.bases, args.variants, args.distractors, args.seed)
    wiki = nd.load_docs(nd.dev_corpus().parent / "target_wiki.jsonl.gz")
    subs = pp.build_substitutes([t for _, t in raw + wiki], min_cosine=0.3)
    docs += _paraphrases(docs, subs, args.seed)
    random.Random(args.seed + 1).shuffle(docs)
    (work / "in").mkdir(exist_ok=True)
    jsonl = work / "in" / "semantic.jsonl"
    nd.write_jsonl(docs, jsonl)
    print(f"set          {len(docs):,} docs: {args.bases} originals x ({args.variants} edited + "
          f"{len(pp.PARAPHRASE_KINDS)} paraphrased copies) + {args.distractors} distractors; {len(subs):,} "
          f"substitutes built from the corpora (seed {args.seed}; {time.perf_counter() - t0:.1f}s)")

    t = time.perf_counter()
    fuzzy, _ = nd.textsieve_clusters(jsonl, work, [0.8], "rpv2")
    t_fuzzy = time.perf_counter() - t
    mh = {i: v[0.8] for i, v in fuzzy.items()}
    sem, stats, t_embed, t_dedup, n = _semantic(work / "ann_rpv2", eps)

    originals = {d.family: d.id for d in docs if d.kind == "original"}
    kinds = [*nd.KINDS, *pp.PARAPHRASE_KINDS]
    pairs: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for d in docs:
        if d.family >= 0 and d.kind != "original":
            pairs[d.kind].append((originals[d.family], d.id, d.true_j))
    head = f"{'edit kind':<19}{'pairs':>6}{'mean J':>8}{'MinHash t0.8':>13}" + "".join(
        f"{f'sem e{e:g}':>10}{'sem-only':>9}" for e in eps)
    print()
    print(head)
    allp = [p for k in kinds for p in pairs[k]]
    for kind, ps in [*((k, pairs[k]) for k in kinds if pairs[k]), ("all", allp)]:
        found_mh = [_together(a, b, mh) for a, b, _ in ps]
        row = f"{kind:<19}{len(ps):>6}{np.mean([j for _, _, j in ps]):>8.2f}{np.mean(found_mh):>13.3f}"
        for e in eps:
            found = [_together(a, b, sem[e]) for a, b, _ in ps]
            only = sum(f and not m for f, m in zip(found, found_mh))
            row += f"{np.mean(found):>10.3f}{only:>9}"
        print(row)
    print()
    print(f"{'false merges':<19}{'cross-family pairs':>19}{'natural copies':>15}{'false docs':>11}"
          f"{'false merge rate':>17}  false docs by source (top 4)")
    source = _sources(docs, raw)
    for name, lab in [("MinHash t0.8", mh), *((f"sem e{e:g}", sem[e]) for e in eps)]:
        cross, natural, falsely = _false_merges(docs, lab)
        top = Counter(source[i] for i in falsely).most_common(4)
        print(f"{name:<19}{cross:>19}{natural:>15}{len(falsely):>11}{len(falsely) / len(docs):>17.4f}  "
              + ", ".join(f"{k} {v}" for k, v in top))
    print()
    print(f"speed        embed {n / t_embed:,.0f} docs/s ({t_embed:.1f}s); dedup semantic {n / t_dedup:,.0f} docs/s "
          f"({t_dedup:.1f}s: {stats['clusters']} k-means clusters, {stats['comparisons']:,} pair comparisons, "
          f"largest cluster {stats['largest_cluster']}); MinHash annotate+dedup fuzzy CLI {t_fuzzy:.1f}s")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
