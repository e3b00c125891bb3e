"""A bounded fuzzer for the files textsieve reads besides documents (issue 25, item 8): RPv2
release files (documents, quality signals, MinHash and duplicates), a published folder's
manifest and an interrupted publish's journal, recipe files, tokenizer files and benchmark files.

Every seed is made here from the bundled sample corpus (no shared data needed, so CI always runs
it) by the code that writes that kind of file, then mutated as `test_fuzz_readers` mutates
documents (byte flips, truncation, inserted runs, deleted or repeated ranges; seeded, so a
failure names its case and `mutate` rebuilds it). A case passes when the reader returns, or
raises a `TextsieveError` (or a recipe's `RecipeError`) whose message names the file or its
folder: what the CLI prints as one line. Any other exception (a raw `KeyError`, `zlib.error`,
`JSONDecodeError` or Arrow error) is a finding: a traceback for a user's damaged file.

What it found, fixed: RPv2 files with damaged gzip (BadGzipFile, zlib.error), a damaged first
signals line (JSONDecodeError) or key (lone surrogate), Parquet files with invalid UTF-8 strings
(UnicodeDecodeError when read) or damaged pages (Arrow errors without the path); a damaged publish
journal (JSONDecodeError, KeyError, a lone surrogate in a path); recipe files whose error did not
name the file. All of these tests build their seeds first (~5 s), so they run in the full suite
(conftest.SLOW_FIXTURES); longer runs: TEXTSIEVE_FUZZ_CASES, TEXTSIEVE_FUZZ_SECONDS,
TEXTSIEVE_FUZZ_SEED as for the document fuzzer.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pytest
from test_fuzz_readers import _mutate_bytes, round_robin, run_case

from textsieve.errors import TextsieveError
from textsieve.recipes.language import RecipeError

CASE_SECONDS = 10


@dataclass
class FileSeed:
    """A real file of one kind, the name it must have, and how it is read."""

    name: str
    filename: str
    data: bytes
    read: Callable[[Path], object]  # reads the file at this path; its folder holds what else it needs
    setup: Callable[[Path], None] = lambda folder: None  # other files beside it, fresh for each case


def _sample_docs(tmp: Path, n: int = 40) -> list[dict]:
    from textsieve.sample import build_sample

    build_sample(str(tmp / "sample.jsonl.gz"), max_docs=n)
    with gzip.open(tmp / "sample.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _rpv2_seeds(tmp: Path, docs: list[dict]) -> list[FileSeed]:
    from textsieve.interop import rpv2_release as rel

    fs = fsspec.filesystem("file")
    ids = [f"2023-06/0000/en_head.json.gz/{i}" for i in range(len(docs))]
    lines = [json.dumps({"url": f"https://example.org/{i}", "date_download": "2023-06-01T00:00:00Z",
                         "digest": f"sha1:{i:032d}", "length": len(d["text"]), "nlines": d["text"].count("\n") + 1,
                         "source_domain": "example.org", "title": d["id"], "raw_content": d["text"],
                         "cc_segment": "seg", "original_nlines": 1, "original_length": 1, "line_ids": [0],
                         "language": "en", "language_score": 0.9, "perplexity": 100.0, "bucket": "head"}).encode()
             for i, d in enumerate(docs)]
    (tmp / "docs.json.gz").write_bytes(gzip.compress(b"\n".join(lines) + b"\n", mtime=0))
    signals = [rel.signals_line(doc_id, rel.id_int(doc_id), {"source_domain": "example.org"},
                                [("rps_doc_word_count", [[0, len(d["text"]), len(d["text"].split())]]),
                                 ("rps_lines_num_words", [[0, 5, 1], [5, len(d["text"]), 2]])])
               for doc_id, d in zip(ids, docs)]
    rel.write_gzip_lines(fs, str(tmp / "signals.json.gz"), signals)
    bands = {key: [[(i * 7 + b).to_bytes(4, "little") for b in range(9)] for i in range(len(docs))]
             for key in rel.SIGNATURES}
    rel.write_parquet(fs, str(tmp / "minhash.parquet"),
                      rel.minhash_table("2023-06/0000/en_head", ids, [rel.id_int(i) for i in ids], bands))
    rel.write_parquet(fs, str(tmp / "duplicates.parquet"),
                      rel.duplicates_table("2023-06/0000/en_head", ids[:5], [f"sha1:{i}" for i in range(5)]))
    local = fsspec.filesystem("file")
    return [
        FileSeed("rpv2 documents", "en_head.json.gz", (tmp / "docs.json.gz").read_bytes(),
                 lambda p: rel.read_documents(local, str(p))),
        FileSeed("rpv2 signals", "en_head.signals.json.gz", (tmp / "signals.json.gz").read_bytes(),
                 lambda p: rel.read_signals(local, str(p))),
        FileSeed("rpv2 minhash", "en_head.minhash.parquet", (tmp / "minhash.parquet").read_bytes(),
                 lambda p: rel.read_minhash(local, str(p))),
        FileSeed("rpv2 duplicates", "en_head.duplicates.parquet", (tmp / "duplicates.parquet").read_bytes(),
                 lambda p: rel.read_duplicates(local, str(p))),
    ]


def _publish_seeds(tmp: Path) -> list[FileSeed]:
    """A real published folder's manifest.json, and the journal of a publish killed between its
    switch and its apply (what `recover` finishes on the next read)."""
    import textsieve.io.publish as publish
    from textsieve.io import write_lock

    fs = fsspec.filesystem("file")
    root = tmp / "published"
    root.mkdir()
    pub = publish.Publication(fs, str(root), "fuzz", "key1")
    pub.add_file("part-0.txt", b"first\n", "fp0")
    pub.add_summary({"documents": 1})
    pub.commit()
    manifest = (root / publish.MANIFEST).read_bytes()

    killed = tmp / "killed"
    killed.mkdir()
    pub = publish.Publication(fs, str(killed), "fuzz", "key2")
    pub.add_file("part-0.txt", b"second\n", "fp1")
    real_apply = publish._apply
    publish._apply = lambda *a: (_ for _ in ()).throw(KeyboardInterrupt())  # the run dies after the switch
    try:
        with pytest.raises(KeyboardInterrupt):
            pub.commit()
    finally:
        publish._apply = real_apply
    journal = (killed / publish.JOURNAL).read_bytes()
    staged = {p.relative_to(killed): p.read_bytes() for p in killed.rglob("*") if p.is_file()
              and p.relative_to(killed).as_posix() not in (publish.JOURNAL, write_lock.LOCK)}

    def staging(folder: Path) -> None:
        for rel, data in staged.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)

    return [
        # both live in the folder's `.textsieve/`: the published folder is the one above
        FileSeed("manifest", publish.MANIFEST, manifest, lambda p: publish.read_manifest(fs, str(p.parent.parent))),
        FileSeed("publish journal", publish.JOURNAL, journal,
                 lambda p: publish.read_manifest(fs, str(p.parent.parent)),
                 staging),
    ]


def _recipe_seed() -> FileSeed:
    from textsieve.recipes.language import bundled_text, load_recipe

    return FileSeed("recipe", "fuzzed.yaml", bundled_text("gopher").encode(), lambda p: load_recipe(p))


def _tokenizer_seed(tmp: Path) -> FileSeed:
    from textsieve.tokenization.tokenizer import load_tokenizer
    from textsieve.tokenization.train import TrainTokenizerConfig, train_tokenizer

    out = tmp / "tokenizer.json"
    train_tokenizer(TrainTokenizerConfig(corpus=[str(tmp / "sample.jsonl.gz")], output=str(out), vocab=300,
                                         progress=False))

    def read(p: Path) -> object:
        tok = load_tokenizer(str(p))
        return tok.count_batch(["Curating text, one token at a time."])

    return FileSeed("tokenizer", "tokenizer.json", out.read_bytes(), read)


def _benchmark_seed(docs: list[dict]) -> FileSeed:
    from textsieve.decontam.bench import file_examples

    data = b"".join(json.dumps({"question": d["text"][:300], "answer": d["id"]}).encode() + b"\n" for d in docs[:20])
    return FileSeed("benchmark", "bench.jsonl", data, lambda p: list(file_examples(str(p), ["question", "answer"])))


@pytest.fixture(scope="module")
def file_seeds(tmp_path_factory) -> list[FileSeed]:
    tmp = tmp_path_factory.mktemp("file-seeds")
    docs = _sample_docs(tmp)
    return [*_rpv2_seeds(tmp, docs), *_publish_seeds(tmp), _recipe_seed(), _tokenizer_seed(tmp),
            _benchmark_seed(docs)]


def mutate(seed: FileSeed, case: int, base_seed: int) -> tuple[bytes, str]:
    """Case `case` of `seed`: the same bytes for the same arguments, on any machine."""
    rng = random.Random(f"{base_seed}:{seed.name}:{case}")
    data = seed.data
    if seed.filename.endswith(".gz") and rng.random() < 0.5:  # inside the gzip member: the parser behind it
        inner, kind, _ = _mutate_bytes(gzip.decompress(data), rng)
        return gzip.compress(inner, mtime=0), f"{kind} inner"
    out, kind, _ = _mutate_bytes(data, rng)
    return out, kind


def _check(seed: FileSeed, folder: Path, data: bytes) -> None:
    """The reader returns, or raises a located textsieve error; anything else is a finding."""
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    seed.setup(folder)
    path = folder / seed.filename
    path.parent.mkdir(parents=True, exist_ok=True)  # bookkeeping lives in `.textsieve/`
    path.write_bytes(data)
    try:
        seed.read(path)
    except (TextsieveError, RecipeError) as exc:
        assert str(folder) in str(exc) or seed.filename in str(exc), f"the error names neither file nor folder: {exc}"


def _run(seeds: list[FileSeed], tmp_path: Path, cases: int, budget: float, base_seed: int) -> dict[str, int]:
    done = {s.name: 0 for s in seeds}
    for case, seed in round_robin(seeds, cases, budget):
        data, kind = mutate(seed, case, base_seed)
        run_case(f"{seed.name} case {case} ({kind}, seed {base_seed})",
                 lambda: _check(seed, tmp_path / "case", data))  # noqa: B023 - called at once
        done[seed.name] += 1
    return done


def test_file_seeds_read_cleanly(file_seeds, tmp_path) -> None:
    """Unmutated, every seed reads without an error: the mutations are what the fuzzer tests."""
    for seed in file_seeds:
        folder = tmp_path / seed.name.replace(" ", "_")
        folder.mkdir()
        seed.setup(folder)
        (folder / seed.filename).parent.mkdir(parents=True, exist_ok=True)
        (folder / seed.filename).write_bytes(seed.data)
        seed.read(folder / seed.filename)


def test_fuzz_files_smoke(file_seeds, tmp_path) -> None:
    done = _run(file_seeds, tmp_path, cases=15, budget=6.0, base_seed=7)
    assert all(n > 0 for n in done.values()), done


def test_fuzz_files(file_seeds, tmp_path) -> None:
    cases = int(os.environ.get("TEXTSIEVE_FUZZ_CASES", "300"))
    budget = float(os.environ.get("TEXTSIEVE_FUZZ_SECONDS", "20"))
    done = _run(file_seeds, tmp_path, cases=cases, budget=budget,
                base_seed=int(os.environ.get("TEXTSIEVE_FUZZ_SEED", "16")))
    assert all(n > 0 for n in done.values()), done
    print(f"fuzz cases per file kind: {done}")
