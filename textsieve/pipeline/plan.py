"""`textsieve run --dry-run`: the stages in order, the input shards, and per stage a rough
estimate of peak memory and disk written, before anything runs.

The document count is estimated from the first documents of the first shard (bytes read per
document); each stage's row comes from its descriptor's `estimate`, beside the stage's code
(per-document constants measured on the dev corpus, or, for dedup, the formulas the dedup stages
use to size their on-disk partitions). This module names no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textsieve.pipeline.build import SPECS, build_named, layout
from textsieve.pipeline.config import STAGES, PipelineConfig, read_settings
from textsieve.stages.planning import Corpus, StagePlan, human

__all__ = ["Plan", "StagePlan", "human", "make_plan"]


@dataclass
class Plan:
    source: str
    output: str
    executor: str
    shards: int
    input_bytes: int
    docs_estimate: int
    docs_note: str
    stages: list[StagePlan] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"pipeline {self.source} -> {self.output} (executor: {self.executor})",
                 f"inputs: {self.shards} shard(s), {human(self.input_bytes)}; ~{self.docs_estimate:,} documents "
                 f"({self.docs_note})",
                 f"  {'#':>2}  {'stage':<16} {'memory':>10} {'disk':>10}  what"]
        for i, s in enumerate(self.stages, 1):
            lines.append(f"  {i:>2}  {s.name:<16} {'~' + human(s.memory):>10} {'~' + human(s.disk):>10}  {s.does}"
                         + (f" [{s.note}]" if s.note else ""))
        lines.append(f"total disk ~{human(sum(s.disk for s in self.stages))}; peak memory "
                     f"~{human(max((s.memory for s in self.stages), default=0))} (estimates)")
        return "\n".join(lines)


def _estimate_docs(cfg: PipelineConfig, shards) -> tuple[int, int, str]:
    """(documents, mean characters per document, how it was estimated)."""
    from textsieve.io.readers import ReadOptions, ShardReader

    if not shards:
        fed = [f"`{key}:`" for key in (s.section.removesuffix("[]") for s in STAGES if s.feeds_inputs)
               if cfg.data.get(key)]
        return 0, 0, f"made by the {', '.join(fed)} section; counted when it runs" if fed else "no input"
    read = read_settings(cfg.data, next(s for s in STAGES if s.always))  # as the always-running stage reads
    opts = ReadOptions(text_field=read["text_field"], id_field=read["id_field"], lang_field=read["lang_field"],
                       on_error="skip")
    reader = ShardReader(shards[0], opts)
    total = sum(s.size for s in shards)
    # bytes_read moves in read-buffer steps (1 MiB): when it moves on, the documents decoded
    # so far (minus the current one) came from the previous buffers.
    n = chars = steps = 0
    prev, per = 0, 0.0
    for doc in reader:
        if reader.bytes_read != prev:
            if prev:
                per, steps = prev / max(n, 1), steps + 1
            prev = reader.bytes_read
        n += 1
        chars += len(doc.text)
        if steps >= 2 or n >= 100_000:
            break
    else:  # the whole first shard was read
        per, steps = (shards[0].size or 1) / max(n, 1), -1
    if n == 0:
        return 0, 0, f"no documents in {shards[0].rel}"
    if per <= 0:
        per = (reader.bytes_read or 1) / n
    how = f"counted in {shards[0].rel}" if steps == -1 else f"from the first {n:,} documents of {shards[0].rel}"
    if steps == -1 and len(shards) == 1:
        return n, chars // n, how
    return int(round(total / max(per, 1e-9))), chars // n, how


def make_plan(cfg: PipelineConfig) -> Plan:
    """Every stage's own estimate (its descriptor's `estimate`) from the estimated corpus size."""
    from textsieve.io.paths import expand_inputs
    from textsieve.pipeline.columns import check_rules

    check_rules(cfg)  # every recipe rule against the columns the planned stages will write
    d = cfg.data
    shards = expand_inputs(d["inputs"])
    docs, mean_chars, note = _estimate_docs(cfg, shards)
    plan = Plan(cfg.source, cfg.output, d["executor"], len(shards), sum(s.size for s in shards), docs, note)
    corpus = Corpus(layout(cfg), docs, mean_chars)
    for name in cfg.stages():  # the stages `textsieve run` runs, in its order
        estimate = SPECS[name.partition(":")[0]].estimate
        plan.stages.append(estimate(build_named(cfg, name), corpus) if estimate
                           else StagePlan(name.replace("_", " "), "(no estimate)", 0, 0))
    return plan
