"""The env YAML's ``simulation`` block: defaults are RLinf's env, bad values named (milliseconds)."""

from __future__ import annotations

from typing import Any

import pytest

from rlinf.envs.libero.simulation import SimulationConfig
from tests.envs.conftest import libero_cfg


def test_the_shipped_env_yaml_leaves_the_block_at_rlinfs_defaults() -> None:
    cfg = libero_cfg()
    assert SimulationConfig.from_mapping(cfg.get("simulation", None)).is_default


def test_a_block_that_changes_anything_is_not_the_default() -> None:
    assert not SimulationConfig(cameras=False).is_default
    assert SimulationConfig(cameras=False).renders_judge_frames
    assert not SimulationConfig().renders_judge_frames


def test_initial_states_read_from_yaml_lists() -> None:
    config = SimulationConfig.from_mapping({"initial_states": [[0, 3], [1, 49]]})
    assert config.initial_states == ((0, 3), (1, 49))


@pytest.mark.parametrize(
    ("block", "error", "message"),
    [
        ({"cameras": "no"}, TypeError, "simulation.cameras must be true or false, got 'no'"),
        ({"envs_per_process": 0}, ValueError, "simulation.envs_per_process must be an integer >= 1, got 0"),
        ({"envs_per_process": True}, ValueError, "envs_per_process must be an integer >= 1, got True"),
        ({"judge_frame_size": 8}, ValueError, "simulation.judge_frame_size must be an integer >= 16, got 8"),
        ({"initial_states": []}, ValueError, "must be a non-empty list of \\[task_id, trial_id\\] pairs"),
        ({"initial_states": [[0, -1]]}, ValueError, "pairs of integers >= 0, got \\[\\[0, -1\\]\\]"),
        ({"initial_states": [[0, 1, 2]]}, ValueError, "non-empty list of \\[task_id, trial_id\\] pairs"),
        (
            {"camera": False},
            ValueError,
            "unknown simulation keys \\['camera'\\]; valid: cameras, envs_per_process",
        ),
    ],
    ids=[
        "cameras-not-bool",
        "no-env-per-process",
        "bool-count",
        "tiny-frames",
        "no-states",
        "negative-trial",
        "triple",
        "typo",
    ],
)
def test_bad_values_are_named(block: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        SimulationConfig.from_mapping(block)


def test_freezing_ended_episodes_refuses_episodes_that_go_on_after_a_success() -> None:
    from rlinf.envs.libero.simulation_env import SimulationHooks

    cfg = {"simulation": {"step_ended_episodes": False}, "ignore_terminations": True}
    with pytest.raises(ValueError, match="step_ended_episodes: False needs ignore_terminations: False"):
        SimulationHooks()._init_simulation(cfg, renders_for_judge=False)
    SimulationHooks()._init_simulation({**cfg, "ignore_terminations": False}, renders_for_judge=False)
