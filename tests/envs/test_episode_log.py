"""The env's JSONL episode log: its file (split, the worker's rank) and where an ended episode ran."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rlinf.envs.libero.episode_log import (
    episode_meta,
    open_episode_log,
    reset_state_id,
    split_name,
    worker_rank,
)

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


RANKS = [
    ("outside_a_worker", None, 0),
    ("worker_rank", SimpleNamespace(rank=3, group_world_size=4), 3),
]


@pytest.mark.parametrize(("info", "rank"), [r[1:] for r in RANKS], ids=[r[0] for r in RANKS])
def test_worker_rank(info: Any, rank: int) -> None:
    assert worker_rank(info) == rank


@pytest.mark.parametrize(
    "bad",
    [SimpleNamespace(), SimpleNamespace(rank="1"), SimpleNamespace(rank=-2)],
    ids=["no_rank", "str_rank", "negative_rank"],
)
def test_worker_rank_rejects_a_worker_info_without_a_rank(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"worker_info\.rank must be an int >= 0"):
        worker_rank(bad)


def test_episode_meta_reads_where_the_episode_ran_off_rlinfs_arrays() -> None:
    env = SimpleNamespace(
        task_ids=[0, 2],
        trial_ids=[5, 7],
        task_descriptions=["open the drawer", "put the bowl on the plate"],
        seed_offset=3,
        is_eval=True,
        cumsum_trial_id_bins=[50, 90, 140],
    )
    meta = episode_meta(env, 1, 4, episode=2, episode_length=80)
    assert meta == {
        "split": "eval",
        "rank": 4,
        "seed_offset": 3,
        "env": 1,
        "task_id": 2,
        "task_text": "put the bowl on the plate",
        "trial_id": 7,
        "reset_state_id": 97,
        "episode": 2,
        "episode_length": 80,
    }
