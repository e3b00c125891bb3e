"""Which annotate shards a run computes, and which it keeps, adopts or resumes.

A shard's output is reused only when it was made from the same settings *and* the same input
(its fingerprint is the settings fingerprint plus the input's identity, `io.identity`), so a
file that grew since it was annotated is annotated again. Reuse comes from three places, in
order: the published generation (`io.publish`: the shard is kept as it is), a killed run's
staging folder with the same settings (a finished shard is adopted, unfinished ones resume from
their finished parts, `annotate_parts`), or nothing (computed). Shards of other settings are
never mixed in: the run refuses unless `overwrite`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from textsieve.errors import TextsieveError
from textsieve.io.attributes import DOCS, read_shard_meta
from textsieve.io.identity import shard_identity
from textsieve.io.paths import SUFFIX_FORMATS, Shard
from textsieve.io.publish import ANNOTATE_JSON, Publication
from textsieve.io.safe_paths import data_rel, safe_rel
from textsieve.stages.annotate.parts import Resume, drop_parts, find_parts

if TYPE_CHECKING:
    from textsieve.stages.annotate.annotate import AnnotateResult

log = logging.getLogger("textsieve.annotate")

SUMMARY = ANNOTATE_JSON  # the run summary (.textsieve/annotate.json), published with the shards


class AnnotateError(TextsieveError, RuntimeError):
    """A problem with the run itself (not with one input record)."""


def output_rel(shard_rel: str) -> str:
    """The attribute shard's path under --output: `docs/` and the input's rel with its format
    suffix replaced by `.parquet` (`sub/a.jsonl.gz` -> `docs/sub/a.parquet`), no part starting
    with `_` or `.` (`io.safe_paths.data_rel`: `_html` -> `docs/x_html.parquet`)."""
    low = shard_rel.lower()
    for suffix, _ in SUFFIX_FORMATS:
        if low.endswith(suffix):
            return f"{DOCS}/{data_rel(shard_rel[: -len(suffix)])}.parquet"
    return f"{DOCS}/{data_rel(shard_rel)}.parquet"


def plan_shards(shards: list[Shard], pub: Publication, fingerprint: str, overwrite: bool, verify_inputs: bool,
                part_size: int, result: AnnotateResult) -> tuple[list[Shard], dict[str, Resume], dict[str, str]]:
    """(shards to compute, their resume points, every shard's fingerprint by input rel); kept and
    adopted shards are recorded in `pub` and in `result.shards_skipped` (and resumed parts in its
    counters)."""
    fs, root = pub.fs, pub.root
    targets: dict[str, str] = {}
    todo: list[Shard] = []
    resumes: dict[str, Resume] = {}  # shard rel -> the finished parts an interrupted run left
    shard_fps: dict[str, str] = {}  # shard rel -> settings + input identity: what its output depends on
    for shard in shards:
        rel = safe_rel(output_rel(shard.rel), f"input {shard.path}: output name")
        if rel in targets:
            raise AnnotateError(f"inputs {targets[rel]!r} and {shard.rel!r} would both write {rel!r}")
        targets[rel] = shard.rel
        identity = shard_identity(shard.path, shard.members, verify_inputs)
        shard_fps[shard.rel] = shard_fp = f"{fingerprint}:{identity}"
        staged = pub.staged(rel)
        old = pub.previous.files.get(rel) if pub.previous and not overwrite else None
        if old is not None and old.get("settings") != fingerprint:
            pub.abandon()
            raise AnnotateError(
                f"{root}/{rel} exists but was made with other settings (fingerprint {old.get('settings')} != "
                f"{fingerprint}); use --overwrite or another --output folder")
        if not overwrite and pub.unchanged(rel, shard_fp):
            log.info("skip %s: already annotated", shard.rel)
            result.shards_skipped.append(shard.rel)
            pub.keep(rel)
            continue
        if old is not None:
            log.info("%s changed since it was annotated: annotating it again", shard.path)
        # a killed run with these settings and this input finished it: adopted even with
        # --overwrite, which replaces other settings' output, not this run's own staged work
        if pub.adoptable(rel) and read_shard_meta(fs, staged).get("shard_fingerprint") == shard_fp:
            log.info("skip %s: finished by an interrupted run", shard.rel)  # staged, published below
            result.shards_skipped.append(shard.rel)
            pub.add(rel, shard_fp, settings=fingerprint)
            drop_parts(fs, staged)  # left if a run was killed between finishing the shard and cleaning up
            continue
        todo.append(shard)
        # parts in this run's own staging folder (its key is the settings): kept under --overwrite too
        resumes[shard.rel] = resume = find_parts(fs, staged, shard_fp, shard, part_size, False)
        if resume.parts:
            log.info("%s: resuming after %d finished part(s) (%d documents) of an interrupted run", shard.rel,
                     len(resume.parts), resume.documents)
            result.parts_resumed += len(resume.parts)
            result.documents_resumed += resume.documents
    _keep_others(pub, targets, fingerprint, overwrite, root)
    return todo, resumes, shard_fps


def _keep_others(pub: Publication, targets: dict[str, str], fingerprint: str, overwrite: bool, root: str) -> None:
    """Published shards of inputs this run was not given stay published when they were made with
    these settings (a folder annotated in several runs); other settings would mix, so they are
    refused, or dropped with `overwrite`."""
    prev = pub.previous
    for rel, entry in sorted(prev.files.items()) if prev else []:
        if rel in targets or rel == SUMMARY or not rel.endswith(".parquet"):
            continue
        if entry.get("settings") == fingerprint:
            pub.keep(rel)
        elif not overwrite:
            pub.abandon()
            raise AnnotateError(f"{root}/{rel} (from an earlier run) was made with other settings (fingerprint "
                                f"{entry.get('settings')} != {fingerprint}); use --overwrite or another "
                                "--output folder")


def warn_markup(shards: list[Shard]) -> None:
    """Signals of raw HTML say little (almost every page fails Gopher's `no_alpha_words`): say
    so, and point at `extract`, which turns WARC records and pages into main-content text."""
    markup = [s for s in shards if s.format in ("warc", "html")]
    if markup:
        log.warning("%d input shard(s) hold web pages (%s ...): annotate reads their HTML as is, markup and "
                    "boilerplate included; run `textsieve extract` on them first and annotate its output",
                    len(markup), markup[0].rel)
