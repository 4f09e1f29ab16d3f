"""Judge-only mode's settings (examples/embodiment/cpu_learn/judge_only.py; milliseconds)."""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import OmegaConf

from examples.embodiment.cpu_learn.judge_only import apply_judge_only, is_judge_only


def _cfg(judge_only: Any = True, **reward_model: Any) -> Any:
    cfg = OmegaConf.create(
        {
            "cpu_learn": {"enable": True, "judge_only": judge_only},
            "env": {
                "train": {
                    "ignore_terminations": False,
                    "simulation": {"step_ended_episodes": False},
                    "reward_model": {"enable": False, "fallback_score": None, **reward_model},
                }
            },
        }
    )
    OmegaConf.set_struct(cfg, True)  # as Hydra hands it over
    return cfg


def test_the_default_mode_changes_nothing() -> None:
    cfg = _cfg(judge_only=False)
    assert apply_judge_only(cfg) == [] and cfg == _cfg(judge_only=False)


def test_episodes_run_to_the_horizon_whatever_the_simulator_says() -> None:
    cfg = _cfg()
    assert apply_judge_only(cfg) == [
        "env.train.ignore_terminations=True",
        "env.train.simulation.step_ended_episodes=True",
    ]
    assert cfg.env.train.ignore_terminations is True and cfg.env.train.simulation.step_ended_episodes is True
    assert "fail_on_request_error" not in cfg.env.train.reward_model, "a native run: RLinf's own reward"


@pytest.mark.parametrize(
    ("reward_model", "fail_fast", "changed"),
    [
        ({"enable": True}, True, True),  # fallback null would be the native success: stop instead
        ({"enable": True, "fail_on_request_error": True}, True, False),
        ({"enable": True, "fallback_score": 0.5}, False, False),  # a fallback the user chose
    ],
    ids=["native-fallback", "fails-fast", "chosen-fallback"],
)
def test_a_judged_run_never_falls_back_to_the_simulators_success(
    reward_model: dict, fail_fast: bool, changed: bool
) -> None:
    cfg = _cfg(**reward_model)
    made = apply_judge_only(cfg)
    assert cfg.env.train.reward_model.get("fail_on_request_error", False) is fail_fast
    assert ("env.train.reward_model.fail_on_request_error=True" in made) is changed


@pytest.mark.parametrize("action", ["native", "stop"])
def test_a_guard_that_would_act_on_the_simulators_success_is_refused(action: str) -> None:
    cfg = _cfg(enable=True, guard={"enable": True, "action": action})
    with pytest.raises(ValueError, match=f"guard.action '{action}' hands the simulator's success back"):
        apply_judge_only(cfg)
    apply_judge_only(_cfg(enable=True, guard={"enable": True, "action": "warn"}))  # warn is fine


def test_the_switch_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match=r"cpu_learn\.judge_only must be true or false, got 'yes'"):
        is_judge_only(_cfg(judge_only="yes"))


def test_the_learning_config_has_the_switch_off() -> None:
    from examples.embodiment.reward_comparison.cli import LEARN_CONFIG

    learn = OmegaConf.load(LEARN_CONFIG)
    assert learn.cpu_learn.judge_only is False and learn.env.train.simulation.step_ended_episodes is False
