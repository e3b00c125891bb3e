"""Rehydration (issue 29): a recipe's `repeat: {by:, cap:}` writes each kept document
min(max(1, floor(by)), cap) times, so the one copy a dedup keeps can stand for its cluster."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from textsieve.recipes.language import Recipe, RecipeError


@pytest.fixture(scope="module")
def clustered(tmp_path_factory) -> Path:
    """120 sample documents, 4 of them copied 1, 2, 4 and 6 more times under other ids, annotated
    (MinHash only) and fuzzily deduplicated: clusters of 2, 3, 5 and 7 documents."""
    import pyarrow.parquet as pq

    from textsieve.cli import main
    from textsieve.sample import build_sample

    root = tmp_path_factory.mktemp("rehydrate")
    # The sample is built from the machine's own Python and Debian files, which may hold near
    # duplicates of each other (two packages' copyright files): take 120 documents that are not.
    build_sample(str(root / "s.jsonl.gz"), max_docs=160)
    with gzip.open(root / "s.jsonl.gz", "rt", encoding="utf-8") as fh:
        pool = [json.loads(x) for x in fh]
    (root / "pool").mkdir()
    (root / "pool" / "pool.jsonl").write_text("".join(json.dumps(d) + "\n" for d in pool), encoding="utf-8")
    assert main(["annotate", str(root / "pool" / "pool.jsonl"), "-o", str(root / "pool" / "attrs"), "--signals",
                 "minhash", "--workers", "1", "-q"]) == 0
    assert main(["dedup", "fuzzy", str(root / "pool" / "attrs"), "--workers", "1", "-q"]) == 0
    sizes = pq.read_table(root / "pool" / "attrs" / "sets" / "dedup_fuzzy" / "pool.parquet").column(
        "dup_fuzzy_t80_size").to_pylist()
    docs = [d for d, size in zip(pool, sizes) if not size or size == 1][:120]
    assert len(docs) == 120
    extra = [dict(docs[i], id=f"{docs[i]['id']}#copy{k}") for i, n in ((3, 1), (10, 2), (20, 4), (30, 6))
             for k in range(n)]
    with open(root / "docs.jsonl", "w", encoding="utf-8") as fh:
        for d in docs + extra:
            fh.write(json.dumps(d) + "\n")
    assert main(["annotate", str(root / "docs.jsonl"), "-o", str(root / "attrs"), "--signals", "minhash",
                 "--workers", "1", "-q"]) == 0
    assert main(["dedup", "fuzzy", str(root / "attrs"), "--workers", "1", "-q"]) == 0
    return root


def _select(root: Path, recipe: str, out: str) -> list[dict]:
    from textsieve.cli import main

    (root / f"{out}.yaml").write_text(recipe, encoding="utf-8")
    assert main(["select", str(root / "attrs"), "--recipe", str(root / f"{out}.yaml"), "-o", str(root / out),
                 "-q"]) == 0
    rows = []
    for p in sorted((root / out).glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as fh:
            rows += [json.loads(x) for x in fh]
    return rows


def test_kept_copies_are_written_as_often_as_their_cluster_up_to_the_cap(clustered: Path) -> None:
    keep = "rules:\n  one_per_cluster: dup_fuzzy_t80_keep\n"
    plain = _select(clustered, keep, "plain")
    rehydrated = _select(clustered, keep + "repeat: {by: dup_fuzzy_t80_size, cap: 5}\n", "rehydrated")
    assert len(plain) == 120 and len({r["id"] for r in plain}) == 120
    copies = Counter(r["id"] for r in rehydrated)
    assert set(copies) == {r["id"] for r in plain}
    assert sorted(n for n in copies.values() if n > 1) == [2, 3, 5, 5]  # clusters of 2, 3, 5 and 7 (capped)
    assert len(rehydrated) == 120 + 1 + 2 + 4 + 4
    import textsieve as ts

    funnel = ts.select(str(clustered / "attrs"), recipe=str(clustered / "rehydrated.yaml"), dry_run=True)
    assert funnel.kept == 120 and funnel.written == len(rehydrated)
    assert "written with repeat: 131 records (11 repeats of kept documents)" in funnel.table()
    # an expression works too, and a null or small value means one copy
    doubled = _select(clustered, keep + "repeat: {by: 'dup_fuzzy_t80_size * 2', cap: 3}\n", "doubled")
    assert Counter(Counter(r["id"] for r in doubled).values()) == Counter({2: 116, 3: 4})


def test_repeat_is_checked_and_changes_the_fingerprint(clustered: Path) -> None:
    base = Recipe.from_yaml("rules:\n  k: dup_fuzzy_t80_keep\n")
    with_repeat = Recipe.from_yaml("rules:\n  k: dup_fuzzy_t80_keep\nrepeat: {by: dup_fuzzy_t80_size, cap: 3}\n")
    assert base.fingerprint() != with_repeat.fingerprint()
    assert with_repeat.to_dict()["repeat"] == {"by": "dup_fuzzy_t80_size", "cap": 3}
    for bad, says in (("repeat: 3", "expected a mapping"), ("repeat: {by: x, cap: 0}", "cap"),
                      ("repeat: {by: x, cap: 2, weight: 1}", "expected a mapping"),
                      ("repeat: {by: 'x >', cap: 2}", "repeat")):
        with pytest.raises(RecipeError, match=says):
            Recipe.from_yaml("rules:\n  k: dup_fuzzy_t80_keep\n" + bad + "\n")
    from textsieve.recipes.schema import read_schema
    from textsieve.recipes.sql import compile_recipe

    schema = read_schema(str(clustered / "attrs"))
    for by, says in (("dup_fuzzy_t80_sise", "did you mean 'dup_fuzzy_t80_size'"), ("dup_fuzzy_t80_keep", "a number")):
        with pytest.raises(RecipeError, match=says):
            compile_recipe(Recipe.from_yaml(f"rules:\n  k: dup_fuzzy_t80_keep\nrepeat: {{by: {by}, cap: 2}}\n"), schema)
