"""The `dedup paragraphs` stage: exact paragraph dedup as dolma's `dedupe --paragraphs` does it,
the cheap sibling of `dedup substring`.

dolma (`dolma dedupe`, paragraph mode) splits each text on newlines, tests each non-empty
paragraph against a Bloom filter and then adds it, so the first occurrence in processing order is
kept and every later one (in a later document or the same one) is a duplicate span. Here the
order is the corpus order (shards sorted by path, then records), so the result does not depend on
workers; the rule runs exactly (key partitions on disk, as `dedup lines`) or, with `--bloom-fp`,
through one Bloom filter as dolma's (a first occurrence wrongly flagged with probability <= RATE).
Paragraphs are annotate's lines (`[^\\n]*\\n|[^\\n]+$`), compared as written (`--normalize none`,
dolma's exact match) or with `dedup lines`' normalisations; a blank paragraph is never a duplicate.

Output `DIR/sets/dedup_paragraphs/<rel>.parquet`, rows in annotate's order, one span per line as
the `rps_lines_*` signals: `dup_paragraphs_seen` (score 1 = a repeat of an earlier paragraph),
`dup_paragraphs_count`, `_chars`, `_frac`. Cut the repeats in a recipe with
`line: dup_paragraphs_seen == 0`. The passes, memory, resume and refusal are `dedup lines`'
(`stages.dedup.lines.run_line_set`).
"""

from __future__ import annotations

from dataclasses import dataclass

from textsieve.exec.budget import memory_plan
from textsieve.options import memory_option, option, progress_option
from textsieve.stages.dedup.lines import LINE_CHARS, LINE_KEY_BYTES, LineSet, LinesResult, output_schema, run_line_set
from textsieve.stages.descriptor import PROGRESS_REASON, CliSpec, Outcome, Stage, set_named
from textsieve.stages.planning import SET_BYTES_PER_DOC, Corpus, PlannedSet, StagePlan

PARAGRAPHS = LineSet("dedup_paragraphs", "dup_paragraphs", "dedup paragraphs", keep_first=True)


@dataclass
class ParagraphsConfig:
    """Everything `textsieve dedup paragraphs` takes (CLI, YAML and `ts.dedup_paragraphs`)."""

    directory: str = option(help="an annotate output folder (texts are re-read from its sources)", positional=True,
                            metavar="DIR")
    normalize: str = option("none", choices=("none", "ccnet", "punct"),
                            help="paragraph text compared: none = as written (dolma's exact match); ccnet / punct = "
                                 "dedup lines' normalisations")
    bloom_fp: float | None = option(None, help="one Bloom filter with this false-positive rate, tested then filled "
                                               "in corpus order as dolma's, instead of exact key partitions on "
                                               "disk (a first occurrence is flagged with probability <= RATE)",
                                    metavar="RATE")
    memory: int | str = memory_option("larger key tables are sorted on disk in several passes (same output)")
    tmp_dir: str | None = option(None, help="local folder for work files (paragraph keys, partitions, flags); "
                                            "default: .textsieve-work in the annotate folder; a killed run's are "
                                            "removed by the next run", metavar="DIR")
    workers: int | None = option(None, help="processes reading and hashing shards, one shard each (default: all "
                                            "cores)")
    progress: bool = progress_option()
    overwrite: bool = option(False, help="replace a set made with other settings (normalize, bloom-fp), and "
                                         "recompute even when it is up to date")


def run_paragraphs(cfg: ParagraphsConfig) -> LinesResult:
    """Flag every paragraph that repeats an earlier one; publish `sets/dedup_paragraphs`."""
    return run_line_set(cfg, PARAGRAPHS)


def _pipeline_run(c: ParagraphsConfig) -> Outcome:
    r = run_paragraphs(c)
    return Outcome({"documents": r.documents, "paragraphs": r.lines, "duplicate_paragraphs": r.duplicate_lines})


def _estimate(c: ParagraphsConfig, e: Corpus) -> StagePlan:
    lines = e.docs * max(e.mean_chars // LINE_CHARS, 1)
    return StagePlan("dedup paragraphs", f"paragraph hashes ({c.normalize}), first occurrence kept",
                     min(memory_plan("dedup paragraphs", c.memory, 0).total, lines * LINE_KEY_BYTES) + 100_000_000,
                     e.docs * SET_BYTES_PER_DOC + lines * (LINE_KEY_BYTES + 24),
                     f"~{lines:,} paragraphs; key partitions are temporary")


def _report(res: LinesResult) -> str:
    first = (f"dedup paragraphs: already done with these settings ({res.output}); --overwrite to redo\n"
             if res.skipped else "")
    share = res.duplicate_lines / res.lines if res.lines else 0.0
    return (f"{first}dedup paragraphs: {res.duplicate_lines:,} of {res.lines:,} paragraphs repeat an earlier one "
            f"({100 * share:.1f}%) in {res.documents:,} documents ({res.seconds:.1f} s) -> {res.output}")


CLI = CliSpec(
    help="flag paragraphs that repeat an earlier one (dolma's paragraph dedup)",
    description="Exact paragraph dedup as dolma's: each paragraph (line) that repeats an earlier one in corpus "
                "order is a duplicate, the first occurrence kept; blank paragraphs never are. Exact by default "
                "(keys sorted on disk), or through one Bloom filter with --bloom-fp as dolma. Writes the "
                "line-level span column dup_paragraphs_seen (1 = repeat) and dup_paragraphs_count/_chars/_frac "
                "to DIR/sets/dedup_paragraphs/. Cut them in a recipe: 'line: dup_paragraphs_seen == 0'.",
    examples=("textsieve dedup paragraphs attrs/",
              "textsieve dedup paragraphs attrs/ --bloom-fp 0.0001 --overwrite"),
    report=_report)

STAGE = Stage("dedup_paragraphs", ParagraphsConfig, "dedup.paragraphs", _pipeline_run, order=61,
              call=run_paragraphs, cli_spec=CLI, placed=lambda layout: {"directory": layout.attrs},
              derived={"directory": "always the annotate folder OUT/attrs", "progress": PROGRESS_REASON},
              complete=set_named(PARAGRAPHS.name), estimate=_estimate,
              output_sets=lambda c, layout, where: [PlannedSet(PARAGRAPHS.name, output_schema(PARAGRAPHS))])
