"""Issue 13 item 6: the bundled `rpv2-card-gopher` is the RedPajama-V2 dataset card's
`gopher_rules_pass` (spec §10), and the docs' stand-in release (`_docs_release.py`) is a release
`import rpv2` reads like the real one.

The card's function is ported line for line below and run over the released signals records of
a fixture built from the golden RPv2 records (`_rpv2_release`); the recipe's survivors over the
imported attributes must be exactly the documents it passes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _rpv2_release import build_release

from textsieve.recipes.funnel import compute_funnel
from textsieve.recipes.language import load_recipe
from textsieve.recipes.survivors import survivors
from textsieve.stages.sources.import_rpv2 import ImportRpv2Config, run_import_rpv2

N_GOLDEN = 300


def gopher_rules_pass(signals: dict) -> bool:
    """The dataset card's example, with one change: a null score fails its rule (the card's
    code would raise TypeError comparing None), as a null fails a textsieve rule."""
    def score(name: str) -> float | None:
        spans = signals.get(name)
        return spans[0][2] if spans else None

    word_count = score("rps_doc_word_count")
    if word_count is None or word_count < 50 or word_count > 100_000:  # rule 1
        return False
    mean_word_length = score("rps_doc_mean_word_length")
    if mean_word_length is None or mean_word_length < 3 or mean_word_length > 10:  # rule 2
        return False
    symbol_word_ratio = score("rps_doc_symbol_to_word_ratio")
    if symbol_word_ratio is None or symbol_word_ratio > 0.1:  # rule 2 (sic)
        return False
    n_lines = score("ccnet_nlines")  # rule 3
    n_lines_bulletpoint_start = sum(ln[2] for ln in signals["rps_lines_start_with_bulletpoint"] if ln[2] is not None)
    if n_lines is None or n_lines_bulletpoint_start / n_lines > 0.9:
        return False
    top_2_gram_frac = score("rps_doc_frac_chars_top_2gram")  # rule 4
    return top_2_gram_frac is not None and top_2_gram_frac <= 0.2


def test_card_recipe_keeps_what_the_card_code_keeps(shared_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "release"
    build_release(shared_dir, root, N_GOLDEN)
    attrs = tmp_path / "attrs"
    run_import_rpv2(ImportRpv2Config(str(root), str(attrs), buckets=["head", "middle"], workers=1, progress=False))
    expected = set()
    for path in sorted((root / "quality_signals").rglob("*.signals.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            expected |= {r["id"].rsplit("/", 1)[0] + "#" + r["id"].rsplit("/", 1)[1] for r in map(json.loads, fh)
                         if gopher_rules_pass(r["quality_signals"])}
    kept = {f"{shard}#{row}" for shard, rows in survivors(str(attrs), "rpv2-card-gopher").items() for row in rows}
    assert 0 < len(kept) < N_GOLDEN  # the rules bite on real documents
    assert kept == expected
    # the card's five rules, in its order; the same as rpv2-gopher but for the bullet denominator
    card, ours = load_recipe("rpv2-card-gopher"), load_recipe("rpv2-gopher")
    assert [r.name for r in card.rules] == [r.name for r in ours.rules]
    assert [r.text for r in card.rules if r.name != "bullet_lines"] == \
        [r.text for r in ours.rules if r.name != "bullet_lines"]
    assert compute_funnel(str(attrs), card).total == compute_funnel(str(attrs), ours).total


def test_recipes_listing_stays_aligned_with_the_longer_name(capsys: pytest.CaptureFixture[str]) -> None:
    """`textsieve recipes` padded names to 14 characters: `rpv2-card-gopher` (16) ran into its
    description."""
    from textsieve.cli import main

    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    longest = max(len(line.split(maxsplit=1)[0]) for line in lines)
    assert any(line.startswith("rpv2-card-gopher ") and "  RPv2 dataset-card" in line for line in lines)
    assert all(line[longest:longest + 2] == "  " for line in lines)  # two spaces after the longest name
    starts = {len(line) - len(line.split(maxsplit=1)[1]) for line in lines}
    assert len(starts) == 1  # every description starts in the same column


def test_docs_release_imports_like_the_release(tmp_path: Path) -> None:
    """The stand-in release of the docs folder: every component present where the release has
    it, the tail bucket with documents only, the listed copies found, and the card's recipe runs."""
    from _docs_release import COPIES, KEYS, build_docs_release
    from test_docs_commands import _word_lists

    from textsieve.sample import build_sample

    sample = tmp_path / "sample.jsonl.gz"
    build_sample(sample)
    with gzip.open(sample, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    root = tmp_path / "rpv2-release"
    build_docs_release(records, root, tmp_path / "scratch", _word_lists(tmp_path / "words"))
    res = run_import_rpv2(ImportRpv2Config(str(root), str(tmp_path / "attrs"), workers=1, progress=False))
    assert sorted(res.shards_written) == sorted(KEYS)
    assert res.documents == len(records) + COPIES
    assert res.duplicates == COPIES
    assert res.missing_files == {comp: ["2023-06/0000/en_tail"] for comp in ("quality_signals", "minhash",
                                                                             "duplicates")}
    assert res.without_signals == res.without_minhash == len(records[2::4])
    funnel = compute_funnel(str(tmp_path / "attrs"), load_recipe("rpv2-card-gopher"))
    assert funnel.total == res.documents and 0 < funnel.kept < funnel.total


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
