"""Issue 10 item 3: the docs are tests. Every shell command of `README.md` and `docs/*.md`, and
every example line of a `--help` text, runs on the bundled sample corpus.

Each doc gets its own working folder, made from the sample corpus (`textsieve sample`), where
the names the docs use exist:

* `data/` = the sample split into three `.jsonl.gz` shards; `sample.jsonl.gz` = the whole sample;
* `wiki.jsonl.gz` = a target corpus: Python's help topics (`pydoc_data`), prose like Wikipedia's;
* `ccnet.jsonl.gz` = the sample's low-quality part (Debian copyright files, raw Python source);
* `crawl.warc.wet.gz` = 40 sample documents as a Common Crawl WET file;
* `blacklists/` = a tiny UT1-style folder; `examples/` = the repository's examples;
* `rpv2-release/` = the sample in RedPajama-V2's released layout (`_docs_release.py`).

Blocks of one doc run in order in one folder, so later blocks see earlier outputs, as a reader
following the doc would. Each block is one test (id `doc#index-heading`); a block run alone runs
the earlier blocks of its doc first. `textsieve` is the installed entry point of this Python
(a shim on PATH), `python` this interpreter. Markers for commands that cannot run here are
described in `_docs_commands.py`; their number is capped by `MAX_ILLUSTRATIVE`.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from _docs_commands import Block, Command, doc_blocks, help_examples
from _docs_release import build_docs_release
from _shared import SHARED

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_ILLUSTRATIVE = 8  # commands shown but not run; each needs a reason in the doc
COMMAND_TIMEOUT_S = 120
TAIL_LINES = 8
REPORT_ENV = "TEXTSIEVE_DOCS_REPORT"  # set to a path: write every command's outcome there as Markdown


def _all_blocks() -> list[Block]:
    blocks: list[Block] = []
    for path in DOCS:
        blocks += doc_blocks(path, ROOT)[0]
    return blocks


def _help_blocks() -> list[Block]:
    from textsieve.cli import build_parser

    return help_examples(build_parser())


BLOCKS = _all_blocks()
HELP_BLOCKS = _help_blocks()


# --------------------------------------------------------------------------- the working folder

def _write_jsonl_gz(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def _write_wet(path: Path, records: list[dict]) -> None:
    """Sample documents as WET `conversion` records, the way Common Crawl ships extracted text."""
    from io import BytesIO

    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for r in records:
            url = f"https://docs.example.org/{r['id']}"
            rec = writer.create_warc_record(url, "conversion", payload=BytesIO(r["text"].encode("utf-8")),
                                            warc_content_type="text/plain")
            writer.write_record(rec)


def _write_crawl(base: Path) -> None:
    """`crawl/`: the sample as web pages in WARC files (`textsieve sample --crawl`), and `pages/`:
    a few of those pages as `.html` files, for the `extract` examples."""
    from textsieve.sample_crawl import build_sample_crawl, page_html

    build_sample_crawl(base / "crawl")
    (base / "pages").mkdir()
    for k, topic in enumerate(("Getting started", "Installing", "Configuration")):
        text = [f"{topic} is the subject of this page, written as a short article with several sentences.",
                "Each paragraph says something about the subject, so the main-content extractor keeps it."]
        (base / "pages" / f"page-{k}.html").write_text(page_html(topic, text), encoding="utf-8")


def _build_base(base: Path) -> None:
    from pydoc_data.topics import topics

    from textsieve.sample import build_sample

    base.mkdir(parents=True)
    sample = base / "sample.jsonl.gz"
    build_sample(sample)
    with gzip.open(sample, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    (base / "data").mkdir()
    for k in range(3):
        _write_jsonl_gz(base / "data" / f"part-{k:04d}.jsonl.gz", records[k::3])
    _write_jsonl_gz(base / "wiki.jsonl.gz",
                    [{"id": f"pydoc/{name}", "text": text} for name, text in sorted(topics.items())])
    _write_jsonl_gz(base / "ccnet.jsonl.gz",
                    [r for r in records if r["source"] in ("debian-copyright", "python-source")])
    _write_wet(base / "crawl.warc.wet.gz", records[::12][:40])
    _write_crawl(base)
    for category, domains in (("adult", ["adult.example.com"]), ("gambling", ["casino.example.net"])):
        (base / "blacklists" / category).mkdir(parents=True)
        (base / "blacklists" / category / "domains").write_text("\n".join(domains) + "\n")
    shutil.copytree(ROOT / "examples", base / "examples",
                    ignore=shutil.ignore_patterns("sample.jsonl.gz", "sample-run", "*.html"))
    scratch = base.parent / "_rpv2_scratch"  # removed once the release is written
    build_docs_release(records, base / "rpv2-release", scratch, _word_lists(scratch))


#: Stand-in word lists for a machine without ../shared: a few real stop words per language and
#: two LDNOOBW entries, so recipes over the word-list signals (c4, gopher) run. Values differ
#: from RPv2's; this test checks that commands run, `test_annotate.py` checks values.
_STAND_IN_STOP_WORDS = {"en": ["the", "and", "of", "to", "a", "in", "is", "that", "it", "for"],
                        "de": ["der", "die", "und", "das", "ist", "nicht", "ein", "zu"],
                        "fr": ["le", "la", "et", "les", "des", "est", "un", "une"],
                        "es": ["el", "la", "de", "que", "y", "en", "los", "un"],
                        "it": ["il", "di", "che", "e", "la", "un", "per", "non"]}


def _word_lists(scratch: Path) -> Path:
    """The word lists a user would install with `textsieve resources add DIR` (README, Word
    lists): the real ones from the shared data when present, else stand-ins."""
    real = SHARED / "golden" / "rpv2_resources"
    if (real / "stopwords").is_dir() and (real / "ldnoobw").is_dir():
        return real
    folder = scratch / "_wordlists"
    (folder / "stopwords").mkdir(parents=True)
    (folder / "ldnoobw").mkdir()
    for lang, words in _STAND_IN_STOP_WORDS.items():
        (folder / "stopwords" / f"{lang}.json").write_text(json.dumps(words))
        (folder / "ldnoobw" / lang).write_text("2g1c\nacrotomophilia\n")
    return folder


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]


def _one_cpu(cpu: int | None = None) -> None:
    """Run a command on one CPU: `--workers` then defaults to 1, so no command pays for a
    process pool's start-up on 500 documents. Docs run side by side, each on a CPU of its own
    (`DocRunner.prefetch`)."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu if cpu is not None else min(os.sched_getaffinity(0))})


def _shims(folder: Path) -> Path:
    """`textsieve` and `python` on PATH: this interpreter, whatever the venv's layout."""
    folder.mkdir(parents=True)
    for name, line in (("textsieve", f'exec "{sys.executable}" -m textsieve.cli "$@"'),
                       ("python", f'exec "{sys.executable}" "$@"'), ("python3", f'exec "{sys.executable}" "$@"')):
        shim = folder / name
        shim.write_text(f"#!/bin/sh\n{line}\n")
        shim.chmod(0o755)
    return folder


@dataclass
class Outcome:
    command: Command
    returncode: int | None  # None: not run (illustrative, or nothing left after dropping install steps)
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""

    def describe(self) -> str:
        def tail(text: str) -> str:
            lines = [ln for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
            return "\n".join("      " + ln for ln in lines[-TAIL_LINES:]) or "      (none)"

        return (f"  {self.command.source}: `{self.command.run}` exited {self.returncode} "
                f"after {self.seconds:.1f} s\n    stderr (last lines):\n{tail(self.stderr)}\n"
                f"    stdout (last lines):\n{tail(self.stdout)}")


class DocRunner:
    """Runs the blocks of each doc in order, once, in that doc's working folder."""

    def __init__(self, base: Path, scratch: Path, shims: Path):
        self.base, self.scratch = base, scratch
        self.env = {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
                    "PYTHONUNBUFFERED": "1", "COLUMNS": "100", "XDG_CACHE_HOME": str(scratch / "_cache")}
        self.env.pop("TEXTSIEVE_RESOURCES", None)
        self.results: dict[str, list[Outcome]] = {}
        self._locks: dict[str, threading.RLock] = defaultdict(threading.RLock)  # one doc's folder at a time
        self._locks_lock = threading.Lock()
        self._cpu = threading.local()  # the CPU this thread's commands run on
        self._pool: ThreadPoolExecutor | None = None
        setup = Command("word lists", "", f"textsieve resources add {_word_lists(scratch)}")
        outcome = self._run(setup, scratch, None)
        assert outcome.returncode == 0, outcome.describe()

    def folder(self, doc: str) -> Path:
        path = self.scratch / doc.replace("/", "_").replace(".", "_")
        if not path.exists():
            shutil.copytree(self.base, path, symlinks=True)
        return path

    def _lock(self, doc: str) -> threading.RLock:
        with self._locks_lock:
            return self._locks[doc]

    def outcomes(self, block: Block, blocks: list[Block]) -> list[Outcome]:
        with self._lock(block.doc):  # a doc's blocks run in order, in one thread at a time
            for earlier in blocks:
                if earlier.doc == block.doc and earlier.index < block.index and earlier.test_id not in self.results:
                    self.outcomes(earlier, blocks)
            if block.test_id not in self.results:
                cwd = self.folder(block.doc)
                self.results[block.test_id] = [self._run(c, cwd, block.illustrative) for c in block.commands]
            return self.results[block.test_id]

    def prefetch(self, chains: list[list[tuple[Block, list[Block]]]]) -> None:
        """Run the docs' blocks in the background, one doc per thread, each thread's commands on a
        CPU of its own (the tests then find their outcomes ready): the docs are independent
        folders, so the docs test takes about 1/CPUs of its serial time."""
        cpus = _cpus()

        def run_chain(k: int, chain: list[tuple[Block, list[Block]]]) -> None:
            for block, blocks in chain:
                self._cpu.id = cpus[k % len(cpus)]
                self.outcomes(block, blocks)

        slots = iter(range(10**6))
        self._pool = ThreadPoolExecutor(max(1, min(len(cpus), len(chains))))
        for chain in sorted(chains, key=len, reverse=True):  # the longest (README + --help) first
            self._pool.submit(lambda c=chain: run_chain(next(slots), c))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def write_report(self, path: Path) -> None:
        """Every command, its exit code, time and last output lines, as Markdown: what the docs'
        commands print on the sample corpus (for release notes and for reading failures)."""
        out = ["# Documented commands on the sample corpus", ""]
        for test_id, outcomes in self.results.items():
            out += [f"## {test_id}", ""]
            for o in outcomes:
                c = o.command
                if o.returncode is None:
                    why = (c.illustrative or "illustrative block") if c.run else "install steps only"
                    out += [f"- `{c.shown}` ({c.source}): not run: {why}"]
                    continue
                last = [ln for ln in (o.stderr + "\n" + o.stdout).replace("\r", "\n").splitlines() if ln.strip()]
                skipped = f"; install steps left out: `{' && '.join(c.dropped)}`" if c.dropped else ""
                out += [f"- `{c.run}` ({c.source}): exit {o.returncode}, {o.seconds:.1f} s{skipped}", "", "  ```text",
                        *("  " + ln for ln in last[-TAIL_LINES:]), "  ```"]
            out.append("")
        path.write_text("\n".join(out), encoding="utf-8")

    def _run(self, command: Command, cwd: Path, block_reason: str | None) -> Outcome:
        if command.illustrative is not None or block_reason is not None or not command.run:
            return Outcome(command, None)
        start = time.perf_counter()
        try:
            cpu = getattr(self._cpu, "id", None)
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", command.run], cwd=cwd, env=self.env,
                                  capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                                  preexec_fn=lambda: _one_cpu(cpu))
        except subprocess.TimeoutExpired as exc:
            return Outcome(command, -1, time.perf_counter() - start, _text(exc.stdout),
                           _text(exc.stderr) + f"\n(timed out after {COMMAND_TIMEOUT_S} s)")
        return Outcome(command, proc.returncode, time.perf_counter() - start, proc.stdout, proc.stderr)


def _text(data: bytes | str | None) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")


def _as_readme(block: Block) -> Block:
    """A `--help` example block, run in the README's folder after its blocks."""
    return Block(doc="README.md", index=10_000 + block.index, line=0, heading=block.heading, commands=block.commands)


def _chains(items: list[pytest.Item]) -> list[list[tuple[Block, list[Block]]]]:
    """The selected docs tests' blocks, per doc folder, in run order (README's, then --help's)."""
    chains: dict[str, list[tuple[Block, list[Block]]]] = {}
    helps = []
    for item in items:
        block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
        if not isinstance(block, Block) or item.path.name != Path(__file__).name:
            continue
        if item.originalname == "test_help_examples_run":
            helps.append(block)
        else:
            chains.setdefault(block.doc, []).append((block, BLOCKS))
    if helps:
        readme = chains.setdefault("README.md", [])
        readme += [(b, BLOCKS) for b in BLOCKS if b.doc == "README.md" and (b, BLOCKS) not in readme]
        readme += [(_as_readme(b), [_as_readme(b)]) for b in helps]
    return list(chains.values())


@pytest.fixture(scope="session")
def doc_runner(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[DocRunner]:
    scratch = tmp_path_factory.mktemp("docs")
    _build_base(scratch / "_base")
    runner = DocRunner(scratch / "_base", scratch, _shims(scratch / "_bin"))
    runner.prefetch(_chains(request.session.items))
    yield runner
    runner.close()
    if os.environ.get(REPORT_ENV):
        runner.write_report(Path(os.environ[REPORT_ENV]))


def _check(block: Block, outcomes: list[Outcome]) -> None:
    failed = [o for o in outcomes if o.returncode not in (0, None)]
    if failed:
        report = "\n".join(o.describe() for o in failed)
        pytest.fail(f"{len(failed)} of {len(outcomes)} command(s) of {block.test_id} "
                    f"({block.doc}:{block.line}) failed:\n{report}", pytrace=False)


# --------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("block", BLOCKS, ids=[b.test_id for b in BLOCKS])
def test_doc_block_runs(block: Block, doc_runner: DocRunner) -> None:
    _check(block, doc_runner.outcomes(block, BLOCKS))


@pytest.mark.parametrize("block", HELP_BLOCKS or [None], ids=[b.test_id for b in HELP_BLOCKS] or ["none"])
def test_help_examples_run(block: Block | None, doc_runner: DocRunner) -> None:
    """Example lines of `--help` descriptions and epilogs, run after the README's blocks (the
    examples name the same `data/`, `attrs/` ... the README makes)."""
    if block is None:
        pytest.skip("no `textsieve ...` example lines in any --help description or epilog yet")
    for readme in (b for b in BLOCKS if b.doc == "README.md"):
        doc_runner.outcomes(readme, BLOCKS)
    help_block = _as_readme(block)
    _check(block, doc_runner.outcomes(help_block, [help_block]))


def test_every_command_block_is_tagged() -> None:
    """A fence without a language hides its commands from this test: tag it ```sh."""
    untagged = [where for path in DOCS for where in doc_blocks(path, ROOT)[1]]
    assert not untagged, f"code blocks with commands but no ```sh tag: {untagged}"


def test_illustrative_commands_are_few_and_say_why() -> None:
    marked = [(b, c) for b in BLOCKS + HELP_BLOCKS for c in b.commands
              if c.illustrative is not None or b.illustrative is not None]
    no_reason = [c.source for b, c in marked if not (c.illustrative or b.illustrative or "").strip()]
    assert not no_reason, f"illustrative markers without a reason: {no_reason}"
    assert len(marked) <= MAX_ILLUSTRATIVE, (
        f"{len(marked)} illustrative commands (at most {MAX_ILLUSTRATIVE}): "
        + "; ".join(f"{c.source} ({c.illustrative or b.illustrative})" for b, c in marked))
    runnable = sum(1 for b in BLOCKS for c in b.commands if c.run and c.illustrative is None and b.illustrative is None)
    assert runnable >= 20, f"only {runnable} doc commands run; did the extraction break?"


def test_extraction_rules(tmp_path: Path) -> None:
    """The parser behind the tests above: markers, console prompts, continuations, install steps."""
    doc = tmp_path / "doc.md"
    doc.write_text("\n".join([
        "# Title", "```sh",
        "python3 -m venv .venv && .venv/bin/pip install '.[x]' && .venv/bin/textsieve sample s.jsonl.gz",
        "textsieve select a/ --recipe c4 \\", "    -o out/   # C4 with '#' in a comment", "# a comment line",
        "textsieve annotate s3://b/ -o a/  # illustrative: needs an S3 bucket", "```", "",
        "## Console", "<!-- illustrative: needs a Ray cluster -->", "", "```console",
        "$ textsieve run p.yaml --executor ray",
        "output line", "```", "```", "textsieve signals", "```", "```yaml", "textsieve: not a command", "```"]))
    blocks, untagged = doc_blocks(doc, tmp_path)
    assert untagged == ["doc.md:17"]
    first, console = blocks
    assert [c.run for c in first.commands] == ["textsieve sample s.jsonl.gz", "textsieve select a/ --recipe c4 -o out/",
                                               "textsieve annotate s3://b/ -o a/"]
    assert first.commands[0].dropped == ["python3 -m venv .venv", ".venv/bin/pip install '.[x]'"]
    assert first.commands[2].illustrative == "needs an S3 bucket" and first.commands[1].illustrative is None
    assert first.commands[1].source == "doc.md:4" and first.test_id == "doc.md#0-title"
    assert console.illustrative == "needs a Ray cluster"
    assert [c.run for c in console.commands] == ["textsieve run p.yaml --executor ray"]


def test_help_example_lines_are_found() -> None:
    import argparse

    p = argparse.ArgumentParser(prog="textsieve")
    sub = p.add_subparsers()
    sub.add_parser("dsir", description="Fit weights.", epilog="Example:\n  $ textsieve dsir fit --target "
                   "wiki.jsonl.gz --raw attrs/ --name wiki\nnot textsieve here")
    [block] = help_examples(p)
    assert block.heading == "textsieve dsir"
    assert [c.run for c in block.commands] == ["textsieve dsir fit --target wiki.jsonl.gz --raw attrs/ --name wiki"]
