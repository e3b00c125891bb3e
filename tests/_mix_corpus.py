"""The small real corpus the mix tests share (tests/test_mix.py, tests/test_train_shards.py).

Built once per test module from the dev corpora: 180 web pages (web_sample, three shards,
annotated with the word-count signal and language id, so `ts_lang` exists), 80 Wikipedia
articles (target_wiki) annotated and selected with `select` (a selection source), and a
byte-level BPE of vocab 500 trained with `tokenizers` on the pydoc help topics (the part of
the bundled sample corpus that is cheapest to get: `textsieve sample` takes seconds).
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import yaml
from _files import web_docs

RECIPE = {"name": "words20", "rules": {"words": "rps_doc_word_count >= 20"}}


def _write(path: Path, docs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in docs)


def build(dev_dir: Path, tmp: Path) -> dict[str, Path]:
    from textsieve.stages.annotate.annotate import AnnotateConfig, run_annotate
    from textsieve.stages.select.select import SelectConfig, run_select
    from textsieve.tokenization.tokenizer import train_bpe

    docs = web_docs(dev_dir, 180)
    for k in range(3):
        _write(tmp / "web" / f"part-{k}.jsonl.gz", docs[k * 60:(k + 1) * 60])
    with gzip.open(dev_dir / "target_wiki.jsonl.gz", "rt", encoding="utf-8") as fh:
        wiki = [json.loads(line) for line in itertools.islice(fh, 80)]
    _write(tmp / "wiki" / "wiki.jsonl.gz", wiki)
    recipe = tmp / "words20.yaml"
    recipe.write_text(yaml.safe_dump(RECIPE))
    run_annotate(AnnotateConfig([str(tmp / "web")], str(tmp / "web-attrs"), signals=["rps_doc_word_count"],
                                lang="auto", workers=1, progress=False))
    run_annotate(AnnotateConfig([str(tmp / "wiki")], str(tmp / "wiki-attrs"), signals=["rps_doc_word_count"],
                                workers=1, progress=False))
    run_select(SelectConfig(directory=str(tmp / "wiki-attrs"), output=str(tmp / "wiki-sel"), recipe=str(recipe),
                            workers=1, progress=False))
    from pydoc_data.topics import topics  # the pydoc help topics: the bundled sample's first part

    train_bpe([topics[k] for k in sorted(topics)], 500, str(tmp / "tok.json"))
    return {"root": tmp, "web": tmp / "web-attrs", "wiki": tmp / "wiki-sel", "recipe": recipe,
            "tok": tmp / "tok.json"}


def mix_file(path: Path, corpus: dict[str, Path], **top: Any) -> Path:
    """A mix file of web (recipe over the web attributes) and wiki (the selection), with `top`
    overriding the top-level keys and `web=`/`wiki=` dicts the sources' keys."""
    web = {"name": "web", "attributes": str(corpus["web"]), "recipe": str(corpus["recipe"]), "share": 0.7,
           "max_epochs": 1} | top.pop("web", {})
    wiki = {"name": "wiki", "selection": str(corpus["wiki"]), "share": 0.3, "max_epochs": 3} | top.pop("wiki", {})
    data = {"tokens": 60000, "tokenizer": str(corpus["tok"]), "seed": 1, "shard_size": "10K tokens",
            "format": "jsonl.zst", "sources": [web, wiki]} | top
    data = {k: v for k, v in data.items() if v is not None}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


_BUILT: dict[str, dict[str, Path]] = {}


def corpus(dev_dir: Path, tmp_path_factory: Any) -> dict[str, Path]:
    """`build`, once per test process (both mix test modules share it; tests copy what they change)."""
    if "c" not in _BUILT:
        _BUILT["c"] = build(dev_dir, tmp_path_factory.mktemp("mixcorpus"))
    return _BUILT["c"]
