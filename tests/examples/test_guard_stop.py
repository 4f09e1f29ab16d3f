"""The driver's side of the reward guard's ``stop``, on RLinf's runner with its workers faked.

What the runner does after each step's metrics: ask the env workers, save the step's checkpoint
unless RLinf just saved it, raise :class:`RewardGuardStop`; and which runs use it at all. The real
run (RLinf, Ray, LIBERO, the exit status) is the VLM run of ``test_training_smoke.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf
from rlinf.runners.embodied_runner import EmbodiedRunner

from examples.embodiment.guard_stop import GuardedRunner, RewardGuardStop, stops_on_guard


class FakeEnvGroup:
    """RLinf's env worker group as the runner calls it: a handle whose ``wait`` is per rank."""

    def __init__(self, per_rank: list[list[str]]) -> None:
        self.per_rank = per_rank

    def reward_guard_stops(self) -> SimpleNamespace:
        return SimpleNamespace(wait=lambda: self.per_rank)


def _runner(monkeypatch: pytest.MonkeyPatch, per_rank: list[list[str]], saved_by_rlinf: bool) -> tuple:
    saves: list[int] = []
    runner = object.__new__(GuardedRunner)  # no Ray: only what the stop path touches
    runner.env, runner.global_step = FakeEnvGroup(per_rank), 3
    runner.cfg = OmegaConf.create({"runner": {"logger": {"log_path": "/logs", "experiment_name": "exp"}}})

    def log_step_metrics(self: EmbodiedRunner, **kwargs: object) -> None:
        if saved_by_rlinf:
            self._save_checkpoint()

    monkeypatch.setattr(EmbodiedRunner, "_log_step_metrics", log_step_metrics)
    monkeypatch.setattr(EmbodiedRunner, "_save_checkpoint", lambda self: saves.append(self.global_step))
    return runner, saves


@pytest.mark.parametrize("saved_by_rlinf", [False, True], ids=["saves_the_step", "rlinf_saved_it"])
def test_a_stop_request_saves_the_step_once_then_raises(
    monkeypatch: pytest.MonkeyPatch, saved_by_rlinf
) -> None:
    runner, saves = _runner(
        monkeypatch, [[], ["reward guard tripped after 40 judged episodes"]], saved_by_rlinf
    )
    with pytest.raises(RewardGuardStop) as stop:
        runner._log_step_metrics(step=2)
    assert saves == [3], "one checkpoint of the step, RLinf's or the stop's"
    assert (stop.value.step, stop.value.checkpoint) == (3, "/logs/exp/checkpoints/global_step_3")
    assert stop.value.report().startswith(
        "[reward guard] the run stopped after training step 3: reward guard tripped after 40 judged episodes"
    )
    assert "exit status 4" in stop.value.report()


def test_no_request_no_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    runner, saves = _runner(monkeypatch, [[], []], saved_by_rlinf=False)
    runner._log_step_metrics(step=2)
    assert saves == []


GUARDS = [
    ("reward_model_off", {"enable": False, "guard": {"enable": True, "action": "stop"}}, False),
    ("guard_off", {"enable": True}, False),
    ("guard_warns", {"enable": True, "guard": {"enable": True, "action": "warn"}}, False),
    ("guard_stops", {"enable": True, "guard": {"enable": True, "action": "stop"}}, True),
]


@pytest.mark.parametrize(("block", "stops"), [g[1:] for g in GUARDS], ids=[g[0] for g in GUARDS])
def test_only_a_stopping_guard_changes_the_runner(block: dict, stops: bool) -> None:
    assert stops_on_guard(OmegaConf.create({"env": {"train": {"reward_model": block}}})) is stops
