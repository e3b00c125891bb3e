"""Near-duplicate sets with known true Jaccard, pairwise scoring, and the textsieve CLI runner
shared by ``dedup_quality.py`` and ``dedup_speed.py``.

Why a generator: the dev corpus has only ~70 natural near-duplicates, too few to measure
precision and recall at four thresholds. So real documents of ``shared/corpora/dev/`` are copied
with controlled edits (word insertions, deletions, substitutions, boilerplate lines added or
removed, paragraphs shuffled, whitespace/case-only changes) and each edit amount is chosen by
bisection so that the copy's true 13-word-shingle Jaccard to its original lands near a target
drawn uniformly from [0.55, 1.0]. The truth used for scoring is then computed *exactly* for every
pair of documents in the set that shares at least one shingle (a sparse ``A @ A.T`` over
shingle-incidence rows), so pairs across families (shared boilerplate, natural duplicates) count
too. Pairs that share no shingle have Jaccard 0 and are true negatives at every threshold.

Scoring is over pairs: a pair is predicted duplicate when both documents are in the same
cluster (connected component), and truly duplicate at threshold t when J >= t.

Nothing generated here is written into the repository: sets go to temporary folders.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from textsieve.text.normalize import normalize

NGRAM = 13
SHARED = Path(os.environ.get("TEXTSIEVE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
KINDS = ("insert", "delete", "substitute", "mixed", "boilerplate_add", "boilerplate_remove", "shuffle", "format")
REPO = Path(__file__).resolve().parents[1]


def dev_corpus() -> Path:
    path = SHARED / "corpora" / "dev" / "web_sample.jsonl.gz"
    if not path.exists():
        sys.exit(f"dev corpus not found at {path}: set TEXTSIEVE_SHARED to the shared/ folder")
    return path


def load_docs(path: Path, limit: int = 0) -> list[tuple[str, str]]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            out.append((rec["id"], rec["text"]))
            if limit and len(out) >= limit:
                break
    return out


# --------------------------------------------------------------------------------------------
# shingles and exact Jaccard
# --------------------------------------------------------------------------------------------


def rpv2_shingles(text: str) -> set[str]:
    """textsieve's (= RPv2's) shingle set: 13-word windows of the §3.2-normalized words."""
    w = normalize(text).split()
    return {" ".join(w[i : i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def pair_jaccard(sets: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact Jaccard of every pair (i < j) of documents sharing at least one shingle.

    ``sets[i]`` is any iterable of hashable shingles (strings, or uint64 hashes for datatrove).
    Returns ``(i, j, J)`` arrays.
    """
    from scipy import sparse

    vocab: dict = {}
    rows, cols = [], []
    for d, s in enumerate(sets):
        for x in set(s.tolist() if isinstance(s, np.ndarray) else s):
            rows.append(d)
            cols.append(vocab.setdefault(x, len(vocab)))
    n = len(sets)
    a = sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(n, max(1, len(vocab))))
    sizes = np.asarray(a.sum(axis=1)).ravel()
    inter = sparse.triu(a @ a.T, k=1).tocoo()
    i, j, x = inter.row.astype(np.int64), inter.col.astype(np.int64), inter.data.astype(np.int64)
    union = sizes[i] + sizes[j] - x
    return i, j, x / union


@dataclass
class Scores:
    threshold: float
    true_pairs: int
    predicted_pairs: int
    tp: int

    @property
    def precision(self) -> float:
        return self.tp / self.predicted_pairs if self.predicted_pairs else 1.0

    @property
    def recall(self) -> float:
        return self.tp / self.true_pairs if self.true_pairs else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score(labels: np.ndarray, pairs: tuple[np.ndarray, np.ndarray, np.ndarray], threshold: float) -> Scores:
    """Pairwise scores of a clustering. ``labels[d]`` is a cluster id or -1 (not clustered)."""
    labels = np.asarray(labels, dtype=np.int64)
    i, j, jac = pairs
    true = jac >= threshold
    same = (labels[i] == labels[j]) & (labels[i] >= 0)
    _, counts = np.unique(labels[labels >= 0], return_counts=True)
    predicted = int((counts * (counts - 1) // 2).sum())
    return Scores(threshold, int(true.sum()), predicted, int((true & same).sum()))


# --------------------------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------------------------


def _is_boilerplate(line: str) -> bool:
    words = line.split()
    return 1 <= len(words) <= 8 and not line.rstrip().endswith((".", "!", "?", ":", ";", '"'))


def _edit_words(lines: list[list[str]], k: int, ops: str, vocab: list[str], rng: random.Random) -> list[list[str]]:
    lines = [list(x) for x in lines]
    for _ in range(k):
        nonempty = [n for n, ln in enumerate(lines) if ln]
        if not nonempty:
            break
        n = rng.choice(nonempty)
        pos = rng.randrange(len(lines[n]))
        op = rng.choice(ops)
        if op == "i":
            lines[n].insert(pos, rng.choice(vocab))
        elif op == "d":
            del lines[n][pos]
        else:
            lines[n][pos] = rng.choice(vocab)
    return lines


def _render(lines: list[list[str]]) -> str:
    return "\n".join(" ".join(x) for x in lines)


def _bisect(make, base: set[str], target: float, hi: int) -> tuple[str, float]:
    """Smallest edit amount k in [0, hi] whose text has J(base, text) <= target (J falls with k)."""
    lo, best = 0, None
    while lo < hi:
        mid = (lo + hi) // 2
        text = make(mid)
        jac = jaccard(base, rpv2_shingles(text))
        if jac <= target:
            hi, best = mid, (text, jac)
        else:
            lo = mid + 1
    if best is None or lo != hi:
        text = make(lo)
        best = (text, jaccard(base, rpv2_shingles(text)))
    return best


def make_variant(
    text: str, kind: str, target: float, vocab: list[str], boiler: list[str], seed: int
) -> tuple[str, float]:
    """One edited copy of ``text``; returns ``(text, true Jaccard to the original)``."""
    base = rpv2_shingles(text)
    lines = [ln.split() for ln in text.split("\n")]
    n_tok = sum(len(x) for x in lines)
    if kind == "format":  # whitespace and case only: identical after normalization
        rng = random.Random(seed)
        out = "\n\n".join("  ".join(w.upper() if rng.random() < 0.1 else w for w in ln) for ln in lines)
        return out, jaccard(base, rpv2_shingles(out))
    if kind in ("insert", "delete", "substitute", "mixed"):
        ops = {"insert": "i", "delete": "d", "substitute": "s", "mixed": "ids"}[kind]
        return _bisect(lambda k: _render(_edit_words(lines, k, ops, vocab, random.Random(seed))),
                       base, target, max(1, n_tok // 3))
    if kind == "boilerplate_add":
        def add(k: int) -> str:
            rng = random.Random(seed)
            head = [rng.choice(boiler) for _ in range(k // 2)]
            tail = [rng.choice(boiler) for _ in range(k - k // 2)]
            return "\n".join(head + [text] + tail)
        return _bisect(add, base, target, max(2, n_tok // 4))
    if kind == "boilerplate_remove":  # drop the original's own header/footer lines
        def drop(k: int) -> str:
            a = (k + 1) // 2
            return _render(lines[a : len(lines) - (k - a)] if k - a else lines[a:])
        return _bisect(drop, base, target, max(0, len(lines) - 2))
    if kind == "shuffle":  # swap whole lines/paragraphs
        def swap(k: int) -> str:
            rng = random.Random(seed)
            out = list(lines)
            for _ in range(k):
                x, y = rng.randrange(len(out)), rng.randrange(len(out))
                out[x], out[y] = out[y], out[x]
            return _render(out)
        return _bisect(swap, base, target, 2 * len(lines))
    raise ValueError(f"unknown edit kind {kind!r}")


@dataclass
class Doc:
    id: str
    text: str
    family: int  # -1 for distractors
    kind: str
    true_j: float  # to the family's original (1.0 for originals, nan for distractors)


def build_set(docs: list[tuple[str, str]], n_base: int = 500, variants: int = 4, distractors: int = 500,
              seed: int = 0, max_words: int = 1200) -> list[Doc]:
    """Originals (60..max_words normalized words) with ``variants`` edited copies each, plus
    unrelated distractor documents from the same corpus, in a shuffled order."""
    rng = random.Random(seed)
    boiler = sorted({ln.strip() for i, t in docs if i.startswith(("trafilatura", "dolma-cc")) for ln in t.split("\n")
                     if _is_boilerplate(ln)})
    order = list(range(len(docs)))
    rng.shuffle(order)
    vocab = [w for k in order[:300] for w in docs[k][1].split()]
    out: list[Doc] = []
    used = set()
    for k in order:
        if len(used) >= n_base:
            break
        n = len(normalize(docs[k][1]).split())
        if 60 <= n <= max_words:
            used.add(k)
    for fam, k in enumerate(sorted(used)):
        text = docs[k][1]
        out.append(Doc(f"nd/{fam:05d}/0", text, fam, "original", 1.0))
        multi_line = text.count("\n") >= 4
        for v in range(1, variants + 1):
            kinds = KINDS if multi_line else tuple(x for x in KINDS if x not in ("boilerplate_remove", "shuffle"))
            kind = rng.choice(kinds)
            target = rng.uniform(0.55, 1.0)
            vt, jac = make_variant(text, kind, target, vocab, boiler, seed * 1_000_003 + fam * 101 + v)
            out.append(Doc(f"nd/{fam:05d}/{v}", vt, fam, kind, jac))
    rest = [k for k in order if k not in used and len(docs[k][1].split()) <= 3 * max_words]
    for k in rest[:distractors]:
        out.append(Doc(docs[k][0], docs[k][1], -1, "distractor", float("nan")))
    rng.shuffle(out)
    return out


def write_jsonl(docs: list[Doc], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------------------------
# textsieve through its real CLI
# --------------------------------------------------------------------------------------------


def tcol(threshold: float) -> str:
    return f"dup_fuzzy_t{round(threshold * 100)}"


def textsieve_clusters(jsonl: Path, workdir: Path, thresholds: list[float], mode: str,
                       workers: int = 1, verify: str | None = None) -> tuple[dict[str, dict[float, int]], str]:
    """Run textsieve on ``jsonl`` in subprocesses; returns ({id: {t: cluster or -1}}, how).

    ``textsieve annotate --signals minhash|minhash_fast`` then
    ``textsieve dedup fuzzy DIR --threshold ... [--bands fast] [--verify V]``.
    """
    import pyarrow.parquet as pq

    exe = [sys.executable, "-m", "textsieve.cli"]
    out: dict[str, dict[float, int]] = {}
    ann = workdir / f"ann_{mode}"
    group = "minhash_fast" if mode == "fast" else "minhash"
    if not (ann / "annotate.json").exists():  # one annotate per mode; dedup reruns per --verify
        subprocess.run(exe + ["annotate", str(jsonl), "-o", str(ann), "--signals", group, "-q",
                              "--workers", str(workers), "--overwrite"], check=True)
    cmd = exe + ["dedup", "fuzzy", str(ann), "-q", "--overwrite"]
    for t in thresholds:
        cmd += ["--threshold", str(t)]
    if mode == "fast":
        cmd += ["--bands", "fast"]
    if verify:
        cmd += ["--verify", verify]
    subprocess.run(cmd, check=True)
    for f in sorted((ann / "_dedup_fuzzy").rglob("*.parquet")):
        tab = pq.read_table(f).to_pydict()
        for r, doc_id in enumerate(tab["id"]):
            out[doc_id] = {t: (-1 if tab[tcol(t) + "_cluster"][r] is None else int(tab[tcol(t) + "_cluster"][r]))
                           for t in thresholds}
    return out, ("textsieve CLI: annotate --signals minhash|minhash_fast, then dedup fuzzy "
                 "[--bands fast] --verify exact|estimated|none")
