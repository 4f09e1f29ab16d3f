"""Each episode's outcome record (examples/embodiment/cpu_learn/outcomes.py; milliseconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from examples.embodiment.cpu_learn.outcomes import episodes, outcome_record, outcomes_file, read_groups

METRICS = {
    "success_once": torch.tensor([True, False, True, False]),
    "episode_len": torch.tensor([270, 400, 300, 400]),
    "vlm_success": torch.tensor([1.0, 1.0, 0.0, 0.0]),
    "vlm_fallback": torch.tensor([0.0, 0.0, 0.0, 1.0]),
    "return": torch.tensor([5.0, 5.0, 0.0, 0.0]),  # not an outcome key: left out
}


def test_a_record_keeps_the_outcome_keys_in_env_order() -> None:
    record = outcome_record(2, 0, 2, METRICS)
    assert record == {
        "step": 2,
        "rank": 0,
        "group_size": 2,
        "success_once": [1.0, 0.0, 1.0, 0.0],
        "episode_len": [270.0, 400.0, 300.0, 400.0],
        "vlm_success": [1.0, 1.0, 0.0, 0.0],
        "vlm_fallback": [0.0, 0.0, 0.0, 1.0],
    }
    assert [e["judged"] for e in episodes(record)] == [True, True, False, False]
    assert [e["fallback"] for e in episodes(record)] == [False, False, False, True]


def test_a_native_runs_episodes_have_no_verdict() -> None:
    record = outcome_record(1, 0, 2, {"success_once": [1.0, 0.0], "episode_len": [300, 400]})
    assert episodes(record) == [
        {"success": True, "judged": None, "fallback": False, "length": 300},
        {"success": False, "judged": None, "fallback": False, "length": 400},
    ]


def _write(directory: Path, step: int, rank: int, successes: list[float], group: int = 2) -> None:
    record = outcome_record(
        step, rank, group, {"success_once": successes, "episode_len": [400] * len(successes)}
    )
    (directory / outcomes_file(step, rank)).write_text(json.dumps(record))


def test_groups_are_read_step_by_step_every_rank_in_order(tmp_path: Path) -> None:
    _write(tmp_path, 1, 1, [0.0, 0.0])  # rank 1's envs come after rank 0's
    _write(tmp_path, 1, 0, [1.0, 1.0])
    _write(tmp_path, 2, 0, [1.0, 0.0])
    _write(tmp_path, 2, 1, [0.0, 1.0])
    _write(tmp_path, 4, 0, [1.0, 1.0])  # after a missing step: not read
    steps = read_groups(tmp_path)
    assert [[[e["success"] for e in group] for group in step] for step in steps] == [
        [[True, True], [False, False]],
        [[True, False], [False, True]],
    ]
    assert read_groups(tmp_path / "nothing") == []


def test_episodes_that_do_not_make_whole_groups_are_refused(tmp_path: Path) -> None:
    _write(tmp_path, 1, 0, [1.0, 0.0, 1.0], group=2)
    with pytest.raises(ValueError, match="step 1's 3 episodes do not split into groups of 2"):
        read_groups(tmp_path)
