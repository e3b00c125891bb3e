"""`textsieve run --dry-run`: the stages in order, the input shards, and per stage a rough
estimate of peak memory and disk written, before anything runs.

The document count is estimated from the first documents of the first shard (bytes read per
document); everything else follows from it with per-document constants measured on the dev
corpus (15,263 web documents, 20 MB gzipped), or, for dedup, from the same formulas the dedup
stages use to size their on-disk partitions (`dedup.partitions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from textsieve.exec.budget import parse_memory
from textsieve.pipeline.build import attrs_dir, build, selected_dir, train_dir
from textsieve.pipeline.config import PipelineConfig

#: Attribute bytes per document of a full annotate (28 rule signals + 4 MinHash band sets),
#: measured on the dev corpus: 63.3 MB of Parquet for 15,263 documents.
ATTR_BYTES_PER_DOC = 4_150
#: Peak RSS of one annotate worker process (word lists, kernels, a batch), measured on the dev
#: corpus with --workers 1: ~310 MB.
WORKER_BYTES = 310_000_000
#: Peak RSS of one extract worker (the extraction engine, the language-id model, one page) and
#: gzipped output bytes per kept page, measured on the dev WARCs with --workers 1.
EXTRACT_WORKER_BYTES = 250_000_000
EXTRACT_BYTES_PER_DOC = 1_500
#: Characters per line of web text (dev corpus), and bytes per line key of `dedup lines`.
LINE_CHARS = 80
LINE_KEY_BYTES = 24
#: Bytes per document of a dedup/DSIR attribute set (id, shard, row + a few scalar columns).
SET_BYTES_PER_DOC = 60
#: MinHash bands per document of each RPv2 threshold (spec §8: optimal_param).
BANDS = {1.0: 1, 0.9: 5, 0.8: 9, 0.7: 14}


@dataclass
class StagePlan:
    name: str
    does: str
    memory: int
    disk: int
    note: str = ""


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


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n} B"  # pragma: no cover


def _estimate_docs(cfg: PipelineConfig, shards) -> tuple[int, int, str]:
    """(documents, mean characters per document, how it was estimated)."""
    from textsieve.io.readers import ReadOptions, ShardReader

    if not shards:
        return 0, 0, "no input"
    read = cfg.data["read"]
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


@dataclass
class _Estimate:
    """What every stage estimate starts from: the config and the estimated corpus size."""

    cfg: PipelineConfig
    docs: int
    mean_chars: int


def _extract_plan(e: _Estimate, index: int | None) -> StagePlan:
    from textsieve.exec.local import default_workers
    from textsieve.pipeline.build import docs_dir

    ex = build(e.cfg, "extract", progress=False)
    workers = ex.workers or e.cfg.data["workers"] or default_workers()
    return StagePlan("extract", f"engine {ex.engine}: main-content text -> {docs_dir(e.cfg)}",
                     workers * EXTRACT_WORKER_BYTES, e.docs * EXTRACT_BYTES_PER_DOC,
                     f"{workers} worker(s); ~{e.docs:,} response records, pages that are not HTML are left out")


def _annotate_plan(e: _Estimate, index: int | None) -> StagePlan:
    from textsieve.exec.local import default_workers
    from textsieve.stages.annotate_lang import check_lang

    ann = build(e.cfg, "annotate", progress=False)
    check_lang(ann.lang, ann.resources)  # an unknown `annotate.lang` fails the dry run, not stage 1
    workers = ann.workers or default_workers()
    batch = ann.batch_size * max(e.mean_chars, 1) * 4 * 2 * workers  # texts in flight (UCS-4, 2 per worker)
    return StagePlan("annotate", f"signals -> {attrs_dir(e.cfg)}", workers * WORKER_BYTES + batch,
                     e.docs * ATTR_BYTES_PER_DOC, f"{workers} worker(s)")


def _dedup_exact_plan(e: _Estimate, index: int | None) -> StagePlan:
    from textsieve.dedup.partitions import ROW, WORK_BYTES_PER_ROW

    ex = build(e.cfg, "dedup_exact", progress=False)
    if ex.bloom_fp:
        cap = ex.bloom_capacity or e.docs
        bits = int(-cap * math.log(ex.bloom_fp) / (math.log(2) ** 2))
        return StagePlan("dedup exact", "Bloom filter, one pass", bits // 8, e.docs * SET_BYTES_PER_DOC,
                         f"fp rate {ex.bloom_fp}")
    budget = parse_memory(ex.memory)
    return StagePlan("dedup exact", f"normalize={ex.normalize}: content keys, on-disk groups",
                     min(budget, e.docs * WORK_BYTES_PER_ROW), e.docs * (ROW.itemsize + 2 * SET_BYTES_PER_DOC),
                     f"memory budget {human(budget)}; key partitions are temporary")


def _dedup_fuzzy_plan(e: _Estimate, index: int | None) -> StagePlan:
    from textsieve.dedup.partitions import ROW, WORK_BYTES_PER_ROW

    fz = build(e.cfg, "dedup_fuzzy", progress=False)
    budget = parse_memory(fz.memory)
    rows = e.docs * sum(BANDS.get(round(float(t), 1), 9) for t in fz.thresholds)
    return StagePlan("dedup fuzzy", f"MinHash-LSH at {', '.join(map(str, fz.thresholds))}",
                     min(budget, rows * WORK_BYTES_PER_ROW) + 16 * e.docs,
                     rows * ROW.itemsize + e.docs * SET_BYTES_PER_DOC, f"{rows:,} band rows, partitions are temporary")


def _dedup_semantic_plan(e: _Estimate, index: int | None) -> StagePlan:
    """Semantic dedup spills each document's float16 vector (512 B at 256-d) plus its ids into
    per-cluster partitions; memory is the --memory budget at most (union-find: ~16 B per doc)."""
    sc = build(e.cfg, "dedup_semantic", progress=False)
    budget = parse_memory(sc.memory)
    spill = e.docs * (2 * 256 + 24)
    return StagePlan("dedup semantic", f"SemDeDup at eps {', '.join(map(str, sc.eps))}",
                     min(budget, spill) + 16 * e.docs, spill + e.docs * SET_BYTES_PER_DOC,
                     "per-cluster partitions are temporary")


def _dedup_lines_plan(e: _Estimate, index: int | None) -> StagePlan:
    ln = build(e.cfg, "dedup_lines", progress=False)
    budget = parse_memory(ln.memory)
    lines = e.docs * max(e.mean_chars // LINE_CHARS, 1)
    group = f"groups of {ln.group_shards} shard(s)" if ln.group_shards else "one group"
    return StagePlan("dedup lines", f"CCNet line hashes ({ln.normalize}), {group}",
                     min(budget, lines * LINE_KEY_BYTES) + 100_000_000,
                     e.docs * SET_BYTES_PER_DOC + lines * (LINE_KEY_BYTES + 24),
                     f"~{lines:,} lines; key partitions are temporary")


def _dsir_plan(e: _Estimate, index: int | None) -> StagePlan:
    c = build(e.cfg, "dsir", progress=False, index=index)
    ids = e.docs * max(e.mean_chars // 5, 1) * 2 * 4  # ~1 token per 5 chars, n-gram ids, int32 each
    on = f", raw side on recipe {c.recipe.name}'s survivors" if c.recipe is not None else ""
    return StagePlan(f"dsir:{c.name}", f"fit toward {len(c.targets)} target input(s){on}",
                     min(c.memory_mb * 2**20, ids) + 2 * 8 * c.buckets, e.docs * SET_BYTES_PER_DOC)


def _select_plan(e: _Estimate, index: int | None) -> StagePlan:
    sel = build(e.cfg, "select", progress=False)
    parts = [f"recipe {sel.recipe.name} ({len(sel.recipe.rules)} rules)"] if sel.recipe else []
    if sel.dsir:
        parts.append(f"DSIR resample toward {', '.join(n for n, _ in sel.dsir)}"
                     + (" over its survivors" if sel.recipe else ""))
    what = ", then ".join(parts)
    return StagePlan("select", f"{what} -> {selected_dir(e.cfg)}", 100 * e.docs + 200_000_000,
                     e.docs * e.mean_chars, "disk: at most every document's text once")


def _doc_set_plan(kind: str, does: str, per_char: float = 0.0) -> Callable[[_Estimate, int | None], StagePlan]:
    """A per-document set's estimate: workers hold one batch of texts; the set is small."""
    def plan(e: _Estimate, index: int | None) -> StagePlan:
        return StagePlan(kind, does, 200_000_000, int(e.docs * (SET_BYTES_PER_DOC + per_char * e.mean_chars)))
    return plan


def _embed_plan(e: _Estimate, index: int | None) -> StagePlan:
    """A worker holds the model (~130 MB as float32) and its word cache; a 256-d float16 vector is 512 B."""
    return StagePlan("embed", "one embedding per document -> _embed_MODEL", 400_000_000,
                     int(e.docs * (SET_BYTES_PER_DOC + 2 * 256)))


def _learn_plan(e: _Estimate, index: int | None) -> StagePlan:
    """`learn apply`: a worker holds one batch of texts and the model; the set is one float per doc."""
    from textsieve.pipeline.columns import learn_set
    from textsieve.stages.learn_apply import learn_label

    set_name = learn_set(e.cfg, index or 0)[0]
    label = learn_label(e.cfg.data["learn"][index or 0])
    return StagePlan(f"learn:{label}", f"the model's probability per document -> _{set_name}", 200_000_000,
                     e.docs * SET_BYTES_PER_DOC)


def _mix_plan(e: _Estimate, index: int | None) -> StagePlan:
    mx = build(e.cfg, "mix", progress=False)
    return StagePlan("mix", f"mix -> {train_dir(e.cfg)} (shuffled shards + manifest.json)",
                     parse_memory(mx.memory) + 100_000_000, 2 * e.docs * e.mean_chars,
                     "disk: the selected text once in shards, once in temporary buckets")


#: per stage kind (as `textsieve run` names them, `dsir` for `dsir:NAME`): its estimate; a
#: stage without one is listed with zeros
ESTIMATES: dict[str, Callable[[_Estimate, int | None], StagePlan]] = {
    "extract": _extract_plan, "annotate": _annotate_plan, "dedup_exact": _dedup_exact_plan,
    "dedup_fuzzy": _dedup_fuzzy_plan, "dedup_lines": _dedup_lines_plan, "dsir": _dsir_plan, "select": _select_plan,
    "decontaminate": _doc_set_plan("decontaminate", "n-gram overlap with the benchmarks -> _decontam", 0.1),
    "pii": _doc_set_plan("pii", "personal data spans -> _pii"),
    "tokens": _doc_set_plan("tokens", "real token counts -> _tokens_NAME"), "mix": _mix_plan,
    "embed": _embed_plan, "dedup_semantic": _dedup_semantic_plan,
    "learn": lambda e, index: _learn_plan(e, index)}


def make_plan(cfg: PipelineConfig) -> Plan:
    from textsieve.io.paths import expand_inputs
    from textsieve.pipeline.columns import check_rules

    check_rules(cfg)  # every recipe rule against the columns the planned stages will write
    d = cfg.data
    shards = expand_inputs(d["inputs"])
    docs, mean_chars, note = _estimate_docs(cfg, shards)
    plan = Plan(cfg.source, cfg.output, d["executor"], len(shards), sum(s.size for s in shards), docs, note)
    e = _Estimate(cfg, docs, mean_chars)
    for name in cfg.stages():  # the stages `textsieve run` runs, in its order
        kind = name.partition(":")[0]
        index = cfg.section_index(name)
        estimate = ESTIMATES.get(kind)
        plan.stages.append(estimate(e, index) if estimate else StagePlan(name.replace("_", " "), "(no estimate)", 0, 0))
    return plan
