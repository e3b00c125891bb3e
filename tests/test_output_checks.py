"""No command writes over what it reads: every registered command that writes (an `--output`,
`-o`, a positional OUTPUT or `dsir fit --model-path`) declares it with `commands.options.writes`, and
the CLI then refuses an output that is, lies inside or contains one of its inputs before the
command runs (issue 25: `learn -o` replaced a published attribute shard with a JSON model;
`train tokenizer c.jsonl -o c.jsonl` overwrote the training corpus)."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path

import pytest

from textsieve.cli import build_parser, main
from textsieve.commands.options import OUTPUT_DESTS


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every command that runs (a parser without subcommands, or one
    with its own `func`, such as `learn` beside `learn apply`)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if path and (not subs or "func" in parser._defaults):
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


LEAVES = list(_leaves(build_parser()))
WRITERS = [(path, p) for path, p in LEAVES if any(a.dest in OUTPUT_DESTS for a in p._actions)]


def test_every_command_with_an_output_declares_what_it_writes_and_reads():
    assert len(WRITERS) >= 20  # extract, annotate, dedup exact, select, dsir fit, learn, train x5, export x3, ...
    undeclared = [" ".join(path) for path, p in WRITERS if "_writes" not in p._defaults]
    assert not undeclared, f"commands that write without the output check: {undeclared}"
    for path, p in WRITERS:
        command, output, _, inputs, _ = p._defaults["_writes"]
        assert command == " ".join(path) and output in OUTPUT_DESTS


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _argv(path: tuple[str, ...], parser: argparse.ArgumentParser, target: Path, inside: Path) -> list[str]:
    """The command with every input it declares set to `target` and its output set to `inside`
    (a path equal to or inside an input), and its other required arguments given a value of
    their type."""
    _, output, _, inputs, _ = parser._defaults["_writes"]
    argv: list[str] = [*path]
    positionals = [a for a in parser._actions if not a.option_strings and a.dest != "help"
                   and not isinstance(a, argparse._SubParsersAction)]
    for a in positionals:
        argv.append(str(inside if a.dest == output else target))
    for a in parser._actions:
        if not a.option_strings or a.dest in ("help",):
            continue
        if a.dest == output:
            argv += [a.option_strings[-1], str(inside)]
        elif a.dest in inputs and a.nargs != 0:
            argv += [a.option_strings[-1], str(target)]
        elif a.required:
            value = "1" if a.type in (int, float) else (a.choices[0] if a.choices else str(target))
            argv += [a.option_strings[-1], str(value)]
    return argv


@pytest.mark.parametrize("path, parser", [w for w in WRITERS if w[1]._defaults["_writes"][3]],
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_an_output_equal_to_an_input_is_refused_and_the_input_kept(path, parser, tmp_path, capsys):
    corpus = tmp_path / "in" / "c.jsonl.gz"
    corpus.parent.mkdir()
    with gzip.open(corpus, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "a", "text": "one document"}) + "\n")
    before = _sha(corpus)
    for inside in (corpus, corpus.parent / "sub" / "out.json"):  # the input itself, then a place inside it
        rc = main(_argv(path, parser, corpus.parent if inside != corpus else corpus, inside))
        err = capsys.readouterr().err
        assert rc == 2, (path, err)
        assert ("is the input" in err or "lies inside the input" in err) and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert _sha(corpus) == before and not (corpus.parent / "sub").exists()


def test_learn_onto_a_published_attribute_shard_and_train_tokenizer_onto_its_corpus(tmp_path, capsys):
    """The two reported cases, on real files: the sample corpus and its annotate folder."""
    from textsieve.sample import build_sample

    corpus = tmp_path / "c.jsonl.gz"
    build_sample(corpus, max_docs=40)
    assert main(["annotate", str(corpus), "-o", str(tmp_path / "attrs"), "--signals", "rps_doc_word_count", "-q",
                 "--workers", "1"]) == 0
    shard = tmp_path / "attrs" / "docs" / "c.parquet"
    shard_sha, corpus_sha = _sha(shard), _sha(corpus)
    rc = main(["learn", "--positive", str(tmp_path / "attrs"), "--negative", str(tmp_path / "attrs"),
               "-o", str(shard)])
    err = capsys.readouterr().err
    assert rc == 2 and "learn: the output" in err and "lies inside the input" in err, err
    rc = main(["train", "tokenizer", str(corpus), "-o", str(corpus), "--vocab", "300"])
    err = capsys.readouterr().err
    assert rc == 2 and "train tokenizer: the output" in err and "is the input" in err, err
    assert _sha(shard) == shard_sha and _sha(corpus) == corpus_sha


def test_the_api_refuses_a_tokenizer_written_over_its_corpus(tmp_path):
    import textsieve as ts
    from textsieve.io.overlap import OverlapError
    from textsieve.sample import build_sample

    corpus = tmp_path / "c.jsonl.gz"
    build_sample(corpus, max_docs=30)
    before = _sha(corpus)
    with pytest.raises(OverlapError, match="train tokenizer: the output file .* is the input"):
        ts.train_tokenizer(str(corpus), output=str(corpus), vocab=300)
    assert _sha(corpus) == before


def test_an_edited_annotate_json_is_refused_naming_it(tmp_path, capsys):
    """Issue 25 item 4: editing annotate.json's `input_roots` made `select` open an arbitrary file
    (only the id/length comparison stopped it). Bookkeeping files are checked against the
    manifest's SHA-256 on every read: the edited file is refused, naming it; a restored one reads."""
    from textsieve.sample import build_sample

    corpus = tmp_path / "in" / "c.jsonl.gz"
    corpus.parent.mkdir()
    build_sample(corpus, max_docs=40)
    attrs = tmp_path / "attrs"
    assert main(["annotate", str(corpus.parent), "-o", str(attrs), "--signals", "rps_doc_word_count", "-q",
                 "--workers", "1"]) == 0
    summary = attrs / ".textsieve" / "annotate.json"
    published = summary.read_bytes()
    doc = json.loads(published)
    doc["input_roots"] = ["/"]
    summary.write_text(json.dumps(doc, indent=2))
    (tmp_path / "r.yaml").write_text("name: words\nrules:\n  words: rps_doc_word_count >= 5\n")
    recipe = ["--recipe", str(tmp_path / "r.yaml"), "-q"]
    rc = main(["select", str(attrs), "-o", str(tmp_path / "sel"), *recipe])
    err = capsys.readouterr().err
    assert rc == 2 and f"{summary}: changed since it was published" in err and "Traceback" not in err, err
    assert not (tmp_path / "sel").exists()
    summary.write_bytes(published)
    assert main(["select", str(attrs), "-o", str(tmp_path / "sel"), *recipe]) == 0
