"""`textsieve run` dispatches stages through a registry, not by name: every stage the pipeline
file can configure has a runner and a dry-run estimate, and a malformed runner is refused."""

from __future__ import annotations

import pytest

from textsieve.pipeline.config import STAGES
from textsieve.pipeline.plan import ESTIMATES
from textsieve.pipeline.run import STAGE_RUNNERS, Outcome, StageRunner, register_stage


def test_every_configurable_stage_is_registered():
    kinds = {s.name for s in STAGES}
    assert set(STAGE_RUNNERS) == kinds
    assert set(ESTIMATES) == kinds
    # extract and annotate resume shard by shard by themselves (each shard's fingerprint covers
    # its input's identity); every other stage is tracked by a state file
    assert [k for k, r in STAGE_RUNNERS.items() if r.complete is None] == ["extract", "annotate"]


def test_a_runner_is_either_state_tracked_or_self_resuming():
    def run(c: object) -> Outcome:
        return Outcome({})

    for bad in (StageRunner(run), StageRunner(run, complete=lambda cfg, n, c: True, output_key=lambda cfg: "k")):
        with pytest.raises(ValueError, match="exactly one of"):
            register_stage("extra", bad)
    assert "extra" not in STAGE_RUNNERS
