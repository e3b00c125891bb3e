"""Where a mix source's token counts come from: the counts `textsieve tokens` stored, or the texts.

Why a module of its own: encoding every text is what made `mix --dry-run` and a re-run of a
finished mix slow (26 s and 21 s on 8.6k documents), while `textsieve tokens` has usually
stored the same numbers already. So a source's counts are read from a stored set whenever
they are the counts of the texts the mix writes, and when they are not the plan says why
(`CountPlan.reason`), so a user knows what to change. The decision reads no text and no
record (`count_plan`), so `mix` can also check a finished mix before any counting.

Stored counts apply when all of these hold:

* the mix has a real tokenizer (`tokenizer: words` estimates from the texts);
* the texts written are the annotated documents unchanged: no line rule cuts them and no
  `redact:` replaces spans (a `select` output: its recorded recipe has no `line:` rule and it
  was not made with `--redact`);
* the annotate folder holds a `tokens_<name>` set made with the mix's tokenizer file: the
  same SHA-256 fingerprint, under any name (`--name` is a label, the file is the identity);
* a `select` output records its annotate folder (`selection.json`'s `attributes`, written since
  this change) and that folder still holds the shards the selection was made from.

The counts are then looked up by each document's (shard, row): an attributes source's rows, or
the `shard`/`row` key fields of a selection's records.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from textsieve.mixing.spec import WORDS, MixError, MixSpec
from textsieve.stages.select.select import shard_metas
from textsieve.stages.training.mix_sources import SourcePool, load_records
from textsieve.tokenization.columns import COLUMN_PREFIX, aligned_counts, token_columns, token_info


@dataclass(frozen=True)
class CountPlan:
    """How one source is counted: from `column` of the annotate folder `directory`, or (column
    None) by encoding its texts, for `reason`."""

    column: str | None
    directory: str | None = None
    fingerprint: str | None = None
    reason: str = ""


def _texts_changed(pool: SourcePool) -> str | None:
    """Why the texts the mix writes differ from the annotated documents, or None."""
    if pool.spec.redact:
        return "redact: replaces spans in the texts, so counts of the annotated text do not apply"
    if any(s.starts is not None for s in pool.shards):
        return "the recipe's line rules cut the texts, so counts of whole documents do not apply"
    return None


def _selection_origin(pool: SourcePool) -> tuple[str | None, str | None]:
    """(annotate folder, None) of a selection source whose texts are that folder's documents
    as annotated, else (None, why not)."""
    summary = pool.selection
    if summary.get("untrusted"):
        return None, f"its selection.json is not trusted ({summary['untrusted']})"
    directory = summary.get("attributes")
    if not isinstance(directory, str) or not directory:
        return None, ("its selection.json does not name the annotate folder it was made from (a selection made "
                      "by an older textsieve; run select again with --overwrite to record it)")
    if summary.get("redact"):
        return None, ("the selection's texts were redacted (select --redact), so counts of the annotated text do "
                      "not apply")
    rules = ((summary.get("recipe") or {}).get("rules") or {}).values()
    if any(isinstance(r, str) and r.strip().lower().startswith("line:") for r in rules):
        return None, ("the selection's recipe has line rules that cut the texts, so counts of whole documents do "
                      "not apply")
    try:
        _, _, metas = shard_metas(directory)
    except (OSError, ValueError) as exc:
        return None, f"its annotate folder {directory} cannot be read ({exc})"
    now = sorted((rel, m["_attr_size"], m.get("documents")) for rel, m in metas.values())
    then = sorted((i.get("attribute_shard"), i.get("size"), i.get("documents")) for i in summary.get("inputs") or [])
    if now != then:
        return None, f"its annotate folder {directory} changed since the selection was made"
    return directory, None


def count_plan(pool: SourcePool, tokenizer: Any, tokenizer_spec: str | None) -> CountPlan:
    """How `pool` is counted with the mix's `tokenizer` (a loaded `Tokenizer`, None for
    `tokenizer: words`); reads set summaries only, never a text (see the module doc)."""
    if tokenizer is None:
        return CountPlan(None, reason="tokenizer: words estimates tokens from the texts" if tokenizer_spec == WORDS
                         else "the mix names no tokenizer")
    changed = _texts_changed(pool)
    if changed:
        return CountPlan(None, reason=changed)
    directory, why = (pool.spec.attributes, None) if pool.spec.attributes is not None else _selection_origin(pool)
    if directory is None:
        return CountPlan(None, reason=why or "")
    have = token_columns(directory)
    fingerprints = {col: token_info(directory, col).get("tokenizer_fingerprint") for col in have}
    same = COLUMN_PREFIX + tokenizer.name
    matching = [c for c in have if fingerprints[c] == tokenizer.fingerprint]
    if same in have and fingerprints[same] is None:  # a set whose summary records no fingerprint: by name
        matching.append(same)
    if matching:
        col = same if same in matching else matching[0]
        return CountPlan(col, directory, fingerprints[col], f"stored counts {col} (textsieve tokens)")
    if have:
        other = ", ".join(f"{c} ({fingerprints[c] or 'unknown'})" for c in have)
        return CountPlan(None, reason=f"the token counts of {directory} ({other}) were made with other tokenizer "
                                      f"files than {tokenizer.path} (fingerprint {tokenizer.fingerprint})")
    return CountPlan(None, reason=f"{directory} has no stored token counts; `textsieve tokens {directory} "
                                  f"--tokenizer {tokenizer.path}` stores them once for every later plan")


def use_stored(pool: SourcePool, plan: CountPlan) -> None:
    """Mark `pool` as counted from the stored column (its inputs name the column, so a mix
    planned from stored counts is told apart from one that encoded the texts)."""
    assert plan.column is not None
    pool.token_count = f"column:{plan.column}"
    pool.inputs["token_column"] = {"column": plan.column, "tokenizer_fingerprint": plan.fingerprint}


def keyed(pool: SourcePool) -> bool:
    """Whether every document of a (loaded) source has its annotate (shard, row) key."""
    return all(sp.kind == "attributes" or sp.src_shard is not None for sp in pool.shards)


def fill_stored(pool: SourcePool, plan: CountPlan) -> None:
    """Each shard's counts from the stored column, looked up by (shard, row) of its documents
    (one read of the set for the whole source)."""
    assert plan.column is not None and plan.directory is not None
    shards: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for sp in pool.shards:
        if sp.kind == "attributes":
            shards.append(np.asarray([sp.key] * len(sp.rows), object))
            rows.append(np.asarray(sp.rows, np.int64))
        else:
            assert sp.src_shard is not None and sp.src_row is not None
            shards.append(np.asarray(sp.src_shard, object))
            rows.append(sp.src_row)
    if not shards:
        return
    counts = aligned_counts(plan.directory, plan.column, np.concatenate(shards), np.concatenate(rows))
    at = 0
    for sp, r in zip(pool.shards, rows):
        sp.tokens = counts[at:at + len(r)]
        at += len(r)


def mix_tokenizer(spec: MixSpec) -> Any:
    """The mix's loaded tokenizer (once per process), None for `words` or none given."""
    from textsieve.stages.training.mix_worker import counter

    return counter(spec.tokenizer).tok if spec.tokenizer not in (None, WORDS) else None


def choose_counts(pools: list[SourcePool], spec: MixSpec) -> dict[int, CountPlan]:
    """Per source (by index), where its counts come from (`mix_counts.count_plan`); a source
    counted from stored counts is marked so now (its inputs name the column), before the run
    key is taken. Reads set summaries, not texts or records."""
    tok = mix_tokenizer(spec)
    plans = {}
    for i, pool in enumerate(pools):
        plans[i] = plan = count_plan(pool, tok, spec.tokenizer)
        pool.count_note = plan.reason
        if plan.column is not None:
            use_stored(pool, plan)
    return plans


def count_missing(pools: list[SourcePool], spec: MixSpec, cfg: Any,
                  plans: dict[int, CountPlan] | None = None) -> None:
    """Fill every shard's token counts: stored counts where they apply, else by reading and
    encoding the texts (in workers)."""
    from textsieve.exec.local import default_workers, ordered_map
    from textsieve.io.locations import pool_workers
    from textsieve.stages.training.mix_worker import CountTask, count_task

    plans = plans if plans is not None else choose_counts(pools, spec)
    tasks = []
    for i, pool in enumerate(pools):
        load_records(pool)
        plan = plans[i]
        if plan.column is not None and keyed(pool):
            fill_stored(pool, plan)
            continue
        if plan.column is not None:  # a selection whose records lost their annotate keys
            pool.inputs.pop("token_column", None)
            pool.count_note = "its records have no annotate shard/row keys to look stored counts up by"
        pool.token_count = WORDS if spec.tokenizer == WORDS else "tokenizer"
        if spec.tokenizer is None:
            raise MixError(f"sources: {pool.spec.name}: no token counts (no ts_tokens_* column of the mix's "
                           "tokenizer); give tokenizer: PATH, or tokenizer: words for an estimate")
        if cfg.progress and spec.tokenizer != WORDS:
            print(f"mix: source {pool.spec.name}: encoding {pool.documents:,} documents to count their tokens: "
                  f"{pool.count_note}", file=sys.stderr)
        tasks += [CountTask(sp, spec.tokenizer) for sp in pool.shards]
    if not tasks:
        return
    held = [p.spec.attributes or p.spec.selection or "" for p in pools]
    workers = pool_workers("mix", cfg.workers, max(1, min(cfg.workers or default_workers(), len(tasks))), held)
    for task, counts in ordered_map(count_task, tasks, workers=workers):
        task.pool.tokens = counts  # the task yielded back is this process's own object


__all__ = ["CountPlan", "choose_counts", "count_missing", "count_plan", "fill_stored", "keyed", "mix_tokenizer",
           "use_stored"]
