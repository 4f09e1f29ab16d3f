"""The scripted expert in the real LIBERO simulator, through the evaluation job and ``LiberoEnv``.

The session's expert run (``expert_run``: task 0, trials 0-2 in one batch, ``drop: carry`` at
``drop_prob`` 0.5 with policy seed 3) drops in the second episode only. The expert as is must
reach the simulator's success within the episode limit; with the drop it must not succeed and
play on until the limit truncates it. The fine-tune trains on the same run.
"""

from __future__ import annotations

import json

import pytest

from tests.reward_eval.conftest import EXPERT_EPISODES, EXPERT_MAX_STEPS, EXPERT_TASK, EvalRun

pytestmark = [pytest.mark.libero, pytest.mark.slow]


def test_expert_succeeds_and_its_drop_setting_does_not(expert_run: EvalRun) -> None:
    [log] = expert_run.run_dir.glob("vlm_episodes_*.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    records = sorted(lines, key=lambda r: r["trial_id"])  # logged in the order the episodes ended
    assert [(r["task_id"], r["trial_id"]) for r in records] == [
        (EXPERT_TASK, k) for k in range(EXPERT_EPISODES)
    ]
    assert [r["native_success"] for r in records] == [True, False, True], "only the dropping episode fails"
    lengths = [r["episode_length"] for r in records]
    assert lengths[1] == EXPERT_MAX_STEPS, "the near miss plays on to the limit"
    assert all(200 < n < EXPERT_MAX_STEPS for n in (lengths[0], lengths[2])), "the successes end early"
    assert "native=2/3" in expert_run.stderr, "progress bar"
