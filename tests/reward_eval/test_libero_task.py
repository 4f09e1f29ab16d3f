"""reward_eval.libero_task's choice of a trial's initial state, without the simulator (a sampled
state in the simulator: tests/reward_eval/classifier/test_make_classifier_data.py)."""

from __future__ import annotations

import numpy as np
import pytest

from reward_eval.libero_task import SAMPLED_TRIAL0, initial_state

LIBERO = np.arange(6.0).reshape(3, 2)  # three "LIBERO" states


class SeededEnv:
    """What :func:`~reward_eval.libero_task.sampled_state` asks of an env: seed, reset, the state."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | None]] = []
        self.env = self
        self.sim = self

    def seed(self, seed: int) -> None:
        self.calls.append(("seed", seed))

    def reset(self) -> None:
        self.calls.append(("reset", None))

    def get_state(self) -> SeededEnv:
        return self

    def flatten(self) -> np.ndarray:
        return np.array([float(self.calls[0][1])])


@pytest.mark.parametrize("trial", [0, 2], ids=["first", "last"])
def test_a_libero_trial_is_liberos_state(trial: int) -> None:
    env = SeededEnv()
    assert np.array_equal(initial_state(env, LIBERO, trial), LIBERO[trial]) and env.calls == []


def test_a_sampled_trial_is_drawn_by_the_env_seeded_with_the_trial() -> None:
    env = SeededEnv()
    assert initial_state(env, LIBERO, SAMPLED_TRIAL0 + 7).tolist() == [SAMPLED_TRIAL0 + 7]
    assert env.calls == [("seed", SAMPLED_TRIAL0 + 7), ("reset", None)]


@pytest.mark.parametrize(
    "trial", [-1, 3, SAMPLED_TRIAL0 - 1], ids=["negative", "past-libero", "below-sampled"]
)
def test_a_trial_that_is_neither_is_refused_naming_both(trial: int) -> None:
    refused = rf"trial {trial} is neither one of LIBERO's 3 .* \(0..2\) nor a sampled one \(1000 on\)"
    with pytest.raises(ValueError, match=refused):
        initial_state(SeededEnv(), LIBERO, trial)
