"""The env's JSONL episode log: its file (split, the worker's rank) and an episode's reset-state id."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlinf.envs.libero.episode_log import open_episode_log, reset_state_id, split_name

STATE_IDS = [
    # (id, task_id, trial_id, RLinf's cumsum_trial_id_bins, reset-state id)
    ("first_task", 0, 3, [50, 100], 3),
    ("second_task", 1, 0, [50, 100], 50),
    ("third_task", 2, 7, [50, 90, 140], 97),
]


@pytest.mark.parametrize(
    ("task", "trial", "bins", "expected"), [s[1:] for s in STATE_IDS], ids=[s[0] for s in STATE_IDS]
)
def test_reset_state_id(task: int, trial: int, bins: list[int], expected: int) -> None:
    assert reset_state_id(task, trial, bins) == expected


@pytest.mark.parametrize(("is_eval", "split"), [(False, "train"), (True, "eval")])
def test_split_name(is_eval: bool, split: str) -> None:
    assert split_name(is_eval) == split


def test_open_episode_log_names_the_workers_file_and_none_without_a_dir(tmp_path: Path) -> None:
    assert open_episode_log(None, "train", 0) is None
    log = open_episode_log(str(tmp_path / "logs"), "eval", 3)
    assert log is not None
    try:
        assert log.path == str(tmp_path / "logs" / "vlm_episodes_eval_rank3.jsonl")
        assert Path(log.path).is_file()
    finally:
        log.close()
